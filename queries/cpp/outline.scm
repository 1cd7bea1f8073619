; cpp outline: to be written.
(ERROR) @item
