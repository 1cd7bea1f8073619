-- Inline completions against the real server: entering insert mode after some text asks for
-- `textDocument/inlineCompletion` at the cursor, the answer shows as ghost text without touching
-- the buffer, the accept key inserts it exactly at the cursor (an emoji earlier on the line makes
-- UTF-16 columns differ from bytes, so a column mixed up anywhere shifts it), insert mode goes
-- on, and with no suggestion left the keys do what they did without the plugin.
--
-- Contract with tests/e2e/nvim.rs: the usual scenario environment (TANDEM_BIN, TANDEM_LOG_FILE,
-- the replay settings), a replay script whose entries are all {"text": COMPLETION} for a
-- single-line COMPLETION (the first completion request must get it; later ones may get more of
-- the same or run out), and TANDEM_TEST_COMPLETION=COMPLETION so that the exact text is checked
-- (without it, any non-empty single-line suggestion is accepted). The scenario writes its own
-- file, greet.py, into the workspace.
--
-- Unlike the other scenarios this one cannot run in one go inside `luafile`: insert mode, its
-- autocommands and the mappings only run from Neovim's main loop. So it is a list of steps, each
-- started from the main loop after the previous one, with the keys a step feeds typed in between.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

local FILE = 'greet.py'
local LINES = {
  '# Greets people 👋',
  'def greet(name):',
  '    message = "👋 hi, " + name',
  '    return message',
}
-- The cursor goes to the end of this line (1-based), after the emoji.
local ROW = 3
local expected_text = os.getenv('TANDEM_TEST_COMPLETION')
if expected_text == '' then
  expected_text = nil
end

-- `text`'s length in `encoding`'s units, counted here rather than with the plugin's helpers.
local function units(text, encoding)
  if encoding == 'utf-8' then
    return #text
  end
  local n = 0
  for char in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    n = n + ((encoding == 'utf-16' and #char == 4) and 2 or 1)
  end
  return n
end

local function keys(text)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(text, true, false, true), 'm', false)
end

local function cursor()
  return vim.api.nvim_win_get_cursor(0)
end

local function screen_row(row)
  vim.cmd('redraw')
  local cells = {}
  for col = 1, vim.o.columns do
    table.insert(cells, vim.fn.screenstring(row, col))
  end
  return (table.concat(cells):gsub('%s+$', ''))
end

local buf, client
local completion = require('tandem.completion')
-- textDocument/inlineCompletion params in the order sent.
local sent = {}
-- What was shown and accepted.
local accepted

local steps = {
  function()
    local file = assert(io.open(FILE, 'w'))
    file:write(table.concat(LINES, '\n') .. '\n')
    file:close()
    h.setup()
    buf, client = h.open(FILE)
    local provider = client.server_capabilities and client.server_capabilities.inlineCompletionProvider
    h.check(provider and provider ~= vim.NIL, 'the server does not declare inlineCompletionProvider: '
      .. vim.inspect(client.server_capabilities))
    local request = client.request
    client.request = function(method, params, handler, bufnr)
      if method == completion.METHOD then
        table.insert(sent, vim.deepcopy(params))
      end
      return request(method, params, handler, bufnr)
    end
    vim.o.showmode = false
    vim.api.nvim_win_set_cursor(0, { ROW, 0 })
    keys('A')
  end,
  function()
    h.wait_for('the ghost text', function()
      return completion.state().shown
    end)
    local state = completion.state()
    h.check(#sent >= 1, 'no textDocument/inlineCompletion request was recorded')
    local params = sent[1]
    local line = LINES[ROW]
    local encoding = client.offset_encoding or 'utf-16'
    h.check(params.position.line == ROW - 1 and params.position.character == units(line, encoding),
      string.format('request position %s, expected line %d character %d (%s, after the emoji)',
        vim.inspect(params.position), ROW - 1, units(line, encoding), encoding))
    h.check(params.context and params.context.triggerKind == 2, 'triggerKind ' .. vim.inspect(params.context))
    h.check(params.textDocument.uri == vim.uri_from_bufnr(buf), 'uri ' .. params.textDocument.uri)

    h.check(state.bufnr == buf and state.row == ROW - 1 and state.col == #line,
      'the suggestion is not at the cursor: ' .. vim.inspect(state))
    h.check(type(state.text) == 'string' and state.text ~= '' and not state.text:find('\n'),
      'expected a one-line suggestion, got ' .. vim.inspect(state.text))
    if expected_text then
      h.check(state.text == expected_text,
        string.format('the suggestion is %q, the model answered %q', state.text, expected_text))
    end
    h.check(vim.deep_equal(h.lines(buf), LINES), 'showing the suggestion changed the buffer:\n' .. h.text(buf))
    local marks = vim.api.nvim_buf_get_extmarks(buf, completion.namespace, 0, -1, {})
    h.check(#marks == 1 and marks[1][2] == ROW - 1 and marks[1][3] == #line,
      'ghost text extmarks: ' .. vim.inspect(marks))
    -- On screen the line reads as it will once accepted (0.10 draws it inline, the same there).
    local screen = screen_row(vim.fn.winline())
    h.check(screen == line .. state.text, 'the screen shows ' .. vim.inspect(screen))

    accepted = state.text
    keys('<Tab>')
  end,
  function()
    local expected = vim.deepcopy(LINES)
    expected[ROW] = LINES[ROW] .. accepted
    h.wait_for('the accepted suggestion in the buffer', function()
      return vim.deep_equal(h.lines(buf), expected)
    end)
    h.check(vim.deep_equal(cursor(), { ROW, #expected[ROW] }), 'cursor after accept: ' .. vim.inspect(cursor()))
    h.check(vim.api.nvim_get_mode().mode == 'i', 'accepting left insert mode')
    local state = completion.state()
    h.check(not (state.shown and state.col == #LINES[ROW]), 'the accepted suggestion is still shown')
    -- Whatever the next request brings is dismissed, so <Tab> has nothing to accept.
    keys('<C-]><Tab>')
  end,
  function()
    local expected = vim.deepcopy(LINES)
    expected[ROW] = LINES[ROW] .. accepted .. '\t'
    h.wait_for('<Tab> without a suggestion to insert a tab', function()
      return vim.deep_equal(h.lines(buf), expected)
    end)
    keys('<Esc>')
  end,
  function()
    h.check(not completion.state().shown, 'leaving insert mode left the suggestion')
    h.check(#vim.api.nvim_buf_get_extmarks(buf, completion.namespace, 0, -1, {}) == 0,
      'leaving insert mode left ghost text')
  end,
}

local function run_step(index)
  vim.defer_fn(function()
    local ok, err = xpcall(steps[index], debug.traceback)
    if not ok then
      h.fail(err)
      return
    end
    if index == #steps then
      io.stdout:write('ok\n')
      io.stdout:flush()
      vim.cmd('qall!')
      return
    end
    run_step(index + 1)
  end, 30)
end

run_step(1)
