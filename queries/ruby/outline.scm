; ruby outline: to be written.
(ERROR) @item
