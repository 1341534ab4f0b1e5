(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class
