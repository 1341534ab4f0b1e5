(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(method_definition name: (property_identifier) @name) @definition.method
(abstract_method_signature name: (property_identifier) @name) @definition.method
(internal_module name: (identifier) @name) @definition.module
(lexical_declaration
  (variable_declarator name: (identifier) @name
                       value: [(arrow_function) (function_expression)])) @definition.function
(export_statement declaration: [(function_declaration name: (identifier) @export.name)
                                (generator_function_declaration name: (identifier) @export.name)
                                (class_declaration name: (type_identifier) @export.name)
                                (abstract_class_declaration name: (type_identifier) @export.name)
                                (interface_declaration name: (type_identifier) @export.name)
                                (type_alias_declaration name: (type_identifier) @export.name)
                                (enum_declaration name: (identifier) @export.name)
                                (lexical_declaration (variable_declarator name: (identifier) @export.name))])
(export_statement (export_clause (export_specifier name: (identifier) @export.name)))
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)]) @definition.function
(public_field_definition name: (property_identifier) @name value: [(arrow_function) (function_expression)]) @definition.method
