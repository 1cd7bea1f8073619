; Java outline: types are labelled by their keyword and name and show their members; method and
; constructor bodies are elided. Java methods have no keyword, so they are labelled by name.

(package_declaration "package" @context (_) @name) @item
(class_declaration "class" @context name: (_) @name) @item
(interface_declaration "interface" @context name: (_) @name) @item
(enum_declaration "enum" @context name: (_) @name) @item
(record_declaration "record" @context name: (_) @name) @item
(annotation_type_declaration "@interface" @context name: (_) @name) @item

(method_declaration name: (_) @name body: (block) @body) @item
(method_declaration name: (_) @name !body) @item
(constructor_declaration name: (_) @name body: (constructor_body) @body) @item
(compact_constructor_declaration name: (_) @name body: (block) @body) @item
(annotation_type_element_declaration name: (_) @name) @item
(static_initializer "static" @context (block) @body) @item

(field_declaration declarator: (variable_declarator name: (_) @name)) @item
(constant_declaration declarator: (variable_declarator name: (_) @name)) @item
(enum_constant name: (_) @name) @item
