-- The plugin forwards the diagnostics of Neovim's other language servers to Tandem
-- (`tandem/didChangeDiagnostics`), so the agent's edit is told the errors it added. Real pyright
-- runs as a second LSP client of Neovim (not on Tandem's PATH: only the editor knows it).
--
-- Workspace (from tests/e2e/nvim.rs): calc.py with the user's own type error on line 5 (`label`)
-- and a .git/HEAD; TANDEM_TEST_NODE and TANDEM_TEST_PYRIGHT give node and pyright-langserver. The
-- model (a scripted server the Rust side checks) reads calc.py, breaks `total` on line 6, fixes
-- it and answers "Done.". This script waits until pyright has reported the user's error and the
-- plugin has forwarded it, asks, and waits for the answer; it prints what the plugin forwarded.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

-- Pyright's first check of a file waits for it to start, slow on a loaded machine.
local PYRIGHT_TIMEOUT_MS = 40000

h.run(function()
  h.setup()
  local buf, client = h.open('calc.py')
  local tandem = require('tandem')

  local declared = client.config.init_options.clientCapabilities
  h.check(declared.diagnostics == true, 'the plugin does not declare diagnostics: ' .. vim.inspect(declared))

  -- Every report the plugin sends, through the client it sends them with.
  local forwarded = {}
  local notify = client.notify
  client.notify = function(method, params)
    if method == 'tandem/didChangeDiagnostics' then
      for _, document in ipairs(params.documents) do
        local messages = {}
        for _, d in ipairs(document.diagnostics) do
          table.insert(messages, string.format('%d:%d %s', d.range.start.line, d.range.start.character, d.message))
        end
        table.insert(forwarded, { uri = document.uri, version = document.version, messages = messages })
      end
    end
    return notify(method, params)
  end
  local function forwarded_text()
    local out = {}
    for _, report in ipairs(forwarded) do
      table.insert(out, string.format('%s v%s: %s', vim.fn.fnamemodify(vim.uri_to_fname(report.uri), ':t'),
        tostring(report.version), table.concat(report.messages, ' | ')))
    end
    return table.concat(out, '\n')
  end

  local pyright = vim.lsp.start_client({
    name = 'pyright',
    cmd = { os.getenv('TANDEM_TEST_NODE'), os.getenv('TANDEM_TEST_PYRIGHT'), '--stdio' },
    root_dir = vim.loop.cwd(),
  })
  h.check(pyright, 'pyright did not start')
  h.check(vim.lsp.buf_attach_client(buf, pyright), 'pyright did not attach to calc.py')

  local uri = vim.uri_from_bufnr(buf)
  h.wait_for("the plugin to forward pyright's report of the user's error in `label`", function()
    for _, report in ipairs(forwarded) do
      if report.uri == uri then
        for _, message in ipairs(report.messages) do
          if message:match('^4:') then
            return true
          end
        end
      end
    end
    return false
  end, PYRIGHT_TIMEOUT_MS)

  tandem.ask('Pass a string to add in total, then undo that')
  local ok, err = pcall(h.wait_for, 'the turn to end with the answer', function()
    return h.chat_text():find('Done.', 1, true) and not tandem.turn_running()
  end, PYRIGHT_TIMEOUT_MS)
  h.check(ok, tostring(err) .. '\nforwarded:\n' .. forwarded_text())
  h.wait_session_idle(client, tandem.current_session())

  h.check(vim.tbl_contains(h.lines(buf), 'total = add(1, 2)'), 'the fix is not in the buffer:\n' .. h.text(buf))
  io.stdout:write('forwarded:\n' .. forwarded_text() .. '\n')
end)
