-- A shell command the agent runs from Neovim runs in Tandem's OS sandbox: the turn runs a
-- command that tries to write outside the workspace, read a key and Tandem's settings, and
-- reach a server; tests/e2e/sandbox.rs checks that none of it worked.
--
-- Workspace (from tests/e2e/sandbox.rs): notes.txt and a git repository; approval mode yolo;
-- the replay script runs the probe with `shell` and answers "Probed.".

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  h.open('notes.txt')
  local tandem = require('tandem')
  tandem.ask('Probe the sandbox')
  h.wait_for('the turn to end with the answer', function()
    return h.chat_text():find('Probed.', 1, true) and not tandem.turn_running()
  end, 30000)
end)
