-- The agent's edit lands in the open buffer unsaved; before its shell command runs, Tandem asks
-- Neovim to save the buffer (`tandem/saveDocuments`), so the command tests the fixed code. The
-- whole buffer is saved, a line the user typed in it included, and it is not modified after.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py whose `add` subtracts, and test_calc.py; approval
-- mode yolo; the replay script reads calc.py, fixes `add` in it, runs `python3 -m unittest` with
-- `shell`, and answers "Fixed add; the tests pass.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  local buf, client = h.open('calc.py')
  local tandem = require('tandem')

  local declared = client.config.init_options.clientCapabilities
  h.check(declared.saveDocuments == true, 'the plugin does not declare saveDocuments: ' .. vim.inspect(declared))

  -- What the server asked and the plugin answered, and what the model was told of the shell
  -- call, seen through the plugin's own handlers.
  local save_requests = {}
  local save_handler = client.handlers['tandem/saveDocuments']
  h.check(save_handler, 'no tandem/saveDocuments handler is registered')
  client.handlers['tandem/saveDocuments'] = function(err, params, ctx)
    local result, failure = save_handler(err, params, ctx)
    table.insert(save_requests, { params = params, result = result, failure = failure })
    return result, failure
  end
  local shell_output
  local event_handler = client.handlers['tandem/event']
  client.handlers['tandem/event'] = function(err, params, ctx)
    local event = type(params) == 'table' and params.event or {}
    if event.type == 'toolCall' and event.tool == 'shell' and event.status == 'success' then
      shell_output = event.output
    end
    return event_handler(err, params, ctx)
  end

  -- The user types a line before asking; it goes to disk with the agent's fix.
  local typed = '# checked by the tests'
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { typed })
  h.check(vim.bo[buf].modified, 'typing did not modify the buffer')
  h.check(not h.read_file('calc.py'):find(typed, 1, true), 'the typed line is on disk before any save')

  tandem.ask('Fix add and run the tests')
  h.wait_for('the turn to end with the answer', function()
    return h.chat_text():find('Fixed add; the tests pass.', 1, true) and not tandem.turn_running()
  end, 30000)
  h.wait_session_idle(client, tandem.current_session())

  h.check(vim.tbl_contains(h.lines(buf), '    return a + b'), 'the fix is not in the buffer:\n' .. h.text(buf))
  local asked = vim.inspect(save_requests)
  h.check(shell_output, 'the shell call did not succeed; the chat says:\n' .. h.chat_text())
  h.check(shell_output:find('\nOK\n', 1, true) and shell_output:find('exit code: 0', 1, true),
    'python3 -m unittest did not pass on the saved file; the model saw:\n' .. shell_output
      .. '\ntandem/saveDocuments requests and answers: ' .. asked)

  local uri = vim.uri_from_bufnr(buf)
  local listed = false
  for _, request in ipairs(save_requests) do
    listed = listed or (type(request.params.uris) == 'table' and vim.tbl_contains(request.params.uris, uri)
      and vim.tbl_contains(request.result.saved, uri))
  end
  h.check(listed, 'no tandem/saveDocuments request listed and saved ' .. uri .. ': ' .. asked)

  local on_disk = h.read_file('calc.py')
  h.check(on_disk == h.text(buf) .. '\n', 'calc.py on disk is not the buffer:\n' .. on_disk .. '\n--- buffer ---\n' .. h.text(buf))
  h.check(on_disk:find('def add(a, b):\n    return a + b\n', 1, true), 'the fix is not on disk:\n' .. on_disk)
  h.check(on_disk:find(typed, 1, true), 'the line the user typed is not on disk:\n' .. on_disk)
  h.check(not vim.bo[buf].modified, 'the buffer is still modified after the save')
end)
