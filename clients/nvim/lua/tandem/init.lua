-- Tandem for Neovim: starts `tandem lsp` as an LSP client, attaches it to file
-- buffers, declares Tandem's custom capabilities (events, approvals, saving the agent's
-- edits before it runs a command, forwarding the editor's diagnostics: tandem/diagnostics.lua),
-- and offers the chat commands and inline completions (tandem/completion.lua). Needs Neovim
-- 0.7.2 or newer (only APIs present in 0.7.2 are used; 0.7.2 is what the tests run).
local chat = require('tandem.chat')
local approval = require('tandem.approval')
local save = require('tandem.save')
local render = require('tandem.render')
local completion = require('tandem.completion')
local diagnostics = require('tandem.diagnostics')
local locate = require('tandem.locate')

local M = {}

local defaults = {
  -- nil: `tandem lsp`, with `tandem` found by tandem/locate.lua
  cmd = nil,
  filetypes = nil,
  root_dir = nil,
  settings = nil,
  chat = { layout = 'split', width = 80 },
  notify = true,
  approval_timeout_ms = 300000,
  completion = vim.deepcopy(completion.defaults),
}

local config = vim.deepcopy(defaults)
local client_id = nil
local initialized = false
local current_session = nil
-- session id -> { [turn id] = true } for turns that have not finished yet
local running = {}
-- turn id -> true for turns whose turnFinished came before the request's answer
local finished_early = {}
-- prompt requests sent and not answered yet
local in_flight = 0

local function notify(msg, level)
  if config.notify then
    vim.notify(msg, level or vim.log.levels.INFO)
  end
end

-- `text` cut to `width` display cells, ending in `…` when cut (or when `more` says that
-- text follows it).
local function fit(text, width, more)
  if not more and vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local lo, hi = 0, vim.fn.strchars(text)
  while lo < hi do
    local mid = math.ceil((lo + hi) / 2)
    if vim.fn.strdisplaywidth(vim.fn.strcharpart(text, 0, mid)) + 1 <= width then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return vim.fn.strcharpart(text, 0, lo) .. '…'
end

-- What the user is told when a turn ends normally: the agent's final text (its first line, cut
-- to the message area so that it never asks for Enter) and, when the chat is not on screen,
-- where the rest is. Turns from commands and code actions open the chat; this covers the
-- others (the chat closed meanwhile, another tab page, :TandemInline).
local function done_message(session_id, turn_id)
  local where = chat.visible(session_id) and '' or '  (:TandemChat shows the chat)'
  local answer = chat.answer(session_id, turn_id)
  if not answer then
    return 'Tandem: done' .. where
  end
  local first = answer:match('^[^\r\n]*')
  local room = math.max((vim.v.echospace or 68) - vim.fn.strdisplaywidth('Tandem: done: ' .. where), 20)
  return 'Tandem: done: ' .. fit(first, room, first ~= answer) .. where
end

local function root_for(bufnr)
  local root
  if type(config.root_dir) == 'function' then
    root = config.root_dir(bufnr or vim.api.nvim_get_current_buf())
  elseif type(config.root_dir) == 'string' then
    root = config.root_dir
  end
  local path = vim.fn.fnamemodify(root or vim.loop.cwd(), ':p')
  return path:match('^(.-)/*$') ~= '' and path:match('^(.-)/*$') or path
end

local function client()
  return client_id and vim.lsp.get_client_by_id(client_id) or nil
end

local function is_file_buffer(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_buf_get_option(bufnr, 'buftype') ~= '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return false
  end
  if config.filetypes then
    return vim.tbl_contains(config.filetypes, vim.api.nvim_buf_get_option(bufnr, 'filetype'))
  end
  return true
end

-- ---------------------------------------------------------------- focus tracking

local focus_timer = nil
local last_focus = nil

local function encode_col(line, col, encoding)
  col = math.min(col, #line)
  if encoding == 'utf-8' then
    return col
  end
  local ok, utf32, utf16 = pcall(vim.str_utfindex, line, col)
  if not ok then
    return col
  end
  return encoding == 'utf-32' and utf32 or utf16
end

local function position(bufnr, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  if col == math.huge then
    col = #line
  end
  return { line = row, character = encode_col(line, col, encoding) }
end

-- The byte column just past the character that starts at byte `col` of line `row` (UTF-8).
local function after_char(bufnr, row, col)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  local byte = line:byte(col + 1)
  if not byte then
    return #line
  end
  local length = byte >= 0xF0 and 4 or byte >= 0xE0 and 3 or byte >= 0xC0 and 2 or 1
  return math.min(col + length, #line)
end

local function current_selection(bufnr, encoding)
  local cursor = vim.api.nvim_win_get_cursor(0)
  local crow, ccol = cursor[1] - 1, cursor[2]
  local mode = vim.api.nvim_get_mode().mode
  local v = vim.fn.getpos('v')
  local vrow, vcol = v[2] - 1, v[3] - 1
  if mode == 'v' then
    -- Vim's selection includes the character under both ends, an LSP range's end excludes it:
    -- the later end moves past its character. The end stays on the cursor's side.
    if crow > vrow or (crow == vrow and ccol >= vcol) then
      return {
        start = position(bufnr, vrow, vcol, encoding),
        ['end'] = position(bufnr, crow, after_char(bufnr, crow, ccol), encoding),
      }
    end
    return {
      start = position(bufnr, vrow, after_char(bufnr, vrow, vcol), encoding),
      ['end'] = position(bufnr, crow, ccol, encoding),
    }
  elseif mode == 'V' then
    -- Whole lines are selected; the end stays on the cursor's side of the selection.
    if crow >= vrow then
      return { start = position(bufnr, vrow, 0, encoding), ['end'] = position(bufnr, crow, math.huge, encoding) }
    end
    return { start = position(bufnr, vrow, math.huge, encoding), ['end'] = position(bufnr, crow, 0, encoding) }
  end
  local pos = position(bufnr, crow, ccol, encoding)
  return { start = pos, ['end'] = pos }
end

-- Returns true when it sent the focus.
local function send_focus(force)
  local c = client()
  local bufnr = vim.api.nvim_get_current_buf()
  if not (c and initialized and vim.lsp.buf_is_attached(bufnr, c.id)) then
    return false
  end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    selection = current_selection(bufnr, c.offset_encoding or 'utf-16'),
  }
  if not force and last_focus and vim.deep_equal(last_focus, params) then
    return false
  end
  last_focus = params
  c.notify('tandem/didChangeActiveEditor', params)
  return true
end

-- Sends Neovim's debounced didChange now. 0.7 has no call for that, but any other
-- notification flushes it: the current focus, or (from a window Tandem does not track,
-- such as the chat) the last focus again, which changes nothing on the server.
local function flush_changes()
  local c = client()
  if not send_focus(true) and c and initialized and last_focus then
    c.notify('tandem/didChangeActiveEditor', last_focus)
  end
end

local function schedule_focus()
  if not focus_timer then
    focus_timer = vim.loop.new_timer()
  end
  focus_timer:stop()
  focus_timer:start(
    100,
    0,
    vim.schedule_wrap(function()
      send_focus(false)
    end)
  )
end

-- A prompt must see the selection the user just made, not the one 100 ms ago.
local function flush_focus()
  if focus_timer then
    focus_timer:stop()
  end
  send_focus(false)
end

-- ---------------------------------------------------------------- events

local function session_running(session_id)
  return session_id and running[session_id] and next(running[session_id]) ~= nil
end

local function on_event(_, params, _)
  if type(params) ~= 'table' or type(params.sessionId) ~= 'string' then
    return
  end
  local event = params.event or {}
  current_session = current_session or params.sessionId
  if not params.replay then
    running[params.sessionId] = running[params.sessionId] or {}
    if event.type == 'turnStarted' and params.turnId then
      running[params.sessionId][params.turnId] = true
    elseif event.type == 'turnFinished' and params.turnId then
      if not running[params.sessionId][params.turnId] then
        finished_early[params.turnId] = true
      end
      running[params.sessionId][params.turnId] = nil
      local reason = event.stopReason or 'unknown'
      if reason == 'end_turn' and not event.message then
        notify(done_message(params.sessionId, params.turnId))
      elseif reason == 'cancelled' then
        notify('Tandem: cancelled')
      else
        notify('Tandem: ' .. reason .. (event.message and (': ' .. event.message) or ''), vim.log.levels.WARN)
      end
    end
  end
  chat.on_event(params)
  vim.cmd('redrawstatus')
end

-- Events received and not yet in the chat, oldest first.
local pending_events = {}
local drain_scheduled = false
-- Whether the chat changed since the approval question last redrew the screen.
local changed_since_redraw = false

-- Puts every received event in its chat.
local function drain_events()
  if vim.in_fast_event() or #pending_events == 0 then
    return
  end
  local events = pending_events
  pending_events = {}
  for _, params in ipairs(events) do
    on_event(nil, params, nil)
  end
  changed_since_redraw = true
end

-- Notifications arrive on libuv's callback, where buffers cannot be changed: they are queued
-- and drained from the main loop. The approval question drains them itself (approval_handler):
-- the default picker (inputlist) blocks the main loop, so no scheduled drain runs until it is
-- answered, and while an asynchronous picker waits (vim.wait) drains run but the screen is not
-- redrawn. Either way the chat stopped mid-word, its call still shown as running.
local function event_handler(_, params, _)
  pending_events[#pending_events + 1] = params
  if not drain_scheduled then
    drain_scheduled = true
    vim.schedule(function()
      drain_scheduled = false
      drain_events()
    end)
  end
end

-- Answers `tandem/requestApproval`, with the chat up to date while the user decides: every
-- event received before the question is in it, the call shows `?`, and (with an asynchronous
-- picker) events that arrive meanwhile stream in.
local function approval_handler(err, params, ctx)
  drain_events()
  if type(params) == 'table' and type(params.sessionId) == 'string' and type(params.toolCall) == 'table' then
    -- A shallow copy: vim.deepcopy refuses the vim.NIL a JSON null may leave in the arguments.
    local event = {}
    for key, value in pairs(params.toolCall) do
      event[key] = value
    end
    event.type, event.status = 'toolCall', 'awaitingApproval'
    chat.on_event({ sessionId = params.sessionId, turnId = params.turnId, event = event })
  end
  changed_since_redraw = false
  pcall(vim.cmd, 'redraw')
  return approval.handler(err, params, ctx)
end

-- ---------------------------------------------------------------- edits

local function buf_version(bufnr)
  local v = vim.lsp.util.buf_versions and vim.lsp.util.buf_versions[bufnr]
  return v or vim.api.nvim_buf_get_changedtick(bufnr)
end

-- Neovim's own handler applies a versioned edit to a buffer that changed since (0.7
-- only skips it, and still answers `applied: true`), so a stale edit would be lost
-- silently or land on the wrong text. Tandem relies on the refusal to redo the edit on
-- the current text, so stale versions are refused here before delegating.
local function apply_edit_handler(err, params, ctx)
  local edit = params and params.edit or {}
  for _, change in ipairs(edit.documentChanges or {}) do
    local doc = change.textDocument
    if doc and doc.version ~= nil and doc.version ~= vim.NIL then
      local bufnr = vim.uri_to_bufnr(doc.uri)
      if vim.api.nvim_buf_is_loaded(bufnr) and buf_version(bufnr) ~= doc.version then
        -- The server must have the user's text before it reads the refusal: then it sees
        -- that the buffer moved on and tells the agent to read it again, rather than that
        -- the user declined the edit, and the next read has what the user typed.
        flush_changes()
        return {
          applied = false,
          failureReason = string.format(
            'the document changed in the editor (version %d, the edit was for %d)',
            buf_version(bufnr),
            doc.version
          ),
        }
      end
    end
  end
  local result = vim.lsp.handlers['workspace/applyEdit'](err, params, ctx)
  -- The server has the edited text before it reads the answer.
  flush_changes()
  return result
end

-- Before the agent runs a shell command, a search or an MCP tool, Tandem has the buffers it
-- edited saved (tandem/save.lua). A BufWritePre autocommand (a formatter) may have changed them:
-- the server has that text before it reads the answer.
local function save_documents_handler(err, params, ctx)
  local result = save.handler(err, params, ctx)
  if #result.saved > 0 then
    flush_changes()
  end
  return result
end

-- ---------------------------------------------------------------- client

local function attach(bufnr)
  if not (client_id and is_file_buffer(bufnr)) then
    return
  end
  if not vim.lsp.buf_is_attached(bufnr, client_id) then
    vim.lsp.buf_attach_client(bufnr, client_id)
    -- Diagnostics its other servers published before (nothing before the client is initialized:
    -- on_init sends them all).
    diagnostics.send({ bufnr }, true)
  end
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- Neovim applies documentChanges (versioned edits, create/rename/delete) since 0.5 but
  -- 0.7 does not say so; without it Tandem cannot edit open buffers safely.
  caps.workspace = caps.workspace or {}
  caps.workspace.workspaceEdit = caps.workspace.workspaceEdit or {}
  caps.workspace.workspaceEdit.documentChanges = true
  -- LSP 3.18's ghost-text completions; the server offers them only to clients that declare this.
  caps.textDocument = caps.textDocument or {}
  caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  return caps
end

-- Defined below, with the requests; the client's commands start turns too.
local start_turn

-- Whether the user was told in this Neovim session (since the last setup()) that the server
-- cannot start. Every file buffer opened tries to start it: only the first failure is said,
-- and the user's own commands say it again.
local start_failure_told = false

local function start_failure(msg, automatic)
  if automatic and start_failure_told then
    return
  end
  start_failure_told = true
  -- A warning, not an error: Neovim works on without Tandem. Scheduled, so that it is not
  -- said inside the autocommand that opened the buffer, nor lost while Neovim starts up.
  vim.schedule(function()
    vim.notify(msg, vim.log.levels.WARN)
  end)
end

--- Starts the server if it is not running; returns the client id or nil. `automatic`: the
--- start comes from opening a buffer, not from the user, so a failure already reported is
--- not reported again.
function M.start(automatic)
  if client() then
    return client_id
  end
  local cmd, missing = locate.server_cmd(config.cmd)
  if not cmd then
    start_failure(missing, automatic)
    return nil
  end
  local root = root_for()
  local init_options = {
    clientCapabilities = { events = true, requestApproval = true, saveDocuments = true, diagnostics = true },
  }
  if config.settings ~= nil then
    init_options.settings = config.settings
  end
  initialized = false
  -- Code actions whose command starts a turn run it through start_turn, so the chat opens
  -- and streams the answer (Neovim's own executeCommand drops the reply, and the answer
  -- would sit in a chat nobody sees).
  local commands = {}
  local turn_commands =
    { 'tandem.explain', 'tandem.writeTests', 'tandem.document', 'tandem.fixDiagnostic', 'tandem.runInstruction' }
  for _, name in ipairs(turn_commands) do
    commands[name] = function(command)
      start_turn('workspace/executeCommand', { command = command.command, arguments = command.arguments }, true)
    end
  end
  -- The "Ask Tandem…" code action carries no instruction: ask for it here, then run the
  -- command with it, in the chat window.
  commands['tandem.ask'] = function(command)
    local args = vim.deepcopy((command.arguments or {})[1] or {})
    vim.ui.input({ prompt = 'Ask Tandem: ' }, function(text)
      if not text or vim.trim(text) == '' then
        return
      end
      args.instruction = text
      start_turn('workspace/executeCommand', { command = 'tandem.ask', arguments = { args } }, true)
    end)
  end
  local id = vim.lsp.start_client({
    name = 'tandem',
    cmd = cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ':t') } },
    init_options = init_options,
    capabilities = capabilities(),
    commands = commands,
    handlers = {
      ['workspace/applyEdit'] = apply_edit_handler,
      ['tandem/event'] = event_handler,
      ['tandem/requestApproval'] = approval_handler,
      ['tandem/saveDocuments'] = save_documents_handler,
    },
    on_init = function()
      initialized = true
      vim.schedule(schedule_focus)
      -- Scheduled: Neovim opens the buffers attached so far right after on_init returns.
      vim.schedule(diagnostics.send_all)
    end,
    on_exit = function(code, signal, id)
      vim.schedule(function()
        if client_id == id then
          client_id, initialized, last_focus = nil, false, nil
          running, in_flight = {}, 0
        end
        if code ~= 0 then
          vim.notify(
            string.format('Tandem: the server exited with code %d (signal %d); see :LspLog', code, signal or 0),
            vim.log.levels.ERROR
          )
        end
      end)
    end,
  })
  if not id then
    start_failure(
      'Tandem: could not start `' .. table.concat(cmd, ' ') .. '`; check `cmd` in require("tandem").setup()',
      automatic
    )
    return nil
  end
  client_id = id
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      attach(bufnr)
    end
  end
  return id
end

local function request(method, params, on_result)
  if not M.start() then
    return
  end
  local c = client()
  if not c then
    return
  end
  attach(vim.api.nvim_get_current_buf())
  flush_focus()
  c.request(method, params, function(err, result)
    if err then
      vim.notify('Tandem: ' .. method .. ' failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      on_result(nil, err)
      return
    end
    on_result(result)
  end, vim.api.nvim_get_current_buf())
end

-- Marks a turn as running from the moment the server accepted it, so turn_running()
-- is true before its turnStarted arrives.
local function track_turn(result)
  if type(result) ~= 'table' or not result.sessionId then
    return
  end
  current_session = result.sessionId
  if result.turnId then
    if finished_early[result.turnId] then
      finished_early[result.turnId] = nil
    else
      running[result.sessionId] = running[result.sessionId] or {}
      running[result.sessionId][result.turnId] = true
    end
  end
end

function start_turn(method, params, open_chat)
  in_flight = in_flight + 1
  if open_chat and params.sessionId then
    chat.open(params.sessionId)
  end
  request(method, params, function(result)
    in_flight = math.max(in_flight - 1, 0)
    track_turn(result)
    if result and open_chat and not params.sessionId then
      chat.open(result.sessionId)
    end
    vim.cmd('redrawstatus')
  end)
end

local function range_params(bufnr, range)
  local last_line = vim.api.nvim_buf_line_count(bufnr)
  local s = math.max(math.min(range[1], range[2]), 1)
  local e = math.min(math.max(range[1], range[2]), last_line)
  -- Whole lines: from the first line's start to the start of the line after the last
  -- (the server clamps a line past the end to the end of the document).
  return { start = { line = s - 1, character = 0 }, ['end'] = { line = e, character = 0 } }
end

-- ---------------------------------------------------------------- public API

function M.client_id()
  return client_id
end

function M.current_session()
  return current_session
end

function M.turn_running()
  return in_flight > 0 or session_running(current_session) or false
end

function M.chat_buffer(session_id)
  return chat.buffer(session_id or current_session)
end

function M.status()
  if not client_id then
    return ''
  end
  return render.status(chat.usage(current_session), M.turn_running())
end

function M.ask(prompt, opts)
  opts = opts or {}
  if not prompt or prompt == '' then
    vim.notify('Tandem: the prompt is empty; usage: :Tandem {prompt}', vim.log.levels.WARN)
    return
  end
  local params = { text = prompt, sessionId = opts.session_id or current_session }
  if opts.range then
    local bufnr = vim.api.nvim_get_current_buf()
    if is_file_buffer(bufnr) or vim.api.nvim_buf_get_name(bufnr) ~= '' then
      params.context = { { uri = vim.uri_from_bufnr(bufnr), range = range_params(bufnr, opts.range) } }
    end
  end
  start_turn('tandem/prompt', params, true)
end

function M.inline(prompt, range)
  if not prompt or prompt == '' then
    vim.notify('Tandem: the instruction is empty; usage: :[range]TandemInline {instruction}', vim.log.levels.WARN)
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  if not is_file_buffer(bufnr) then
    vim.notify('Tandem: inline chat needs a file buffer that Tandem is attached to', vim.log.levels.WARN)
    return
  end
  if not range then
    local row = vim.api.nvim_win_get_cursor(0)[1]
    range = { row, row }
  end
  start_turn('tandem/inlineChat', {
    uri = vim.uri_from_bufnr(bufnr),
    range = range_params(bufnr, range),
    instruction = prompt,
    sessionId = current_session,
  }, false)
end

function M.cancel()
  if not current_session then
    vim.notify('Tandem: nothing to cancel, there is no session yet', vim.log.levels.WARN)
    return
  end
  request('tandem/cancel', { sessionId = current_session }, function(result)
    if result and not result.cancelled then
      notify('Tandem: no turn was running')
    end
  end)
end

function M.new_session()
  request('tandem/newSession', {}, function(result)
    if result and result.sessionId then
      current_session = result.sessionId
      chat.open(result.sessionId)
    end
  end)
end

function M.sessions()
  request('tandem/sessions', {}, function(result)
    local list = result and result.sessions or {}
    if #list == 0 then
      notify('Tandem: no sessions yet')
      return
    end
    vim.ui.select(list, {
      prompt = 'Tandem sessions',
      kind = 'tandem.session',
      format_item = function(s)
        return render.session_label(s, s.live and chat.title(s.sessionId) or nil)
      end,
    }, function(choice)
      if not choice then
        return
      end
      if choice.live then
        current_session = choice.sessionId
        chat.open(choice.sessionId)
        return
      end
      request('tandem/resumeSession', { sessionId = choice.sessionId }, function(res)
        if not res then
          return
        end
        current_session = res.sessionId or choice.sessionId
        for _, w in ipairs(res.warnings or {}) do
          notify('Tandem: ' .. tostring(w), vim.log.levels.WARN)
        end
        chat.open(current_session)
      end)
    end)
  end)
end

function M.toggle_chat()
  chat.toggle(current_session)
end

-- The lines :TandemMcp shows for the server list `servers` (tandem/mcpServers).
function M.mcp_lines(servers)
  if #servers == 0 then
    return { 'No MCP servers are configured (`mcpServers` in settings.json; see docs/mcp.md).' }
  end
  local lines = {}
  for _, s in ipairs(servers) do
    local tools = s.tools or {}
    local head = string.format('%s  %s  (%s)', s.name, s.state or '?', s.transport or '?')
    if s.state == 'ready' then
      head = head .. string.format('  %d tool%s, %d prompt%s, %d resource%s', #tools,
        #tools == 1 and '' or 's', #(s.prompts or {}), #(s.prompts or {}) == 1 and '' or 's',
        s.resources or 0, s.resources == 1 and '' or 's')
    end
    if s.trusted then
      head = head .. '  trusted'
    end
    table.insert(lines, head)
    if s.description and s.description ~= '' then
      table.insert(lines, '  ' .. s.description)
    end
    for _, l in ipairs(vim.split(s.message or '', '\n', { plain = true })) do
      if l ~= '' then
        table.insert(lines, '  ' .. l)
      end
    end
    for _, t in ipairs(tools) do
      table.insert(lines, '  - ' .. (t.name or tostring(t)))
    end
  end
  return lines
end

-- `lines` in a new read-only scratch window named `name`.
local function show_scratch(lines, name)
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_set_name(buf, name)
end

-- :TandemMcp: the MCP servers, their state and tools, in a scratch buffer.
function M.mcp()
  request('tandem/mcpServers', {}, function(result)
    if not result then
      return
    end
    local lines = M.mcp_lines(result.servers or {})
    show_scratch(lines, 'tandem://mcp')
  end)
end

-- The lines :TandemSkills shows for the listing `result` (tandem/skills).
function M.skills_lines(result)
  local lines = {}
  for _, s in ipairs(result.skills or {}) do
    table.insert(lines, string.format('%s  (%s, %s)', s.name, s.scope or '?', s.source or '?'))
    table.insert(lines, '  ' .. (s.description or ''))
    table.insert(lines, '  ' .. (s.path or ''))
  end
  if #lines == 0 then
    table.insert(lines, 'No skills found (SKILL.md folders under .tandem/skills, .claude/skills or .gemini/skills; see docs/skills.md).')
  end
  for _, w in ipairs(result.warnings or {}) do
    table.insert(lines, 'warning: ' .. w)
  end
  return lines
end

-- :TandemSkills: the workspace's skills and the warnings, in a scratch buffer.
function M.skills()
  request('tandem/skills', {}, function(result)
    if not result then
      return
    end
    local lines = M.skills_lines(result)
    show_scratch(lines, 'tandem://skills')
  end)
end

-- Slash commands for :Tandem's completion: asked of the server at most every few seconds
-- (completion must answer at once, so the request is synchronous and short).
local commands_cache = { at = -1, names = {} }

local function slash_commands()
  local now = vim.loop.now()
  if now - commands_cache.at < 5000 then
    return commands_cache.names
  end
  local c = client()
  if not c then
    return commands_cache.names
  end
  local answer = c.request_sync('tandem/commands', { sessionId = current_session }, 1000,
    vim.api.nvim_get_current_buf())
  if answer and answer.result and answer.result.commands then
    local names = {}
    for _, command in ipairs(answer.result.commands) do
      table.insert(names, '/' .. command.name)
    end
    commands_cache = { at = now, names = names }
  end
  return commands_cache.names
end

-- :Tandem completes a slash command as its first word.
function M.complete(arglead, cmdline)
  local before = cmdline:match('^%S*%s+(.*)$') or ''
  if not arglead:match('^/') or before ~= arglead then
    return {}
  end
  local matches = {}
  for _, name in ipairs(slash_commands()) do
    if name:sub(1, #arglead) == arglead then
      table.insert(matches, name)
    end
  end
  return matches
end

local function define_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd('Tandem', function(a)
    M.ask(a.args, { range = a.range > 0 and { a.line1, a.line2 } or nil })
  end, {
    nargs = '+',
    range = true,
    complete = M.complete,
    desc = 'Ask Tandem (with a range: attach the lines); /command runs a command',
  })
  cmd('TandemInline', function(a)
    M.inline(a.args, { a.line1, a.line2 })
  end, { nargs = '+', range = true, desc = 'Let Tandem change the selected lines' })
  cmd('TandemCancel', M.cancel, { desc = "Cancel the current session's turns" })
  cmd('TandemSessions', M.sessions, { desc = 'Pick a Tandem session to show or resume' })
  cmd('TandemNew', M.new_session, { desc = 'Start a new Tandem session' })
  cmd('TandemChat', M.toggle_chat, { desc = 'Toggle the Tandem chat window' })
  cmd('TandemMcp', M.mcp, { desc = 'Show the MCP servers, their state and tools' })
  cmd('TandemSkills', M.skills, { desc = 'Show the skills the agent is offered' })
  cmd('TandemComplete', function()
    completion.request(completion.TRIGGER_INVOKED)
  end, { desc = 'Ask Tandem for an inline completion at the cursor now' })
  cmd('TandemCompletionToggle', function()
    completion.toggle()
  end, { desc = 'Turn inline completions while typing on or off' })
end

function M.setup(opts)
  if vim.fn.has('nvim-0.7.2') == 0 then
    vim.notify('Tandem: the plugin needs Neovim 0.7.2 or newer; :version shows this one', vim.log.levels.ERROR)
    return
  end
  config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.cmd then
    config.cmd = opts.cmd
  end
  if opts and opts.filetypes then
    config.filetypes = opts.filetypes
  end
  if config.cmd ~= nil and (type(config.cmd) ~= 'table' or type(config.cmd[1]) ~= 'string') then
    vim.notify('Tandem: `cmd` must be a list like {"tandem", "lsp"}', vim.log.levels.ERROR)
    return
  end
  -- A new configuration may have fixed what kept the server from starting.
  start_failure_told = false
  chat.config.layout = config.chat.layout
  chat.config.width = config.chat.width
  approval.config.timeout_ms = config.approval_timeout_ms
  approval.config.on_wait = function()
    drain_events()
    if changed_since_redraw then
      changed_since_redraw = false
      pcall(vim.cmd, 'redraw')
    end
  end
  define_commands()
  completion.setup(opts and opts.completion or {}, {
    client_for = function(bufnr)
      local c = client()
      if c and initialized and vim.lsp.buf_is_attached(bufnr, c.id) then
        return c
      end
      return nil
    end,
    position = position,
  })
  diagnostics.setup(function()
    local c = client()
    return c and initialized and c or nil
  end)

  local group = vim.api.nvim_create_augroup('Tandem', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'FileType' }, {
    group = group,
    callback = function(a)
      if is_file_buffer(a.buf) then
        if M.start(true) then
          attach(a.buf)
        end
      end
    end,
  })
  -- When Neovim read or wrote each file, so that saving the agent's edits never writes over a
  -- change made on disk since (see tandem/save.lua).
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWritePost' }, {
    group = group,
    callback = function(a)
      save.remember(a.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'CursorMoved', 'CursorMovedI', 'ModeChanged' }, {
    group = group,
    callback = function()
      if client_id then
        schedule_focus()
      end
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and is_file_buffer(bufnr) then
      save.remember(bufnr, true)
      M.start(true)
      attach(bufnr)
    end
  end
end

return M
