-- Unit tests for lua/tandem/save.lua, without a server: the `tandem/saveDocuments` handler is
-- called with the URIs of buffers on files in a temporary folder, and vim.notify records what
-- the user is told. Run with
--   nvim --headless -u NONE -c "set rtp+=clients/nvim" -c "luafile clients/nvim/tests/save_spec.lua"
-- Exits 0 when every case passes, 1 (failures on stderr) otherwise. A case that makes :write ask
-- its y/n question hangs headless Neovim: the harness's time limit then fails it.
local save = require('tandem.save')

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

local notes = {}
vim.notify = function(msg, level)
  notes[#notes + 1] = { msg = tostring(msg), level = level }
end

-- What the plugin's setup registers: the modification time of each file Neovim reads or writes.
local writes = {}
local group = vim.api.nvim_create_augroup('TandemSaveSpec', { clear = true })
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWritePost' }, {
  group = group,
  callback = function(a)
    save.remember(a.buf)
  end,
})
vim.api.nvim_create_autocmd('BufWritePost', {
  group = group,
  callback = function(a)
    writes[a.buf] = (writes[a.buf] or 0) + 1
  end,
})

local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')

local function path(name)
  return dir .. '/' .. name
end

local function write_file(name, text)
  local file = assert(io.open(path(name), 'w'))
  file:write(text)
  file:close()
end

local function read_file(name)
  local file = io.open(path(name), 'r')
  if not file then
    return nil
  end
  local text = file:read('*a')
  file:close()
  return text
end

-- A buffer on file `name` (holding `text`), loaded and hidden, with `lines` typed into it
-- (unless nil).
local function buffer(name, text, lines)
  write_file(name, text)
  vim.cmd('edit ' .. vim.fn.fnameescape(path(name)))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_option(bufnr, 'bufhidden', 'hide')
  if lines then
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  end
  vim.cmd('enew')
  return bufnr, vim.uri_from_bufnr(bufnr)
end

local function modified(bufnr)
  return vim.api.nvim_buf_get_option(bufnr, 'modified')
end

local function warnings()
  local out = {}
  for _, note in ipairs(notes) do
    if note.level == vim.log.levels.WARN then
      out[#out + 1] = note.msg
    end
  end
  return out
end

case('a modified buffer is written whole, with its autocommands, and listed', function()
  notes = {}
  local bufnr, uri = buffer('a.py', 'def add(a, b):\n    return a - b\n',
    { 'def add(a, b):', '    return a + b', '# typed by the user' })
  local result = save.handler(nil, { uris = { uri } }, {})
  check(vim.deep_equal(result, { saved = { uri } }), vim.inspect(result))
  check(read_file('a.py') == 'def add(a, b):\n    return a + b\n# typed by the user\n', 'on disk: ' .. tostring(read_file('a.py')))
  check(not modified(bufnr), 'the buffer is still modified')
  check(writes[bufnr] == 1, 'BufWritePost ran ' .. tostring(writes[bufnr]) .. ' times')
  check(#notes == 0, 'the user was told: ' .. vim.inspect(notes))
end)

case('an unmodified buffer is listed without a write', function()
  notes = {}
  local bufnr, uri = buffer('b.py', 'b = 1\n')
  local result = save.handler(nil, { uris = { uri } }, {})
  check(vim.deep_equal(result, { saved = { uri } }), vim.inspect(result))
  check(writes[bufnr] == nil, 'it was written')
  check(#notes == 0, 'the user was told: ' .. vim.inspect(notes))
end)

case('a buffer that is not loaded, or none at all, is left out', function()
  notes = {}
  write_file('c.py', 'c = 1\n')
  local unloaded = vim.fn.bufadd(path('c.py'))
  local result = save.handler(nil, { uris = { vim.uri_from_bufnr(unloaded), vim.uri_from_fname(path('none.py')) } }, {})
  check(vim.deep_equal(result, { saved = {} }), vim.inspect(result))
  check(vim.json.encode(result) == '{"saved":[]}', 'the empty list is sent as ' .. vim.json.encode(result))
  check(not vim.api.nvim_buf_is_loaded(unloaded), 'the unloaded buffer was loaded')
  check(read_file('none.py') == nil, 'a file was written for a URI without a buffer')
  check(#notes == 0, 'the user was told: ' .. vim.inspect(notes))
end)

case('failed writes are left out and said in one warning, without raising or asking', function()
  notes = {}
  local ok_buf, ok_uri = buffer('d.py', 'd = 1\n', { 'd = 2' })
  local readonly, readonly_uri = buffer('e.py', 'e = 1\n', { 'e = 2' })
  vim.api.nvim_buf_set_option(readonly, 'readonly', true)
  local gone, gone_uri = buffer('f.py', 'f = 1\n', { 'f = 2' })
  -- A folder that no longer exists cannot be written into.
  vim.fn.mkdir(path('sub'), 'p')
  local nested, nested_uri = buffer('sub/g.py', 'g = 1\n', { 'g = 2' })
  os.remove(path('sub/g.py'))
  vim.loop.fs_rmdir(path('sub'))
  save.remember(nested) -- as if it had been read while the file was absent
  os.remove(path('f.py'))
  -- With 'confirm' set, a failing :write would ask in a dialog instead of failing.
  vim.o.confirm = true
  local result = save.handler(nil, { uris = { readonly_uri, ok_uri, nested_uri, gone_uri } }, {})
  check(vim.o.confirm == true, "'confirm' was not restored")
  vim.o.confirm = false
  check(vim.deep_equal(result, { saved = { ok_uri } }), vim.inspect(result))
  check(read_file('d.py') == 'd = 2\n' and not modified(ok_buf), 'the writable buffer was not saved')
  check(read_file('e.py') == 'e = 1\n' and modified(readonly), 'the read-only buffer was written')
  check(modified(nested), 'the buffer in a missing folder is not modified')
  check(read_file('f.py') == nil and modified(gone), 'the file deleted on disk was written back')
  local said = warnings()
  check(#said == 1 and #notes == 1, 'expected one warning, the user was told: ' .. vim.inspect(notes))
  for _, wanted in ipairs({ 'e.py', 'E45', 'g.py', 'f.py: it was deleted on disk' }) do
    check(said[1]:find(wanted, 1, true), 'the warning does not say "' .. wanted .. '":\n' .. said[1])
  end
  check(not said[1]:find('d.py', 1, true), 'the warning names the saved buffer:\n' .. said[1])
end)

case('a file changed on disk since it was read is not written over', function()
  notes = {}
  local bufnr, uri = buffer('h.py', 'h = 1\n', { 'h = 2' })
  write_file('h.py', 'h = 3\n')
  -- Ahead by seconds, so that :write itself would notice and ask.
  local later = os.time() + 10
  vim.loop.fs_utime(path('h.py'), later, later)
  local result = save.handler(nil, { uris = { uri } }, {})
  check(vim.deep_equal(result, { saved = {} }), vim.inspect(result))
  check(read_file('h.py') == 'h = 3\n', 'the change on disk was overwritten')
  check(modified(bufnr), 'the buffer is not modified')
  local said = warnings()
  check(#said == 1 and said[1]:find('h.py: it changed on disk', 1, true), vim.inspect(notes))
end)

case('an unmodified buffer whose file changed on disk is left out', function()
  notes = {}
  local bufnr, uri = buffer('i.py', 'i = 1\n')
  write_file('i.py', 'i = 2\n')
  local later = os.time() + 10
  vim.loop.fs_utime(path('i.py'), later, later)
  local result = save.handler(nil, { uris = { uri } }, {})
  check(vim.deep_equal(result, { saved = {} }), vim.inspect(result))
  check(read_file('i.py') == 'i = 2\n' and writes[bufnr] == nil, 'it was written')
  local said = warnings()
  check(#said == 1 and said[1]:find('i.py: it changed on disk', 1, true), vim.inspect(notes))
end)

case('params without a list of URIs answer an empty list', function()
  notes = {}
  for _, params in ipairs({ vim.NIL, {}, { uris = 'file:///x' }, { uris = { 42, vim.NIL } } }) do
    local result = save.handler(nil, params, {})
    check(vim.deep_equal(result, { saved = {} }), vim.inspect(params) .. ' -> ' .. vim.inspect(result))
  end
  check(#notes == 0, 'the user was told: ' .. vim.inspect(notes))
end)

vim.fn.delete(dir, 'rf')

if #failures > 0 then
  io.stderr:write(table.concat(failures, '\n') .. '\n')
  io.stderr:write(string.format('save_spec: %d failure(s)\n', #failures))
  vim.cmd('cquit 1')
else
  io.stdout:write(string.format('save_spec: %d cases passed\n', count))
  vim.cmd('qall!')
end
