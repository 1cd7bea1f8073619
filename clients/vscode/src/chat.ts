/**
 * The conversation side of the extension: which session the chat shows, each session's state
 * built from `tandem/event` (by the pure reducer in render.ts), prompts with their context,
 * approvals (answered from the chat view, never blocking the extension host), sessions to resume.
 * The webview itself is in chatView.ts; this module knows nothing of HTML.
 */

import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import type {
  ApprovalDecision,
  ApprovalParams,
  ContextItem,
  EventParams,
  SessionListing,
  TurnStarted,
} from "./protocol";
import { addApproval, applyEvent, ChatState, emptyChat, notSetUpMessage, removeApproval } from "./render";

interface OpenApproval {
  params: ApprovalParams;
  resolve: (decision: ApprovalDecision) => void;
}

export class Chat implements vscode.Disposable {
  private readonly states = new Map<string, ChatState>();
  private current: string | undefined;
  /** The sessions the running server has (made, resumed, or heard from since it started). */
  private readonly live = new Set<string>();
  private readonly approvals = new Map<number, OpenApproval>();
  private nextApprovalId = 1;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when anything shown changed: the chat view and the status bar listen. */
  readonly onDidChange = this.changed.event;
  /** Told once a live turn fails for want of a model (VS Code's words for it); set by the extension. */
  onNotSetUp: (message: string) => void = () => {};
  /** Asks the chat view to show itself (set by the view). */
  reveal: (focusPrompt: boolean) => void = () => {};

  constructor(private readonly client: () => LanguageClient | undefined) {}

  dispose(): void {
    for (const [id] of this.approvals) {
      this.answer(id, { type: "cannotAsk", reason: "the Tandem extension stopped" });
    }
    this.changed.dispose();
  }

  /** The session the chat shows, if any. */
  get sessionId(): string | undefined {
    return this.current;
  }

  /** Why the server cannot be used (a sentence), shown under the chat until it runs. */
  private unavailable: string | undefined;

  setUnavailable(notice: string | undefined): void {
    this.unavailable = notice;
    this.changed.fire();
  }

  /** What the chat view shows. */
  view(): ChatState {
    const state = (this.current && this.states.get(this.current)) || emptyChat();
    state.notice = this.unavailable;
    return state;
  }

  /** Whether any session has a turn running. */
  get running(): boolean {
    return [...this.states.values()].some((state) => state.running);
  }

  private server(): LanguageClient {
    const client = this.client();
    if (!client || !client.isRunning()) {
      throw new Error("Tandem's server is not running (see the Tandem output).");
    }
    return client;
  }

  private stateOf(sessionId: string): ChatState {
    let state = this.states.get(sessionId);
    if (!state) {
      state = emptyChat(sessionId);
      this.states.set(sessionId, state);
    }
    return state;
  }

  private show(sessionId: string): void {
    this.stateOf(sessionId);
    this.current = sessionId;
    this.changed.fire();
  }

  /**
   * A (re)started server holds none of the old one's live sessions: the next prompt starts a new
   * one, and what was shown stays readable (saved sessions can be resumed from *Sessions*).
   */
  serverStarted(): void {
    this.live.clear();
    for (const state of this.states.values()) {
      state.running = false;
    }
    for (const [id] of this.approvals) {
      this.answer(id, { type: "cannotAsk", reason: "the server restarted" });
    }
    this.changed.fire();
  }

  /** The session the chat shows, started when there is none. */
  async ensureSession(): Promise<string> {
    if (this.current && this.live.has(this.current)) {
      return this.current;
    }
    return this.newSession();
  }

  async newSession(title?: string): Promise<string> {
    const result = await this.server().sendRequest<{ sessionId: string }>("tandem/newSession", title ? { title } : {});
    this.states.set(result.sessionId, emptyChat(result.sessionId, title));
    this.live.add(result.sessionId);
    this.show(result.sessionId);
    return result.sessionId;
  }

  /** Sends a prompt to the chat's session (started when there is none), with `context`. */
  async prompt(text: string, context: ContextItem[] = []): Promise<TurnStarted> {
    const sessionId = await this.ensureSession();
    const started = await this.server().sendRequest<TurnStarted>("tandem/prompt", { sessionId, text, context });
    this.show(started.sessionId);
    this.reveal(false);
    return started;
  }

  /** The `/` commands a prompt may start with (`tandem/commands`); none while the server is down. */
  async commands(): Promise<{ name: string; description?: string; argumentHint?: string }[]> {
    const client = this.client();
    if (!client?.isRunning()) {
      return [];
    }
    const answer = await client.sendRequest<{ commands: { name: string; description?: string; argumentHint?: string }[] }>("tandem/commands", {});
    return answer.commands ?? [];
  }

  /** Tells the agent `text` with the session's next prompt, whatever starts it (`tandem/addNote`). */
  async addNote(sessionId: string, label: string, text: string): Promise<void> {
    await this.server().sendRequest("tandem/addNote", { sessionId, label, text });
  }

  async cancel(): Promise<boolean> {
    if (!this.current || !this.live.has(this.current)) {
      return false;
    }
    const result = await this.server().sendRequest<{ cancelled: boolean }>("tandem/cancel", { sessionId: this.current });
    return result.cancelled;
  }

  /** Lists live and saved sessions; the one picked is shown (and resumed when saved). */
  async pickSession(): Promise<void> {
    const { sessions } = await this.server().sendRequest<{ sessions: SessionListing[] }>("tandem/sessions", {});
    type Item = vscode.QuickPickItem & { session?: SessionListing };
    const items: Item[] = [
      { label: "$(add) New session", alwaysShow: true },
      ...sessions.map((session) => ({
        label: session.title,
        description: `${session.turns} turn${session.turns === 1 ? "" : "s"}${session.live ? (session.running ? " · running" : " · open") : ""}`,
        detail: session.updatedMs ? `saved ${new Date(session.updatedMs).toLocaleString()}` : session.sessionId,
        session,
      })),
    ];
    const picked = await vscode.window.showQuickPick(items, { title: "Tandem: sessions", placeHolder: "Resume a session" });
    if (!picked) {
      return;
    }
    if (!picked.session) {
      await this.newSession();
      this.reveal(true);
      return;
    }
    const { sessionId, live, title } = picked.session;
    if (!live) {
      // The saved turns are replayed as events before the answer: start from an empty view.
      this.states.set(sessionId, emptyChat(sessionId, title));
      const resumed = await this.server().sendRequest<{ warnings: string[] }>("tandem/resumeSession", { sessionId });
      for (const warning of resumed.warnings) {
        void vscode.window.showWarningMessage(`Tandem: ${warning}`);
      }
    }
    this.stateOf(sessionId).title = title;
    this.live.add(sessionId);
    this.show(sessionId);
    this.reveal(true);
  }

  /** `tandem/event`: into its session's state; a live turn that starts brings its session up. */
  handleEvent(params: EventParams): void {
    this.live.add(params.sessionId);
    const state = this.stateOf(params.sessionId);
    applyEvent(state, params);
    if (params.event.type === "turnStarted" && !params.replay) {
      this.current = params.sessionId;
    }
    if (params.event.type === "turnFinished" || params.event.type === "toolCall") {
      this.dropSettledApprovals(params);
    }
    if (params.event.type === "turnFinished" && params.event.stopReason === "error" && !params.replay) {
      const notSetUp = notSetUpMessage(params.event.message);
      if (notSetUp) {
        this.onNotSetUp(notSetUp);
      }
    }
    this.changed.fire();
  }

  /** `tandem/requestApproval`: shown in the chat until the user answers; the promise is the answer. */
  requestApproval(params: ApprovalParams): Promise<ApprovalDecision> {
    const requestId = this.nextApprovalId++;
    const state = this.stateOf(params.sessionId);
    return new Promise((resolve) => {
      this.approvals.set(requestId, { params, resolve });
      addApproval(state, requestId, params);
      this.current = params.sessionId;
      this.changed.fire();
      this.reveal(false);
    });
  }

  /** The tool call an open approval is about (for "Show diff"). */
  approval(requestId: number): ApprovalParams | undefined {
    return this.approvals.get(requestId)?.params;
  }

  answer(requestId: number, decision: ApprovalDecision): void {
    const open = this.approvals.get(requestId);
    if (!open) {
      return;
    }
    this.approvals.delete(requestId);
    removeApproval(this.stateOf(open.params.sessionId), requestId);
    open.resolve(decision);
    this.changed.fire();
  }

  /** A cancelled turn or call leaves no question open: the server ignores a late answer. */
  private dropSettledApprovals(params: EventParams): void {
    for (const [id, open] of this.approvals) {
      if (open.params.sessionId !== params.sessionId || open.params.turnId !== params.turnId) {
        continue;
      }
      const event = params.event;
      const settled =
        event.type === "turnFinished" ||
        (event.type === "toolCall" && event.callId === open.params.toolCall.callId && event.status !== "awaitingApproval");
      if (settled) {
        this.answer(id, { type: "cannotAsk", reason: "the call was settled before the user answered" });
      }
    }
  }

  /** The whole state of a tool call of the shown session, by id (for "Diff"). */
  toolCall(callId: string) {
    for (const turn of this.view().turns) {
      const call = turn.tools.find((tool) => tool.callId === callId);
      if (call) {
        return call;
      }
    }
    return undefined;
  }
}
