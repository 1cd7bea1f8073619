-- Typing in the buffer while a turn streams: nothing the user typed is lost, and the agent's
-- edit ends up applied once.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; approval mode auto_edit. The replay script reads
-- calc.py, then streams slowly ("Adding a docstring now.", delayMs) and edits `add`; the user
-- types meanwhile, so that edit is refused as stale (or lands, if the typing reached the server
-- first); the script then reads again, edits again (a no-match error if the first one landed)
-- and answers "All done.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  local buf = h.open('calc.py')
  local original = h.lines(buf)
  local tandem = require('tandem')
  local typed = '# typed by the user while Tandem works'
  local docstring = '    """Return the sum of a and b."""'

  tandem.ask('Document add')
  h.wait_for('the slow answer to start streaming', function()
    return h.chat_text():find('Adding', 1, true)
  end)
  h.check(tandem.turn_running(), 'turn_running() is false while the answer streams')
  h.check(not vim.tbl_contains(h.lines(buf), docstring), 'the edit landed before the user typed')
  -- The last line: `add` (which the agent edits) is at the top.
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { typed })

  h.wait_for('the turn to end', function()
    return h.chat_text():find('All done.', 1, true) and not tandem.turn_running()
  end, 15000)

  local text = h.text(buf)
  h.check(h.count(text, typed) == 1, 'the typed line is not in the buffer exactly once:\n' .. text)
  h.check(h.count(text, docstring) == 1, 'the agent\'s docstring is not in the buffer exactly once:\n' .. text)
  local chat = h.chat_text()
  h.check(h.count(chat, '✓ Edit calc.py') == 1 and h.count(chat, '✗ Edit calc.py') == 1,
    'expected one edit to succeed and the other to fail (stale, or nothing left to replace)')
  local expected = vim.deepcopy(original)
  table.insert(expected, 2, docstring)
  table.insert(expected, typed)
  h.check(vim.deep_equal(h.lines(buf), expected),
    'the buffer is not the original plus the docstring and the typed line:\n' .. text)
end)
