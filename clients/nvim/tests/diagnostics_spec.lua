-- Unit tests for lua/tandem/diagnostics.lua, without a server: vim.diagnostic entries become LSP
-- Diagnostics, a buffer's report holds every namespace but Tandem's own with the buffer's LSP
-- version, and the DiagnosticChanged autocommand sends it to a stand-in client. Run with
--   nvim --headless -u NONE -c "set rtp+=clients/nvim" -c "luafile clients/nvim/tests/diagnostics_spec.lua"
-- Exits 0 when every case passes, 1 (failures on stderr) otherwise.
local diagnostics = require('tandem.diagnostics')

local failures = {}
local count = 0
local function case(name, body)
  count = count + 1
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    failures[#failures + 1] = name .. ': ' .. tostring(err)
  end
end

local function check(cond, message)
  if not cond then
    error(message, 2)
  end
end

local function same(got, want)
  check(vim.deep_equal(got, want), 'got ' .. vim.inspect(got) .. '\nwant ' .. vim.inspect(want))
end

case('an LSP diagnostic keeps its range, severity, source, code and message', function()
  same(
    diagnostics.to_lsp({
      lnum = 5,
      col = 15,
      end_lnum = 5,
      end_col = 18,
      severity = vim.diagnostic.severity.ERROR,
      source = 'Pyright',
      code = 'reportArgumentType',
      message = 'Argument of type "Literal[\'2\']" cannot be assigned',
      user_data = { lsp = { code = 'reportArgumentType' } },
    }),
    {
      range = { start = { line = 5, character = 15 }, ['end'] = { line = 5, character = 18 } },
      severity = 1,
      source = 'Pyright',
      code = 'reportArgumentType',
      message = 'Argument of type "Literal[\'2\']" cannot be assigned',
    }
  )
end)

case("the LSP code wins over Neovim's, and the severities are LSP's", function()
  local got = diagnostics.to_lsp({
    lnum = 0,
    col = 0,
    severity = vim.diagnostic.severity.HINT,
    code = 'neovim',
    message = 'm',
    user_data = { lsp = { code = 7 } },
  })
  same(got.code, 7)
  same(got.severity, 4)
  same(diagnostics.to_lsp({ lnum = 0, col = 0, severity = vim.diagnostic.severity.WARN, message = 'm' }).severity, 2)
end)

case('a linter entry becomes a valid LSP Diagnostic', function()
  -- No end, a float and a huge code, a table source, a message that is not a string.
  same(
    diagnostics.to_lsp({ lnum = 3, col = 2.5, code = 4294967296, source = {}, message = 12, severity = 9 }),
    {
      range = { start = { line = 3, character = 2 }, ['end'] = { line = 3, character = 2 } },
      code = '4294967296',
      message = '12',
    }
  )
  -- An end before the start, a negative line.
  same(
    diagnostics.to_lsp({ lnum = -1, col = 4, end_lnum = 0, end_col = 1, message = 'x', code = 1.5 }),
    {
      range = { start = { line = 0, character = 4 }, ['end'] = { line = 0, character = 4 } },
      code = '1.5',
      message = 'x',
    }
  )
end)

local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')
local path = dir .. '/calc.py'
local file = assert(io.open(path, 'w'))
file:write('x = 1\ny = 2\n')
file:close()
vim.cmd('edit ' .. vim.fn.fnameescape(path))
local buf = vim.api.nvim_get_current_buf()
local linter = vim.api.nvim_create_namespace('spec-linter')
local own = vim.api.nvim_create_namespace('spec-tandem')
vim.lsp.util.buf_versions[buf] = 7

case("a report holds every namespace but Tandem's, at the buffer's LSP version", function()
  vim.diagnostic.set(linter, buf, { { lnum = 1, col = 0, message = 'y is unused', source = 'lint' } })
  vim.diagnostic.set(own, buf, { { lnum = 0, col = 0, message = 'from Tandem' } })
  local report = diagnostics.report(buf, own)
  same(report.uri, vim.uri_from_fname(path))
  same(report.version, 7)
  same(#report.diagnostics, 1)
  same(report.diagnostics[1].message, 'y is unused')
  same(#diagnostics.report(buf, nil).diagnostics, 2)
  vim.diagnostic.reset(own, buf)
end)

case('a buffer that is not on a file has no report', function()
  local scratch = vim.api.nvim_create_buf(false, true)
  same(diagnostics.report(scratch, nil), nil)
  vim.api.nvim_buf_set_name(scratch, 'tandem://chat')
  same(diagnostics.report(scratch, nil), nil)
end)

case('an unknown version is null', function()
  vim.lsp.util.buf_versions[buf] = nil
  same(diagnostics.report(buf, nil).version, vim.NIL)
  vim.lsp.util.buf_versions[buf] = 7
end)

case('DiagnosticChanged sends the whole buffer once the client runs, and nothing raises', function()
  local sent = {}
  local running = nil
  diagnostics.setup(function()
    return running
  end)
  vim.diagnostic.set(linter, buf, { { lnum = 0, col = 1, message = 'before the client' } })
  same(#sent, 0)
  running = {
    id = -1,
    notify = function(method, params)
      table.insert(sent, { method = method, params = params })
    end,
  }
  vim.diagnostic.set(linter, buf, { { lnum = 0, col = 1, message = 'a' }, { lnum = 1, col = 0, message = 'b' } })
  same(#sent, 1)
  same(sent[1].method, 'tandem/didChangeDiagnostics')
  local documents = sent[1].params.documents
  same(#documents, 1)
  same(documents[1].version, 7)
  same(#documents[1].diagnostics, 2)
  -- Cleared: an empty report replaces the last.
  vim.diagnostic.reset(linter, buf)
  same(#sent, 2)
  same(sent[2].params.documents[1].diagnostics, {})
  -- At start, a buffer without diagnostics or another server is left out.
  diagnostics.send_all()
  same(#sent, 2)
  vim.diagnostic.set(linter, buf, { { lnum = 0, col = 1, message = 'a' } })
  diagnostics.send_all()
  same(#sent, 4)
  same(sent[4].params.documents[1].uri, vim.uri_from_fname(path))
  -- A client that fails is not the user's problem.
  running.notify = function()
    error('the pipe is closed')
  end
  vim.v.errmsg = ''
  vim.diagnostic.set(linter, buf, {})
  same(vim.v.errmsg, '')
  running = nil
end)

vim.fn.delete(dir, 'rf')

if #failures > 0 then
  io.stderr:write(table.concat(failures, '\n') .. '\n')
  io.stderr:write(string.format('diagnostics_spec: %d failure(s)\n', #failures))
  vim.cmd('cquit 1')
else
  io.stdout:write(string.format('diagnostics_spec: %d cases passed\n', count))
  vim.cmd('qall!')
end
