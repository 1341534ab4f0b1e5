(call_expression function: (identifier) @call.name)
(call_expression function: (member_expression object: (_) @call.object property: (property_identifier) @call.name))
(new_expression constructor: (identifier) @call.name)
