-- Without `tandem` on PATH, in mason's bin folder or in cargo's (and `cmd` left unset), opening
-- files says so once per Neovim session, as a warning naming where it looked and how to install
-- it; no errors. It used to raise two autocommand errors for every buffer opened.
--
-- Run by tests/e2e/nvim.rs with PATH stripped of every folder holding a `tandem`, in a
-- workspace holding a.py and b.py, with XDG_DATA_HOME in a fresh folder (so mason's default
-- folder is empty); CARGO_HOME and MASON are pointed at empty folders here.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

-- Everything vim.notify is asked to say, and when every callback scheduled so far has run.
local notes, said = h.capture_notifications()
local function settle()
  local done = false
  vim.schedule(function()
    done = true
  end)
  h.wait_for('the scheduled callbacks to run', function()
    return done
  end)
end

h.run(function()
  h.check(vim.fn.executable('tandem') == 0, 'this scenario needs a PATH without tandem')
  local empty = vim.fn.tempname()
  vim.fn.mkdir(empty, 'p')
  vim.env.CARGO_HOME = empty .. '/cargo'
  vim.env.MASON = nil
  local mason = vim.fn.stdpath('data') .. '/mason/bin/tandem'
  h.check(vim.fn.filereadable(mason) == 0, 'this scenario needs no ' .. mason)
  vim.cmd('filetype on')
  require('tandem').setup({})

  vim.v.errmsg = ''
  -- BufReadPost and FileType both try to start the server, for each file.
  vim.cmd('edit a.py')
  vim.cmd('edit b.py')
  settle()
  h.check(vim.bo.filetype == 'python', 'the FileType autocommands did not run (filetype is ' .. vim.bo.filetype .. ')')
  h.check(#notes == 1, 'expected exactly one notification, got ' .. #notes .. ':\n' .. said())
  local note = notes[1]
  h.check(note.level == vim.log.levels.WARN, 'the notification is not a warning:\n' .. said())
  local needles = {
    'cannot find the `tandem` executable',
    'Looked for `tandem` on PATH, then ' .. mason .. ', then ' .. empty .. '/cargo/bin/tandem.',
    ':MasonInstall tandem',
    'npm install -g @tandem-lsp/tandem',
    'cargo install --locked --git https://github.com/tandem-lsp/tandem tandem',
    "cmd = { '/path/to/tandem', 'lsp' }",
  }
  for _, needle in ipairs(needles) do
    h.check(note.msg:find(needle, 1, true), 'the notification does not say ' .. needle .. ':\n' .. said())
  end
  h.check(vim.v.errmsg == '', 'an error was raised: ' .. vim.v.errmsg)
  local messages = vim.fn.execute('messages')
  for _, bad in ipairs({ 'E5108', 'Error detected', 'Error executing' }) do
    h.check(not messages:find(bad, 1, true), 'an error in :messages:\n' .. messages)
  end
  h.check(require('tandem').client_id() == nil, 'a client was started')

  -- A new file says nothing more; a command the user runs says it again.
  vim.cmd('edit c.py')
  settle()
  h.check(#notes == 1, 'opening more buffers notified again:\n' .. said())
  vim.cmd('Tandem hello')
  settle()
  h.check(#notes == 2 and notes[2].msg == notes[1].msg, ':Tandem did not say why it cannot run:\n' .. said())
  h.check(vim.v.errmsg == '', 'an error was raised: ' .. vim.v.errmsg)
end)
