; go outline: to be written.
(ERROR) @item
