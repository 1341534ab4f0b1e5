(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.method
(struct_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(union_item name: (type_identifier) @name) @definition.struct
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (declaration_list)) @definition.module
(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name)]) @definition.impl
(function_item (visibility_modifier) name: (identifier) @export.name)
(struct_item (visibility_modifier) name: (type_identifier) @export.name)
(enum_item (visibility_modifier) name: (type_identifier) @export.name)
(trait_item (visibility_modifier) name: (type_identifier) @export.name)
