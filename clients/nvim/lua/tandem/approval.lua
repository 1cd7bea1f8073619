-- Answers `tandem/requestApproval`: shows everything the user is asked to allow (the call's
-- `details`, every line of it) in a scratch window across the top of the screen, then asks
-- with vim.ui.select (and vim.ui.input for feedback).
--
-- A title alone is not enough to decide on: a `shell` call's title is its command's first
-- line, cut, so a command padded with spaces or with a second line would be allowed unseen.
-- So "Allow" is offered only once every line of the details has been on screen (details
-- taller than the window are paged with "Show more details"), the safe answer comes first
-- (pickers such as telescope-ui-select preselect the first item, and <CR> must never allow),
-- and a call with nothing to show can only be rejected.
--
-- Neovim (0.7 to 0.10) answers a server request with whatever its handler returns,
-- synchronously: there is no way to reply later. So the question is asked inside the
-- handler. The default vim.ui.select (inputlist) calls back before returning; for an
-- asynchronous vim.ui.select (a floating picker) the handler waits with vim.wait, which
-- keeps Neovim's event loop running, and a picker that never answers within
-- `timeout_ms` counts as a rejection.
local M = {}

-- `on_wait`: called while an asynchronous picker is open, so the plugin can keep the chat on
-- screen up to date (vim.wait runs scheduled callbacks but leaves the screen as it was).
M.config = { timeout_ms = 300000, on_wait = nil }

M.REJECT = 'Reject'
M.REJECT_WITH_FEEDBACK = 'Reject with feedback…'
M.ALLOW_ONCE = 'Allow once'
M.ALLOW_ALWAYS = 'Allow always'
M.SHOW_MORE = 'Show more details'

-- Screen lines the details window leaves free: the default picker's prompt, its four items
-- and its "Type number" line (messages scroll up over the bottom of the screen), the
-- window's status line and at least one line of the windows below.
local RESERVED_LINES = 10

--- The answers offered, the safe one first: allowing once the user has seen all the details
--- (`seen_all`), else the way to see more when there is one (`more`).
function M.items(seen_all, more)
  local items = { M.REJECT, M.REJECT_WITH_FEEDBACK }
  if seen_all then
    vim.list_extend(items, { M.ALLOW_ONCE, M.ALLOW_ALWAYS })
  elseif more then
    items[#items + 1] = M.SHOW_MORE
  end
  return items
end

--- What the user is shown for tool call `call`, as lines, and its filetype: the `details`;
--- from a server that sends none, the raw arguments; nil when there is neither.
function M.shown(call)
  if type(call.details) == 'string' and call.details ~= '' then
    local lines = vim.split(call.details, '\n', true)
    local hunk, header = false, false
    for _, line in ipairs(lines) do
      hunk = hunk or line:find('^@@ ') ~= nil
      header = header or line:find('^%+%+%+ ') ~= nil
    end
    return lines, (hunk and header) and 'diff' or 'text'
  end
  if call.rawInput ~= nil and call.rawInput ~= vim.NIL then
    local lines = { 'The server sent no details; the arguments as the model sent them:' }
    vim.list_extend(lines, vim.split(vim.inspect(call.rawInput), '\n', true))
    return lines, 'text'
  end
  return nil
end

local function wait_for(ask)
  local done, value = false, nil
  ask(function(v)
    done, value = true, v
  end)
  if not done then
    vim.wait(M.config.timeout_ms, function()
      if not done and M.config.on_wait then
        pcall(M.config.on_wait)
      end
      return done
    end, 20)
  end
  return value
end

-- Opens `lines` in a scratch window across the top of the screen, where neither the default
-- picker nor the message area covers it, as tall as they need (and room allows), wrapped,
-- with nothing that could hide text (folds, conceal); the cursor stays where it was.
local function open(lines, filetype, name)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_option(buf, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(buf, 'bufhidden', 'wipe')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_option(buf, 'filetype', filetype)
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
  vim.api.nvim_buf_set_keymap(buf, 'n', 'q', '<cmd>close<CR>', { noremap = true, silent = true })
  local previous = vim.api.nvim_get_current_win()
  local ok, err = pcall(vim.cmd, 'topleft split')
  if not ok then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
    error(err, 0)
  end
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  local options = {
    wrap = true,
    linebreak = false,
    list = false,
    number = false,
    relativenumber = false,
    signcolumn = 'no',
    foldcolumn = '0',
    foldenable = false,
    conceallevel = 0,
    spell = false,
    scrolloff = 0,
  }
  for option, value in pairs(options) do
    vim.api.nvim_win_set_option(win, option, value)
  end
  local width = math.max(1, vim.api.nvim_win_get_width(win))
  local rows = 0
  for _, line in ipairs(lines) do
    rows = rows + math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / width))
  end
  local room = math.max(3, vim.o.lines - vim.o.cmdheight - RESERVED_LINES)
  vim.api.nvim_win_set_height(win, math.min(rows, room))
  if vim.api.nvim_win_is_valid(previous) then
    vim.api.nvim_set_current_win(previous)
  end
  return win
end

-- Scrolls `win` so that line `top` is its first; returns the last line shown whole (`top - 1`
-- when not even `top` fits).
local function show_from(win, top)
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = top, lnum = top, col = 0 })
  end)
  vim.cmd('redraw')
  local last = vim.fn.line('w$', win)
  local buf = vim.api.nvim_win_get_buf(win)
  local text = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ''
  local bottom = vim.fn.win_screenpos(win)[1] + vim.api.nvim_win_get_height(win) - 1
  local row = vim.fn.screenpos(win, last, math.max(1, #text)).row
  if row == 0 or row > bottom then
    -- `w$` counts a line that starts in the window but wraps past its bottom.
    last = last - 1
  end
  return last
end

-- Asks about the call titled `title` whose details are `lines` in `win` (nil when they could
-- not be shown, `why` says why) until the user decides.
local function ask(title, lines, win, why)
  local top, seen = 1, 0
  if win then
    seen = show_from(win, top)
  end
  while true do
    local showing = win ~= nil and vim.api.nvim_win_is_valid(win)
    local seen_all = win ~= nil and seen >= #lines
    local more = showing and not seen_all and seen >= top
    local where
    if seen_all then
      where = 'details above'
    elseif more then
      where = ('details above: lines %d–%d of %d; "Allow" comes once you have seen them all'):format(top, seen, #lines)
    elseif win and not showing then
      where = 'the details window was closed before you saw every line, so only rejecting is offered'
    elseif win then
      where = ('details above: line %d does not fit in the window, so only rejecting is offered'):format(seen + 1)
    else
      where = why .. ', so only rejecting is offered'
    end
    local items = M.items(seen_all, more)
    local choice = wait_for(function(cb)
      vim.ui.select(items, { prompt = ('Tandem wants to: %s (%s)'):format(title, where), kind = 'tandem.approval' }, cb)
    end)
    if choice == M.SHOW_MORE and more then
      top = seen + 1
      seen = math.max(seen, show_from(win, top))
    elseif choice == M.ALLOW_ONCE and seen_all then
      return { type = 'allowOnce' }
    elseif choice == M.ALLOW_ALWAYS and seen_all then
      return { type = 'allowAlways' }
    elseif choice == M.REJECT_WITH_FEEDBACK then
      local feedback = wait_for(function(cb)
        vim.ui.input({ prompt = 'Tell Tandem why: ' }, cb)
      end)
      local decision = { type = 'reject' }
      if feedback and feedback ~= '' then
        decision.feedback = feedback
      end
      return decision
    else
      -- 'Reject', a dismissed picker or a timeout: refusing is the safe answer.
      return { type = 'reject' }
    end
  end
end

--- The result for one `tandem/requestApproval` params object.
function M.decide(params)
  local call = params.toolCall or {}
  local title = call.title or call.tool or 'a tool call'
  local lines, filetype = M.shown(call)
  local win, why
  if lines then
    local ok, opened = pcall(open, lines, filetype, 'tandem://approval/' .. tostring(call.callId or ''))
    if ok then
      win = opened
    else
      why = 'the details could not be shown: ' .. tostring(opened)
    end
  else
    why = 'the server sent no details of this call'
  end
  local ok, decision = pcall(ask, title, lines, win, why)
  if win and vim.api.nvim_win_is_valid(win) and #vim.api.nvim_list_wins() > 1 then
    pcall(vim.api.nvim_win_close, win, true)
  end
  if not ok then
    error(decision, 0)
  end
  return { decision = decision }
end

--- The `tandem/requestApproval` handler for vim.lsp.start_client's `handlers`.
function M.handler(_, params, _)
  local ok, result = pcall(M.decide, params or {})
  if not ok then
    vim.notify('Tandem: approval failed, the call is rejected: ' .. tostring(result), vim.log.levels.ERROR)
    return { decision = { type = 'reject', feedback = 'The editor failed to ask the user.' } }
  end
  return result
end

return M
