; java outline: to be written.
(ERROR) @item
