; javascript outline: to be written.
(ERROR) @item
