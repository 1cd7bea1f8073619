; Bash outline: functions (labelled `function name` when written with the keyword) with their
; bodies elided, and the variables the script sets at its top level (`readonly`, `export` or
; plain assignments).

(function_definition "function"? @context name: (word) @name body: (_) @body) @item
(program (variable_assignment name: (variable_name) @name) @item)
(program (declaration_command (variable_assignment name: (variable_name) @name)) @item)
