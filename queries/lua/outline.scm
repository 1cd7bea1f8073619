; Lua outline: functions labelled as declared (`function Queue:push`, `local function step`) with
; their bodies elided, functions bound to a name or a table field, and what a chunk binds at its
; top level to a literal.

(function_declaration
  "local"? @context
  "function" @context
  name: (_) @name
  body: (block) @body) @item
(function_declaration "local"? @context "function" @context name: (_) @name !body) @item

(variable_declaration
  "local" @context
  (assignment_statement
    (variable_list . name: (identifier) @name .)
    (expression_list
      .
      value: [
        (function_definition body: (block) @body)
        (function_definition !body)
      ]
      .))) @item
(assignment_statement
  (variable_list . name: [(dot_index_expression) (identifier)] @name .)
  (expression_list
    .
    value: [
      (function_definition body: (block) @body)
      (function_definition !body)
    ]
    .)) @item
(field
  name: (identifier) @name
  value: [
    (function_definition body: (block) @body)
    (function_definition !body)
  ]) @item

(chunk
  (variable_declaration
    "local" @context
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list
        value: [
          (number) (string) (true) (false) (nil) (table_constructor) (binary_expression)
          (unary_expression) (parenthesized_expression)
        ]))) @item)
(chunk
  (assignment_statement
    (variable_list name: (dot_index_expression) @name)
    (expression_list
      value: [
        (number) (string) (true) (false) (table_constructor) (binary_expression)
        (unary_expression) (parenthesized_expression)
      ])) @item)
; A class built on a metatable: `local Point = setmetatable({}, mt)`.
((chunk
  (variable_declaration
    "local" @context
    (assignment_statement
      (variable_list name: (identifier) @name)
      (expression_list value: (function_call name: (identifier) @_setmetatable)))) @item)
  (#eq? @_setmetatable "setmetatable"))
