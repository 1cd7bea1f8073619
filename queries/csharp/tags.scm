; C# tags: definitions and references in the upstream tree-sitter convention. C# names types
; with plain identifiers, so type references are identifiers in type positions.

(namespace_declaration name: (_) @name) @definition.module
(file_scoped_namespace_declaration name: (_) @name) @definition.module

(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(delegate_declaration name: (identifier) @name) @definition.type

(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(destructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function

; `const` fields are constants (before the field pattern, which ends on the same name).
(field_declaration
  (modifier "const")
  (variable_declaration (variable_declarator name: (identifier) @name))) @definition.constant
(enum_member_declaration name: (identifier) @name) @definition.constant
(field_declaration
  (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field
(event_field_declaration
  (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field
(property_declaration name: (identifier) @name) @definition.field
(event_declaration name: (identifier) @name) @definition.field
(record_declaration
  (parameter_list (parameter name: (identifier) @name) @definition.field))

; `using System.Linq;` names a namespace (an alias `using X = Y;` is left out).
(using_directive !name [(identifier) (qualified_name)] @name) @reference.module

; Base types: by convention an `IName` is an interface, anything else a base class.
((base_list
  [(identifier) @name (generic_name (identifier) @name) (qualified_name name: (identifier) @name)])
  @reference.implementation
  (#match? @name "^I[A-Z]"))
(base_list
  [(identifier) @name (generic_name (identifier) @name) (qualified_name name: (identifier) @name)])
  @reference.class
(primary_constructor_base_type
  type: [(identifier) @name (generic_name (identifier) @name)]) @reference.class

; Calls: `F()`, `x.F()`, `x?.F()`, `F<T>()`, `x.F<T>()`; and `new X(...)`.
((invocation_expression function: (identifier) @name) @reference.call
  (#not-eq? @name "nameof"))
(invocation_expression
  function: (member_access_expression
    name: [(identifier) @name (generic_name (identifier) @name)])) @reference.call
(invocation_expression
  function: (conditional_access_expression
    (member_binding_expression name: (identifier) @name))) @reference.call
(invocation_expression function: (generic_name (identifier) @name)) @reference.call
(object_creation_expression
  type: [
    (identifier) @name
    (generic_name (identifier) @name)
    (qualified_name name: (identifier) @name)
  ]) @reference.call

; Types: identifiers in type positions (parameters, fields, locals, properties, returns, casts,
; type arguments), and capitalised receivers of member access (`Math.Round`, `Currency.Eur`).
; Type parameters (`T`, `TKey`) are not references.
((_
  type: [
    (identifier) @name
    (generic_name (identifier) @name)
    (qualified_name name: (identifier) @name)
  ]) @reference.type
  (#not-match? @name "^([A-Z]|T[A-Z][a-z][A-Za-z0-9]*)$"))
((_
  returns: [
    (identifier) @name
    (generic_name (identifier) @name)
    (qualified_name name: (identifier) @name)
  ]) @reference.type
  (#not-match? @name "^([A-Z]|T[A-Z][a-z][A-Za-z0-9]*)$"))
((type_argument_list
  [
    (identifier) @name
    (generic_name (identifier) @name)
    (qualified_name name: (identifier) @name)
  ]) @reference.type
  (#not-match? @name "^([A-Z]|T[A-Z][a-z][A-Za-z0-9]*)$"))
((member_access_expression expression: (identifier) @name) @reference.type
  (#match? @name "^[A-Z]"))
