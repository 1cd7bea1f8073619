; TypeScript tags, appended to javascript/tags.scm for the TypeScript and TSX grammars: what
; TypeScript adds to JavaScript (interfaces, type aliases, enums, abstract classes, signatures,
; namespaces, and type annotations as references).

(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.class
(enum_body name: (property_identifier) @name @definition.constant)
(enum_assignment name: (property_identifier) @name) @definition.constant
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.module
(module name: [(identifier) (nested_identifier)] @name) @definition.module

; Signatures and properties of interfaces, of object types that a type alias names, and method
; overloads in classes; not the members of inline object types (`props: { id: number }`).
(interface_body
  (method_signature
    name: [(property_identifier) (private_property_identifier)] @name) @definition.method)
(class_body
  (method_signature
    name: [(property_identifier) (private_property_identifier)] @name) @definition.method)
(type_alias_declaration
  value: (object_type
    (method_signature
      name: [(property_identifier) (private_property_identifier)] @name) @definition.method))
(abstract_method_signature
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method
(function_signature name: (identifier) @name) @definition.function

; Class fields (function-valued ones are methods, and a field or constant pattern lists the
; values it takes: see javascript/tags.scm), and constructor parameters declared with an
; accessibility modifier (`constructor(private store: Store)`).
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  !value) @definition.field
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [
    (array) (await_expression) (binary_expression) (call_expression) (false) (identifier)
    (member_expression) (new_expression) (null) (number) (object) (parenthesized_expression)
    (regex) (string) (subscript_expression) (template_string) (ternary_expression) (true)
    (unary_expression) (undefined) (as_expression) (satisfies_expression) (non_null_expression)
  ]) @definition.field
(interface_body
  (property_signature name: (property_identifier) @name) @definition.field)
(type_alias_declaration
  value: (object_type
    (property_signature name: (property_identifier) @name) @definition.field))
(method_definition
  name: (property_identifier) @_constructor
  parameters: (formal_parameters
    (required_parameter
      (accessibility_modifier)
      pattern: (identifier) @name) @definition.field)
  (#eq? @_constructor "constructor"))

; Module-level constants whose value only TypeScript writes (`{ … } as const`, `satisfies`).
(program
  (lexical_declaration
    kind: "const"
    (variable_declarator
      name: (identifier) @name
      value: [(as_expression) (satisfies_expression) (non_null_expression)]) @definition.constant))
(program
  (export_statement
    declaration: (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: [(as_expression) (satisfies_expression) (non_null_expression)]) @definition.constant)))

; Heritage, before the catch-all type pattern so that these keep their kind.
(implements_clause (type_identifier) @name) @reference.implementation
(implements_clause (generic_type name: (type_identifier) @name)) @reference.implementation
(extends_clause value: (identifier) @name) @reference.class
(extends_clause value: (member_expression property: (property_identifier) @name)) @reference.class

; Types wherever they are named: annotations, generics, `extends` of interfaces, `as` casts.
; A definition's own name is dropped by the extractor; one-letter names are type parameters,
; which mean nothing outside their declaration.
((type_identifier) @name @reference.type
  (#not-match? @name "^[A-Z]$"))
(nested_type_identifier module: (identifier) @name) @reference.module
