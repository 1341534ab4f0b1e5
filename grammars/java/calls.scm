(method_invocation object: (_) @call.object name: (identifier) @call.name)
(method_invocation !object name: (identifier) @call.name)
(object_creation_expression type: [(type_identifier) @call.name (generic_type (type_identifier) @call.name)])
