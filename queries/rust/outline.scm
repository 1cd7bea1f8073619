; Rust outline: items are labelled by their keyword (@context) and name; function bodies are
; elided, while modules, impls and traits show what they contain.

(mod_item "mod" @context name: (_) @name) @item
(struct_item "struct" @context name: (_) @name) @item
(enum_item "enum" @context name: (_) @name) @item
(union_item "union" @context name: (_) @name) @item
(trait_item "trait" @context name: (_) @name) @item
(impl_item "impl" @context trait: (_) @name "for" @context type: (_) @name) @item
(impl_item "impl" @context !trait type: (_) @name) @item
(function_item "fn" @context name: (_) @name body: (block) @body) @item
(function_signature_item "fn" @context name: (_) @name) @item
(macro_definition "macro_rules!" @context name: (_) @name) @item
(const_item "const" @context name: (_) @name) @item
(static_item "static" @context name: (_) @name) @item
(type_item "type" @context name: (_) @name) @item
(field_declaration name: (_) @name) @item
(enum_variant name: (_) @name) @item
