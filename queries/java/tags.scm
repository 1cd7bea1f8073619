; Java tags: definitions and references in the upstream tree-sitter convention.
; Every Java method lives in a type, so methods need no enclosing pattern. Constructors are
; methods named after their class, so `new Inventory(...)` (a call) finds them.

(package_declaration (scoped_identifier) @name) @definition.module
(package_declaration (identifier) @name) @definition.module

(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface

(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(compact_constructor_declaration name: (identifier) @name) @definition.method
(annotation_type_element_declaration name: (identifier) @name) @definition.method

; `static final` fields and interface fields are constants; other fields are fields.
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(field_declaration
  (modifiers "final" "static")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(constant_declaration
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(enum_constant name: (identifier) @name) @definition.constant
(field_declaration
  declarator: (variable_declarator name: (identifier) @name)) @definition.field
(record_declaration
  parameters: (formal_parameters
    (formal_parameter name: (identifier) @name) @definition.field))

; Imports: the last part names a class (or a static member); a wildcard names a package.
(import_declaration (scoped_identifier name: (identifier) @name)) @reference.class
(import_declaration (scoped_identifier) @name (asterisk)) @reference.module

; Inheritance
(superclass (type_identifier) @name) @reference.class
(superclass (generic_type (type_identifier) @name)) @reference.class
(super_interfaces (type_list (type_identifier) @name)) @reference.implementation
(super_interfaces
  (type_list (generic_type (type_identifier) @name))) @reference.implementation

; Calls: method invocations, `new X(...)` and method references `X::m`.
(method_invocation name: (identifier) @name) @reference.call
(object_creation_expression type: (type_identifier) @name) @reference.call
(object_creation_expression type: (generic_type (type_identifier) @name)) @reference.call
(object_creation_expression
  type: (scoped_type_identifier (type_identifier) @name .)) @reference.call
(method_reference (_) (identifier) @name .) @reference.call

; A capitalised receiver (`Optional.of`, `System.out`) is a class, not a variable.
((method_invocation object: (identifier) @name) @reference.type
  (#match? @name "^[A-Z]")
  (#not-match? @name "^[A-Z0-9_]+$"))
((field_access object: (identifier) @name) @reference.type
  (#match? @name "^[A-Z]")
  (#not-match? @name "^[A-Z0-9_]+$"))
((method_reference . (identifier) @name) @reference.type
  (#match? @name "^[A-Z]"))

; Types: lowercase parts of a qualified type (`java.util.List`) are packages.
((scoped_type_identifier (type_identifier) @name) @reference.module
  (#match? @name "^[a-z]"))
(type_identifier) @name @reference.type
(marker_annotation name: (identifier) @name) @reference.type
(annotation name: (identifier) @name) @reference.type
