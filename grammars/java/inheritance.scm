(class_declaration
  name: (identifier) @class.name
  superclass: (superclass [(type_identifier) @extends (generic_type (type_identifier) @extends) (scoped_type_identifier (type_identifier) @extends .)]))
(class_declaration
  name: (identifier) @class.name
  interfaces: (super_interfaces (type_list [(type_identifier) @implements (generic_type (type_identifier) @implements)])))
(interface_declaration
  name: (identifier) @class.name
  (extends_interfaces (type_list [(type_identifier) @extends (generic_type (type_identifier) @extends)])))
(enum_declaration
  name: (identifier) @class.name
  interfaces: (super_interfaces (type_list (type_identifier) @implements)))
