-- Loaded at startup: deliberately does nothing heavy. The commands are defined and the
-- server started by require('tandem').setup{}; this only guards against double loading.
if vim.g.loaded_tandem then
  return
end
vim.g.loaded_tandem = true
