; C++ outline: namespaces, classes and templates show their members; function and method bodies
; are elided. Functions are labelled by their declarator (`area`, `Circle::draw`, `~Shape`,
; `operator==`). A template is an item of its own, labelled by its parameters
; (`template <typename T>`), so its first line shows above the function or class it declares.
; Patterns stay few and shallow: the C++ grammar is large and every pattern that descends from
; `function_definition` costs milliseconds to compile.

(namespace_definition "namespace" @context name: (_) @name) @item
(namespace_definition "namespace" @context !name) @item
(template_declaration "template" @context parameters: (_) @name) @item

(class_specifier "class" @context name: (_) @name body: (_)) @item
(struct_specifier "struct" @context name: (_) @name body: (_)) @item
(union_specifier "union" @context name: (_) @name body: (_)) @item
(enum_specifier "enum" @context ["class" "struct"]? @context name: (_) @name body: (_)) @item
(alias_declaration "using" @context name: (_) @name) @item
(concept_definition "concept" @context name: (_) @name) @item
(type_definition
  "typedef" @context
  declarator: [
    (type_identifier) @name
    (pointer_declarator declarator: (type_identifier) @name)
  ]) @item

; Functions and methods, with a body or without one (`= default`), and declarations.
(function_definition
  declarator: [
    (function_declarator declarator: (_) @name)
    (pointer_declarator declarator: (function_declarator declarator: (_) @name))
    (reference_declarator (function_declarator declarator: (_) @name))
  ]
  body: (_)? @body) @item
(declaration
  declarator: [
    (function_declarator declarator: (_) @name)
    (pointer_declarator declarator: (function_declarator declarator: (_) @name))
    (reference_declarator (function_declarator declarator: (_) @name))
  ]) @item
(field_declaration
  declarator: [
    (function_declarator declarator: (_) @name)
    (pointer_declarator declarator: (function_declarator declarator: (_) @name))
    (reference_declarator (function_declarator declarator: (_) @name))
  ]) @item

(preproc_def "#define" @context name: (_) @name) @item
(preproc_function_def "#define" @context name: (_) @name) @item

; Constants at namespace scope (not locals), fields and enumerators.
(translation_unit
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @item)
(declaration_list
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @item)
(field_declaration declarator: (field_identifier) @name) @item
(field_declaration
  declarator: [(pointer_declarator) (array_declarator) (reference_declarator)]
    (field_identifier) @name) @item
(enumerator name: (_) @name) @item
