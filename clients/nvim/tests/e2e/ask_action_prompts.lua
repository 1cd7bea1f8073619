-- The "Ask Tandem…" code action carries no instruction: the plugin asks for it with
-- vim.ui.input and runs the command with it; the turn's prompt is what the user typed.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py; the replay script answers "It adds.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  local buf, client = h.open('calc.py')
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 2, character = 0 } },
    context = { diagnostics = {} },
  }
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', params, 5000)
  h.check(responses and responses[client.id], 'no answer to textDocument/codeAction')
  local action
  for _, candidate in ipairs(responses[client.id].result or {}) do
    if candidate.title == 'Ask Tandem…' then
      action = candidate
    end
  end
  h.check(action, 'no "Ask Tandem…" code action')
  if not action.command then
    action = client.request_sync('codeAction/resolve', action, 5000, buf).result
  end

  local asked
  vim.ui.input = function(opts, on_confirm)
    asked = opts.prompt
    on_confirm('What does add do?')
  end
  -- What vim.lsp.buf.code_action() does with the chosen action's command.
  local run = client.commands[action.command.command] or vim.lsp.commands[action.command.command]
  h.check(run, 'the plugin registers no handler for ' .. action.command.command)
  run(action.command, { bufnr = buf, client_id = client.id })
  h.check(asked and asked:find('Tandem'), 'the instruction was not asked for: ' .. tostring(asked))

  h.wait_for('the answer in the chat', function()
    local chat = require('tandem').chat_buffer()
    if not chat then
      return false
    end
    local text = table.concat(vim.api.nvim_buf_get_lines(chat, 0, -1, false), '\n')
    return text:find('What does add do?', 1, true) and text:find('It adds.', 1, true)
  end)
end)
