-- Shared helpers for the headless end-to-end scenarios in this folder.
--
-- Each scenario is a script run by `tests/e2e/nvim.rs` as
--   nvim --headless -u NONE -i NONE -n --cmd "set rtp^=<plugin>" -c "luafile <scenario>"
-- in a temporary workspace whose user settings choose a replay model. The scenario loads this
-- module with `dofile`, calls `run(fn)`, and the process exits 0 when `fn` returns and 1 (with
-- the reason, the chat buffer and the server log on stderr) when anything fails or times out.

local M = {}

-- Every wait is bounded so a scenario fails with a reason instead of hanging until the Rust
-- side's 60 s kill.
M.TIMEOUT_MS = 10000

local function read_file(path)
  local file = io.open(path, 'r')
  if not file then
    return nil
  end
  local text = file:read('*a')
  file:close()
  return text
end
M.read_file = read_file

-- The last lines of the server's log, so a failure says what the server saw.
local function log_tail()
  local path = os.getenv('TANDEM_LOG_FILE')
  local text = path and read_file(path)
  if not text then
    return '(no server log)'
  end
  local lines = vim.split(text, '\n', true)
  local first = math.max(1, #lines - 40)
  return table.concat(vim.list_slice(lines, first), '\n')
end

local function chat_dump()
  local ok, tandem = pcall(require, 'tandem')
  if not ok then
    return '(the tandem module did not load)'
  end
  local got, buf = pcall(tandem.chat_buffer)
  if not got or not buf or not vim.api.nvim_buf_is_valid(buf) then
    return '(no chat buffer)'
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

--- Ends Neovim with exit code 1 after writing `message` and what helps to debug it to stderr.
function M.fail(message)
  io.stderr:write('FAIL: ' .. tostring(message) .. '\n')
  io.stderr:write('--- chat buffer ---\n' .. chat_dump() .. '\n')
  io.stderr:write('--- messages ---\n' .. vim.fn.execute('messages') .. '\n')
  io.stderr:write('--- server log (tail) ---\n' .. log_tail() .. '\n')
  io.stderr:flush()
  vim.cmd('cquit 1')
end

--- Runs the scenario `body` and exits: 0 when it returns, 1 when it raises.
function M.run(body)
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    M.fail(err)
    return
  end
  io.stdout:write('ok\n')
  io.stdout:flush()
  -- `qall!` rather than `cquit 0`: it stops the language client the normal way.
  vim.cmd('qall!')
end

--- Raises unless `cond`; `run` turns that into a failure.
function M.check(cond, message)
  if not cond then
    error(message, 2)
  end
end

--- Waits (processing events) until `cond()` is true; raises naming `what` when it is not
--- within `timeout_ms`.
function M.wait_for(what, cond, timeout_ms)
  local ok = vim.wait(timeout_ms or M.TIMEOUT_MS, function()
    local good, value = pcall(cond)
    return good and value
  end, 20)
  if not ok then
    error('timed out waiting for ' .. what, 2)
  end
end

--- The lines of buffer `buf`.
function M.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- The text of buffer `buf`, lines joined with `\n`.
function M.text(buf)
  return table.concat(M.lines(buf), '\n')
end

--- Replaces vim.notify with a recorder. Returns the list of what it was asked to say
--- (`{ msg = ..., level = ... }`, in order; clear it in place to start over) and a function
--- that prints that list for failure messages.
function M.capture_notifications()
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = tostring(msg), level = level })
  end
  local function said()
    local out = {}
    for _, note in ipairs(notes) do
      table.insert(out, string.format('[%s] %s', tostring(note.level), note.msg))
    end
    return table.concat(out, '\n')
  end
  return notes, said
end

--- How many times `needle` (plain text) occurs in `haystack`.
function M.count(haystack, needle)
  local n, from = 0, 1
  while true do
    local at = haystack:find(needle, from, true)
    if not at then
      return n
    end
    n = n + 1
    from = at + #needle
  end
end

--- The chat buffer's text, or '' when there is none yet.
function M.chat_text(session_id)
  local buf = require('tandem').chat_buffer(session_id)
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return ''
  end
  return M.text(buf)
end

--- `require('tandem').setup` with the built server and `opts` on top.
function M.setup(opts)
  local bin = os.getenv('TANDEM_BIN')
  M.check(bin and bin ~= '', 'TANDEM_BIN is not set: run this through `cargo test -p tandem --test all nvim`')
  local cmd = { bin }
  local log = os.getenv('TANDEM_LOG_FILE')
  if log then
    vim.list_extend(cmd, { '--log-file', log })
  end
  table.insert(cmd, 'lsp')
  vim.cmd('filetype on')
  require('tandem').setup(vim.tbl_extend('force', { cmd = cmd, notify = false }, opts or {}))
end

--- Edits `path` (relative to the workspace) and waits until the Tandem client is attached to it
--- and initialized; returns the buffer and the client.
function M.open(path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  local tandem = require('tandem')
  local client
  M.wait_for('the tandem client to attach to ' .. path, function()
    local id = tandem.client_id()
    client = id and vim.lsp.get_client_by_id(id)
    return client and client.initialized and vim.lsp.buf_is_attached(buf, id)
  end)
  return buf, client
end

--- Waits until the server says no turn of `session_id` runs or waits (a protocol-level check,
--- independent of how the plugin tracks turns).
function M.wait_session_idle(client, session_id)
  M.wait_for('session ' .. session_id .. ' to finish its turns', function()
    local response = client.request_sync('tandem/sessions', vim.empty_dict(), 2000)
    if not response or response.err or not response.result then
      return false
    end
    for _, session in ipairs(response.result.sessions or {}) do
      if session.sessionId == session_id then
        return session.running == false
      end
    end
    return false
  end)
end

return M
