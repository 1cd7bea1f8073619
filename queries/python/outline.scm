; Python outline: classes show their members; function bodies are elided (`async def` is
; labelled `def`: the label names the construct, the line shows its modifiers). Class attributes
; and module-level assignments are listed by name (their line shows the annotation or value).

(class_definition "class" @context name: (identifier) @name) @item
(function_definition "def" @context name: (identifier) @name body: (block) @body) @item
(type_alias_statement "type" @context left: (type) @name) @item

(class_definition
  body: (block
    (expression_statement
      (assignment left: (identifier) @name) @item)))
(module
  (expression_statement
    (assignment left: (identifier) @name) @item))
