(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(class_declaration (modifiers "public") name: (identifier) @export.name)
(interface_declaration (modifiers "public") name: (identifier) @export.name)
(enum_declaration (modifiers "public") name: (identifier) @export.name)
