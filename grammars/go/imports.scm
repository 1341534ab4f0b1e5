(import_spec path: (interpreted_string_literal (interpreted_string_literal_content) @import.module))
(import_spec name: (package_identifier) @import.name path: (interpreted_string_literal (interpreted_string_literal_content) @import.module))
