-- The user types a line at the end of the buffer after the agent computed its edit and before
-- Neovim applies it: the plugin refuses the stale edit (flushing the didChange that explains
-- it), the server resolves the edit again on the new text and sends it again, and it lands. The
-- model hears of nothing (its one edit succeeded), and both the typed line and the agent's
-- docstring end up in the buffer exactly once.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; approval mode auto_edit. The replay script reads
-- calc.py, edits `add` and answers "All done.".
--
-- The race is forced, not hoped for: the client's `workspace/applyEdit` handler is wrapped so
-- that the first edit arrives, the user types, and only then does the plugin's handler see it.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  local buf, client = h.open('calc.py')
  local original = h.lines(buf)
  local tandem = require('tandem')
  local typed = '# typed by the user while Tandem works'
  local docstring = '    """Return the sum of a and b."""'

  -- The plugin's handlers, wrapped: every edit's answer is recorded, the first edit waits
  -- for the user to type, and every tool call's final update (with what the model was told)
  -- is kept.
  local answers = {}
  local apply_edit = client.handlers['workspace/applyEdit']
  h.check(apply_edit, 'the tandem client has no workspace/applyEdit handler')
  client.handlers['workspace/applyEdit'] = function(err, params, ctx)
    if #answers == 0 then
      -- The last line: `add`, which the agent edits, is at the top.
      vim.api.nvim_buf_set_lines(buf, -1, -1, false, { typed })
    end
    local result = apply_edit(err, params, ctx)
    table.insert(answers, result)
    return result
  end
  local finished_calls = {}
  local on_event = client.handlers['tandem/event']
  client.handlers['tandem/event'] = function(err, params, ctx)
    local event = params and params.event or {}
    if event.type == 'toolCall' and (event.status == 'success' or event.status == 'error') then
      table.insert(finished_calls, event)
    end
    return on_event(err, params, ctx)
  end

  tandem.ask('Document add')
  h.wait_for('the turn to end', function()
    return h.chat_text():find('All done.', 1, true) and not tandem.turn_running()
  end, 15000)

  h.check(#answers == 2, 'expected two edits (refused, then sent again), got ' .. vim.inspect(answers))
  h.check(answers[1].applied == false, 'the stale edit was applied: ' .. vim.inspect(answers[1]))
  h.check(answers[2].applied == true, 'the edit sent again was not applied: ' .. vim.inspect(answers[2]))

  local edits = {}
  for _, call in ipairs(finished_calls) do
    if call.tool == 'edit' then
      table.insert(edits, call)
    end
  end
  h.check(#edits == 1 and edits[1].status == 'success',
    'expected one edit call, which succeeded, got ' .. vim.inspect(edits))

  local chat = h.chat_text()
  h.check(h.count(chat, '✗ Edit calc.py') == 0 and h.count(chat, '✓ Edit calc.py') == 1,
    'expected one successful edit and no failed one in the chat')
  local expected = vim.deepcopy(original)
  table.insert(expected, 2, docstring)
  table.insert(expected, typed)
  h.check(vim.deep_equal(h.lines(buf), expected),
    'the buffer is not the original plus the docstring and the typed line:\n' .. h.text(buf))
end)
