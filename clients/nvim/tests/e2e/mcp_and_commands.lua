-- :TandemMcp lists the MCP servers with their state and tools, and :Tandem completes slash
-- commands (the built-ins, the project's command files, the servers' prompts) as its first word.
--
-- Workspace (from tests/e2e/nvim.rs): calc.py and .tandem/commands/hello.toml; the user
-- settings add the reference MCP server as `everything`.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  h.setup()
  h.open('calc.py')
  local tandem = require('tandem')

  -- The list waits a few seconds for a server still starting, then shows it `starting`: true, on
  -- a loaded machine, of a server that takes longer. Asked again until it is ready, as a user would.
  local listing = ''
  local deadline = vim.loop.now() + 60000
  repeat
    if listing ~= '' then
      vim.cmd('bwipeout')
      vim.wait(500)
    end
    vim.cmd('TandemMcp')
    h.wait_for('the MCP server list in a scratch buffer', function()
      return vim.api.nvim_buf_get_name(0):find('tandem://mcp', 1, true) ~= nil
    end, 20000)
    listing = h.text(0)
  until not listing:find('everything  starting', 1, true) or vim.loop.now() > deadline
  h.check(listing:find('everything  ready  (stdio)', 1, true), 'the server is not listed ready:\n' .. listing)
  h.check(listing:find('- mcp__everything__get-sum', 1, true), 'its tools are not listed:\n' .. listing)
  h.check(not vim.bo.modifiable, 'the listing is modifiable')
  vim.cmd('bwipeout')

  local function has(list, wanted)
    return vim.tbl_contains(list, wanted)
  end
  local hello = tandem.complete('/he', 'Tandem /he')
  h.check(has(hello, '/help') and has(hello, '/hello'), 'completing /he: ' .. vim.inspect(hello))
  h.check(not has(hello, '/init'), 'completing /he offered /init: ' .. vim.inspect(hello))
  local prompts = tandem.complete('/everything:', 'Tandem /everything:')
  h.check(has(prompts, '/everything:args-prompt'), 'completing /everything: ' .. vim.inspect(prompts))
  -- Only the first word is a command.
  local later = tandem.complete('/he', 'Tandem explain /he')
  h.check(#later == 0, 'a later word was completed: ' .. vim.inspect(later))
  -- The command is completable from the command line too.
  local cmdline = vim.fn.getcompletion('Tandem /hel', 'cmdline')
  h.check(has(cmdline, '/hello') and has(cmdline, '/help'), 'getcompletion: ' .. vim.inspect(cmdline))
end)
