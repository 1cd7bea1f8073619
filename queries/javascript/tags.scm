; JavaScript tags: definitions and references in the upstream tree-sitter convention.
; TypeScript and TSX append their own patterns to these, so every node named here must exist in
; all three grammars. Where they differ (class fields are `field_definition` with `property:` in
; JavaScript, `public_field_definition` with `name:` in TypeScript; JSX exists only in JavaScript
; and TSX), a wildcard node with the field or token that only the wanted node has stands in.
;
; Query matches arrive in the order they complete, not in pattern order: a pattern that ends at
; a name completes before one that goes on to the value. So the field and constant patterns do
; not rely on the method and function patterns winning; they list the values they accept.

; Methods (in classes and object literals), and class fields holding a function.
(method_definition
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method
(class_body
  (_
    property: [(property_identifier) (private_property_identifier)] @name
    value: [(arrow_function) (function_expression)]) @definition.method)
(pair
  key: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
; `exports.parse = function …`, `Parser.prototype.next = () => …`
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]) @definition.function

(class_declaration name: (_) @name) @definition.class
(class name: (_) @name) @definition.class

; Class fields, and what a constructor assigns on `this`.
(class_body
  (_
    property: [(property_identifier) (private_property_identifier)] @name
    !value) @definition.field)
(class_body
  (_
    property: [(property_identifier) (private_property_identifier)] @name
    value: [
      (array) (await_expression) (binary_expression) (call_expression) (false) (identifier)
      (member_expression) (new_expression) (null) (number) (object) (parenthesized_expression)
      (regex) (string) (subscript_expression) (template_string) (ternary_expression) (true)
      (unary_expression) (undefined)
    ]) @definition.field)
(method_definition
  name: (property_identifier) @_constructor
  body: (statement_block
    (expression_statement
      (assignment_expression
        left: (member_expression
          object: (this)
          property: [(property_identifier) (private_property_identifier)] @name)) @definition.field))
  (#eq? @_constructor "constructor"))

; Module-level constants, exported or not; not `const fs = require("fs")`, an import.
(program
  [
    (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (await_expression) (binary_expression) (false) (identifier)
          (member_expression) (new_expression) (null) (number) (object) (parenthesized_expression)
          (regex) (string) (subscript_expression) (template_string) (ternary_expression) (true)
          (unary_expression) (undefined)
        ]) @definition.constant)
    (export_statement
      declaration: (lexical_declaration
        kind: "const"
        (variable_declarator
          name: (identifier) @name
          value: [
            (array) (await_expression) (binary_expression) (false) (identifier)
            (member_expression) (new_expression) (null) (number) (object)
            (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
            (ternary_expression) (true) (unary_expression) (undefined)
          ]) @definition.constant))
  ])
((program
  [
    (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: (call_expression function: (_) @_callee)) @definition.constant)
    (export_statement
      declaration: (lexical_declaration
        kind: "const"
        (variable_declarator
          name: (identifier) @name
          value: (call_expression function: (_) @_callee)) @definition.constant))
  ])
  (#not-eq? @_callee "require"))

; Calls, `new X`, and JSX elements naming a component (`<Button …>`; capitalised, because
; lower-case tags are HTML elements). The closing tag (`</Button>`) has a `/` after its `<`.
(call_expression function: (identifier) @name) @reference.call
(call_expression
  function: (member_expression
    property: [(property_identifier) (private_property_identifier)] @name)) @reference.call
(new_expression constructor: (identifier) @name) @reference.call
(new_expression
  constructor: (member_expression property: (property_identifier) @name)) @reference.call
((_ "<" . name: (identifier) @name) @reference.call
  (#match? @name "^[A-Z]"))
(_ "<" . name: (member_expression property: (property_identifier) @name)) @reference.call

; `class A extends B`: in TypeScript the heritage holds an extends clause instead, whose text
; ("extends B") the name check rejects; typescript/tags.scm covers it.
((class_heritage (_) @name) @reference.class
  (#match? @name "^[A-Za-z_$][A-Za-z0-9_$]*$"))

; Imports: the module a file depends on, by its specifier.
(import_statement source: (string (string_fragment) @name)) @reference.module
(export_statement source: (string (string_fragment) @name)) @reference.module
((call_expression
  function: (identifier) @_require
  arguments: (arguments . (string (string_fragment) @name) .)) @reference.module
  (#eq? @_require "require"))
