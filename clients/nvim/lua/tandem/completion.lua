-- Inline completions (ghost text) for Tandem: while you type in insert mode it asks the server
-- for `textDocument/inlineCompletion` (LSP 3.18), shows the first suggestion after the cursor as
-- virtual text, and inserts it whole, by word or by line on a key. The first half of the file is
-- pure (result normalisation, placing a suggestion at the cursor, what the ghost text shows,
-- accept splitting) and unit-tested in tests/completion_spec.lua; the second half talks to the
-- client and the buffer. Only Neovim 0.7.2 APIs, plus 0.10's inline virtual text where present.

local M = {}

M.defaults = {
  -- Whether suggestions are asked for while typing (:TandemComplete works either way).
  enabled = true,
  -- Quiet time after a keystroke before asking. 0: ask on each keystroke and let the server's
  -- `completion.debounceMs` do the waiting (it drops superseded requests before any model
  -- request); both would add up.
  debounce_ms = 0,
  -- nil: every filetype; a list of filetypes; or a map filetype -> bool (`['*']` for the rest).
  filetypes = nil,
  -- Insert-mode keys; false leaves a key unmapped. With no suggestion shown a key does what it
  -- did without the plugin.
  keymaps = {
    accept = '<Tab>',
    accept_word = '<M-Right>',
    accept_line = '<M-C-Right>',
    dismiss = '<C-]>',
  },
}

M.METHOD = 'textDocument/inlineCompletion'
M.TRIGGER_INVOKED = 1
M.TRIGGER_AUTOMATIC = 2
M.HIGHLIGHT = 'TandemSuggestion'
M.namespace = vim.api.nvim_create_namespace('tandem_completion')

-- JSON-RPC codes of a request that was cancelled (by us, or by the server because a newer one
-- superseded it): expected, never worth telling the user.
local CANCELLED_CODES = { [-32800] = true, [-32802] = true }

-- 0.10 draws virtual text inside the line; 0.11 changed vim.str_byteindex's arguments.
local HAS_INLINE_VIRT_TEXT = vim.fn.has('nvim-0.10') == 1
local NEW_STR_BYTEINDEX = vim.fn.has('nvim-0.11') == 1

local function ends_with(text, suffix)
  return suffix == '' or text:sub(-#suffix) == suffix
end

-- ---------------------------------------------------------------- pure functions

--- The first item of a `textDocument/inlineCompletion` result as `{ text, range }` (`range` nil
--- when the item has none), or nil when there is nothing to show. The result may be null, a list
--- of items or `{ items = [...] }`; a snippet's value is taken as plain text.
function M.first_item(result)
  if type(result) ~= 'table' then
    return nil
  end
  local items = result.items
  if items == nil then
    items = result
  end
  if type(items) ~= 'table' or type(items[1]) ~= 'table' then
    return nil
  end
  local item = items[1]
  local text = item.insertText
  if type(text) == 'table' then
    text = text.value
  end
  if type(text) ~= 'string' then
    return nil
  end
  text = text:gsub('\r\n?', '\n')
  if text == '' then
    return nil
  end
  -- vim.NIL (JSON null) is userdata, so the type check also drops `range: null`.
  local range = type(item.range) == 'table' and item.range or nil
  return { text = text, range = range }
end

--- The byte column of `line` that the LSP `character` (in `encoding`) points at, clamped to the
--- line: the inverse of init.lua's encode_col.
function M.byte_col(line, character, encoding)
  if type(character) ~= 'number' or character <= 0 then
    return 0
  end
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, col
  if NEW_STR_BYTEINDEX then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding ~= 'utf-32')
  end
  if not ok then
    -- str_byteindex raises past the end of the line.
    return #line
  end
  return math.min(col, #line)
end

--- Where `item` (from first_item) goes when the cursor is at byte `col` of `line` (row `row`):
--- `{ text, replaced }`, the text still to insert at the cursor and the text right after the
--- cursor that it replaces (from the item's range; '' without one). Nil when the suggestion
--- cannot be shown at the cursor: its range is on another line, starts after the cursor, ends
--- before it, or covers typed text that the suggestion does not start with; or it adds nothing.
function M.place(item, line, row, col, encoding)
  local text = item.text
  local replace_to = col
  local range = item.range
  if range then
    local first, last = range.start, range['end']
    if type(first) ~= 'table' or type(last) ~= 'table' or first.line ~= row or last.line ~= row then
      return nil
    end
    local start_col = M.byte_col(line, first.character, encoding)
    replace_to = M.byte_col(line, last.character, encoding)
    if start_col > col or replace_to < col then
      return nil
    end
    -- A range that starts before the cursor repeats what was typed there: only the rest is new.
    local typed = line:sub(start_col + 1, col)
    if text:sub(1, #typed) ~= typed then
      return nil
    end
    text = text:sub(#typed + 1)
  end
  local replaced = line:sub(col + 1, replace_to)
  if text == '' or text == replaced then
    return nil
  end
  return { text = text, replaced = replaced }
end

--- How the suggestion is drawn: 'inline' (0.10's virtual text that pushes the line's text
--- right) when `has_inline` and the text it replaces, if any, ends the suggestion (then the real
--- text shows it, once); else 'overlay', drawn over the rest of the line.
function M.display_mode(has_inline, placed)
  if not has_inline then
    return 'overlay'
  end
  local lines = vim.split(placed.text, '\n', { plain = true })
  if ends_with(lines[#lines], placed.replaced) then
    return 'inline'
  end
  return 'overlay'
end

--- `text` with its tabs turned into the spaces they would take when it starts at screen column
--- `start_vcol` (virtual text shows a tab as one cell).
function M.expand_tabs(text, tabstop, start_vcol)
  if not text:find('\t', 1, true) then
    return text
  end
  local out = {}
  local vcol = start_vcol or 0
  local pieces = vim.split(text, '\t', { plain = true })
  for i, piece in ipairs(pieces) do
    table.insert(out, piece)
    vcol = vcol + vim.fn.strdisplaywidth(piece)
    if i < #pieces then
      local width = tabstop - vcol % tabstop
      table.insert(out, string.rep(' ', width))
      vcol = vcol + width
    end
  end
  return table.concat(out)
end

--- What the ghost text shows, `{ first = string, below = { string... } }`: `first` at the
--- cursor, `below` as lines under it. `placed` is from place(); `rest` is the line's text after
--- what the suggestion replaces. `view`: `mode` (from display_mode), `tabstop`, `start_vcol` (the
--- cursor's screen column) and `rest_width` (the screen width of the line's text after the
--- cursor).
---
--- Inline, the real text after the cursor stays on screen after `first`, so the replaced text is
--- dropped from the suggestion's end rather than shown twice. Overlay covers the real text, so
--- the line is drawn as it will read once accepted: the rest of the line follows the suggestion
--- (on its last line), and spaces hide what the suggestion removes.
function M.display(placed, rest, view)
  local lines = vim.split(placed.text, '\n', { plain = true })
  local last = #lines
  if view.mode == 'inline' then
    if ends_with(lines[last], placed.replaced) then
      lines[last] = lines[last]:sub(1, #lines[last] - #placed.replaced)
    end
  else
    lines[last] = lines[last] .. rest
  end
  local first = M.expand_tabs(lines[1], view.tabstop, view.start_vcol)
  if view.mode ~= 'inline' then
    local width = vim.fn.strdisplaywidth(first)
    if width < view.rest_width then
      first = first .. string.rep(' ', view.rest_width - width)
    end
  end
  local below = {}
  for i = 2, last do
    table.insert(below, M.expand_tabs(lines[i], view.tabstop, 0))
  end
  return { first = first, below = below }
end

--- The options of nvim_buf_set_extmark that draw `shown` (from display) in `mode` with the
--- highlight group `hl`.
function M.extmark_opts(shown, mode, hl)
  local opts = { hl_mode = 'combine' }
  if shown.first ~= '' then
    opts.virt_text = { { shown.first, hl } }
    opts.virt_text_pos = mode
  end
  if #shown.below > 0 then
    opts.virt_lines = {}
    for _, line in ipairs(shown.below) do
      table.insert(opts.virt_lines, { { line, hl } })
    end
  end
  return opts
end

--- The start of `text` that accept-word takes: leading whitespace (newlines too) and then a run
--- of word characters or a run of other non-blank characters. Bytes of multibyte characters
--- count as word characters, so `é` does not split a word.
function M.next_word(text)
  local lead = text:match('^%s*')
  local rest = text:sub(#lead + 1)
  local word = rest:match('^[%w_\128-\255]+') or rest:match('^[^%w_%s\128-\255]+') or ''
  return lead .. word
end

--- The start of `text` that accept-line takes: up to and including the first newline, or all of
--- it.
function M.next_line(text)
  local newline = text:find('\n', 1, true)
  return newline and text:sub(1, newline) or text
end

--- `text` split for accepting `how` ('all', 'word' or 'line'): the part to insert and the rest.
function M.take(text, how)
  local part = text
  if how == 'word' then
    part = M.next_word(text)
  elseif how == 'line' then
    part = M.next_line(text)
  end
  if part == '' then
    part = text
  end
  return part, text:sub(#part + 1)
end

--- Whether completions are asked for automatically in a buffer of `filetype` (see
--- defaults.filetypes).
function M.filetype_enabled(filetypes, filetype)
  if filetypes == nil or filetypes == vim.NIL then
    return true
  end
  if (vim.islist or vim.tbl_islist)(filetypes) then
    return vim.tbl_contains(filetypes, filetype)
  end
  local wanted = filetypes[filetype]
  if wanted == nil then
    wanted = filetypes['*']
  end
  return wanted == nil or wanted == true
end

--- Whether two places (`{ bufnr, tick, row, col }`) are the same buffer state and cursor.
function M.same_place(a, b)
  return a ~= nil and b ~= nil and a.bufnr == b.bufnr and a.tick == b.tick and a.row == b.row and a.col == b.col
end

-- ---------------------------------------------------------------- state

local config = vim.deepcopy(M.defaults)
-- Set by init.lua's setup: `client_for(bufnr)` is the initialized Tandem client attached to
-- the buffer, or nil; `position(bufnr, row, col, encoding)` an LSP position.
local hooks = {
  client_for = function()
    return nil
  end,
  position = function(_, row, col)
    return { line = row, character = col }
  end,
}
local enabled = true
local debounce_timer = nil
-- The request in flight: its place, client and id.
local pending = nil
-- The suggestion on screen: its place, `text`, `replaced`, and what is drawn.
local suggestion = nil
-- Where the last automatic request was scheduled from, so that the autocommands that fire
-- together for one keystroke (or for none, like CursorMovedI after InsertEnter) ask once.
local last_trigger = nil
local mapped_keys = {}

local function current_place()
  local bufnr = vim.api.nvim_get_current_buf()
  local cursor = vim.api.nvim_win_get_cursor(0)
  return { bufnr = bufnr, tick = vim.api.nvim_buf_get_changedtick(bufnr), row = cursor[1] - 1, col = cursor[2] }
end

local function line_at(bufnr, row)
  return vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

local function in_insert_mode()
  return vim.api.nvim_get_mode().mode:sub(1, 1) == 'i'
end

local function hide()
  if suggestion and vim.api.nvim_buf_is_valid(suggestion.bufnr) then
    vim.api.nvim_buf_clear_namespace(suggestion.bufnr, M.namespace, 0, -1)
  end
  suggestion = nil
end

local function cancel()
  if debounce_timer then
    debounce_timer:stop()
  end
  if pending then
    local request = pending
    pending = nil
    if request.id then
      -- The client may have exited since; then there is nothing to cancel.
      pcall(request.client.cancel_request, request.id)
    end
  end
end

local function show(place, placed)
  hide()
  local line = line_at(place.bufnr, place.row)
  local mode = M.display_mode(HAS_INLINE_VIRT_TEXT, placed)
  local start_vcol = vim.fn.strdisplaywidth(line:sub(1, place.col))
  local shown = M.display(placed, line:sub(place.col + #placed.replaced + 1), {
    mode = mode,
    tabstop = vim.bo[place.bufnr].tabstop,
    start_vcol = start_vcol,
    rest_width = vim.fn.strdisplaywidth(line:sub(place.col + 1), start_vcol),
  })
  local opts = M.extmark_opts(shown, mode, M.HIGHLIGHT)
  local ok = pcall(vim.api.nvim_buf_set_extmark, place.bufnr, M.namespace, place.row, place.col, opts)
  if not ok then
    return
  end
  suggestion = vim.tbl_extend('force', place, placed, { mode = mode, shown = shown })
end

local function say(invoked, message, level)
  if invoked then
    vim.notify('Tandem: ' .. message, level or vim.log.levels.INFO)
  end
end

local function on_answer(request, err, result)
  if pending ~= request then
    return
  end
  pending = nil
  local invoked = request.trigger_kind == M.TRIGGER_INVOKED
  if err then
    if not CANCELLED_CODES[err.code] then
      say(invoked, 'inline completion failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.WARN)
    end
    return
  end
  -- An answer for text or a cursor that has moved on would land in the wrong place.
  local place = current_place()
  if not M.same_place(request, place) or not in_insert_mode() or vim.fn.pumvisible() == 1 then
    return
  end
  local item = M.first_item(result)
  local placed = item and M.place(item, line_at(place.bufnr, place.row), place.row, place.col, request.encoding)
  if not placed then
    say(invoked, 'no suggestion here')
    return
  end
  show(place, placed)
end

--- Asks for a suggestion at the cursor now. `trigger_kind`: M.TRIGGER_INVOKED (the user asked:
--- says why when it cannot) or M.TRIGGER_AUTOMATIC (typing: silent).
function M.request(trigger_kind)
  trigger_kind = trigger_kind or M.TRIGGER_INVOKED
  local invoked = trigger_kind == M.TRIGGER_INVOKED
  cancel()
  if not invoked and not enabled then
    return
  end
  if not in_insert_mode() then
    say(invoked, 'inline completions work in insert mode: map the command there, e.g. '
      .. "vim.keymap.set('i', '<M-\\>', '<Cmd>TandemComplete<CR>')", vim.log.levels.WARN)
    return
  end
  local place = current_place()
  local client = hooks.client_for(place.bufnr)
  if not client then
    say(invoked, 'Tandem is not attached to this buffer', vim.log.levels.WARN)
    return
  end
  local provider = (client.server_capabilities or {}).inlineCompletionProvider
  if not provider or provider == vim.NIL then
    say(invoked, 'the server does not offer inline completions', vim.log.levels.WARN)
    return
  end
  hide()
  local encoding = client.offset_encoding or 'utf-16'
  local request = vim.tbl_extend('force', place, { client = client, encoding = encoding, trigger_kind = trigger_kind })
  pending = request
  local ok, id = client.request(M.METHOD, {
    textDocument = { uri = vim.uri_from_bufnr(place.bufnr) },
    position = hooks.position(place.bufnr, place.row, place.col, encoding),
    context = { triggerKind = trigger_kind },
  }, function(err, result)
    -- 0.7 calls response handlers scheduled; later versions may not.
    if vim.in_fast_event() then
      vim.schedule(function()
        on_answer(request, err, result)
      end)
    else
      on_answer(request, err, result)
    end
  end, place.bufnr)
  if ok then
    request.id = id
  elseif pending == request then
    pending = nil
  end
end

local function schedule_request()
  if not debounce_timer then
    debounce_timer = vim.loop.new_timer()
  end
  debounce_timer:stop()
  debounce_timer:start(
    math.max(config.debounce_ms or 0, 0),
    0,
    vim.schedule_wrap(function()
      -- Replaying a macro types faster than any suggestion could help.
      if in_insert_mode() and vim.fn.pumvisible() == 0 and vim.fn.reg_executing() == '' then
        M.request(M.TRIGGER_AUTOMATIC)
      end
    end)
  )
end

-- TextChangedI, CursorMovedI, InsertEnter: what was shown no longer fits; ask again.
local function on_typing(event)
  local place = current_place()
  -- Nothing moved since the suggestion was drawn (or since a partial accept redrew it).
  if suggestion and M.same_place(suggestion, place) then
    return
  end
  if event ~= 'InsertEnter' and M.same_place(last_trigger, place) then
    return
  end
  hide()
  cancel()
  last_trigger = place
  if not enabled or not M.filetype_enabled(config.filetypes, vim.bo[place.bufnr].filetype) then
    return
  end
  if not hooks.client_for(place.bufnr) then
    return
  end
  schedule_request()
end

local function on_leave()
  hide()
  cancel()
  last_trigger = nil
end

-- Inserts the part of the suggestion that `how` takes at the cursor and leaves the cursor after
-- it. Returns false when no suggestion is on screen here.
local function accept(how)
  local current = suggestion
  if not current or not M.same_place(current, current_place()) then
    return false
  end
  local part, remaining = M.take(current.text, how)
  -- The replaced text goes only with the whole suggestion: a part is inserted before it.
  local replace_len = remaining == '' and #current.replaced or 0
  local lines = vim.split(part, '\n', { plain = true })
  hide()
  cancel()
  vim.api.nvim_buf_set_text(current.bufnr, current.row, current.col, current.row, current.col + replace_len, lines)
  local row = current.row + #lines - 1
  local col = (#lines == 1 and current.col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  -- After the whole suggestion, the TextChangedI that this insertion fires asks for the next
  -- one; after a part, the rest is on screen again before it fires, and it leaves it there.
  if remaining ~= '' and remaining ~= current.replaced then
    show(current_place(), { text = remaining, replaced = current.replaced })
  end
  return true
end

--- Inserts the whole suggestion (replacing what its range covers). False when none is shown.
function M.accept()
  return accept('all')
end

--- Inserts the suggestion's next word and keeps showing the rest. False when none is shown.
function M.accept_word()
  return accept('word')
end

--- Inserts the suggestion up to and including its next newline and keeps showing the rest.
--- False when none is shown.
function M.accept_line()
  return accept('line')
end

--- Hides the suggestion and cancels the request in flight; nothing is asked again until the
--- text or cursor changes. False when nothing was shown or asked.
function M.dismiss()
  local had = suggestion ~= nil or pending ~= nil
  hide()
  cancel()
  last_trigger = current_place()
  return had
end

--- Turns automatic suggestions on or off (or to `on` when given); returns the new state.
function M.toggle(on)
  if on == nil then
    on = not enabled
  end
  enabled = on and true or false
  if not enabled then
    hide()
    cancel()
  end
  vim.notify('Tandem: inline completions ' .. (enabled and 'on' or 'off'), vim.log.levels.INFO)
  return enabled
end

--- What is going on, for tests and statuslines: `enabled`, `pending` (a request in flight),
--- `shown`, and for a shown suggestion its `text` (still to insert), `replaced`, `bufnr`,
--- `row`, `col` (0-based, bytes), `mode` and `display` (what is drawn, see M.display).
function M.state()
  local state = { enabled = enabled, pending = pending ~= nil, shown = suggestion ~= nil }
  if suggestion then
    state.text = suggestion.text
    state.replaced = suggestion.replaced
    state.bufnr, state.row, state.col = suggestion.bufnr, suggestion.row, suggestion.col
    state.mode = suggestion.mode
    state.display = vim.deepcopy(suggestion.shown)
  end
  return state
end

local actions = {
  accept = M.accept,
  accept_word = M.accept_word,
  accept_line = M.accept_line,
  dismiss = M.dismiss,
}

local function map_keys(keymaps)
  for _, lhs in ipairs(mapped_keys) do
    pcall(vim.keymap.del, 'i', lhs)
  end
  mapped_keys = {}
  for name, lhs in pairs(keymaps or {}) do
    local action = actions[name]
    if action and type(lhs) == 'string' and lhs ~= '' then
      local keys = vim.api.nvim_replace_termcodes(lhs, true, false, true)
      vim.keymap.set('i', lhs, function()
        if not action() then
          -- Not remapped, so that this mapping does not catch it again; inserted in front of
          -- the typeahead, so that keys typed after it stay after it.
          vim.api.nvim_feedkeys(keys, 'ni', false)
        end
      end, { silent = true, desc = 'Tandem: ' .. name:gsub('_', ' ') .. ' the suggestion, else ' .. lhs })
      table.insert(mapped_keys, lhs)
    end
  end
end

local function define_highlight()
  vim.cmd('highlight default link ' .. M.HIGHLIGHT .. ' Comment')
end

--- Applies `opts` (see M.defaults) and installs the autocommands and keys. `client_hooks`:
--- `client_for(bufnr)` and `position(bufnr, row, col, encoding)`, see `hooks` above.
function M.setup(opts, client_hooks)
  config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- A list must replace the default, not be merged into it index by index.
  if opts and opts.filetypes ~= nil then
    config.filetypes = opts.filetypes
  end
  if client_hooks then
    hooks = vim.tbl_extend('force', hooks, client_hooks)
  end
  enabled = config.enabled ~= false
  on_leave()
  define_highlight()
  local group = vim.api.nvim_create_augroup('TandemCompletion', { clear = true })
  for _, event in ipairs({ 'InsertEnter', 'TextChangedI', 'CursorMovedI' }) do
    vim.api.nvim_create_autocmd(event, {
      group = group,
      callback = function()
        on_typing(event)
      end,
    })
  end
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, { group = group, callback = on_leave })
  -- A colour scheme clears highlight groups, default links included.
  vim.api.nvim_create_autocmd('ColorScheme', { group = group, callback = define_highlight })
  map_keys(config.keymaps)
end

return M
