; TypeScript outline, appended to javascript/outline.scm for the TypeScript and TSX grammars.
; Interfaces, enums and namespaces are containers (their members show); signatures have no body.

(interface_declaration "interface" @context name: (_) @name) @item
(type_alias_declaration "type" @context name: (_) @name) @item
(enum_declaration "enum" @context name: (_) @name) @item
(enum_body name: (_) @name @item)
(enum_assignment name: (_) @name) @item
(abstract_class_declaration "class" @context name: (_) @name) @item
(internal_module "namespace" @context name: (_) @name) @item
(module "module" @context name: (_) @name) @item
(function_signature "function" @context name: (_) @name) @item

; Members of interfaces, of object types a type alias names, and overloads in classes; not the
; members of inline object types (`props: { id: number }`).
(interface_body
  [
    (method_signature ["get" "set"]? @context name: (_) @name)
    (property_signature name: (_) @name)
  ] @item)
(type_alias_declaration
  value: (object_type
    [
      (method_signature ["get" "set"]? @context name: (_) @name)
      (property_signature name: (_) @name)
    ] @item))
(class_body (method_signature ["get" "set"]? @context name: (_) @name) @item)
(abstract_method_signature name: (_) @name) @item
(public_field_definition
  name: (_) @name
  value: [
    (arrow_function body: (_) @body)
    (function_expression body: (_) @body)
  ]) @item
; A plain field lists the values it takes, so that it does not also match a function-valued one
; (see javascript/outline.scm).
(public_field_definition name: (_) @name !value) @item
(public_field_definition
  name: (_) @name
  value: [
    (array) (await_expression) (binary_expression) (call_expression) (false) (identifier)
    (member_expression) (new_expression) (null) (number) (object) (parenthesized_expression)
    (regex) (string) (subscript_expression) (template_string) (ternary_expression) (true)
    (unary_expression) (undefined) (as_expression) (satisfies_expression) (non_null_expression)
  ]) @item

; Module-level constants whose value only TypeScript writes (`{ … } as const`, `satisfies`).
(program
  (lexical_declaration
    kind: "const" @context
    (variable_declarator
      name: (identifier) @name
      value: [(as_expression) (satisfies_expression) (non_null_expression)])) @item)
(program
  (export_statement
    declaration: (lexical_declaration
      kind: "const" @context
      (variable_declarator
        name: (identifier) @name
        value: [(as_expression) (satisfies_expression) (non_null_expression)])) @item))
