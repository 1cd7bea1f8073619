; bash outline: to be written.
(ERROR) @item
