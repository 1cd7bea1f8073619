-- Answers `tandem/saveDocuments`: before the agent runs a shell command, a search or an MCP
-- tool, Tandem asks for the open documents it edited that are not saved, so that what runs sees
-- its change (`params.uris`). Each listed buffer that is loaded is saved as it is, the whole buffer with
-- whatever the user typed in it, by a normal `:write`, so BufWrite autocommands and the LSP
-- didSave run. The answer lists the documents whose file now holds the buffer: those written,
-- and those that were not modified (and whose file did not change since). The others (not
-- loaded, or not saved) are left out, and why a save failed is said in one warning; nothing
-- raises.
--
-- `:write` of a file that changed on disk since Neovim read it asks "Do you really want to write
-- to it (y/n)?", and would ask it inside this request, which the turn waits on (a headless
-- Neovim hangs there). Whether to overwrite that change is the user's call anyway, so such a
-- buffer is not written. Neovim keeps the time it read a file to itself, so this module
-- remembers the file's modification time whenever Neovim reads or writes it (`remember`, from
-- the plugin's BufReadPost and BufWritePost autocommands). 'confirm' is off while writing, so
-- that a failure is an error rather than a dialog.
local M = {}

-- bufnr -> the file's modification time ({ sec, nsec }) when Neovim last read or wrote it, or
-- false when there was no file then.
local disk_mtimes = {}

local function mtime(bufnr)
  local stat = vim.loop.fs_stat(vim.api.nvim_buf_get_name(bufnr))
  return stat and stat.mtime or false
end

--- Notes the modification time of buffer `bufnr`'s file, as Neovim just read or wrote it.
--- `keep`: only when nothing is known yet (a buffer read before the plugin's setup).
function M.remember(bufnr, keep)
  if keep and disk_mtimes[bufnr] ~= nil then
    return
  end
  disk_mtimes[bufnr] = mtime(bufnr)
end

-- Why buffer `bufnr` must not be written over its file, or nil.
local function changed_on_disk(bufnr)
  local known = disk_mtimes[bufnr]
  if known == nil then
    return nil
  end
  local now = mtime(bufnr)
  if known and not now then
    return 'it was deleted on disk since Neovim read it; save it yourself (:w) if it should be back'
  end
  if now and not (known and now.sec == known.sec and now.nsec == known.nsec) then
    return 'it changed on disk since Neovim read it; save it yourself (:w) to decide which version to keep'
  end
  return nil
end

-- Writes buffer `bufnr`; returns nil, or why it is still not saved.
local function write(bufnr)
  local confirm = vim.o.confirm
  vim.o.confirm = false
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd('silent write')
  end)
  vim.o.confirm = confirm
  if not ok then
    return tostring(err)
  end
  if vim.api.nvim_buf_get_option(bufnr, 'modified') then
    return ':write left it modified'
  end
  return nil
end

--- Saves the loaded buffers of `uris`. Returns the URIs whose file holds the buffer (written,
--- or not modified and unchanged on disk since), and a line per buffer that could not be
--- saved, saying why.
function M.save(uris)
  local saved, failed = {}, {}
  for _, uri in ipairs(uris) do
    local ok, bufnr = pcall(vim.uri_to_bufnr, uri)
    if ok and vim.api.nvim_buf_is_loaded(bufnr) then
      local why = changed_on_disk(bufnr)
      if not why and vim.api.nvim_buf_get_option(bufnr, 'modified') then
        why = write(bufnr)
      end
      if why then
        table.insert(failed, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':~:.') .. ': ' .. why)
      else
        table.insert(saved, uri)
      end
    end
  end
  return saved, failed
end

--- The `tandem/saveDocuments` handler for vim.lsp.start_client's `handlers`.
function M.handler(_, params, _)
  local uris = type(params) == 'table' and params.uris
  local saved, failed = M.save(type(uris) == 'table' and uris or {})
  if #failed > 0 then
    vim.notify(
      "Tandem: could not save the agent's edits, so what it runs next sees these files without them:\n"
        .. table.concat(failed, '\n'),
      vim.log.levels.WARN
    )
  end
  return { saved = saved }
end

return M
