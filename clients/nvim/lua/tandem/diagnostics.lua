-- Forwards the editor's diagnostics to Tandem (`tandem/didChangeDiagnostics`, declared by the
-- `diagnostics` client capability). After the agent edits an open buffer, Tandem waits for the
-- diagnostics of the edited text and tells the agent which errors its edit added, so the agent
-- hears of the problems the user sees, from the language servers and linters Neovim already runs,
-- rather than Tandem starting servers of its own.
--
-- A report carries all of a buffer's diagnostics now (every namespace but Tandem's own client's),
-- replacing the one before, tagged with the version Neovim's LSP client last sent for the buffer
-- (`vim.lsp.util.buf_versions`; what Tandem's document store has): Tandem waits for a report at
-- least as new as its edit. Reports go out on every DiagnosticChanged, not debounced (the edit's
-- result waits on them), only for buffers on files; and when Tandem's client starts or attaches a
-- buffer, for the buffers that have diagnostics or another language server. Nothing raises.
local M = {}

-- Returns the Tandem client when it is running and initialized, else nil (set by setup).
local tandem_client = function()
  return nil
end

-- A 0-based line or column: a whole number, never negative.
local function natural(n)
  if type(n) ~= 'number' or n ~= n or n == math.huge or n == -math.huge then
    return 0
  end
  return math.max(0, math.floor(n))
end

-- An LSP code (a 32-bit integer or a string), or nil.
local function lsp_code(code)
  if type(code) == 'string' then
    return code
  end
  if type(code) == 'number' and code == code and code ~= math.huge and code ~= -math.huge then
    if code == math.floor(code) and code >= -2147483648 and code <= 2147483647 then
      return code
    end
    return tostring(code)
  end
  return nil
end

--- The LSP Diagnostic for the vim.diagnostic entry `d` (columns stay byte offsets). Fields that
--- would not make a valid LSP Diagnostic are left out or made valid, so one odd entry from a
--- linter cannot make Tandem drop the whole report.
function M.to_lsp(d)
  local lnum, col = natural(d.lnum), natural(d.col)
  local end_lnum = d.end_lnum ~= nil and natural(d.end_lnum) or lnum
  local end_col = d.end_col ~= nil and natural(d.end_col) or col
  if end_lnum < lnum or (end_lnum == lnum and end_col < col) then
    end_lnum, end_col = lnum, col
  end
  local lsp = type(d.user_data) == 'table' and type(d.user_data.lsp) == 'table' and d.user_data.lsp or {}
  local code = lsp_code(lsp.code)
  if code == nil then
    code = lsp_code(d.code)
  end
  local severity = type(d.severity) == 'number' and d.severity >= 1 and d.severity <= 4
      and math.floor(d.severity) == d.severity and d.severity
    or nil
  return {
    range = { start = { line = lnum, character = col }, ['end'] = { line = end_lnum, character = end_col } },
    severity = severity,
    source = type(d.source) == 'string' and d.source or nil,
    code = code,
    message = type(d.message) == 'string' and d.message or tostring(d.message or ''),
  }
end

-- The namespace Neovim puts the Tandem client's own diagnostics in, or nil.
local function own_namespace(client)
  local ok, namespace = pcall(vim.lsp.diagnostic.get_namespace, client.id)
  return ok and namespace or nil
end

--- The report of buffer `bufnr` ({ uri, version, diagnostics }), leaving out namespace
--- `skip`; nil for a buffer that is not loaded or not on a file.
function M.report(bufnr, skip)
  if not (vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_is_loaded(bufnr)) then
    return nil
  end
  if vim.api.nvim_buf_get_option(bufnr, 'buftype') ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return nil
  end
  local uri = vim.uri_from_bufnr(bufnr)
  if not uri:match('^file:') then
    return nil
  end
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if skip == nil or d.namespace ~= skip then
      table.insert(diagnostics, M.to_lsp(d))
    end
  end
  local versions = vim.lsp.util.buf_versions
  local version = versions and versions[bufnr]
  return { uri = uri, version = type(version) == 'number' and version or vim.NIL, diagnostics = diagnostics }
end

-- Whether a language server other than Tandem is attached to buffer `bufnr`.
local function checked_by_others(bufnr, tandem_id)
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  for _, c in ipairs(get()) do
    if c.id ~= tandem_id and c.attached_buffers and c.attached_buffers[bufnr] then
      return true
    end
  end
  return false
end

--- Sends the reports of the buffers `bufnrs` to Tandem, if its client runs. `all`: only those
--- with diagnostics or another language server (a buffer nobody checks must not look checked
--- and clean, or Tandem would wait after each edit for a report that never comes).
function M.send(bufnrs, all)
  local ok, err = pcall(function()
    local client = tandem_client()
    if not client then
      return
    end
    local skip = own_namespace(client)
    local documents = {}
    for _, bufnr in ipairs(bufnrs) do
      local report = M.report(bufnr, skip)
      if report and (not all or #report.diagnostics > 0 or checked_by_others(bufnr, client.id)) then
        table.insert(documents, report)
      end
    end
    if #documents > 0 then
      client.notify('tandem/didChangeDiagnostics', { documents = documents })
    end
  end)
  if not ok then
    -- Forwarding is a help for the agent, never worth an error in the user's face.
    pcall(function()
      require('vim.lsp.log').warn('tandem: cannot forward diagnostics: ' .. tostring(err))
    end)
  end
end

--- Sends the reports of every loaded buffer (that has diagnostics or another language server).
function M.send_all()
  M.send(vim.api.nvim_list_bufs(), true)
end

--- Forwards every change from now on. `client` returns the running, initialized Tandem client
--- or nil.
function M.setup(client)
  tandem_client = client
  local group = vim.api.nvim_create_augroup('TandemDiagnostics', { clear = true })
  vim.api.nvim_create_autocmd('DiagnosticChanged', {
    group = group,
    callback = function(a)
      M.send({ a.buf })
    end,
  })
end

return M
