; typescript outline: to be written.
(ERROR) @item
