/**
 * The chat view's model and HTML: a reducer that folds `tandem/event` notifications and pending
 * `tandem/requestApproval` requests into a `ChatState`, and the functions that turn that state
 * into the HTML of the webview's `#log`. Pure: no `vscode` import, no I/O, so it is unit-tested
 * in Node.
 *
 * Everything that comes from the model or a tool is untrusted: it is escaped, and the markdown
 * renderer has raw HTML and images off and lets through only http(s), mailto and file links.
 * The markup carries no inline handlers or styles, so it runs under the webview's strict CSP.
 */

import MarkdownIt from "markdown-it";
import { declinedMessage } from "./proposal";
import type { ApprovalParams, EventParams, HookRunEvent, StopReason, Todo, ToolCallEvent, ToolStatus } from "./protocol";

export interface PendingApproval {
  requestId: number;
  params: ApprovalParams;
}

export interface TurnView {
  turnId: string;
  prompt: string;
  text: string;
  thoughts: string;
  /** In first-seen order, each replaced by its latest update. */
  tools: ToolCallEvent[];
  /** A subagent's calls, by the parent's `subagent` call id, in the same way. */
  subagentTools: Record<string, ToolCallEvent[]>;
  plan?: Todo[];
  /** Compression, restored, retrying and hook lines. */
  notes: string[];
  /** Text, tool calls and notes in the order they happened (the chat shows them so). */
  order: TurnItem[];
  finished?: { stopReason: StopReason; message?: string };
  replay: boolean;
  /** Where the running model request's text and thoughts start (a `usage` event ends a request). */
  requestStart?: { text: number; thoughts: number };
}

/**
 * One entry of a turn's order: the text from `start` up to the next text entry (or the end), a
 * tool call by id (its latest update is in `tools`), or a note by index.
 */
export type TurnItem = { kind: "text"; start: number } | { kind: "tool"; callId: string } | { kind: "note"; index: number };

export interface ChatState {
  sessionId?: string;
  title?: string;
  turns: TurnView[];
  approvals: PendingApproval[];
  contextTokens?: number;
  contextWindow?: number;
  running: boolean;
  /** A line shown under the log (the server is down, a session could not be loaded, …). */
  notice?: string;
}

export function emptyChat(sessionId?: string, title?: string): ChatState {
  return { sessionId, title, turns: [], approvals: [], running: false };
}

/**
 * Folds one `tandem/event` into the state. Events of another session than the state's are
 * ignored; a state without a session adopts the first event's.
 */
export function applyEvent(state: ChatState, params: EventParams): void {
  if (state.sessionId === undefined) {
    state.sessionId = params.sessionId;
  } else if (state.sessionId !== params.sessionId) {
    return;
  }
  const replay = params.replay === true;
  const event = params.event;
  if (event.type === "turnStarted") {
    // A turn seen again (replayed, then live) starts over rather than doubling its text.
    const turn = findTurn(state, params.turnId);
    if (turn) {
      Object.assign(turn, newTurn(params.turnId, event.text, replay));
    } else {
      state.turns.push(newTurn(params.turnId, event.text, replay));
    }
    state.running = isRunning(state);
    return;
  }
  const turn = findTurn(state, params.turnId) ?? addTurn(state, params.turnId, replay);
  switch (event.type) {
    case "textChunk": {
      const last = turn.order[turn.order.length - 1];
      if (last?.kind !== "text") {
        turn.order.push({ kind: "text", start: turn.text.length });
      }
      turn.text += separated(turn.text, turn.requestStart?.text, event.text);
      break;
    }
    case "thoughtChunk":
      turn.thoughts += separated(turn.thoughts, turn.requestStart?.thoughts, event.text);
      break;
    case "retrying":
      // What streamed since the failed request started is void, by the protocol; what earlier
      // requests of the turn streamed stays.
      turn.text = turn.text.slice(0, turn.requestStart?.text ?? 0);
      turn.thoughts = turn.thoughts.slice(0, turn.requestStart?.thoughts ?? 0);
      turn.order = turn.order.filter((item) => item.kind !== "text" || item.start < turn.text.length);
      addNote(turn, 
        `The model request failed (${event.error}); retrying in ${seconds(event.delayMs)} (attempt ${event.attempt}).`,
      );
      break;
    case "toolCall":
      if (upsertTool(turn.tools, event)) {
        turn.order.push({ kind: "tool", callId: event.callId });
      }
      break;
    case "subagent":
      // Its calls are listed under the parent's; its text stays inside (the parent call's
      // result reports it).
      if (event.event.type === "toolCall") {
        upsertTool((turn.subagentTools[event.parentCallId] ??= []), event.event);
      }
      break;
    case "hook":
      // A hook that let things go on in silence is not worth a line.
      if (event.outcome !== "continued" || event.message !== undefined) {
        addNote(turn, hookNote(event));
      }
      break;
    case "plan":
      turn.plan = event.todos;
      break;
    case "usage":
      turn.requestStart = { text: turn.text.length, thoughts: turn.thoughts.length };
      state.contextTokens = event.contextTokens;
      state.contextWindow = event.contextWindow;
      break;
    case "compression":
      addNote(turn, compressionNote(event.status, event.tokensBefore, event.tokensAfter, event.message));
      break;
    case "restored":
      addNote(turn, restoredNote(event.restored, event.skipped));
      break;
    case "turnFinished":
      turn.finished = event.message === undefined
        ? { stopReason: event.stopReason }
        : { stopReason: event.stopReason, message: event.message };
      break;
  }
  state.running = isRunning(state);
}

export function addApproval(state: ChatState, requestId: number, params: ApprovalParams): void {
  removeApproval(state, requestId);
  state.approvals.push({ requestId, params });
}

export function removeApproval(state: ChatState, requestId: number): void {
  state.approvals = state.approvals.filter((approval) => approval.requestId !== requestId);
}

/** "" while the context is unknown, else e.g. "Context 3% · 5,350 / 200,000 tokens". */
export function contextLabel(state: ChatState): string {
  const tokens = state.contextTokens;
  if (tokens === undefined) {
    return "";
  }
  const window = state.contextWindow;
  if (window === undefined || window <= 0) {
    return `Context ${thousands(tokens)} tokens`;
  }
  return `Context ${Math.round((tokens / window) * 100)}% · ${thousands(tokens)} / ${thousands(window)} tokens`;
}

/** What every "Tandem is not set up: …" message of the server starts with. */
export const NOT_SET_UP = "Tandem is not set up";

/**
 * VS Code's words for the server's "Tandem is not set up: …" (no model it can use), which names
 * a settings file and `tandem models`; `undefined` for any other message.
 */
export function notSetUpMessage(message: string | undefined): string | undefined {
  if (!message?.startsWith(NOT_SET_UP)) {
    return undefined;
  }
  return (
    "Tandem has no model it can use yet. Choose one in VS Code's settings: Tandem: Model " +
    "(tandem.model: a name from tandem.models, or provider:model such as anthropic:claude-sonnet-4-5), " +
    "with Tandem: Models (tandem.models) for a model of your own. Or set ANTHROPIC_API_KEY, " +
    'GEMINI_API_KEY or OPENAI_API_KEY in the environment VS Code runs in, then run "Tandem: Restart Server".'
  );
}

/**
 * The toolbar's few words: "Context 6%" (the whole `contextLabel` goes in its tooltip), so it
 * never needs cutting in a narrow side bar; "7.8k tokens" without a known window.
 */
export function shortContextLabel(state: ChatState): string {
  const tokens = state.contextTokens;
  if (tokens === undefined) {
    return "";
  }
  const window = state.contextWindow;
  if (window === undefined || window <= 0) {
    return `${tokens < 1000 ? String(tokens) : `${(tokens / 1000).toFixed(1)}k`} tokens`;
  }
  return `Context ${Math.round((tokens / window) * 100)}%`;
}

/** The HTML of `#log`: the turns, then the pending approvals, then the notice. */
export function renderChat(state: ChatState): string {
  const parts: string[] = [];
  if (state.title) {
    parts.push(`<h2 class="session-title">${escapeHtml(state.title)}</h2>`);
  }
  if (state.turns.length === 0 && state.approvals.length === 0) {
    parts.push(`<div class="empty">Ask Tandem about your code, or to change it.</div>`);
  }
  for (const turn of state.turns) {
    parts.push(renderTurn(turn));
  }
  for (const approval of state.approvals) {
    parts.push(renderApproval(approval));
  }
  if (state.notice) {
    parts.push(`<div class="notice">${escapeHtml(state.notice)}</div>`);
  }
  return parts.join("\n");
}

const markdown = createMarkdown();

function createMarkdown() {
  const md = new MarkdownIt({ html: false, linkify: true, typographer: false });
  // An image would be fetched as soon as it renders: a prompt-injected answer could send data
  // out in its URL. Without the rule, `![x](url)` shows as text and a link.
  md.disable("image");
  // Everything else (javascript:, data:, vscode:, command: and relative links) renders as text.
  md.validateLink = (url: string): boolean => /^(https?:|mailto:|file:)/i.test(url.trim());
  return md;
}

/** Markdown to HTML: raw HTML escaped, no images, only http(s)/mailto/file links. */
export function renderMarkdown(text: string): string {
  return markdown.render(text);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * The editor's own icons (codicons, drawn by media/chat.css from the font VS Code ships), not
 * Unicode symbols that render as boxes where no emoji font is installed.
 */
const STATUS_ICONS: Record<ToolStatus, string> = {
  validating: "loading",
  scheduled: "loading",
  awaitingApproval: "debug-pause",
  executing: "loading",
  success: "check",
  error: "error",
  cancelled: "circle-slash",
};

const STOP_REASONS: Record<StopReason, string> = {
  end_turn: "Finished",
  max_turns: "Stopped: the turn used the most model requests allowed",
  cancelled: "Cancelled",
  error: "Failed",
  loop_detected: "Stopped: the model repeated itself",
  response_limit: "Stopped: the response was too long",
};

function renderTurn(turn: TurnView): string {
  const parts = [
    `<section class="turn" data-turn-id="${escapeHtml(turn.turnId)}" data-replay="${turn.replay}">`,
    `<div class="prompt">${escapeHtml(turn.prompt)}</div>`,
  ];
  if (turn.thoughts) {
    parts.push(`<details class="thoughts"><summary>Thoughts</summary>${renderMarkdown(turn.thoughts)}</details>`);
  }
  if (turn.plan && turn.plan.length > 0) {
    parts.push(`<ul class="plan">${turn.plan.map(renderTodo).join("")}</ul>`);
  }
  // As it happened: "Reading app.py…", the read, "Now the edit.", the edit, "Changed…".
  const children = (tool: ToolCallEvent): ToolCallEvent[] => turn.subagentTools[tool.callId] ?? [];
  const textStarts = turn.order.flatMap((item) => (item.kind === "text" ? [item.start] : []));
  let tools: string[] = [];
  let answered = false;
  const flushTools = () => {
    if (tools.length > 0) {
      parts.push(`<ul class="tools">${tools.join("")}</ul>`);
      tools = [];
    }
  };
  for (const item of turn.order) {
    if (item.kind === "tool") {
      const tool = turn.tools.find((call) => call.callId === item.callId);
      if (tool) {
        tools.push(renderTool(tool, children(tool)));
      }
      continue;
    }
    flushTools();
    if (item.kind === "text") {
      const end = textStarts.find((start) => start > item.start) ?? turn.text.length;
      parts.push(`<div class="answer">${renderMarkdown(turn.text.slice(item.start, end))}</div>`);
      answered = true;
    } else {
      parts.push(`<div class="note">${escapeHtml(turn.notes[item.index] ?? "")}</div>`);
    }
  }
  flushTools();
  if (!answered) {
    parts.push(`<div class="answer"></div>`);
  }
  const declined = declinedMessage(turn.finished?.message);
  const notSetUp = turn.finished?.stopReason === "error" ? notSetUpMessage(turn.finished.message) : undefined;
  if (turn.finished && notSetUp) {
    // The server's words are for a terminal (a settings file's path, `tandem models`): VS Code's
    // come first, with the way to the settings; the server's stay under Details.
    parts.push(
      `<div class="turn-end" data-stop-reason="error" data-not-set-up="true">${escapeHtml(notSetUp)} ` +
        `<button data-action="open-settings">Open Settings</button>` +
        `<details class="not-set-up-details"><summary>Details</summary>${escapeHtml(turn.finished.message ?? "")}</details></div>`,
    );
  } else if (turn.finished && declined) {
    parts.push(`<div class="turn-end" data-stop-reason="${escapeHtml(turn.finished.stopReason)}" data-declined="true">${escapeHtml(declined)}</div>`);
  } else if (turn.finished) {
    const { stopReason, message } = turn.finished;
    if (stopReason === "end_turn" && message === undefined) {
      // Invisible, but there: the end-to-end tests wait for it.
      parts.push(`<div class="turn-end" data-stop-reason="end_turn" hidden></div>`);
    } else {
      const label = STOP_REASONS[stopReason] ?? stopReason;
      const text = message === undefined ? label : `${label}: ${message}`;
      parts.push(`<div class="turn-end" data-stop-reason="${escapeHtml(stopReason)}">${escapeHtml(text)}</div>`);
    }
  }
  parts.push(`</section>`);
  return parts.join("");
}

function renderTool(tool: ToolCallEvent, children: ToolCallEvent[] = []): string {
  const status = escapeHtml(tool.status);
  const icon = STATUS_ICONS[tool.status] ?? "circle-small";
  const parts = [
    `<li class="tool" data-call-id="${escapeHtml(tool.callId)}" data-status="${status}" data-kind="${escapeHtml(tool.kind)}">`,
    `<span class="tool-status codicon codicon-${icon}${icon === "loading" ? " codicon-modifier-spin" : ""}" title="${status}" aria-label="${status}"></span> `,
    `<span class="tool-title">${escapeHtml(tool.title)}</span>`,
  ];
  const location = tool.locations?.[0];
  const openUri = location?.uri ?? tool.diff?.uri;
  if (openUri) {
    const line = location?.line !== undefined ? ` data-line="${location.line}"` : "";
    parts.push(` <button data-action="open" data-uri="${escapeHtml(openUri)}"${line}>Open</button>`);
  }
  if (tool.diff) {
    parts.push(` <button data-action="diff" data-call-id="${escapeHtml(tool.callId)}">Diff</button>`);
  }
  if (children.length > 0) {
    // A child's call ids are its own: the Diff button would look in the parent's calls.
    const nested = children.map((child) => renderTool({ ...child, diff: undefined }));
    parts.push(`<ul class="tools subagent-tools">${nested.join("")}</ul>`);
  }
  parts.push(`</li>`);
  return parts.join("");
}

function renderTodo(todo: Todo): string {
  const checked = todo.status === "completed" ? " checked" : "";
  return `<li data-status="${escapeHtml(todo.status)}"><input type="checkbox" disabled${checked}> ${escapeHtml(todo.description)}</li>`;
}

function renderApproval({ requestId, params }: PendingApproval): string {
  const call = params.toolCall;
  const details = call.details ?? (call.rawInput === undefined ? undefined : JSON.stringify(call.rawInput, null, 2));
  const parts = [
    `<div class="approval" data-request-id="${requestId}">`,
    `<div class="approval-title">Tandem wants to: ${escapeHtml(call.title)}</div>`,
  ];
  if (call.approvalReason) {
    parts.push(`<div class="approval-reason">${escapeHtml(call.approvalReason)}</div>`);
  }
  // Never cut: the protocol lets a client offer to allow only what it showed in full.
  parts.push(`<pre class="approval-details">${escapeHtml(details ?? "(the call came without its arguments)")}</pre>`);
  if (call.diff) {
    parts.push(`<button data-action="approval-diff" data-request-id="${requestId}">Show diff</button>`);
  }
  parts.push(
    `<textarea class="approval-feedback" placeholder="Tell Tandem why (optional)"></textarea>`,
    `<div class="approval-actions">`,
  );
  // With nothing to show, allowing would be allowing unseen: only the rejections are offered.
  const options = details === undefined
    ? params.options.filter((option) => option.kind === "reject" || option.kind === "rejectWithFeedback")
    : params.options;
  for (const option of options) {
    parts.push(
      `<button data-decision="${escapeHtml(option.kind)}" data-request-id="${requestId}">${escapeHtml(option.name)}</button>`,
    );
  }
  parts.push(`<button data-decision="rejectAlways" data-request-id="${requestId}">Reject always</button>`);
  parts.push(`</div></div>`);
  return parts.join("");
}

function findTurn(state: ChatState, turnId: string): TurnView | undefined {
  return state.turns.find((turn) => turn.turnId === turnId);
}

function addTurn(state: ChatState, turnId: string, replay: boolean): TurnView {
  const turn = newTurn(turnId, "", replay);
  state.turns.push(turn);
  return turn;
}

/**
 * `chunk` as appended to `text`: the first chunk of a model request after an earlier request's
 * text starts a new paragraph, so answers given around tool calls do not run together.
 */
function separated(text: string, requestStart: number | undefined, chunk: string): string {
  if (requestStart === undefined || text.length !== requestStart || text.length === 0 || text.endsWith("\n\n")) {
    return chunk;
  }
  return (text.endsWith("\n") ? "\n" : "\n\n") + chunk;
}

function newTurn(turnId: string, prompt: string, replay: boolean): TurnView {
  return {
    turnId,
    prompt,
    text: "",
    thoughts: "",
    tools: [],
    subagentTools: {},
    plan: undefined,
    notes: [],
    order: [],
    finished: undefined,
    replay,
  };
}

/** Replaces the call's entry with its latest update, or adds it (then returns true). */
function upsertTool(tools: ToolCallEvent[], event: ToolCallEvent): boolean {
  const index = tools.findIndex((tool) => tool.callId === event.callId);
  if (index >= 0) {
    tools[index] = event;
    return false;
  }
  tools.push(event);
  return true;
}

function addNote(turn: TurnView, note: string): void {
  turn.order.push({ kind: "note", index: turn.notes.length });
  turn.notes.push(note);
}

/** E.g. "Hook PreToolUse `./protect.sh` denied (12 ms): lockfiles are generated". */
function hookNote(run: HookRunEvent): string {
  const message = run.message === undefined ? "" : `: ${run.message}`;
  return `Hook ${run.event} \`${run.command}\` ${run.outcome} (${run.durationMs} ms)${message}`;
}

function isRunning(state: ChatState): boolean {
  return state.turns.some((turn) => turn.finished === undefined);
}

function compressionNote(
  status: "compressed" | "skipped" | "inflated" | "failed",
  before: number,
  after: number,
  message: string | undefined,
): string {
  const why = message ? `: ${message}` : "";
  switch (status) {
    case "compressed":
      return `Compressed the conversation from ${thousands(before)} to ${thousands(after)} tokens.`;
    case "skipped":
      return `Nothing to compress${why}.`;
    case "inflated":
      return `Compression did not make the conversation smaller (${thousands(before)} → ${thousands(after)} tokens); kept it as it was${why}.`;
    case "failed":
      return `Compression failed${why}.`;
  }
}

function restoredNote(restored: string[], skipped: { path: string; reason: string }[]): string {
  if (restored.length === 0 && skipped.length === 0) {
    return "Nothing to restore.";
  }
  const parts: string[] = [];
  if (restored.length > 0) {
    parts.push(`Restored ${restored.length === 1 ? "1 file" : `${restored.length} files`}: ${restored.join(", ")}.`);
  }
  if (skipped.length > 0) {
    parts.push(`Left alone: ${skipped.map(({ path, reason }) => `${path} (${reason})`).join(", ")}.`);
  }
  return parts.join(" ");
}

function seconds(ms: number): string {
  const value = ms / 1000;
  return `${Number.isInteger(value) ? value : value.toFixed(1)}s`;
}

/** "200,000": written out rather than toLocaleString, whose output depends on Node's ICU. */
function thousands(value: number): string {
  return String(Math.round(value)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
