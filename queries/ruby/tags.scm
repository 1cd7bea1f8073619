; Ruby tags: definitions and references in the upstream tree-sitter convention. Calls are `call`
; nodes only: a bare identifier may be a local variable or a method call, so it is not reported.

; A `def` at the top level is a function; anywhere else (class, module, `class << self`, a
; `Struct.new do` block) it is a method. Patterns that end on the same node keep the first.
(program (method name: (_) @name) @definition.function)
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method

(class name: [(constant) @name (scope_resolution name: (_) @name)]) @definition.class
(module name: [(constant) @name (scope_resolution name: (_) @name)]) @definition.module
; `Point = Struct.new(...)`, `Error = Class.new(StandardError)` and `Data.define` make classes.
((assignment left: (constant) @name right: (call) @_value) @definition.class
  (#match? @_value "^(Struct|Class)\\.new|^Data\\.define"))
(assignment left: (constant) @name right: (_)) @definition.constant

; `require "json"`, `require_relative "store/base"`.
((call
  method: (identifier) @_method
  arguments: (argument_list . (string (string_content) @name))) @reference.module
  (#match? @_method "^(require|require_relative|load)$"))

; Inheritance and mixins.
(superclass [(constant) @name (scope_resolution name: (constant) @name)]) @reference.class
((call
  method: (identifier) @_method
  arguments: (argument_list
    [(constant) @name (scope_resolution name: (constant) @name)])) @reference.implementation
  (#match? @_method "^(include|extend|prepend)$"))

(call method: (identifier) @name) @reference.call

; Constants: a receiver (`JSON.parse`, `Invoice.new`) or the last part of a path is a class; the
; leading parts of a path (`Billing::`) are modules; other ALL_CAPS names are constants, and the
; rest classes (`raise InvoiceError`).
(call receiver: (constant) @name) @reference.class
(call receiver: (scope_resolution name: (constant) @name)) @reference.class
(scope_resolution scope: (constant) @name) @reference.module
((constant) @name @reference.constant
  (#match? @name "^[A-Z][A-Z0-9_]*$"))
(constant) @name @reference.class
