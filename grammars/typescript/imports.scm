(import_statement source: (string (string_fragment) @import.module))
(import_statement
  (import_clause (named_imports (import_specifier name: (identifier) @import.name)))
  source: (string (string_fragment) @import.module))
(import_statement
  (import_clause (identifier) @import.name)
  source: (string (string_fragment) @import.module))
(export_statement source: (string (string_fragment) @import.module))
(import_require_clause source: (string (string_fragment) @import.module))
(call_expression
  function: [(identifier) @_req (import)]
  arguments: (arguments . (string (string_fragment) @import.module))
  (#any-of? @_req "require" "import"))
