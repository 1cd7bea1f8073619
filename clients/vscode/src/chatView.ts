/**
 * The chat view: a webview view in Tandem's side bar container. It loads media/chat.js and
 * media/chat.css under a strict Content Security Policy (scripts only with this load's nonce,
 * no inline handlers, no remote anything), posts the HTML that render.ts makes from the chat's
 * state, and turns the webview's messages into calls on the chat, the diff documents and the
 * editor. Model output is rendered by render.ts with HTML off; the CSP is the second wall.
 */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { Chat } from "./chat";
import type { DiffDocuments } from "./diffs";
import type { ApprovalDecision } from "./protocol";
import { contextLabel, renderChat } from "./render";

export const CHAT_VIEW = "tandem.chat";

/** Re-rendering on every streamed chunk would flood the webview: at most this often. */
const RENDER_INTERVAL_MS = 50;

type Message =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "stop" }
  | { type: "newSession" }
  | { type: "sessions" }
  | { type: "open"; uri: string; line?: number }
  | { type: "diff"; callId: string }
  | { type: "approvalDiff"; requestId: number }
  | { type: "approve"; requestId: number; decision: string; feedback?: string }
  | { type: "link"; href: string };

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly chat: Chat,
    private readonly diffs: DiffDocuments,
    private readonly report: (error: unknown) => void,
  ) {
    this.subscriptions.push(chat.onDidChange(() => this.scheduleRender()));
    chat.reveal = (focusPrompt) => void this.reveal(focusPrompt);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.subscriptions.forEach((subscription) => subscription.dispose());
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((message: Message) => {
      this.receive(message).catch(this.report);
    });
    view.onDidDispose(() => {
      this.view = undefined;
    });
    view.onDidChangeVisibility(() => {
      if (view.visible) {
        this.render();
      }
    });
  }

  /** Shows the view (creating it when it was never opened); keeps the editor's focus unless asked. */
  async reveal(focusPrompt: boolean): Promise<void> {
    if (this.view) {
      this.view.show(!focusPrompt);
    } else {
      await vscode.commands.executeCommand(`${CHAT_VIEW}.focus`);
    }
    if (focusPrompt) {
      await this.view?.webview.postMessage({ type: "focusPrompt" });
    }
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Tandem</title>
</head>
<body>
<div id="toolbar"><button id="new-session" title="Start a new session">New session</button><button id="sessions" title="Resume a saved session">Sessions</button><span id="context"></span></div>
<div id="log"></div>
<div id="composer"><textarea id="prompt" rows="3" placeholder="Ask Tandem… (Enter sends, Shift+Enter for a new line)"></textarea><button id="send">Send</button><button id="stop" hidden>Stop</button></div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  private scheduleRender(): void {
    if (this.timer) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.render();
    }, RENDER_INTERVAL_MS);
  }

  private render(): void {
    const state = this.chat.view();
    void this.view?.webview.postMessage({
      type: "render",
      html: renderChat(state),
      running: state.running,
      context: contextLabel(state),
    });
  }

  private async receive(message: Message): Promise<void> {
    switch (message.type) {
      case "ready":
        this.render();
        return;
      case "prompt":
        // The server tells the model what the editor shows (file, cursor, selection) itself.
        await this.chat.prompt(message.text);
        return;
      case "stop":
        await this.chat.cancel();
        return;
      case "newSession":
        await this.chat.newSession();
        return;
      case "sessions":
        await this.chat.pickSession();
        return;
      case "open": {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(message.uri));
        const line = Math.max(0, (message.line ?? 1) - 1);
        await vscode.window.showTextDocument(document, {
          selection: new vscode.Range(line, 0, line, 0),
          preview: true,
        });
        return;
      }
      case "diff": {
        const call = this.chat.toolCall(message.callId);
        if (call?.diff) {
          const { path, oldText, newText } = call.diff;
          await this.diffs.show(oldText ?? "", newText, path, `${call.title} (Tandem)`);
        }
        return;
      }
      case "approvalDiff": {
        const diff = this.chat.approval(message.requestId)?.toolCall.diff;
        if (diff) {
          await this.diffs.show(diff.oldText ?? "", diff.newText, diff.path, `Proposed: ${diff.path}`);
        }
        return;
      }
      case "approve":
        this.chat.answer(message.requestId, decision(message.decision, message.feedback));
        return;
      case "link": {
        const uri = vscode.Uri.parse(message.href);
        if (["http", "https", "mailto", "file"].includes(uri.scheme)) {
          await vscode.commands.executeCommand("vscode.open", uri);
        }
        return;
      }
    }
  }
}

function decision(kind: string, feedback: string | undefined): ApprovalDecision {
  switch (kind) {
    case "allowOnce":
      return { type: "allowOnce" };
    case "allowAlways":
      return { type: "allowAlways" };
    case "rejectAlways":
      return { type: "rejectAlways", feedback };
    default:
      return { type: "reject", feedback };
  }
}
