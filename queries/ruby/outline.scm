; Ruby outline: modules and classes show their members; method bodies are elided. A singleton
; method (`def self.load`) is labelled `def load`: a label joins words with spaces, and
; `def self load` would read worse.

(module "module" @context name: (_) @name) @item
(class "class" @context name: (_) @name) @item
(singleton_class "class" @context "<<" @context value: (_) @name) @item
(method "def" @context name: (_) @name body: (_)? @body) @item
(singleton_method "def" @context name: (_) @name body: (_)? @body) @item
(assignment left: (constant) @name) @item
((call
  method: (identifier) @context
  arguments: (argument_list) @name) @item
  (#match? @context "^attr_(reader|writer|accessor)$"))
