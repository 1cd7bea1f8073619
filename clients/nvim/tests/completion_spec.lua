-- Unit tests for lua/tandem/completion.lua, without a server. First its pure functions, case by
-- case (result normalisation, LSP columns to bytes, placing a suggestion at the cursor, what the
-- ghost text shows, accept splitting, filetype filters); then the insert-mode behaviour on a real
-- buffer against a fake client that records requests and is answered by hand: ghost text, accept
-- by word, line and whole, a range that replaces text after the cursor, stale and cancelled
-- answers, dismiss, the fallback keys, :TandemComplete's trigger kind, toggling. Run with
--   nvim --headless -u NONE -c "set rtp+=clients/nvim" -c "luafile clients/nvim/tests/completion_spec.lua"
-- Exits 0 when every case passes, 1 (failures on stderr) otherwise.
local completion = require('tandem.completion')

local failures = {}
local count = 0

local function fail(name, message)
  failures[#failures + 1] = name .. ': ' .. message
end

local function expect(name, got, want)
  count = count + 1
  if not vim.deep_equal(got, want) then
    fail(name, 'expected ' .. vim.inspect(want) .. '\n  got ' .. vim.inspect(got))
  end
end

local function range(line, from, to)
  return { start = { line = line, character = from }, ['end'] = { line = line, character = to } }
end

-- ---------------------------------------------------------------- pure functions

local first_item_cases = {
  { name = 'nil', result = nil, want = nil },
  { name = 'null', result = vim.NIL, want = nil },
  { name = 'empty list', result = {}, want = nil },
  { name = 'a list: its first item', result = { { insertText = 'a' }, { insertText = 'b' } }, want = { text = 'a' } },
  {
    name = '{ items }, with a range',
    result = { items = { { insertText = 'x', range = range(0, 1, 2) } } },
    want = { text = 'x', range = range(0, 1, 2) },
  },
  { name = '{ items = null }', result = { items = vim.NIL }, want = nil },
  { name = '{ items = {} }', result = { items = {} }, want = nil },
  {
    name = 'a snippet is plain text',
    result = { { insertText = { kind = 'snippet', value = 'f(${1:x})' } } },
    want = { text = 'f(${1:x})' },
  },
  { name = 'empty text', result = { { insertText = '' } }, want = nil },
  { name = 'no text', result = { { filterText = 'a' } }, want = nil },
  { name = 'CRLF and CR become LF', result = { { insertText = 'a\r\nb\rc' } }, want = { text = 'a\nb\nc' } },
  { name = 'range null', result = { { insertText = 'a', range = vim.NIL } }, want = { text = 'a' } },
  { name = 'filterText is not used', result = { { insertText = 'a', filterText = 'zzz' } }, want = { text = 'a' } },
}
for _, case in ipairs(first_item_cases) do
  expect('first_item: ' .. case.name, completion.first_item(case.result), case.want)
end

-- 'a😀b': `a` is 1 byte, 1 UTF-16 unit; 😀 is 4 bytes, 2 UTF-16 units, 1 code point.
local byte_col_cases = {
  { 'abc', 2, 'utf-16', 2 },
  { 'a😀b', 3, 'utf-16', 5 },
  { 'a😀b', 4, 'utf-16', 6 },
  { 'a😀b', 2, 'utf-32', 5 },
  { 'a😀b', 5, 'utf-8', 5 },
  { 'é', 1, 'utf-16', 2 },
  { 'abc', 0, 'utf-16', 0 },
  { 'abc', 10, 'utf-16', 3 },
  { 'abc', 10, 'utf-8', 3 },
  { '', 3, 'utf-16', 0 },
}
for _, case in ipairs(byte_col_cases) do
  local line, character, encoding, want = unpack(case)
  expect(string.format('byte_col(%q, %d, %s)', line, character, encoding), completion.byte_col(line, character, encoding), want)
end

-- 's = "😀" + )': the cursor before `)` is byte 13 but UTF-16 character 11.
local emoji_line = 's = "😀" + )'
local place_cases = {
  {
    name = 'no range: inserted at the cursor',
    line = 'x = ', col = 4, item = { text = 'foo' },
    want = { text = 'foo', replaced = '' },
  },
  {
    name = 'empty range at the cursor',
    line = 'x = ', col = 4, item = { text = 'foo', range = range(0, 4, 4) },
    want = { text = 'foo', replaced = '' },
  },
  {
    name = 'range over the text after the cursor',
    line = 'f()', col = 2, item = { text = 'a, b)', range = range(0, 2, 3) },
    want = { text = 'a, b)', replaced = ')' },
  },
  {
    name = 'range from before the cursor: the typed part is not inserted again',
    line = 'ret', col = 3, item = { text = 'return x', range = range(0, 0, 3) },
    want = { text = 'urn x', replaced = '' },
  },
  {
    name = 'range from before the cursor that does not match the typed text',
    line = 'ret', col = 3, item = { text = 'print(x)', range = range(0, 0, 3) },
    want = nil,
  },
  {
    name = 'range on another line',
    line = 'x = ', col = 4, item = { text = 'foo', range = range(1, 0, 0) },
    want = nil,
  },
  {
    name = 'range that ends on the next line',
    line = 'x = ', col = 4,
    item = { text = 'foo', range = { start = { line = 0, character = 4 }, ['end'] = { line = 1, character = 0 } } },
    want = nil,
  },
  {
    name = 'range that starts after the cursor',
    line = 'x = 1', col = 2, item = { text = 'foo', range = range(0, 4, 5) },
    want = nil,
  },
  {
    name = 'range that ends before the cursor',
    line = 'x = 1', col = 4, item = { text = 'x =', range = range(0, 0, 3) },
    want = nil,
  },
  {
    name = 'a suggestion that is just the replaced text adds nothing',
    line = 'f()', col = 2, item = { text = ')', range = range(0, 2, 3) },
    want = nil,
  },
  {
    name = 'UTF-16 range after an emoji lands on the cursor and replaces the `)`',
    line = emoji_line, col = 13, item = { text = 'name)', range = range(0, 11, 12) },
    want = { text = 'name)', replaced = ')' },
  },
  {
    name = 'the same range read as bytes would start before the cursor: refused',
    line = emoji_line, col = 13, item = { text = 'name)', range = range(0, 11, 12) }, encoding = 'utf-8',
    want = nil,
  },
  {
    name = 'UTF-32 range after an emoji',
    line = emoji_line, col = 13, item = { text = 'name)', range = range(0, 10, 11) }, encoding = 'utf-32',
    want = { text = 'name)', replaced = ')' },
  },
}
for _, case in ipairs(place_cases) do
  local got = completion.place(case.item, case.line, case.row or 0, case.col, case.encoding or 'utf-16')
  expect('place: ' .. case.name, got, case.want)
end

local next_word_cases = {
  { 'foo bar', 'foo' },
  { '  foo bar', '  foo' },
  { 'foo_bar2(x)', 'foo_bar2' },
  { '(a, b)', '(' },
  { ', b)', ',' },
  { ' b)', ' b' },
  { '):\n', '):' },
  { '...foo', '...' },
  { '\n    return x', '\n    return' },
  { 'héllo wörld', 'héllo' },
  { '   ', '   ' },
  { 'x', 'x' },
}
for _, case in ipairs(next_word_cases) do
  expect(string.format('next_word(%q)', case[1]), completion.next_word(case[1]), case[2])
end

local next_line_cases = {
  { 'a\nb', 'a\n' },
  { 'abc', 'abc' },
  { '\nfoo', '\n' },
  { 'a\n', 'a\n' },
}
for _, case in ipairs(next_line_cases) do
  expect(string.format('next_line(%q)', case[1]), completion.next_line(case[1]), case[2])
end

local take_cases = {
  { 'foo bar', 'word', 'foo', ' bar' },
  { 'foo', 'word', 'foo', '' },
  { 'a(b)\nc', 'line', 'a(b)\n', 'c' },
  { 'a(b)\nc', 'all', 'a(b)\nc', '' },
}
for _, case in ipairs(take_cases) do
  local part, rest = completion.take(case[1], case[2])
  expect(string.format('take(%q, %s)', case[1], case[2]), { part, rest }, { case[3], case[4] })
end

local function view(mode, rest_width, start_vcol, tabstop)
  return { mode = mode, rest_width = rest_width or 0, start_vcol = start_vcol or 4, tabstop = tabstop or 8 }
end
local display_cases = {
  {
    name = 'inline: the suggestion, before the real rest of the line',
    placed = { text = 'foo', replaced = '' }, rest = ')', view = view('inline', 1),
    want = { first = 'foo', below = {} },
  },
  {
    name = 'inline: the replaced `)` ends the suggestion and is not shown twice',
    placed = { text = 'a, b)', replaced = ')' }, rest = '', view = view('inline', 1),
    want = { first = 'a, b', below = {} },
  },
  {
    name = 'inline, several lines: the replaced `)` is dropped from the last line',
    placed = { text = 'a,\n  b)', replaced = ')' }, rest = ';', view = view('inline', 2),
    want = { first = 'a,', below = { '  b' } },
  },
  {
    name = 'overlay: the line as it will read, the rest after the suggestion',
    placed = { text = 'a, b)', replaced = ')' }, rest = ';', view = view('overlay', 2),
    want = { first = 'a, b);', below = {} },
  },
  {
    name = 'overlay at the end of the line',
    placed = { text = 'name + "!"', replaced = '' }, rest = '', view = view('overlay', 0),
    want = { first = 'name + "!"', below = {} },
  },
  {
    name = 'overlay: spaces hide replaced text longer than the suggestion',
    placed = { text = 'x', replaced = 'abc' }, rest = '', view = view('overlay', 3),
    want = { first = 'x  ', below = {} },
  },
  {
    name = 'overlay, several lines: the rest of the line moves to the last one',
    placed = { text = 'a,\n  b)', replaced = ')' }, rest = ';', view = view('overlay', 2),
    want = { first = 'a,', below = { '  b);' } },
  },
  {
    name = 'overlay, suggestion starting with a newline: the rest is hidden on the cursor line',
    placed = { text = '\nfoo', replaced = '' }, rest = 'xy', view = view('overlay', 2),
    want = { first = '  ', below = { 'fooxy' } },
  },
  {
    name = 'tabs become spaces from the cursor column, and from 0 below',
    placed = { text = '\tx\n\ty', replaced = '' }, rest = '', view = view('inline', 0, 2, 4),
    want = { first = '  x', below = { '    y' } },
  },
}
for _, case in ipairs(display_cases) do
  expect('display: ' .. case.name, completion.display(case.placed, case.rest, case.view), case.want)
end

local display_mode_cases = {
  { false, { text = 'foo', replaced = '' }, 'overlay' },
  { true, { text = 'foo', replaced = '' }, 'inline' },
  { true, { text = 'a)', replaced = ')' }, 'inline' },
  { true, { text = 'a\nb)', replaced = ')' }, 'inline' },
  { true, { text = 'abc', replaced = 'xyz' }, 'overlay' },
}
for _, case in ipairs(display_mode_cases) do
  expect(string.format('display_mode(%s, %q, %q)', tostring(case[1]), case[2].text, case[2].replaced),
    completion.display_mode(case[1], case[2]), case[3])
end

expect('extmark_opts: one line', completion.extmark_opts({ first = 'foo', below = {} }, 'overlay', 'H'), {
  hl_mode = 'combine',
  virt_text = { { 'foo', 'H' } },
  virt_text_pos = 'overlay',
})
expect('extmark_opts: lines below, nothing at the cursor',
  completion.extmark_opts({ first = '', below = { 'a', '' } }, 'inline', 'H'),
  { hl_mode = 'combine', virt_lines = { { { 'a', 'H' } }, { { '', 'H' } } } })

local filetype_cases = {
  { nil, 'lua', true },
  { { 'lua', 'python' }, 'lua', true },
  { { 'lua', 'python' }, 'c', false },
  { { python = false }, 'python', false },
  { { python = false }, 'lua', true },
  { { ['*'] = false, lua = true }, 'lua', true },
  { { ['*'] = false, lua = true }, 'c', false },
}
for _, case in ipairs(filetype_cases) do
  expect(string.format('filetype_enabled(%s, %s)', vim.inspect(case[1]), case[2]),
    completion.filetype_enabled(case[1], case[2]), case[3])
end

local here = { bufnr = 1, tick = 5, row = 2, col = 3 }
expect('same_place: equal', completion.same_place(here, vim.deepcopy(here)), true)
expect('same_place: the buffer changed', completion.same_place(here, vim.tbl_extend('force', here, { tick = 6 })), false)
expect('same_place: the cursor moved', completion.same_place(here, vim.tbl_extend('force', here, { col = 4 })), false)
expect('same_place: nothing to compare', completion.same_place(nil, here), false)

-- ---------------------------------------------------------------- on a buffer

-- A client that records what it is asked; each request is answered by calling its handler.
local requests, cancelled = {}, {}
local fake_client = {
  id = 1,
  offset_encoding = 'utf-16',
  server_capabilities = { inlineCompletionProvider = true },
  request = function(method, params, handler, bufnr)
    table.insert(requests, { method = method, params = params, handler = handler, bufnr = bufnr })
    return true, #requests
  end,
  cancel_request = function(id)
    table.insert(cancelled, id)
  end,
}
local notes = {}
vim.notify = function(msg)
  table.insert(notes, msg)
end
-- The mode message would land on stdout between the results.
vim.o.showmode = false
completion.setup({ debounce_ms = 0 }, {
  client_for = function()
    return fake_client
  end,
  -- The buffer is ASCII, so bytes are UTF-16 units.
  position = function(_, row, col)
    return { line = row, character = col }
  end,
})

local function keys(text)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(text, true, false, true), 'm', false)
end

local function check(cond, message)
  count = count + 1
  if not cond then
    error(message, 2)
  end
end

local function wait_requests(n)
  check(vim.wait(1000, function()
    return #requests >= n
  end, 5), string.format('expected %d request(s), got %d', n, #requests))
  return requests[n]
end

local function lines()
  return vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

local function cursor()
  return vim.api.nvim_win_get_cursor(0)
end

local function mark_count()
  return #vim.api.nvim_buf_get_extmarks(0, completion.namespace, 0, -1, {})
end

local function screen_row(row)
  vim.cmd('redraw')
  local cells = {}
  for col = 1, vim.o.columns do
    table.insert(cells, vim.fn.screenstring(row, col))
  end
  return (table.concat(cells):gsub('%s+$', ''))
end

-- How many requests there were when a step typed a key: the request that the key causes may be
-- sent before the next step starts.
local requests_before_key = 0

-- Each step runs from the main loop after the previous one, so keys fed in one are typed (and
-- their autocommands fire) before the next.
local steps = {
  function()
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'local x = ', 'return x' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    keys('A')
  end,
  function()
    local request = wait_requests(1)
    check(#requests == 1, 'entering insert mode asked more than once: ' .. #requests)
    check(request.method == 'textDocument/inlineCompletion', 'method ' .. tostring(request.method))
    check(vim.deep_equal(request.params, {
      textDocument = { uri = vim.uri_from_bufnr(0) },
      position = { line = 0, character = 10 },
      context = { triggerKind = 2 },
    }), 'params ' .. vim.inspect(request.params))
    request.handler(nil, { items = { { insertText = 'compute(a, b)\nprint(x)' } } })
    local state = completion.state()
    check(state.shown and state.text == 'compute(a, b)\nprint(x)', 'not shown: ' .. vim.inspect(state))
    check(vim.deep_equal(lines(), { 'local x = ', 'return x' }), 'showing changed the buffer')
    local marks = vim.api.nvim_buf_get_extmarks(0, completion.namespace, 0, -1, { details = true })
    check(#marks == 1 and marks[1][2] == 0 and marks[1][3] == 10, 'extmark ' .. vim.inspect(marks))
    if vim.fn.has('nvim-0.10') == 0 then
      check(screen_row(1) == 'local x = compute(a, b)', 'screen row 1: ' .. screen_row(1))
      check(screen_row(2) == 'print(x)', 'screen row 2: ' .. screen_row(2))
    end
    keys('<M-Right>')
  end,
  function()
    check(vim.deep_equal(lines(), { 'local x = compute', 'return x' }), 'accept word: ' .. vim.inspect(lines()))
    check(vim.deep_equal(cursor(), { 1, 17 }), 'accept word cursor ' .. vim.inspect(cursor()))
    local state = completion.state()
    check(state.shown and state.text == '(a, b)\nprint(x)' and state.col == 17, 'after accept word: ' .. vim.inspect(state))
    check(#requests == 1, 'accepting a word asked again')
    check(vim.api.nvim_get_mode().mode == 'i', 'left insert mode')
    keys('<M-C-Right>')
  end,
  function()
    check(vim.deep_equal(lines(), { 'local x = compute(a, b)', '', 'return x' }), 'accept line: ' .. vim.inspect(lines()))
    check(vim.deep_equal(cursor(), { 2, 0 }), 'accept line cursor ' .. vim.inspect(cursor()))
    local state = completion.state()
    check(state.shown and state.text == 'print(x)' and state.row == 1 and state.col == 0, 'after accept line: ' .. vim.inspect(state))
    keys('<Tab>')
  end,
  function()
    check(vim.deep_equal(lines(), { 'local x = compute(a, b)', 'print(x)', 'return x' }), 'accept: ' .. vim.inspect(lines()))
    check(vim.deep_equal(cursor(), { 2, 8 }), 'accept cursor ' .. vim.inspect(cursor()))
    check(mark_count() == 0 and not completion.state().shown, 'the accepted suggestion is still shown')
    -- The text changed: the next suggestion is asked for.
    local request = wait_requests(2)
    check(vim.deep_equal(request.params.position, { line = 1, character = 8 }), 'position ' .. vim.inspect(request.params.position))
    keys('y')
  end,
  function()
    wait_requests(3)
    check(vim.tbl_contains(cancelled, 2), 'typing did not cancel the request in flight: ' .. vim.inspect(cancelled))
    requests[2].handler(nil, { { insertText = 'stale' } })
    check(not completion.state().shown, 'the answer to a superseded request was shown')
    -- The buffer changes before the answer (and before any autocommand could cancel it).
    vim.api.nvim_buf_set_lines(0, -1, -1, false, { '-- more' })
    requests[3].handler(nil, { { insertText = 'late' } })
    check(not completion.state().shown and mark_count() == 0, 'an answer for an older buffer was shown')
  end,
  function()
    local request = wait_requests(4)
    request.handler({ code = -32800, message = 'cancelled' }, nil)
    check(#notes == 0, 'a cancelled automatic request said something: ' .. vim.inspect(notes))
    -- No suggestion: the keys do what they do without the plugin.
    keys('<C-]><Tab>')
  end,
  function()
    check(lines()[2] == 'print(x)y\t', 'Tab without a suggestion: ' .. vim.inspect(lines()[2]))
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'f()' })
    vim.api.nvim_win_set_cursor(0, { 1, 2 })
  end,
  function()
    local request = requests[#requests]
    check(vim.deep_equal(request.params.position, { line = 0, character = 2 }), 'position in f() ' .. vim.inspect(request.params.position))
    request.handler(nil, { { insertText = 'a, b)', range = range(0, 2, 3) } })
    local state = completion.state()
    check(state.shown and state.text == 'a, b)' and state.replaced == ')', 'range suggestion ' .. vim.inspect(state))
    if vim.fn.has('nvim-0.10') == 0 then
      check(screen_row(1) == 'f(a, b)', 'the `)` shows twice or not at all: ' .. screen_row(1))
    end
    requests_before_key = #requests
    keys('<Tab>')
  end,
  function()
    check(vim.deep_equal(lines(), { 'f(a, b)' }), 'accept over `)`: ' .. vim.inspect(lines()))
    check(vim.deep_equal(cursor(), { 1, 7 }), 'cursor after the range accept ' .. vim.inspect(cursor()))
    -- The request the accept leads to, not the one it answered: on a loaded machine the new
    -- one may not be sent yet when this step starts.
    wait_requests(requests_before_key + 1)
    local request = requests[#requests]
    request.handler(nil, { { insertText = ' -- ok' } })
    check(completion.state().shown, 'not shown at the end of the line')
    requests_before_key = #requests
    keys('<C-]>')
  end,
  function()
    check(#requests == requests_before_key, 'dismiss asked again')
    check(not completion.state().shown and mark_count() == 0, 'dismiss left the suggestion')
    check(vim.deep_equal(lines(), { 'f(a, b)' }), 'dismiss changed the buffer')
    local before = #requests
    completion.request(completion.TRIGGER_INVOKED)
    check(#requests == before + 1 and requests[#requests].params.context.triggerKind == 1, 'invoked request')
    requests[#requests].handler(nil, vim.NIL)
    check(notes[#notes] == 'Tandem: no suggestion here', 'an empty invoked answer said ' .. vim.inspect(notes))
    completion.request(completion.TRIGGER_INVOKED)
    requests[#requests].handler(nil, { { insertText = ' -- end' } })
    check(completion.state().shown, 'invoked suggestion not shown')
    keys('<Esc>')
  end,
  function()
    check(not completion.state().shown and mark_count() == 0, 'leaving insert mode left the suggestion')
    completion.toggle(false)
    check(not completion.state().enabled, 'toggle(false)')
    keys('Ax')
  end,
  function()
    local before = #requests
    check(vim.wait(100, function()
      return #requests > before
    end, 5) == false, 'typing asked while turned off')
    completion.toggle()
    check(completion.state().enabled, 'toggle() did not turn it back on')
    requests_before_key = #requests
    keys('z')
  end,
  function()
    check(vim.wait(1000, function()
      return #requests > requests_before_key
    end, 5), 'typing did not ask again once turned on')
    keys('<Esc>')
  end,
}

local function finish()
  if #failures > 0 then
    io.stderr:write(table.concat(failures, '\n') .. '\n')
    io.stderr:write(string.format('completion_spec: %d failure(s)\n', #failures))
    vim.cmd('cquit 1')
  else
    io.stdout:write(string.format('completion_spec: %d checks passed\n', count))
    vim.cmd('qall!')
  end
end

local function run_step(index)
  if index > #steps or #failures > 0 then
    finish()
    return
  end
  vim.defer_fn(function()
    local ok, err = xpcall(steps[index], debug.traceback)
    if not ok then
      fail('buffer step ' .. index, tostring(err))
    end
    run_step(index + 1)
  end, 30)
end

-- The pure cases failing already says enough.
if #failures > 0 then
  finish()
else
  run_step(1)
end
