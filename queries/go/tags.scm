; Go tags: definitions and references in the upstream tree-sitter convention.
; Query matches arrive in the order they complete, not in pattern order, so the type patterns
; name the kinds of type they accept instead of relying on a catch-all coming last.

(method_declaration name: (field_identifier) @name) @definition.method
(method_elem name: (field_identifier) @name) @definition.method
(function_declaration name: (identifier) @name) @definition.function

(type_spec name: (type_identifier) @name type: (struct_type)) @definition.class
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec
  name: (type_identifier) @name
  type: [
    (type_identifier) (qualified_type) (generic_type) (pointer_type) (slice_type) (array_type)
    (map_type) (channel_type) (function_type) (negated_type) (parenthesized_type)
  ]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type

(field_declaration name: (field_identifier) @name) @definition.field
(const_spec name: (identifier) @name) @definition.constant
; Package-level variables (sentinel errors, defaults) are part of a package's API.
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.constant))
(source_file
  (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.constant)))
(package_clause (package_identifier) @name) @definition.module

; Calls: `f()`, `pkg.F()`, `x.Method()`, `F[T]()`.
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (selector_expression field: (field_identifier) @name)) @reference.call
(call_expression function: (index_expression operand: (identifier) @name)) @reference.call
(call_expression
  function: (index_expression
    operand: (selector_expression field: (field_identifier) @name))) @reference.call

; Composite literals build a value of their type, before the catch-all type pattern.
(composite_literal type: (type_identifier) @name) @reference.class
(composite_literal type: (generic_type type: (type_identifier) @name)) @reference.class
(composite_literal type: (qualified_type name: (type_identifier) @name)) @reference.class

; Types wherever they are named; one-letter names are type parameters.
((type_identifier) @name @reference.type
  (#not-match? @name "^[A-Z]$"))
(qualified_type package: (package_identifier) @name) @reference.module

(import_spec
  path: (interpreted_string_literal (interpreted_string_literal_content) @name)) @reference.module
