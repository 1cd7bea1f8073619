-- `:help tandem` opens the plugin's help from the shipped `doc/tags`, with nothing generated
-- first (a newcomer's Neovim 0.7.2 said E149 when the tags were not shipped).
--
-- Run by tests/e2e/nvim.rs with the plugin appended to 'runtimepath' (`set rtp+=`), as a
-- plugin manager or the README's test commands put it.

local h = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

h.run(function()
  -- tag -> text that the line the help lands on must hold
  local tags = {
    { 'tandem', '*tandem*' },
    { 'tandem-approvals', '*tandem-approvals*' },
    { ':TandemChat', '*:TandemChat*' },
    { 'tandem-helptags', '*tandem-helptags*' },
    { 'tandem-locate', '*tandem-locate*' },
  }
  for _, case in ipairs(tags) do
    local tag, want = case[1], case[2]
    vim.v.errmsg = ''
    local ok, err = pcall(vim.cmd, 'help ' .. tag)
    h.check(ok, ':help ' .. tag .. ' failed: ' .. tostring(err))
    h.check(vim.v.errmsg == '', ':help ' .. tag .. ' set v:errmsg: ' .. vim.v.errmsg)
    h.check(vim.bo.buftype == 'help', ':help ' .. tag .. ' did not open a help buffer')
    local file = vim.api.nvim_buf_get_name(0)
    h.check(vim.fn.fnamemodify(file, ':t') == 'tandem.txt', ':help ' .. tag .. ' opened ' .. file)
    local line = vim.api.nvim_get_current_line()
    h.check(line:find(want, 1, true), ':help ' .. tag .. ' landed on the line: ' .. line)
  end
  -- The help found is the plugin's own, not a copy somewhere else on 'runtimepath'.
  local plugin_doc = vim.fn.resolve(os.getenv('TANDEM_PLUGIN_DIR') .. '/doc/tandem.txt')
  h.check(vim.fn.resolve(vim.api.nvim_buf_get_name(0)) == plugin_doc,
    'the help came from ' .. vim.api.nvim_buf_get_name(0) .. ', not ' .. plugin_doc)
end)
