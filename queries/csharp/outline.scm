; C# outline: namespaces and types show their members; method, constructor and local function
; bodies are elided. A file-scoped namespace is the one line that declares it.

(namespace_declaration "namespace" @context name: (_) @name) @item
(file_scoped_namespace_declaration "namespace" @context name: (_) @name) @item
(class_declaration "class" @context name: (_) @name) @item
(struct_declaration "struct" @context name: (_) @name) @item
(interface_declaration "interface" @context name: (_) @name) @item
(enum_declaration "enum" @context name: (_) @name) @item
(record_declaration "record" @context ["class" "struct"]? @context name: (_) @name) @item
(delegate_declaration "delegate" @context name: (_) @name) @item

(method_declaration name: (_) @name body: (_)? @body) @item
(constructor_declaration name: (_) @name body: (_)? @body) @item
(destructor_declaration "~" @context name: (_) @name body: (_)? @body) @item
(operator_declaration "operator" @context operator: _ @name body: (_)? @body) @item
(local_function_statement name: (_) @name body: (_)? @body) @item

(property_declaration name: (_) @name) @item
(indexer_declaration "this" @context) @item
(field_declaration (variable_declaration (variable_declarator name: (_) @name))) @item
(event_field_declaration
  "event" @context
  (variable_declaration (variable_declarator name: (_) @name))) @item
(event_declaration "event" @context name: (_) @name) @item
(enum_member_declaration name: (_) @name) @item
