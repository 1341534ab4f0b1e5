(call_expression function: (identifier) @call.name)
(call_expression function: (selector_expression operand: (_) @call.object field: (field_identifier) @call.name))
