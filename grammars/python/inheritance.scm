(class_definition
  name: (identifier) @class.name
  superclasses: (argument_list [(identifier) @extends
                                (attribute attribute: (identifier) @extends)]))
