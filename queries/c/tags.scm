; C tags: definitions and references in the upstream tree-sitter convention. Upstream C has no
; references; these add calls, type uses and quoted includes.

; Functions, also through pointer return types; prototypes declare them too (headers).
(function_definition
  declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition
  declarator: (pointer_declarator
    declarator: (pointer_declarator
      declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(declaration
  declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(declaration
  declarator: (pointer_declarator
    declarator: (function_declarator declarator: (identifier) @name))) @definition.function

(struct_specifier name: (type_identifier) @name body: (_)) @definition.class
(union_specifier name: (type_identifier) @name body: (_)) @definition.class
(enum_specifier name: (type_identifier) @name body: (_)) @definition.class
(type_definition declarator: (type_identifier) @name) @definition.type
(type_definition
  declarator: (pointer_declarator declarator: (type_identifier) @name)) @definition.type
(type_definition
  declarator: (function_declarator
    declarator: (parenthesized_declarator
      (pointer_declarator declarator: (type_identifier) @name)))) @definition.type

(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro

(enumerator name: (identifier) @name) @definition.constant
; File-scope `const` objects (also inside `#if` blocks, as in headers), not locals.
(translation_unit
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(preproc_ifdef
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(preproc_if
  (declaration
    (type_qualifier "const")
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)

(field_declaration declarator: (field_identifier) @name) @definition.field
(field_declaration declarator: (_ declarator: (field_identifier) @name)) @definition.field
(field_declaration
  declarator: (function_declarator
    declarator: (parenthesized_declarator
      (pointer_declarator declarator: (field_identifier) @name)))) @definition.field

; Includes of project headers (`"ring.h"`); system headers are not in the repository.
(preproc_include path: (string_literal (string_content) @name)) @reference.module

; Calls: `f()`, `s.f()` / `p->f()` through function-pointer fields, and function-like macros.
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call

; Types: `struct X` uses, and every other type name (declarations, parameters, casts).
(struct_specifier name: (type_identifier) @name !body) @reference.class
(union_specifier name: (type_identifier) @name !body) @reference.class
(enum_specifier name: (type_identifier) @name !body) @reference.class
(type_identifier) @name @reference.type
