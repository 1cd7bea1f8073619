-- The "Run Tandem instruction" code action, picked through vim.lsp.buf.code_action(), shows
-- its answer without hunting: the chat opens beside the code with the whole answer, and the
-- notification at the end carries the agent's final text (it used to say only "Tandem: done").
-- A turn that ends while the chat is not on screen (an inline turn after the chat was closed)
-- says where the chat is.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py, whose first line is the comment
-- `# tandem: explain add`; the replay script answers the instruction with two lines, then
-- the inline turn with "Nothing to change.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

local notes, said = h.capture_notifications()
local function wait_note(what, prefix)
  local found
  h.wait_for(what .. ' (notifications so far:\n' .. said() .. ')', function()
    for _, note in ipairs(notes) do
      if note.msg:sub(1, #prefix) == prefix then
        found = note
        return true
      end
    end
    return false
  end)
  return found
end
local function chat_windows()
  local wins = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)):match('^tandem://chat/') then
      table.insert(wins, win)
    end
  end
  return wins
end

h.run(function()
  h.setup({ notify = true })
  local buf, client = h.open('calc.py')
  local code_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(0, { 1, 0 })

  -- What a user does: open the code actions on the comment and pick the instruction.
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = {}
    for i, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      table.insert(offered, title)
      if title:find('Run Tandem instruction: explain add', 1, true) then
        on_choice(item, i)
        return
      end
    end
    on_choice(nil, nil)
  end
  vim.lsp.buf.code_action()
  h.wait_for('the code actions to be offered', function()
    return offered ~= nil
  end)
  h.check(vim.tbl_count(vim.tbl_filter(function(t)
    return t:find('Run Tandem instruction', 1, true) ~= nil
  end, offered)) == 1, 'no "Run Tandem instruction" action among: ' .. vim.inspect(offered))

  local done = wait_note('the end-of-turn notification', 'Tandem: done')
  h.check(done.msg == 'Tandem: done: add returns the sum of a and b.…',
    'the notification does not carry the answer\'s first line (and `…` for the rest):\n' .. said())
  h.check(done.level == vim.log.levels.INFO, 'the notification is not INFO:\n' .. said())

  -- The chat is on screen beside the code, the cursor still in the code, the whole answer in it.
  local wins = chat_windows()
  h.check(#wins == 1, 'expected the chat in one window, found ' .. #wins)
  h.check(vim.api.nvim_get_current_win() == code_win, 'the cursor left the code window')
  local chat = h.text(vim.api.nvim_win_get_buf(wins[1]))
  for _, needle in ipairs({ '## You', 'explain add', 'add returns the sum of a and b.', 'It has no side effects.' }) do
    h.check(chat:find(needle, 1, true), 'the chat does not show ' .. needle .. ':\n' .. chat)
  end
  h.wait_session_idle(client, require('tandem').current_session())

  -- With the chat closed, the end of a turn says where it is.
  vim.cmd('TandemChat')
  h.check(#chat_windows() == 0, ':TandemChat did not close the chat')
  for i = #notes, 1, -1 do
    notes[i] = nil
  end
  vim.api.nvim_set_current_win(code_win)
  require('tandem').inline('make add shorter', { 1, 2 })
  local second = wait_note('the inline turn\'s notification', 'Tandem: done')
  h.check(second.msg == 'Tandem: done: Nothing to change.  (:TandemChat shows the chat)',
    'the notification does not say where the chat is:\n' .. said())
  h.check(#chat_windows() == 0, 'the inline turn opened the chat')
  h.check(vim.api.nvim_buf_is_valid(buf), 'the code buffer is gone')
end)
