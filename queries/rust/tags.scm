; Rust tags: definitions and references in the upstream tree-sitter convention.
; A reference captured at a definition's own name is dropped by the extractor, so the broad
; type pattern at the end does not report `struct Point` as a use of Point.

; Methods first: a function inside an impl or trait is a method, not a free function.
(impl_item
  body: (declaration_list
    (function_item name: (identifier) @name) @definition.method))
(trait_item
  body: (declaration_list
    (function_item name: (identifier) @name) @definition.method))
(trait_item
  body: (declaration_list
    (function_signature_item name: (identifier) @name) @definition.method))

(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.class
(enum_item name: (type_identifier) @name) @definition.class
(union_item name: (type_identifier) @name) @definition.class
(type_item name: (type_identifier) @name) @definition.type
(trait_item name: (type_identifier) @name) @definition.interface
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(enum_variant name: (identifier) @name) @definition.constant
(field_declaration name: (field_identifier) @name) @definition.field

; Implementations
(impl_item trait: (type_identifier) @name) @reference.implementation
(impl_item trait: (generic_type type: (type_identifier) @name)) @reference.implementation
(impl_item trait: (scoped_type_identifier name: (type_identifier) @name)) @reference.implementation

; Calls
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(call_expression
  function: (generic_function function: (identifier) @name)) @reference.call
(call_expression
  function: (generic_function
    function: (scoped_identifier name: (identifier) @name))) @reference.call
(call_expression
  function: (generic_function
    function: (field_expression field: (field_identifier) @name))) @reference.call
(macro_invocation macro: (identifier) @name) @reference.call
(macro_invocation macro: (scoped_identifier name: (identifier) @name)) @reference.call

; Imports: `use crate::parser::Parser;` and `use std::{fmt, io::Write};` use their last names.
(use_declaration argument: (scoped_identifier name: (identifier) @name)) @reference.module
(use_declaration argument: (identifier) @name) @reference.module
(use_list (identifier) @name @reference.module)
(use_list (scoped_identifier name: (identifier) @name) @reference.module)
(use_as_clause path: (scoped_identifier name: (identifier) @name)) @reference.module

(struct_expression name: (type_identifier) @name) @reference.class

; Types and paths: `Parser::new` uses Parser; `Shape::Circle` uses both.
((type_identifier) @name @reference.type
  (#not-eq? @name "Self"))
(scoped_identifier path: (identifier) @name) @reference.type
(scoped_type_identifier path: (identifier) @name) @reference.module
