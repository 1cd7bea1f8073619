; C++ tags: definitions and references in the upstream tree-sitter convention. Upstream C++ has
; no references; these add calls, `new`, type uses, base classes and quoted includes.
; The C++ grammar is large and each pattern costs milliseconds to compile, so patterns stay few
; and shallow, and rare forms (`a::b::C::m` definitions, `struct X` uses) are left out.

; Methods first (the extractor keeps the first kind found for a name). Inside a class body a
; method's name is a field_identifier; constructors and operators there are found through the
; class body; out-of-line definitions (`void Circle::draw()`) are qualified.
(function_declarator declarator: [(field_identifier) (destructor_name)] @name) @definition.method
(field_declaration_list
  (_
    declarator: (function_declarator
      declarator: [(identifier) (operator_name)] @name)) @definition.method)
(field_declaration_list
  (template_declaration
    (_
      declarator: (function_declarator
        declarator: [(identifier) (operator_name)] @name))) @definition.method)
(function_declarator
  declarator: (qualified_identifier
    name: [(identifier) (destructor_name) (operator_name)] @name)) @definition.method
(function_declarator
  declarator: (qualified_identifier
    name: (qualified_identifier
      name: [(identifier) (destructor_name) (operator_name)] @name))) @definition.method

; Free functions and their prototypes.
(function_declarator declarator: [(identifier) (operator_name)] @name) @definition.function

(namespace_definition name: (_) @name) @definition.module
(class_specifier
  name: [(type_identifier) @name (template_type name: (type_identifier) @name)]
  body: (_)) @definition.class
(struct_specifier
  name: [(type_identifier) @name (template_type name: (type_identifier) @name)]
  body: (_)) @definition.class
(union_specifier name: (type_identifier) @name body: (_)) @definition.class
(enum_specifier name: (type_identifier) @name body: (_)) @definition.class
(concept_definition name: (identifier) @name) @definition.interface
(alias_declaration name: (type_identifier) @name) @definition.type
(type_definition declarator: (type_identifier) @name) @definition.type

(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro

; Constants: `const` / `constexpr` objects at namespace scope (not locals) and in class bodies.
(enumerator name: (identifier) @name) @definition.constant
(translation_unit
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(declaration_list
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(field_declaration
  (type_qualifier)
  declarator: (field_identifier) @name) @definition.constant

(field_declaration declarator: (field_identifier) @name) @definition.field
(field_declaration
  declarator: [(pointer_declarator) (array_declarator) (reference_declarator)]
    (field_identifier) @name) @definition.field

; Includes of project headers (`"canvas.hpp"`).
(preproc_include path: (string_literal (string_content) @name)) @reference.module

(base_class_clause
  [
    (type_identifier) @name
    (qualified_identifier name: (type_identifier) @name)
    (template_type name: (type_identifier) @name)
  ]) @reference.class

; Calls: `f()`, `obj.f()` / `ptr->f()`, `ns::f()`, `a::b::f()`, `f<T>()`, `ns::f<T>()`; and
; `new X(...)`, which calls X's constructor.
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(call_expression
  function: (qualified_identifier
    name: [
      (identifier) @name
      (qualified_identifier name: (identifier) @name)
      (template_function name: (identifier) @name)
    ])) @reference.call
((call_expression function: (template_function name: (identifier) @name)) @reference.call
  (#not-match? @name "^(static|dynamic|const|reinterpret)_cast$"))
(new_expression
  type: [
    (type_identifier) @name
    (template_type name: (type_identifier) @name)
    (qualified_identifier name: (type_identifier) @name)
  ]) @reference.call

; Scopes: the class of an out-of-line member; otherwise a capitalised scope is a type and the
; rest are namespaces (`std::`, `geo::`). Each ends at the name so that, ending together, the
; earlier pattern wins.
(function_declarator
  declarator: (qualified_identifier
    scope: (namespace_identifier) @name
    name: [(identifier) (destructor_name) (operator_name)])) @reference.class
((qualified_identifier scope: (namespace_identifier) @name name: (_)) @reference.type
  (#match? @name "^[A-Z]"))
(qualified_identifier scope: (namespace_identifier) @name name: (_)) @reference.module

; Every other type name (declarations, parameters, casts, template arguments); single capitals
; are template parameters.
((type_identifier) @name @reference.type
  (#not-match? @name "^[A-Z]$"))
