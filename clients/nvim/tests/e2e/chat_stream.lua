-- `tandem.ask` opens the chat and streams the turn into it: the prompt, one tool line updated in
-- place, and the answer joined across chunks.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; the replay script reads calc.py, then streams
-- "The function " and "adds numbers." as two chunks.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  local buf = h.open('calc.py')
  local tandem = require('tandem')

  tandem.ask('What does it do?')
  h.wait_for('the answer and the read in the chat buffer', function()
    local text = h.chat_text()
    return text:find('The function adds numbers.', 1, true) and text:find('✓ Read calc.py', 1, true)
      and not tandem.turn_running()
  end)

  local session = tandem.current_session()
  h.check(session, 'tandem.current_session() is nil after a turn')
  local chat = tandem.chat_buffer()
  h.check(chat == tandem.chat_buffer(session), 'chat_buffer() and chat_buffer(current_session()) differ')
  h.check(chat ~= buf, 'the chat buffer is the source buffer')
  h.check(vim.api.nvim_buf_get_name(chat) == 'tandem://chat/' .. session,
    'chat buffer name: ' .. vim.api.nvim_buf_get_name(chat))
  h.check(vim.bo[chat].buftype == 'nofile', 'chat buftype: ' .. vim.bo[chat].buftype)
  h.check(vim.bo[chat].filetype == 'markdown', 'chat filetype: ' .. vim.bo[chat].filetype)
  h.check(#vim.fn.win_findbuf(chat) > 0, 'no window shows the chat buffer after ask()')

  local lines = h.lines(chat)
  local function index_of(wanted, from)
    for i = from or 1, #lines do
      if lines[i] == wanted then
        return i
      end
    end
  end
  local you = index_of('## You')
  h.check(you, 'no "## You" line')
  local prompt = index_of('What does it do?', you)
  h.check(prompt, 'the prompt is not under "## You"')
  local answer_header = index_of('## Tandem', prompt)
  h.check(answer_header, 'no "## Tandem" line after the prompt')
  local tool = index_of('✓ Read calc.py', answer_header)
  h.check(tool, 'the tool line is not "✓ Read calc.py" under "## Tandem"')
  local answer = index_of('The function adds numbers.', tool)
  h.check(answer, 'the streamed chunks are not joined into one line after the tool line')

  local text = h.text(chat)
  h.check(h.count(text, 'Read calc.py') == 1, 'the tool call has more than one line (not updated in place)')
  h.check(not text:find('…', 1, true), 'a tool line still shows the running mark …')
  h.check(vim.tbl_contains(h.lines(buf), 'def add(a, b):'), 'the source buffer changed')
end)
