-- Unit tests for lua/tandem/locate.lua: where the plugin finds `tandem` when setup() gets no
-- `cmd`. Fake `tandem` scripts in a temporary folder stand in for the installs: one on PATH,
-- one in mason.nvim's bin folder ($MASON/bin), one in cargo's ($CARGO_HOME/bin). Run with
--   nvim --headless -u NONE -c "set rtp+=clients/nvim" -c "luafile clients/nvim/tests/locate_spec.lua"
-- Exits 0 when every case passes, 1 (failures on stderr) otherwise.
local locate = require('tandem.locate')

local failures = {}
local count = 0
local function case(name, body)
  count = count + 1
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    failures[#failures + 1] = name .. ': ' .. tostring(err)
  end
end

local function check(cond, message)
  if not cond then
    error(message, 2)
  end
end

local dir = vim.fn.tempname()
local original = { PATH = vim.env.PATH, MASON = vim.env.MASON, CARGO_HOME = vim.env.CARGO_HOME }

-- An executable `tandem` in `folder` (created), returning its path.
local function install(folder)
  vim.fn.mkdir(folder, 'p')
  local path = folder .. '/tandem'
  local file = assert(io.open(path, 'w'))
  file:write('#!/bin/sh\n')
  file:close()
  vim.fn.setfperm(path, 'rwxr-xr-x')
  return path
end

-- The environment of one case: PATH holding only `path_dir` (and folders with no `tandem`, so
-- that the shell the test runs under stays findable), MASON and CARGO_HOME under the scratch
-- folder.
local function environment(name)
  local root = dir .. '/' .. name
  vim.fn.mkdir(root .. '/empty', 'p')
  vim.env.PATH = root .. '/path:' .. root .. '/empty'
  vim.env.MASON = root .. '/mason'
  vim.env.CARGO_HOME = root .. '/cargo'
  return root
end

case('tandem on PATH comes first', function()
  local root = environment('path-first')
  local on_path = install(root .. '/path')
  install(root .. '/mason/bin')
  install(root .. '/cargo/bin')
  local found, looked = locate.find()
  check(found == on_path, 'found ' .. tostring(found))
  check(#looked == 0, vim.inspect(looked))
  check(vim.deep_equal(locate.server_cmd(nil), { on_path, 'lsp' }), vim.inspect(locate.server_cmd(nil)))
end)

case("mason's bin folder when it is not on PATH", function()
  local root = environment('mason')
  local mason = install(root .. '/mason/bin')
  install(root .. '/cargo/bin')
  local found, looked = locate.find()
  check(found == mason, 'found ' .. tostring(found))
  check(vim.deep_equal(looked, { '`tandem` on PATH' }), vim.inspect(looked))
  check(vim.deep_equal(locate.server_cmd(nil), { mason, 'lsp' }), vim.inspect(locate.server_cmd(nil)))
end)

case("mason's default folder under stdpath('data') before mason sets $MASON", function()
  environment('mason-default')
  vim.env.MASON = nil
  local places = locate.places()
  check(places[2].path == vim.fn.stdpath('data') .. '/mason/bin/tandem', vim.inspect(places))
  vim.env.MASON = ''
  check(locate.places()[2].path == vim.fn.stdpath('data') .. '/mason/bin/tandem', 'an empty $MASON was used')
end)

case("cargo's bin folder last, ~/.cargo without $CARGO_HOME", function()
  local root = environment('cargo')
  local cargo = install(root .. '/cargo/bin')
  local found, looked = locate.find()
  check(found == cargo, 'found ' .. tostring(found))
  check(vim.deep_equal(looked, { '`tandem` on PATH', root .. '/mason/bin/tandem' }), vim.inspect(looked))
  vim.env.CARGO_HOME = nil
  check(locate.places()[3].path == vim.loop.os_homedir() .. '/.cargo/bin/tandem', vim.inspect(locate.places()))
end)

case('a file that is not executable is not taken', function()
  local root = environment('not-executable')
  local mason = install(root .. '/mason/bin')
  vim.fn.setfperm(mason, 'rw-r--r--')
  local found, looked = locate.find()
  check(found == nil, 'found ' .. tostring(found))
  check(#looked == 3, vim.inspect(looked))
end)

case('nothing found: the warning says where it looked and how to install', function()
  local root = environment('nowhere')
  local cmd, message = locate.server_cmd(nil)
  check(cmd == nil, vim.inspect(cmd))
  local looked = string.format(
    'Looked for `tandem` on PATH, then %s/mason/bin/tandem, then %s/cargo/bin/tandem.',
    root,
    root
  )
  for _, needle in ipairs({
    'cannot find the `tandem` executable',
    looked,
    ':MasonInstall tandem',
    'npm install -g @tandem-lsp/tandem',
    'cargo install --locked --git https://github.com/tandem-lsp/tandem tandem',
    "cmd = { '/path/to/tandem', 'lsp' }",
  }) do
    check(message:find(needle, 1, true), 'the warning does not say ' .. needle .. ':\n' .. message)
  end
end)

case('a cmd given is used as it is, and never replaced by one found', function()
  local root = environment('cmd')
  install(root .. '/mason/bin')
  local mine = install(root .. '/mine')
  local cmd = { mine, 'lsp', '--log-level', 'debug' }
  check(locate.server_cmd(cmd) == cmd, vim.inspect(locate.server_cmd(cmd)))

  local missing, message = locate.server_cmd({ root .. '/nothing/tandem', 'lsp' })
  check(missing == nil, vim.inspect(missing))
  check(message:find('does not exist or is not executable', 1, true), message)
  local absent, why = locate.server_cmd({ 'tandem-nowhere', 'lsp' })
  check(absent == nil, vim.inspect(absent))
  check(why:find('`tandem-nowhere` is not on PATH', 1, true), why)
  check(why:find(':MasonInstall tandem', 1, true), why)
end)

case('setup() without cmd starts what was found', function()
  local root = environment('setup')
  install(root .. '/mason/bin')
  local notes = {}
  local notify = vim.notify
  vim.notify = function(msg)
    notes[#notes + 1] = msg
  end
  -- No client is started: what it would be started with is what is checked, and the failure
  -- to start names that command.
  local started
  local start_client = vim.lsp.start_client
  vim.lsp.start_client = function(config)
    started = config.cmd
    return nil
  end
  local ok, err = pcall(function()
    require('tandem').setup({})
    require('tandem').start(false)
  end)
  vim.lsp.start_client = start_client
  vim.wait(2000, function()
    return #notes > 0
  end)
  vim.notify = notify
  check(ok, tostring(err))
  local mason = root .. '/mason/bin/tandem'
  check(vim.deep_equal(started, { mason, 'lsp' }), vim.inspect(started))
  check(#notes == 1 and notes[1]:find('could not start `' .. mason .. ' lsp`', 1, true), vim.inspect(notes))
end)

for key, value in pairs(original) do
  vim.env[key] = value
end
vim.fn.delete(dir, 'rf')

if #failures > 0 then
  io.stderr:write(table.concat(failures, '\n') .. '\n')
  io.stderr:write(string.format('locate_spec: %d failure(s)\n', #failures))
  vim.cmd('cquit 1')
else
  io.stdout:write(string.format('locate_spec: %d cases passed\n', count))
  vim.cmd('qall!')
end
