-- Turns Tandem's `tandem/event` stream into the lines of a chat buffer.
--
-- This module is pure Lua on purpose: no vim.api calls (vim.trim and vim.fn's string functions
-- only), so it can be unit-tested
-- (tests/render_spec.lua) and so the chat buffer is always a function of the
-- events received, whatever order the UI redraws in.
local M = {}

local TOOL_MARKS = {
  validating = '…',
  scheduled = '…',
  executing = '…',
  awaitingApproval = '?',
  success = '✓',
  error = '✗',
  cancelled = '⊘',
}

local PLAN_MARKS = {
  pending = '[ ]',
  in_progress = '[~]',
  completed = '[x]',
  cancelled = '[-]',
}

--- A fresh render state for one session.
function M.new()
  -- items: the chat as a list of blocks, each rendered to lines by `M.lines`.
  -- tools/plans map a call id / turn id to the item updated in place.
  return { items = {}, tools = {}, plans = {}, usage = nil }
end

local function one_line(s)
  return (tostring(s or ''):gsub('[\r\n]+', ' '))
end

local function split_lines(text)
  local out = {}
  text = text:gsub('\r\n', '\n'):gsub('\r', '\n')
  for line in (text .. '\n'):gmatch('(.-)\n') do
    out[#out + 1] = line
  end
  return out
end

--- `12345` → `12.3k`, `200000` → `200k`, `950` → `950`.
function M.format_tokens(n)
  n = tonumber(n) or 0
  if n < 1000 then
    return tostring(math.floor(n))
  end
  if n >= 99950 then
    return string.format('%dk', math.floor(n / 1000 + 0.5))
  end
  local k = math.floor(n / 100 + 0.5) / 10
  if k == math.floor(k) then
    return string.format('%dk', k)
  end
  return string.format('%.1fk', k)
end

--- The statusline text for a session: `tandem: running…` while a turn runs,
--- else the context use of the last model request.
function M.status(usage, running)
  if running then
    return 'tandem: running…'
  end
  if usage and usage.contextTokens then
    if usage.contextWindow and usage.contextWindow > 0 then
      return string.format(
        'tandem: %s/%s tokens',
        M.format_tokens(usage.contextTokens),
        M.format_tokens(usage.contextWindow)
      )
    end
    return string.format('tandem: %s tokens', M.format_tokens(usage.contextTokens))
  end
  return 'tandem'
end

local function last(state)
  return state.items[#state.items]
end

local function push(state, item)
  state.items[#state.items + 1] = item
  return item
end

-- A retry voids what the failed request streamed: the text and thoughts after
-- the last block that a request cannot produce mid-stream (a tool call, the prompt).
local function drop_streamed(state)
  while true do
    local item = last(state)
    if item and (item.kind == 'text' or item.kind == 'thought' or item.kind == 'retry') then
      state.items[#state.items] = nil
    else
      return
    end
  end
end

local handlers = {}

-- `waiting`: the turn runs and nothing came back yet; the chat says the model is working, since
-- the first text may take seconds (a cold model, a long prompt, a repo map being built).
function handlers.turnStarted(state, ev, turn_id)
  push(state, { kind = 'prompt', text = ev.text or '', turn = turn_id, waiting = true })
end

function handlers.textChunk(state, ev, turn_id)
  local item = last(state)
  if not (item and item.kind == 'text' and item.turn == turn_id) then
    item = push(state, { kind = 'text', text = '', turn = turn_id })
  end
  item.text = item.text .. (ev.text or '')
end

function handlers.thoughtChunk(state, _)
  local item = last(state)
  if not (item and item.kind == 'thought') then
    push(state, { kind = 'thought' })
  end
end

function handlers.retrying(state, ev)
  drop_streamed(state)
  push(state, {
    kind = 'retry',
    text = string.format(
      '_retrying (attempt %s) in %.1fs: %s_',
      tostring(ev.attempt or '?'),
      (tonumber(ev.delayMs) or 0) / 1000,
      one_line(ev.error)
    ),
  })
end

function handlers.toolCall(state, ev, turn_id)
  local key = tostring(turn_id or '') .. '\0' .. tostring(ev.callId or '')
  local item = state.tools[key]
  if not item then
    item = push(state, { kind = 'tool' })
    state.tools[key] = item
  end
  item.title = ev.title or item.title or ev.tool or 'tool call'
  item.status = ev.status or item.status
end

-- A subagent's events, nested under the parent's `subagent` call: its tool calls
-- become indented tool lines; its text stays inside (the parent call reports it).
function handlers.subagent(state, ev, turn_id)
  local inner = ev.event
  if type(inner) ~= 'table' or inner.type ~= 'toolCall' then
    return false
  end
  local key = table.concat({ tostring(turn_id or ''), tostring(ev.parentCallId or ''), tostring(inner.callId or '') }, '\0')
  local item = state.tools[key]
  if not item then
    item = push(state, { kind = 'tool', nested = true })
    state.tools[key] = item
  end
  item.title = inner.title or item.title or inner.tool or 'tool call'
  item.status = inner.status or item.status
end

-- A hook run is shown when it decided something or had something to say; a hook
-- that let things go on in silence is not worth a line.
function handlers.hook(state, ev)
  if ev.outcome == 'continued' and not ev.message then
    return false
  end
  local text = string.format(
    '_hook %s `%s` %s (%d ms)%s_',
    tostring(ev.event or '?'),
    one_line(ev.command),
    tostring(ev.outcome or '?'),
    tonumber(ev.durationMs) or 0,
    ev.message and (': ' .. one_line(ev.message)) or ''
  )
  push(state, { kind = 'line', text = text })
end

function handlers.plan(state, ev, turn_id)
  local key = tostring(turn_id or '')
  local item = state.plans[key]
  if not item then
    item = push(state, { kind = 'plan' })
    state.plans[key] = item
  end
  item.todos = ev.todos or {}
end

function handlers.usage(state, ev)
  state.usage = ev
  return false
end

function handlers.compression(state, ev)
  local text
  if ev.status == 'compressed' then
    text = string.format(
      '_Compressed the conversation from about %s to about %s tokens_',
      M.format_tokens(ev.tokensBefore),
      M.format_tokens(ev.tokensAfter)
    )
  else
    text = string.format('_Compression %s%s_', tostring(ev.status or '?'), ev.message and (': ' .. one_line(ev.message)) or '')
  end
  push(state, { kind = 'line', text = text })
end

function handlers.restored(state, ev)
  local restored = ev.restored or {}
  local skipped = ev.skipped or {}
  local text
  if not ev.turnId and #restored == 0 then
    text = '_Nothing to restore_'
  else
    text = string.format('_Restored %d file(s) from before %s', #restored, tostring(ev.turnId or 'the turn'))
    if #skipped > 0 then
      text = text .. string.format(', skipped %d', #skipped)
    end
    text = text .. '_'
  end
  push(state, { kind = 'line', text = text })
end

function handlers.turnFinished(state, ev, turn_id)
  local reason = ev.stopReason or 'unknown'
  local item = last(state)
  local waited = item and item.kind == 'prompt' and item.waiting and item.turn == turn_id
  if waited then
    item.waiting = false
  end
  if reason == 'end_turn' and not ev.message then
    return waited or false
  end
  local text = '_' .. reason .. (ev.message and (': ' .. one_line(ev.message)) or '') .. '_'
  push(state, { kind = 'line', text = text })
end

--- Applies one event (the `event` object of a `tandem/event`) to `state`.
--- Returns true when the chat's lines may have changed.
function M.apply(state, event, turn_id)
  if type(event) ~= 'table' then
    return false
  end
  local handler = handlers[event.type]
  if not handler then
    return false
  end
  return handler(state, event, turn_id) ~= false
end

--- The agent's final text in turn `turn_id`: its last block of answer text (what it
--- wrote after its last tool call), or nil when the turn wrote none.
function M.answer(state, turn_id)
  for i = #state.items, 1, -1 do
    local item = state.items[i]
    if item.kind == 'text' and item.turn == turn_id then
      local text = item.text:gsub('^%s+', ''):gsub('%s+$', '')
      if text ~= '' then
        return text
      end
    end
  end
  return nil
end

--- The first line of text of the session's first prompt, cut to `width` characters (60 when
--- not given), or nil before any prompt: what :TandemSessions names a live session by.
function M.title(state, width)
  width = width or 60
  for _, item in ipairs(state.items) do
    if item.kind == 'prompt' then
      for _, line in ipairs(split_lines(item.text)) do
        line = vim.trim(line)
        if line ~= '' then
          if vim.fn.strchars(line) > width then
            line = vim.fn.strcharpart(line, 0, width - 1) .. '…'
          end
          return line
        end
      end
    end
  end
  return nil
end

--- One entry of :TandemSessions for `session` (a `tandem/sessions` item). The server names a
--- live session "Session N" until it is saved; `prompt_title` (see `M.title`), when the
--- session's chat has one, says what it is about instead.
function M.session_label(session, prompt_title)
  local title = session.title or session.sessionId or '?'
  local numbered = type(session.title) ~= 'string' or session.title:match('^Session %d+$') ~= nil
  if session.live and prompt_title and numbered then
    title = prompt_title
  end
  local turns = tonumber(session.turns) or 0
  return string.format(
    '%s  (%s, %d turn%s)%s',
    title,
    session.live and 'live' or 'saved',
    turns,
    turns == 1 and '' or 's',
    session.running and ' running' or ''
  )
end

--- The chat buffer's lines for `state`.
function M.lines(state)
  local out = {}
  local function add(line)
    out[#out + 1] = line
  end
  for i, item in ipairs(state.items) do
    if item.kind == 'prompt' then
      if #out > 0 then
        add('')
      end
      add('## You')
      for _, line in ipairs(split_lines(item.text)) do
        add(line)
      end
      add('## Tandem')
      if item.waiting and i == #state.items then
        add('_working…_')
      end
    elseif item.kind == 'text' then
      for _, line in ipairs(split_lines(item.text)) do
        add(line)
      end
    elseif item.kind == 'thought' then
      add('> thinking…')
    elseif item.kind == 'tool' then
      add((item.nested and '  ' or '') .. (TOOL_MARKS[item.status] or '…') .. ' ' .. one_line(item.title))
    elseif item.kind == 'plan' then
      add('Plan:')
      for _, todo in ipairs(item.todos) do
        add('- ' .. (PLAN_MARKS[todo.status] or '[ ]') .. ' ' .. one_line(todo.description))
      end
    else
      add(item.text)
    end
  end
  return out
end

return M
