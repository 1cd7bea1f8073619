-- An edit that needs approval is rejected through `vim.ui.select`: the user was shown the
-- proposed change as a diff while asked, Reject came first, the buffer is unchanged and the
-- chat marks the call ✗.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; approval mode default; the replay script reads
-- calc.py, edits it (which asks), then answers "I left calc.py alone.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    local question = { items = vim.deepcopy(items), prompt = opts and opts.prompt }
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      local details = vim.api.nvim_win_get_buf(win)
      if vim.api.nvim_buf_get_name(details):find('^tandem://approval/') then
        question.lines = h.lines(details)
        question.filetype = vim.bo[details].filetype
      end
    end
    table.insert(asked, question)
    for i, item in ipairs(items) do
      if item == 'Reject' then
        on_choice(item, i)
        return
      end
    end
    on_choice(nil, nil)
  end
  vim.ui.input = function(_, on_confirm)
    on_confirm(nil)
  end

  h.setup()
  local buf = h.open('calc.py')
  local original = h.lines(buf)
  local tandem = require('tandem')

  tandem.ask('Add a docstring to add')
  h.wait_for('the turn to end with the answer', function()
    return h.chat_text():find('I left calc.py alone.', 1, true) and not tandem.turn_running()
  end)

  h.check(#asked == 1, 'expected one approval question, got ' .. #asked .. ': ' .. vim.inspect(asked))
  h.check(vim.deep_equal(asked[1].items, { 'Reject', 'Reject with feedback…', 'Allow once', 'Allow always' }),
    'the approval choices are not the four answers, safe first: ' .. vim.inspect(asked[1].items))
  local shown = table.concat(asked[1].lines or {}, '\n')
  h.check(shown:find('+++ b/calc.py', 1, true) and shown:find('+    """Return the sum of a and b."""', 1, true),
    'the proposed change was not shown while asking:\n' .. shown)
  h.check(asked[1].filetype == 'diff', 'the change is not shown as a diff: ' .. vim.inspect(asked[1].filetype))
  h.check(type(asked[1].prompt) == 'string' and asked[1].prompt:find('Edit calc.py', 1, true),
    'the approval prompt does not name the call: ' .. vim.inspect(asked[1].prompt))

  h.check(vim.deep_equal(h.lines(buf), original),
    'the rejected edit changed the buffer:\n' .. h.text(buf))
  h.check(not vim.bo[buf].modified, 'the buffer is modified after a rejected edit')
  local chat = h.chat_text()
  h.check(chat:find('✗ Edit calc.py', 1, true), 'the chat does not mark the rejected call ✗')
  h.check(h.count(chat, 'Edit calc.py') == 1, 'the edit call has more than one line')
end)
