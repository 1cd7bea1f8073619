; Python tags: definitions and references in the upstream tree-sitter convention.
; A name two patterns match keeps the kind of the match that completes first. The method
; patterns (functions directly in a class body, decorated or not) start at the class, so on the
; same name they complete before the free-function pattern.

(class_definition
  body: (block
    (function_definition name: (identifier) @name) @definition.method))
(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition name: (identifier) @name) @definition.method)))

(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class
(type_alias_statement left: (type (identifier) @name)) @definition.type
(type_alias_statement left: (type (generic_type (identifier) @name))) @definition.type

; Class attributes (`sku: str` in a dataclass) and the attributes `__init__` assigns on self.
(class_definition
  body: (block
    (expression_statement
      (assignment left: (identifier) @name) @definition.field)))
(function_definition
  name: (identifier) @_init
  body: (block
    (expression_statement
      (assignment
        left: (attribute
          object: (identifier) @_self
          attribute: (identifier) @name)) @definition.field))
  (#eq? @_init "__init__")
  (#eq? @_self "self"))

; Module-level names: Python has no `const`; what a module binds at its top level is its API.
(module
  (expression_statement
    (assignment left: (identifier) @name) @definition.constant))

; Calls, decorators (a decorator is called with the function it wraps) and base classes.
(call function: (identifier) @name) @reference.call
(call function: (attribute attribute: (identifier) @name)) @reference.call
(decorator (identifier) @name) @reference.call
(decorator (attribute attribute: (identifier) @name)) @reference.call
(class_definition
  superclasses: (argument_list (identifier) @name)) @reference.class
(class_definition
  superclasses: (argument_list (attribute attribute: (identifier) @name))) @reference.class

; Type annotations: `x: Item`, `-> Optional[Item]`, `list[str]`, `models.Item`. One-letter
; names are type variables, which mean nothing outside their declaration.
((type (identifier) @name) @reference.type
  (#not-match? @name "^[A-Z]$"))
(generic_type (identifier) @name) @reference.type
(type (attribute attribute: (identifier) @name)) @reference.type
(member_type (identifier) @name .) @reference.type

; Imports name the modules a file depends on.
(import_statement name: (dotted_name) @name) @reference.module
(import_statement name: (aliased_import name: (dotted_name) @name)) @reference.module
(import_from_statement module_name: (dotted_name) @name) @reference.module
(import_from_statement module_name: (relative_import (dotted_name) @name)) @reference.module
