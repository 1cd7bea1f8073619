; java tags: to be written.
(ERROR) @name @reference.placeholder
