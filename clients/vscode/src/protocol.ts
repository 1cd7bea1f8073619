/**
 * Types of Tandem's LSP extension (`tandem/*`, docs/protocol.md) as the extension sees them on
 * the wire: requests it sends, the `tandem/didChangeDiagnostics` notifications it sends, the
 * `tandem/event` notifications and the `tandem/requestApproval` and `tandem/saveDocuments`
 * requests it receives. Types only: no I/O, no `vscode` import, so the pure modules and their
 * unit tests can use them.
 */

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

/** `{sessionId, turnId}`: what every request that starts a turn answers. */
export interface TurnStarted {
  sessionId: string;
  turnId: string;
}

/** An attachment of `tandem/prompt`: a document (or part of it), text under a label, or an image (base64). */
export type ContextItem =
  | { uri: string; range?: Range; label?: string }
  | { label: string; text: string }
  | { mimeType: string; data: string };

export interface SessionListing {
  sessionId: string;
  title: string;
  live: boolean;
  running: boolean;
  turns: number;
  transcriptUri?: string;
  updatedMs?: number;
}

export interface ToolLocation {
  path: string;
  uri: string;
  line?: number;
}

export interface ToolDiff {
  path: string;
  uri: string;
  oldText: string | null;
  newText: string;
}

export type ToolStatus =
  | "validating"
  | "scheduled"
  | "awaitingApproval"
  | "executing"
  | "success"
  | "error"
  | "cancelled";

export interface ToolCallEvent {
  type: "toolCall";
  callId: string;
  tool: string;
  title: string;
  kind: "read" | "search" | "edit" | "execute" | "think" | "other" | "fetch";
  status: ToolStatus;
  rawInput?: unknown;
  details?: string;
  approvalReason?: string;
  locations?: ToolLocation[];
  diff?: ToolDiff;
  output?: string;
}

export type TodoStatus = "pending" | "in_progress" | "completed" | "cancelled";

export interface Todo {
  description: string;
  status: TodoStatus;
}

export type StopReason =
  | "end_turn"
  | "max_turns"
  | "cancelled"
  | "error"
  | "loop_detected"
  | "response_limit";

export type TandemEvent =
  | { type: "turnStarted"; text: string }
  | { type: "textChunk"; text: string }
  | { type: "thoughtChunk"; text: string }
  | { type: "retrying"; attempt: number; delayMs: number; error: string }
  | ToolCallEvent
  | { type: "plan"; todos: Todo[] }
  | {
      type: "usage";
      inputTokens: number;
      outputTokens: number;
      cachedInputTokens: number;
      cacheWriteTokens: number;
      thoughtTokens: number;
      contextTokens: number;
      contextWindow: number;
      estimated?: boolean;
    }
  | {
      type: "compression";
      status: "compressed" | "skipped" | "inflated" | "failed";
      tokensBefore: number;
      tokensAfter: number;
      message?: string;
    }
  | {
      type: "restored";
      turnId?: string;
      restored: string[];
      skipped: { path: string; reason: string }[];
    }
  | { type: "turnFinished"; stopReason: StopReason; message?: string }
  | HookRunEvent
  | SubagentEvent;

/** One run of a hook command (docs/hooks.md). */
export interface HookRunEvent {
  type: "hook";
  event: string;
  command: string;
  matcher?: string;
  durationMs: number;
  exitCode: number | null;
  outcome: "continued" | "blocked" | "allowed" | "denied" | "asked" | "rewrote" | "stopped" | "warned" | "timedOut" | "failed";
  message?: string;
}

/** A child session's event, nested under the parent's `subagent` call (docs/subagents.md). */
export interface SubagentEvent {
  type: "subagent";
  parentCallId: string;
  agent: string;
  event: TandemEvent;
}

/** The params of a `tandem/event` notification. */
export interface EventParams {
  sessionId: string;
  turnId: string;
  replay?: boolean;
  event: TandemEvent;
}

export type ApprovalOptionKind = "reject" | "rejectWithFeedback" | "allowOnce" | "allowAlways";

/** The params of a `tandem/requestApproval` request. */
export interface ApprovalParams {
  sessionId: string;
  turnId: string;
  toolCall: ToolCallEvent;
  options: { kind: ApprovalOptionKind; name: string }[];
}

/** The answer to `tandem/requestApproval`. */
export type ApprovalDecision =
  | { type: "allowOnce" }
  | { type: "allowAlways" }
  | { type: "reject"; feedback?: string }
  | { type: "rejectAlways"; feedback?: string }
  | { type: "cannotAsk"; reason: string };

/** The params of a `tandem/saveDocuments` request: open documents the agent changed, unsaved. */
export interface SaveDocumentsParams {
  uris: string[];
}

/** The answer to `tandem/saveDocuments`: the listed documents whose file now holds them. */
export interface SaveDocumentsResult {
  saved: string[];
}

/** LSP's `DiagnosticSeverity`: Error 1, Warning 2, Information 3, Hint 4. */
export type DiagnosticSeverity = 1 | 2 | 3 | 4;

/**
 * An LSP `Diagnostic` as the extension forwards it: the fields Tandem reads (where, how bad,
 * who says so, its code, the message) and the tags.
 */
export interface Diagnostic {
  range: Range;
  message: string;
  severity?: DiagnosticSeverity;
  code?: number | string;
  source?: string;
  /** LSP's `DiagnosticTag`: Unnecessary 1, Deprecated 2. */
  tags?: number[];
}

/** All of the editor's diagnostics of one document now, replacing what was sent before. */
export interface DocumentDiagnostics {
  /** Spelled as the language client spells the document to the server (`didOpen`). */
  uri: string;
  /** The document's version in VS Code now (what `didOpen`/`didChange` said); null: not open. */
  version: number | null;
  diagnostics: Diagnostic[];
}

/** The params of a `tandem/didChangeDiagnostics` notification. */
export interface DidChangeDiagnosticsParams {
  documents: DocumentDiagnostics[];
}
