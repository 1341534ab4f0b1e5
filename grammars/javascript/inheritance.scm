(class_declaration
  name: (identifier) @class.name
  (class_heritage [(identifier) @extends
                   (member_expression property: (property_identifier) @extends)]))
