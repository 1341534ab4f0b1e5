(type_declaration
  (type_spec name: (type_identifier) @class.name
             type: (struct_type (field_declaration_list
                     (field_declaration . type: [(type_identifier) @extends
                                                 (pointer_type (type_identifier) @extends)
                                                 (qualified_type name: (type_identifier) @extends)] .)))))
(type_declaration
  (type_spec name: (type_identifier) @class.name
             type: (interface_type (type_elem [(type_identifier) @extends
                                               (qualified_type name: (type_identifier) @extends)]))))
