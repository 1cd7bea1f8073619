-- Chat buffers and windows: one `nofile` markdown buffer per session, named
-- `tandem://chat/<session id>`, whose lines are always `render.lines` of the
-- session's events. `i` or <CR> in a chat buffer asks for a prompt and sends it
-- to that session.
local render = require('tandem.render')

local M = {}

-- session id -> { buf = bufnr, state = render state, shown = lines last written }
local chats = {}

M.config = { layout = 'split', width = 80 }

local function valid(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local function prompt_and_send(session_id)
  vim.ui.input({ prompt = 'Tandem: ' }, function(text)
    if text and text ~= '' then
      require('tandem').ask(text, { session_id = session_id })
    end
  end)
end

local function create_buf(session_id)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_option(buf, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(buf, 'bufhidden', 'hide')
  vim.api.nvim_buf_set_option(buf, 'swapfile', false)
  -- A buffer name is unique; a stale one (a wiped chat of the same session) would make
  -- nvim_buf_set_name fail, so fall back to a numbered name rather than erroring.
  if not pcall(vim.api.nvim_buf_set_name, buf, 'tandem://chat/' .. session_id) then
    pcall(vim.api.nvim_buf_set_name, buf, 'tandem://chat/' .. session_id .. '#' .. buf)
  end
  vim.api.nvim_buf_set_option(buf, 'filetype', 'markdown')
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
  for _, lhs in ipairs({ 'i', '<CR>' }) do
    vim.api.nvim_buf_set_keymap(buf, 'n', lhs, '', {
      noremap = true,
      silent = true,
      desc = 'Send a prompt to this Tandem session',
      callback = function()
        prompt_and_send(session_id)
      end,
    })
  end
  vim.api.nvim_buf_set_keymap(buf, 'n', 'q', '', {
    noremap = true,
    silent = true,
    desc = 'Close the Tandem chat window',
    callback = function()
      if #vim.api.nvim_list_wins() > 1 then
        vim.api.nvim_win_close(0, false)
      end
    end,
  })
  return buf
end

--- The chat record of a session, created on first use.
function M.get(session_id)
  local chat = chats[session_id]
  if not chat then
    chat = { state = render.new(), shown = {} }
    chats[session_id] = chat
  end
  if not valid(chat.buf) then
    chat.buf = create_buf(session_id)
    chat.shown = {}
  end
  return chat
end

--- The chat buffer of a session, or nil when it has none (never creates one).
function M.buffer(session_id)
  local chat = session_id and chats[session_id]
  if chat and valid(chat.buf) then
    return chat.buf
  end
  return nil
end

--- The usage last reported for a session, for the statusline.
function M.usage(session_id)
  local chat = session_id and chats[session_id]
  return chat and chat.state.usage
end

local function windows_of(buf)
  local wins = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      wins[#wins + 1] = win
    end
  end
  return wins
end

--- The agent's final text in a turn of a session (see `render.answer`), or nil.
function M.answer(session_id, turn_id)
  local chat = session_id and chats[session_id]
  return chat and render.answer(chat.state, turn_id)
end

--- What a session is about, from its chat (see `render.title`), or nil.
function M.title(session_id)
  local chat = session_id and chats[session_id]
  return chat and render.title(chat.state)
end

--- Whether a session's chat is on screen: shown in a window of the current tab page.
function M.visible(session_id)
  local buf = M.buffer(session_id)
  if not buf then
    return false
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return true
    end
  end
  return false
end

-- Writes only from the first line that changed, so streaming a long chat stays cheap
-- and windows that are not at the bottom keep their view.
local function redraw(chat)
  local lines = render.lines(chat.state)
  local shown = chat.shown
  local first = 1
  while first <= #lines and first <= #shown and lines[first] == shown[first] do
    first = first + 1
  end
  if first > #lines and first > #shown then
    return
  end
  local follow = {}
  for _, win in ipairs(windows_of(chat.buf)) do
    local row = vim.api.nvim_win_get_cursor(win)[1]
    if row >= math.max(#shown, 1) then
      follow[#follow + 1] = win
    end
  end
  local tail = {}
  for i = first, #lines do
    tail[#tail + 1] = lines[i]
  end
  vim.api.nvim_buf_set_option(chat.buf, 'modifiable', true)
  if #lines == 0 then
    vim.api.nvim_buf_set_lines(chat.buf, 0, -1, false, {})
  else
    vim.api.nvim_buf_set_lines(chat.buf, first - 1, -1, false, tail)
  end
  vim.api.nvim_buf_set_option(chat.buf, 'modifiable', false)
  chat.shown = lines
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { math.max(#lines, 1), 0 })
  end
end

--- Applies one `tandem/event` params object to its session's chat.
function M.on_event(params)
  local chat = M.get(params.sessionId)
  if render.apply(chat.state, params.event, params.turnId) then
    redraw(chat)
  end
end

local function chat_window()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.api.nvim_buf_get_name(buf):match('^tandem://chat/') then
      return win
    end
  end
  return nil
end

--- Shows a session's chat, reusing a chat window of this tab page. The cursor stays
--- where it was unless `focus` is true.
function M.open(session_id, focus)
  local chat = M.get(session_id)
  local from = vim.api.nvim_get_current_win()
  local win = chat_window()
  if win then
    vim.api.nvim_win_set_buf(win, chat.buf)
  elseif M.config.layout == 'float' then
    local width = math.min(M.config.width or 80, vim.o.columns - 4)
    local height = math.max(math.floor(vim.o.lines * 0.7), 5)
    win = vim.api.nvim_open_win(chat.buf, true, {
      relative = 'editor',
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = 'rounded',
      style = 'minimal',
    })
  else
    vim.cmd('botright vsplit')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, chat.buf)
    vim.api.nvim_win_set_width(win, math.min(M.config.width or 80, math.floor(vim.o.columns / 2)))
  end
  vim.api.nvim_win_set_option(win, 'wrap', true)
  vim.api.nvim_win_set_option(win, 'linebreak', true)
  pcall(vim.api.nvim_win_set_cursor, win, { math.max(vim.api.nvim_buf_line_count(chat.buf), 1), 0 })
  if not focus and vim.api.nvim_win_is_valid(from) and M.config.layout ~= 'float' then
    vim.api.nvim_set_current_win(from)
  end
  return win
end

--- Closes the chat window of this tab page, or opens the session's chat.
function M.toggle(session_id)
  local win = chat_window()
  if win then
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
    return
  end
  if not session_id then
    vim.notify('Tandem: no session yet; start one with :Tandem {prompt} or :TandemNew', vim.log.levels.WARN)
    return
  end
  M.open(session_id, true)
end

return M
