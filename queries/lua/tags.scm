; Lua tags: definitions and references in the upstream tree-sitter convention.
; `function T:m()` defines a method; `function T.f()`, `function f()`, `local function f()` and
; a function value bound to a name (`M.f = function … end`) define functions. Query matches
; arrive in the order they complete, so the constant patterns list the values a constant has
; rather than rely on the function patterns matching first.

(function_declaration
  name: (method_index_expression method: (identifier) @name)) @definition.method
(function_declaration
  name: (dot_index_expression field: (identifier) @name)) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(assignment_statement
  (variable_list
    .
    name: [
      (identifier) @name
      (dot_index_expression field: (identifier) @name)
    ]
    .)
  (expression_list . value: (function_definition) .)) @definition.function
(field name: (identifier) @name value: (function_definition)) @definition.function

; What a chunk binds at its top level to a literal: `local MAX = 16`, `M.VERSION = "1.2"`. A
; table bound to a PascalCase name (`local Queue = {}`, `local Point = setmetatable({}, mt)`)
; is, by convention, a class.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list
        value: [
          (number) (string) (true) (false) (nil) (binary_expression) (unary_expression)
          (parenthesized_expression)
        ]))) @definition.constant)
((chunk
  (variable_declaration
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list value: (table_constructor)))) @definition.constant)
  (#not-match? @name "^[A-Z][a-z]"))
((chunk
  (variable_declaration
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list value: (table_constructor)))) @definition.class)
  (#match? @name "^[A-Z][a-z]"))
((chunk
  (variable_declaration
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list value: (function_call name: (identifier) @_setmetatable)))) @definition.class)
  (#eq? @_setmetatable "setmetatable")
  (#match? @name "^[A-Z][a-z]"))
(chunk
  (assignment_statement
    (variable_list name: (dot_index_expression field: (identifier) @name))
    (expression_list
      value: [
        (number) (string) (true) (false) (table_constructor) (binary_expression)
        (unary_expression) (parenthesized_expression)
      ])) @definition.field)

; The fields a constructor sets on its object (`function Queue.new() … self.items = {} …`).
(function_declaration
  name: (dot_index_expression field: (identifier) @_constructor)
  body: (block
    (assignment_statement
      (variable_list
        name: (dot_index_expression
          table: (identifier) @_self
          field: (identifier) @name))) @definition.field)
  (#any-of? @_constructor "new" "init")
  (#eq? @_self "self"))

; Calls. A capitalised table that a function is called on (`Queue.new()`) or that becomes a
; metatable is taken for a class.
(function_call name: (identifier) @name) @reference.call
(function_call name: (dot_index_expression field: (identifier) @name)) @reference.call
(function_call name: (method_index_expression method: (identifier) @name)) @reference.call
((function_call name: (dot_index_expression table: (identifier) @name)) @reference.class
  (#match? @name "^[A-Z]"))
((function_call
  name: (identifier) @_setmetatable
  arguments: (arguments (_) . (identifier) @name .)) @reference.class
  (#eq? @_setmetatable "setmetatable"))

((function_call
  name: (identifier) @_require
  arguments: (arguments . (string content: (string_content) @name) .)) @reference.module
  (#eq? @_require "require"))
