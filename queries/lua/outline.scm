; lua outline: to be written.
(ERROR) @item
