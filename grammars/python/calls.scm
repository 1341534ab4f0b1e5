(call function: (identifier) @call.name)
(call function: (attribute object: (_) @call.object attribute: (identifier) @call.name))
