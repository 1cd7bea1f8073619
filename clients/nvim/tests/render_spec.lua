-- Unit tests for lua/tandem/render.lua: each case is a sequence of events and the
-- chat lines they must produce. Run with
--   nvim --headless -u NONE -c "set rtp+=clients/nvim" -c "luafile clients/nvim/tests/render_spec.lua"
-- Exits 0 when every case passes, 1 (failures on stderr) otherwise.
local render = require('tandem.render')

local function tool(id, status, title)
  return { type = 'toolCall', callId = id, tool = 'read_file', title = title or 'Read src/a.rs', kind = 'read', status = status }
end

local cases = {
  {
    name = 'turn with streamed text',
    events = {
      { type = 'turnStarted', text = 'What does it do?' },
      { type = 'textChunk', text = 'The function ' },
      { type = 'textChunk', text = 'adds numbers.\nIt is ' },
      { type = 'textChunk', text = 'pure.' },
      { type = 'turnFinished', stopReason = 'end_turn' },
    },
    lines = { '## You', 'What does it do?', '## Tandem', 'The function adds numbers.', 'It is pure.' },
  },
  {
    name = 'multi-line prompt and a second turn',
    events = {
      { type = 'turnStarted', text = 'line one\nline two' },
      { type = 'textChunk', text = 'ok' },
      { type = 'turnFinished', stopReason = 'end_turn' },
      { type = 'turnStarted', text = 'again' },
      { type = 'textChunk', text = 'sure' },
    },
    turns = { 't1', 't1', 't1', 't2', 't2' },
    lines = { '## You', 'line one', 'line two', '## Tandem', 'ok', '', '## You', 'again', '## Tandem', 'sure' },
  },
  {
    name = 'thoughts collapse to one line, text is not shown',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'thoughtChunk', text = 'secret reasoning' },
      { type = 'thoughtChunk', text = ' more' },
      { type = 'textChunk', text = 'answer' },
    },
    lines = { '## You', 'q', '## Tandem', '> thinking…', 'answer' },
  },
  {
    name = 'a tool call is one line updated in place',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'textChunk', text = 'Let me look.' },
      tool('c1', 'validating'),
      tool('c1', 'executing'),
      tool('c2', 'awaitingApproval', 'Run `cargo test`'),
      tool('c1', 'success'),
      tool('c2', 'error', 'Run `cargo test`'),
      { type = 'textChunk', text = 'Done.' },
    },
    lines = { '## You', 'q', '## Tandem', 'Let me look.', '✓ Read src/a.rs', '✗ Run `cargo test`', 'Done.' },
  },
  {
    name = 'tool marks for every status',
    events = {
      tool('a', 'validating', 'A'),
      tool('b', 'scheduled', 'B'),
      tool('c', 'executing', 'C'),
      tool('d', 'awaitingApproval', 'D'),
      tool('e', 'cancelled', 'E'),
    },
    lines = { '… A', '… B', '… C', '? D', '⊘ E' },
  },
  {
    name = "a subagent's calls are indented under its parent call; its text stays inside",
    events = {
      tool('p1', 'executing', 'Investigate the parser (codebase_investigator)'),
      { type = 'subagent', parentCallId = 'p1', agent = 'codebase_investigator', event = tool('c1', 'executing', 'Read src/a.rs') },
      { type = 'subagent', parentCallId = 'p1', agent = 'codebase_investigator', event = { type = 'textChunk', text = 'The parser…' } },
      { type = 'subagent', parentCallId = 'p1', agent = 'codebase_investigator', event = tool('c1', 'success', 'Read src/a.rs') },
      { type = 'subagent', parentCallId = 'p2', agent = 'codebase_investigator', event = tool('c1', 'error', 'Grep foo') },
      tool('p1', 'success', 'Investigate the parser (codebase_investigator)'),
    },
    lines = { '✓ Investigate the parser (codebase_investigator)', '  ✓ Read src/a.rs', '  ✗ Grep foo' },
  },
  {
    name = 'hook runs that decided something are shown, silent ones are not',
    events = {
      { type = 'hook', event = 'UserPromptSubmit', command = './ctx.sh', durationMs = 3, exitCode = 0, outcome = 'continued' },
      { type = 'hook', event = 'PreToolUse', command = './protect.sh', matcher = 'edit', durationMs = 12, exitCode = 0, outcome = 'denied', message = 'lockfiles\nare generated' },
      { type = 'hook', event = 'Stop', command = './check.sh', durationMs = 5, exitCode = 0, outcome = 'continued', message = 'all green' },
    },
    lines = { '_hook PreToolUse `./protect.sh` denied (12 ms): lockfiles are generated_', '_hook Stop `./check.sh` continued (5 ms): all green_' },
  },
  {
    name = 'the same call id in another turn is another call',
    events = { tool('c1', 'success', 'First'), tool('c1', 'success', 'Second') },
    turns = { 't1', 't2' },
    lines = { '✓ First', '✓ Second' },
  },
  {
    name = 'a plan is replaced on each update',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'plan', todos = { { description = 'Reproduce', status = 'in_progress' }, { description = 'Fix', status = 'pending' } } },
      tool('c1', 'success'),
      {
        type = 'plan',
        todos = {
          { description = 'Reproduce', status = 'completed' },
          { description = 'Fix', status = 'cancelled' },
          { description = 'Test', status = 'in_progress' },
        },
      },
    },
    lines = { '## You', 'q', '## Tandem', 'Plan:', '- [x] Reproduce', '- [-] Fix', '- [~] Test', '✓ Read src/a.rs' },
  },
  {
    name = 'usage is not in the buffer',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'usage', inputTokens = 10, outputTokens = 2, contextTokens = 12345, contextWindow = 200000 },
    },
    lines = { '## You', 'q', '## Tandem', '_working…_' },
    status = 'tandem: 12.3k/200k tokens',
  },
  -- Regression: after the prompt nothing showed that the model was working until its first text.
  {
    name = 'a turn says it is working until the first thing comes back',
    events = { { type = 'turnStarted', text = 'q' } },
    lines = { '## You', 'q', '## Tandem', '_working…_' },
  },
  {
    name = 'working gives way to the first text, thought or tool call',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'thoughtChunk', text = 'hmm' },
      { type = 'turnStarted', text = 'r' },
      tool('c1', 'executing'),
      { type = 'turnStarted', text = 's' },
      { type = 'textChunk', text = 'ok' },
    },
    turns = { 't1', 't1', 't2', 't2', 't3', 't3' },
    lines = {
      '## You', 'q', '## Tandem', '> thinking…', '',
      '## You', 'r', '## Tandem', '… Read src/a.rs', '',
      '## You', 's', '## Tandem', 'ok',
    },
  },
  {
    name = 'a turn that ends with nothing to show stops working',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'turnFinished', stopReason = 'end_turn' },
    },
    lines = { '## You', 'q', '## Tandem' },
  },
  {
    name = 'stop reasons other than end_turn are shown',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'turnFinished', stopReason = 'error', message = 'Tandem is not set up: no key' },
      { type = 'turnStarted', text = 'r' },
      { type = 'turnFinished', stopReason = 'cancelled' },
    },
    lines = { '## You', 'q', '## Tandem', '_error: Tandem is not set up: no key_', '', '## You', 'r', '## Tandem', '_cancelled_' },
  },
  {
    name = 'end_turn with a message shows the message',
    events = { { type = 'turnFinished', stopReason = 'end_turn', message = 'the edit was not applied' } },
    lines = { '_end_turn: the edit was not applied_' },
  },
  {
    name = 'compression and restore are one line each',
    events = {
      { type = 'compression', status = 'compressed', tokensBefore = 48210, tokensAfter = 6120 },
      { type = 'compression', status = 'skipped', tokensBefore = 10, tokensAfter = 10, message = 'nothing to compress' },
      { type = 'restored', turnId = 't5', restored = { '/a', '/b' }, skipped = { { path = '/c', reason = 'changed' } } },
      { type = 'restored', restored = {}, skipped = {} },
    },
    lines = {
      '_Compressed the conversation from about 48.2k to about 6.1k tokens_',
      '_Compression skipped: nothing to compress_',
      '_Restored 2 file(s) from before t5, skipped 1_',
      '_Nothing to restore_',
    },
  },
  {
    name = 'a retry clears what the failed request streamed',
    events = {
      { type = 'turnStarted', text = 'q' },
      tool('c1', 'success'),
      { type = 'thoughtChunk', text = 'hmm' },
      { type = 'textChunk', text = 'Hal' },
      { type = 'retrying', attempt = 1, delayMs = 1000, error = 'rate limited' },
      { type = 'retrying', attempt = 2, delayMs = 2500, error = 'rate limited' },
      { type = 'textChunk', text = 'Hello' },
    },
    lines = { '## You', 'q', '## Tandem', '✓ Read src/a.rs', '_retrying (attempt 2) in 2.5s: rate limited_', 'Hello' },
  },
  {
    name = 'CRLF in text and unknown events',
    events = {
      { type = 'textChunk', text = 'a\r\nb' },
      { type = 'somethingNew', text = 'x' },
      'not a table',
    },
    lines = { 'a', 'b' },
  },
}

local status_cases = {
  { usage = nil, running = true, want = 'tandem: running…' },
  { usage = nil, running = false, want = 'tandem' },
  { usage = { contextTokens = 950, contextWindow = 8000 }, running = false, want = 'tandem: 950/8k tokens' },
  { usage = { contextTokens = 123456, contextWindow = 1000000 }, running = false, want = 'tandem: 123k/1000k tokens' },
}

-- render.answer: the final text of a turn, what the end-of-turn notification shows.
local answer_cases = {
  {
    name = 'the text after the last tool call',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'textChunk', text = 'Let me look.' },
      tool('c1', 'success'),
      { type = 'textChunk', text = '  It adds ' },
      { type = 'textChunk', text = 'numbers.\n' },
      { type = 'turnFinished', stopReason = 'end_turn' },
    },
    turn = 't1',
    want = 'It adds numbers.',
  },
  {
    name = 'only the asked turn',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'textChunk', text = 'first' },
      { type = 'turnStarted', text = 'r' },
      tool('c1', 'success'),
    },
    turns = { 't1', 't1', 't2', 't2' },
    turn = 't2',
    want = nil,
  },
  {
    name = 'a retried text is not the answer',
    events = {
      { type = 'turnStarted', text = 'q' },
      { type = 'textChunk', text = 'Hal' },
      { type = 'retrying', attempt = 1, delayMs = 10, error = 'x' },
      { type = 'textChunk', text = 'Hello' },
    },
    turn = 't1',
    want = 'Hello',
  },
}

-- render.session_label: a :TandemSessions entry. Regression: the live session was listed as
-- "Session 1", the server's name for it until it is saved, however long the user had chatted.
local label_cases = {
  {
    name = 'a live session is named by its first prompt',
    session = { sessionId = 's1', title = 'Session 1', live = true, running = true, turns = 1 },
    prompt = 'Why does the parser fail?',
    want = 'Why does the parser fail?  (live, 1 turn) running',
  },
  {
    name = 'a live session with a title of its own keeps it',
    session = { sessionId = 's2', title = 'Parser bug', live = true, turns = 2 },
    prompt = 'Why does the parser fail?',
    want = 'Parser bug  (live, 2 turns)',
  },
  {
    name = 'a live session without a prompt keeps the server name',
    session = { sessionId = 's3', title = 'Session 2', live = true, turns = 0 },
    want = 'Session 2  (live, 0 turns)',
  },
  {
    name = 'a saved session keeps its title',
    session = { sessionId = 's4', title = 'Session 7', live = false, turns = 5 },
    prompt = 'something else',
    want = 'Session 7  (saved, 5 turns)',
  },
}

local failures = {}
local function fail(name, msg)
  failures[#failures + 1] = name .. ': ' .. msg
end

for _, case in ipairs(label_cases) do
  local got = render.session_label(case.session, case.prompt)
  if got ~= case.want then
    fail('label: ' .. case.name, string.format('expected %q, got %q', case.want, got))
  end
end

do
  local state = render.new()
  if render.title(state) ~= nil then
    fail('title', 'a session without a prompt has a title')
  end
  render.apply(state, { type = 'turnStarted', text = '\n  ' .. string.rep('é', 70) .. '\nmore' }, 't1')
  render.apply(state, { type = 'turnStarted', text = 'second' }, 't2')
  local want = string.rep('é', 59) .. '…'
  if render.title(state) ~= want then
    fail('title', string.format('expected %q, got %q', want, tostring(render.title(state))))
  end
end

for _, case in ipairs(answer_cases) do
  local state = render.new()
  for i, ev in ipairs(case.events) do
    render.apply(state, ev, case.turns and case.turns[i] or 't1')
  end
  local got = render.answer(state, case.turn)
  if got ~= case.want then
    fail('answer: ' .. case.name, string.format('expected %s, got %s', vim.inspect(case.want), vim.inspect(got)))
  end
end

for _, case in ipairs(cases) do
  local state = render.new()
  for i, ev in ipairs(case.events) do
    render.apply(state, ev, case.turns and case.turns[i] or 't1')
  end
  local got = render.lines(state)
  if not vim.deep_equal(got, case.lines) then
    fail(case.name, 'expected ' .. vim.inspect(case.lines) .. '\n  got ' .. vim.inspect(got))
  end
  if case.status then
    local s = render.status(state.usage, false)
    if s ~= case.status then
      fail(case.name, string.format('status: expected %q, got %q', case.status, s))
    end
  end
end

for i, case in ipairs(status_cases) do
  local s = render.status(case.usage, case.running)
  if s ~= case.want then
    fail('status case ' .. i, string.format('expected %q, got %q', case.want, s))
  end
end

if #failures > 0 then
  io.stderr:write(table.concat(failures, '\n') .. '\n')
  io.stderr:write(string.format('render_spec: %d failure(s)\n', #failures))
  vim.cmd('cquit 1')
else
  io.stdout:write(string.format('render_spec: %d cases passed\n', #cases + #status_cases + #answer_cases + #label_cases + 1))
  vim.cmd('qall!')
end
