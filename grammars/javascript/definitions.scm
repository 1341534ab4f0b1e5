(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name) @definition.class
(method_definition name: (property_identifier) @name) @definition.method
(lexical_declaration
  (variable_declarator name: (identifier) @name
                       value: [(arrow_function) (function_expression)])) @definition.function
(variable_declaration
  (variable_declarator name: (identifier) @name
                       value: [(arrow_function) (function_expression)])) @definition.function
(export_statement declaration: [(function_declaration name: (identifier) @export.name)
                                (generator_function_declaration name: (identifier) @export.name)
                                (class_declaration name: (identifier) @export.name)
                                (lexical_declaration (variable_declarator name: (identifier) @export.name))])
(export_statement (export_clause (export_specifier name: (identifier) @export.name)))
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)]) @definition.function
(pair key: (property_identifier) @name value: [(function_expression) (arrow_function)]) @definition.method
