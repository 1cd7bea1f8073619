; C outline: functions (bodies elided), prototypes, types with their members, macros and file-scope
; constants. A typedef of a named type is an item at its declarator, so `} ring_t;` is shown
; after the members; a typedef of an anonymous struct is labelled with the typedef name instead.

(function_definition
  declarator: (function_declarator declarator: (identifier) @name)
  body: (_) @body) @item
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator declarator: (identifier) @name))
  body: (_) @body) @item
(function_definition
  declarator: (pointer_declarator
    declarator: (pointer_declarator
      declarator: (function_declarator declarator: (identifier) @name)))
  body: (_) @body) @item
; Prototypes at file scope (headers), not local declarations.
(translation_unit
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    ]) @item)
(preproc_ifdef
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    ]) @item)
(preproc_if
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    ]) @item)
(preproc_else
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    ]) @item)

(struct_specifier "struct" @context name: (_) @name body: (_)) @item
(union_specifier "union" @context name: (_) @name body: (_)) @item
(enum_specifier "enum" @context name: (_) @name body: (_)) @item
(type_definition
  "typedef" @context
  type: [
    (struct_specifier "struct" @context !name body: (_))
    (union_specifier "union" @context !name body: (_))
    (enum_specifier "enum" @context !name body: (_))
  ] @item
  declarator: (type_identifier) @name)
(type_definition
  "typedef" @context
  type: [
    (struct_specifier name: (_))
    (union_specifier name: (_))
    (enum_specifier name: (_))
  ]
  declarator: (type_identifier) @name @item)
(type_definition
  "typedef" @context
  type: [(primitive_type) (type_identifier) (sized_type_specifier)]
  declarator: [
    (type_identifier) @name
    (pointer_declarator declarator: (type_identifier) @name)
    (function_declarator
      declarator: (parenthesized_declarator
        (pointer_declarator declarator: (type_identifier) @name)))
  ]) @item

(preproc_def "#define" @context name: (_) @name) @item
(preproc_function_def "#define" @context name: (_) @name) @item

(translation_unit
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @item)
(preproc_ifdef
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @item)
(preproc_if
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @item)
(preproc_else
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @item)

(enumerator name: (_) @name) @item
(field_declaration declarator: (field_identifier) @name) @item
(field_declaration declarator: (_ declarator: (field_identifier) @name)) @item
(field_declaration
  declarator: (function_declarator
    declarator: (parenthesized_declarator
      (pointer_declarator declarator: (field_identifier) @name)))) @item
