-- A code action runs the agent, whose edit lands in the open buffer unsaved and is undone with `u`.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; approval mode auto_edit; the replay script reads
-- calc.py, adds a docstring to `add`, and answers "Documented add.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  local buf, client = h.open('calc.py')
  local original = h.lines(buf)
  local on_disk = h.read_file('calc.py')

  -- The function's lines, as a visual selection would give them.
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 2, character = 0 } },
    context = { diagnostics = {} },
  }
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', params, 5000)
  h.check(responses and responses[client.id], 'no answer to textDocument/codeAction from the tandem client')
  local answer = responses[client.id]
  h.check(not answer.err, 'textDocument/codeAction failed: ' .. vim.inspect(answer.err))
  local action
  local titles = {}
  for _, candidate in ipairs(answer.result or {}) do
    table.insert(titles, candidate.title)
    if candidate.title == 'Document this' then
      action = candidate
    end
  end
  h.check(action, 'no "Document this" code action among: ' .. vim.inspect(titles))

  if not action.command then
    local resolved = client.request_sync('codeAction/resolve', action, 5000, buf)
    h.check(resolved and resolved.result, 'codeAction/resolve failed: ' .. vim.inspect(resolved))
    action = resolved.result
  end
  local command = action.command
  h.check(type(command) == 'table' and command.command == 'tandem.document',
    'the action carries no tandem.document command: ' .. vim.inspect(action))
  local started = client.request_sync('workspace/executeCommand',
    { command = command.command, arguments = command.arguments }, 5000, buf)
  h.check(started and started.result and started.result.sessionId,
    'workspace/executeCommand did not start a turn: ' .. vim.inspect(started))

  local documented = '    """Return the sum of a and b."""'
  h.wait_for('the docstring to appear in the buffer', function()
    return vim.tbl_contains(h.lines(buf), documented)
  end)
  h.wait_session_idle(client, started.result.sessionId)

  local edited = h.lines(buf)
  h.check(#edited == #original + 1, 'expected exactly one added line, got:\n' .. table.concat(edited, '\n'))
  h.check(vim.bo[buf].modified, 'the edit should leave the buffer modified (unsaved)')
  h.check(h.read_file('calc.py') == on_disk, 'the agent wrote calc.py on disk instead of only the buffer')

  vim.api.nvim_set_current_buf(buf)
  vim.cmd('normal! u')
  local undone = h.lines(buf)
  h.check(vim.deep_equal(undone, original),
    'undo did not restore the original text; buffer is now:\n' .. table.concat(undone, '\n'))
end)
