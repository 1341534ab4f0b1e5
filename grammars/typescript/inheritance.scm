(class_declaration
  name: (type_identifier) @class.name
  (class_heritage (extends_clause value: [(identifier) @extends
                                          (member_expression property: (property_identifier) @extends)])))
(class_declaration
  name: (type_identifier) @class.name
  (class_heritage (implements_clause [(type_identifier) @implements
                                      (generic_type name: (type_identifier) @implements)])))
(abstract_class_declaration
  name: (type_identifier) @class.name
  (class_heritage (extends_clause value: (identifier) @extends)))
(abstract_class_declaration
  name: (type_identifier) @class.name
  (class_heritage (implements_clause (type_identifier) @implements)))
(interface_declaration
  name: (type_identifier) @class.name
  (extends_type_clause type: [(type_identifier) @extends
                              (generic_type name: (type_identifier) @extends)]))
