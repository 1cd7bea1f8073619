; csharp outline: to be written.
(ERROR) @item
