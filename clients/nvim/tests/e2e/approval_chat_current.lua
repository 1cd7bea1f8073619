-- While the approval question is open, the chat is up to date: the text the model streamed
-- before the call is all there and the call is marked `?` (regression: the text stopped
-- mid-word and the call showed `…`, running, until the question was answered). Then
-- :TandemSessions names the live session by its first prompt, not "Session 1".
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; approval mode default; the replay script reads
-- calc.py, streams "Now the docstring." and edits it (which asks), then answers
-- "I left calc.py alone.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

-- What the screen shows of the chat window, rows joined with `\n`: the buffer may be current
-- while the screen is not (nothing redraws it while the picker waits).
local function chat_on_screen()
  local buf = require('tandem').chat_buffer()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      local pos = vim.fn.win_screenpos(win)
      local rows = {}
      for row = pos[1], pos[1] + vim.api.nvim_win_get_height(win) - 1 do
        local cells = {}
        for col = pos[2], pos[2] + vim.api.nvim_win_get_width(win) - 1 do
          cells[#cells + 1] = vim.fn.screenstring(row, col)
        end
        rows[#rows + 1] = table.concat(cells)
      end
      return table.concat(rows, '\n')
    end
  end
  return '(the chat is in no window)'
end

h.run(function()
  local chat_when_asked = nil
  vim.ui.select = function(items, opts, on_choice)
    if opts and opts.kind == 'tandem.approval' then
      chat_when_asked = chat_on_screen()
      on_choice(items[1], 1)
      return
    end
    on_choice(nil, nil)
  end
  vim.ui.input = function(_, on_confirm)
    on_confirm(nil)
  end

  h.setup()
  h.open('calc.py')
  local tandem = require('tandem')

  tandem.ask('Add a docstring to add')
  h.wait_for('the turn to end with the answer', function()
    return h.chat_text():find('I left calc.py alone.', 1, true) and not tandem.turn_running()
  end)

  h.check(chat_when_asked ~= nil, 'the approval question was not asked')
  h.check(chat_when_asked:find('Now the docstring.', 1, true),
    'the text streamed before the call was not all on screen when asked:\n' .. chat_when_asked)
  h.check(chat_when_asked:find('? Edit calc.py', 1, true),
    'the call was not shown marked ? while asked:\n' .. chat_when_asked)
  h.check(h.chat_text():find('✗ Edit calc.py', 1, true), 'the chat does not mark the rejected call ✗')

  local labels = nil
  vim.ui.select = function(items, opts, on_choice)
    labels = {}
    for _, item in ipairs(items) do
      labels[#labels + 1] = opts.format_item(item)
    end
    on_choice(nil, nil)
  end
  vim.cmd('TandemSessions')
  h.wait_for('the session list', function()
    return labels ~= nil
  end)
  h.check(labels[1] == 'Add a docstring to add  (live, 1 turn)',
    'the live session is not named by its first prompt: ' .. vim.inspect(labels))
end)
