-- Finds the `tandem` executable when setup() was given no `cmd`, without downloading anything:
-- `tandem` on PATH, else mason.nvim's bin folder ($MASON/bin, or stdpath('data')/mason/bin when
-- mason has not set $MASON yet), else cargo's ($CARGO_HOME/bin, or ~/.cargo/bin). Read at each
-- start, so that installing it (`:MasonInstall tandem`) needs no restart. Pure but for the
-- file system and the environment (unit-tested: tests/locate_spec.lua).
local M = {}

-- How to install the executable, for the messages that say it is missing.
M.install_hint = table.concat({
  'Install it with one of:',
  '  :MasonInstall tandem                          (mason.nvim; see :help tandem-install)',
  '  npm install -g @tandem-lsp/tandem',
  '  cargo install --locked --git https://github.com/tandem-lsp/tandem tandem',
  "or give its path: require('tandem').setup({ cmd = { '/path/to/tandem', 'lsp' } })",
}, '\n')

--- The places looked at, in order: `{ path = nil }` stands for PATH.
function M.places()
  local mason = vim.env.MASON
  if mason == nil or mason == '' then
    mason = vim.fn.stdpath('data') .. '/mason'
  end
  local cargo = vim.env.CARGO_HOME
  if cargo == nil or cargo == '' then
    cargo = vim.loop.os_homedir() .. '/.cargo'
  end
  return {
    { name = 'PATH' },
    { name = 'mason.nvim', path = mason .. '/bin/tandem' },
    { name = 'cargo', path = cargo .. '/bin/tandem' },
  }
end

--- The first executable `tandem` of `places` (default: M.places()), and the list of where it
--- looked before (all of them when it found none, so the result is nil and that list).
function M.find(places)
  local looked = {}
  for _, place in ipairs(places or M.places()) do
    if place.path == nil then
      local found = vim.fn.exepath('tandem')
      if found ~= '' then
        return found, looked
      end
      looked[#looked + 1] = '`tandem` on PATH'
    else
      if vim.fn.executable(place.path) == 1 then
        return place.path, looked
      end
      looked[#looked + 1] = place.path
    end
  end
  return nil, looked
end

--- The server command for `cmd` as setup() got it: `cmd` itself when given, else the found
--- `tandem` with `lsp`. Returns nil and the warning to show when it cannot be run.
function M.server_cmd(cmd)
  if cmd ~= nil then
    local program = cmd[1]
    if vim.fn.executable(program) == 1 then
      return cmd
    end
    local what
    if program:find('/', 1, true) then
      what = string.format('`%s` does not exist or is not executable', program)
    else
      what = string.format('`%s` is not on PATH', program)
    end
    return nil, string.format('Tandem: cannot start `%s`: %s.\n%s', table.concat(cmd, ' '), what, M.install_hint)
  end
  local found, looked = M.find()
  if found then
    return { found, 'lsp' }
  end
  return nil,
    string.format(
      'Tandem: cannot find the `tandem` executable. Looked for %s.\n%s',
      table.concat(looked, ', then '),
      M.install_hint
    )
end

return M
