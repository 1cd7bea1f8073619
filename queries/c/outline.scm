; c outline: to be written.
(ERROR) @item
