; python outline: to be written.
(ERROR) @item
