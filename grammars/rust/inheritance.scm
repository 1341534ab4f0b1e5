(impl_item
  trait: [(type_identifier) @implements
          (scoped_type_identifier name: (type_identifier) @implements)
          (generic_type type: (type_identifier) @implements)]
  type: [(type_identifier) @class.name (generic_type type: (type_identifier) @class.name)])
(trait_item name: (type_identifier) @class.name
            bounds: (trait_bounds (type_identifier) @extends))
