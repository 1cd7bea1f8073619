; Go outline: functions and methods with their bodies elided (a method labelled with its receiver
; as Go writes it: `func (c *Cache) Get`), types with their fields and interface methods, and
; package-level constants and variables. Function literals bound to a name inside a body are
; items too, so the cursor's chain reaches into them.

(function_declaration "func" @context name: (identifier) @name body: (block) @body) @item
(method_declaration
  "func" @context
  receiver: (parameter_list) @context
  name: (field_identifier) @name
  body: (block) @body) @item

; A parenthesised group is an item of its own, so that its opening line shows above its members.
(const_declaration "const" @context "(") @item
(var_declaration "var" @context (var_spec_list)) @item
(type_declaration "type" @context "(") @item

(type_declaration "type" @context (type_spec name: (type_identifier) @name) @item)
(type_declaration "type" @context (type_alias name: (type_identifier) @name) @item)
(field_declaration name: (field_identifier) @name) @item
(method_elem name: (field_identifier) @name) @item
; Embedded structs and interfaces, labelled by their type.
(field_declaration !name type: (_) @name) @item
(interface_type (type_elem) @name @item)

(const_declaration "const" @context (const_spec name: (identifier) @name) @item)
(source_file (var_declaration "var" @context (var_spec name: (identifier) @name) @item))
(source_file
  (var_declaration "var" @context (var_spec_list (var_spec name: (identifier) @name) @item)))

(short_var_declaration
  left: (expression_list . (identifier) @name .)
  right: (expression_list . (func_literal body: (block) @body) .)) @item
(var_spec
  name: (identifier) @name
  value: (expression_list . (func_literal body: (block) @body) .)) @item
