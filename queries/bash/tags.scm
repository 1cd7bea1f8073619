; Bash tags: functions, the variables a script sets at its top level, and commands as calls
; (a function is called like any other command). `source file` names a script it depends on.

(function_definition name: (word) @name) @definition.function
(program (variable_assignment name: (variable_name) @name) @definition.constant)
(program
  (declaration_command (variable_assignment name: (variable_name) @name) @definition.constant))

((command name: (command_name (word) @name)) @reference.call
  (#not-any-of? @name "source" "."))
((command
  name: (command_name (word) @_source)
  .
  argument: (word) @name) @reference.module
  (#any-of? @_source "source" "."))
