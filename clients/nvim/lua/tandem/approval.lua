-- Answers `tandem/requestApproval`: asks the user with vim.ui.select (and
-- vim.ui.input for feedback), optionally showing the proposed diff first.
--
-- Neovim (0.7 to 0.10) answers a server request with whatever its handler returns,
-- synchronously: there is no way to reply later. So the question is asked inside the
-- handler. The default vim.ui.select (inputlist) calls back before returning; for an
-- asynchronous vim.ui.select (a floating picker) the handler waits with vim.wait, which
-- keeps Neovim's event loop running, and a picker that never answers within
-- `timeout_ms` counts as a rejection.
local M = {}

M.config = { timeout_ms = 300000 }

local ITEMS = { 'Allow once', 'Allow always', 'Reject', 'Reject with feedback…' }
local SHOW_DIFF = 'Show diff'

local function wait_for(ask)
  local done, value = false, nil
  ask(function(v)
    done, value = true, v
  end)
  if not done then
    vim.wait(M.config.timeout_ms, function()
      return done
    end, 20)
  end
  return value
end

local function unified(diff)
  local old = diff.oldText
  if old == nil or old == vim.NIL then
    old = ''
  end
  local new = diff.newText or ''
  local body = vim.diff(old, new, { result_type = 'unified', ctxlen = 3 })
  local path = diff.path or diff.uri or 'file'
  local lines = { '--- ' .. path, '+++ ' .. path .. ' (proposed)' }
  for line in (body or ''):gmatch('([^\n]*)\n') do
    lines[#lines + 1] = line
  end
  if #lines == 2 then
    lines[#lines + 1] = '(no changes)'
  end
  return lines
end

-- Opens a scratch buffer with the diff; returns its window so it can be closed once
-- the user has decided.
local function show_diff(diff)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_option(buf, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(buf, 'bufhidden', 'wipe')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, unified(diff))
  vim.api.nvim_buf_set_option(buf, 'filetype', 'diff')
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
  vim.api.nvim_buf_set_keymap(buf, 'n', 'q', '<cmd>close<CR>', { noremap = true, silent = true })
  vim.cmd('botright new')
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.cmd('redraw')
  return win, buf
end

--- The result for one `tandem/requestApproval` params object.
function M.decide(params)
  local call = params.toolCall or {}
  local title = call.title or call.tool or 'a tool call'
  local has_diff = type(call.diff) == 'table'
  local items = vim.deepcopy(ITEMS)
  if has_diff then
    table.insert(items, 1, SHOW_DIFF)
  end
  local diff_wins = {}
  local decision
  while not decision do
    local choice = wait_for(function(cb)
      vim.ui.select(items, { prompt = 'Tandem wants to: ' .. title, kind = 'tandem.approval' }, cb)
    end)
    if choice == SHOW_DIFF then
      local ok, win = pcall(show_diff, call.diff)
      if ok then
        diff_wins[#diff_wins + 1] = win
      else
        vim.notify('Tandem: could not show the diff: ' .. tostring(win), vim.log.levels.WARN)
      end
    elseif choice == 'Allow once' then
      decision = { type = 'allowOnce' }
    elseif choice == 'Allow always' then
      decision = { type = 'allowAlways' }
    elseif choice == 'Reject with feedback…' then
      local feedback = wait_for(function(cb)
        vim.ui.input({ prompt = 'Tell Tandem why: ' }, cb)
      end)
      decision = { type = 'reject' }
      if feedback and feedback ~= '' then
        decision.feedback = feedback
      end
    else
      -- 'Reject', a dismissed picker or a timeout: refusing is the safe answer.
      decision = { type = 'reject' }
    end
  end
  for _, win in ipairs(diff_wins) do
    if vim.api.nvim_win_is_valid(win) and #vim.api.nvim_list_wins() > 1 then
      pcall(vim.api.nvim_win_close, win, true)
    end
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
