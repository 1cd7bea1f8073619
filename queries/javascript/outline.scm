; JavaScript outline (TypeScript and TSX append typescript/outline.scm, so only nodes all three
; grammars share; see javascript/tags.scm for the wildcards that stand in for class fields).
; Classes show their members; function bodies are elided. Functions bound to a `const`, `let` or
; `var` are labelled with that keyword; methods by their name (with `get` / `set`).
;
; An item two patterns match is kept as the first match to complete, which is the one that ends
; earliest in the source, so the field and constant patterns list the values they accept rather
; than also match the function-valued ones.

(class_declaration "class" @context name: (_) @name) @item
(class "class" @context name: (_) @name) @item

(function_declaration "function" @context name: (_) @name body: (_) @body) @item
(generator_function_declaration "function" @context name: (_) @name body: (_) @body) @item
(method_definition ["get" "set"]? @context name: (_) @name body: (_) @body) @item
(lexical_declaration
  kind: _ @context
  (variable_declarator
    name: (identifier) @name
    value: [
      (arrow_function body: (_) @body)
      (function_expression body: (_) @body)
      (generator_function body: (_) @body)
    ])) @item
(variable_declaration
  "var" @context
  (variable_declarator
    name: (identifier) @name
    value: [
      (arrow_function body: (_) @body)
      (function_expression body: (_) @body)
      (generator_function body: (_) @body)
    ])) @item
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [
    (arrow_function body: (_) @body)
    (function_expression body: (_) @body)
  ]) @item
(pair
  key: (property_identifier) @name
  value: [
    (arrow_function body: (_) @body)
    (function_expression body: (_) @body)
  ]) @item

; Class fields.
(class_body
  (_
    property: (_) @name
    value: [
      (arrow_function body: (_) @body)
      (function_expression body: (_) @body)
    ]) @item)
(class_body (_ property: (_) @name !value) @item)
(class_body
  (_
    property: (_) @name
    value: [
      (array) (await_expression) (binary_expression) (call_expression) (false) (identifier)
      (member_expression) (new_expression) (null) (number) (object) (parenthesized_expression)
      (regex) (string) (subscript_expression) (template_string) (ternary_expression) (true)
      (unary_expression) (undefined)
    ]) @item)

; Module-level constants, exported or not; not `const fs = require("fs")`, an import.
(program
  [
    (lexical_declaration
      kind: "const" @context
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (await_expression) (binary_expression) (false) (identifier)
          (member_expression) (new_expression) (null) (number) (object) (parenthesized_expression)
          (regex) (string) (subscript_expression) (template_string) (ternary_expression) (true)
          (unary_expression) (undefined)
        ])) @item
    (export_statement
      declaration: (lexical_declaration
        kind: "const" @context
        (variable_declarator
          name: (identifier) @name
          value: [
            (array) (await_expression) (binary_expression) (false) (identifier)
            (member_expression) (new_expression) (null) (number) (object)
            (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
            (ternary_expression) (true) (unary_expression) (undefined)
          ])) @item)
  ])
((program
  [
    (lexical_declaration
      kind: "const" @context
      (variable_declarator
        name: (identifier) @name
        value: (call_expression function: (_) @_callee))) @item
    (export_statement
      declaration: (lexical_declaration
        kind: "const" @context
        (variable_declarator
          name: (identifier) @name
          value: (call_expression function: (_) @_callee))) @item)
  ])
  (#not-eq? @_callee "require"))
