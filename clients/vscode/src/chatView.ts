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
import { type CommandInfo, matchCommands, modelChoices, modelLabel } from "./composer";
import type { ApprovalDecision } from "./protocol";
import { contextLabel, renderChat, shortContextLabel } from "./render";

export const CHAT_VIEW = "tandem.chat";

/** Re-rendering on every streamed chunk would flood the webview: at most this often. */
const RENDER_INTERVAL_MS = 50;

type Message =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "stop" }
  | { type: "open"; uri: string; line?: number }
  | { type: "diff"; callId: string }
  | { type: "approvalDiff"; requestId: number }
  | { type: "approve"; requestId: number; decision: string; feedback?: string }
  | { type: "link"; href: string }
  | { type: "openSettings" }
  | { type: "pickModel" }
  | { type: "complete"; text: string };

/** How long the `/` commands fetched from the server are reused while the user types. */
const COMMANDS_TTL_MS = 10_000;

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private commands: { at: number; list: CommandInfo[] } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly chat: Chat,
    private readonly diffs: DiffDocuments,
    private readonly report: (error: unknown) => void,
  ) {
    this.subscriptions.push(
      chat.onDidChange(() => this.scheduleRender()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("tandem.model")) {
          this.scheduleRender();
        }
      }),
    );
    chat.reveal = (focusPrompt) => void this.reveal(focusPrompt);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.subscriptions.forEach((subscription) => subscription.dispose());
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const codicons = vscode.Uri.joinPath(this.extensionUri, "dist", "codicons");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, codicons] };
    view.webview.html = this.html(view.webview, media, codicons);
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

  private html(webview: vscode.Webview, media: vscode.Uri, codicons: vscode.Uri): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const icons = webview.asWebviewUri(vscode.Uri.joinPath(codicons, "codicon.css"));
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
<link rel="stylesheet" href="${icons}">
<link rel="stylesheet" href="${style}">
<title>Tandem</title>
</head>
<body>
<div id="toolbar" hidden><span id="context"></span></div>
<div id="log"></div>
<div id="composer">
<ul id="suggestions" role="listbox" hidden></ul>
<div id="composer-row"><textarea id="prompt" rows="3" placeholder="Ask Tandem… (Enter sends, Shift+Enter for a new line)" aria-describedby="hint"></textarea><button id="send">Send</button><button id="stop" hidden>Stop</button></div>
<div id="composer-bar"><button id="model" title="The model (tandem.model): click to choose"><span class="codicon codicon-chip"></span><span id="model-name"></span></button><span id="hint" title="Start with / for a command (Tab completes it); @path attaches a file">/ commands · @ files</span></div>
</div>
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
      context: shortContextLabel(state),
      contextTitle: contextLabel(state),
      model: modelLabel(vscode.workspace.getConfiguration("tandem").get<string | null>("model") ?? undefined),
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
      case "pickModel":
        await pickModel();
        return;
      case "complete": {
        // The completion of `/`: the server's list, fetched again after a while (command files
        // change), matched here (composer.ts).
        if (!this.commands || Date.now() - this.commands.at > COMMANDS_TTL_MS) {
          this.commands = { at: Date.now(), list: await this.chat.commands() };
        }
        const items = matchCommands(this.commands.list, message.text);
        await this.view?.webview.postMessage({ type: "suggestions", text: message.text, items });
        return;
      }
      case "openSettings":
        await vscode.commands.executeCommand("workbench.action.openSettings", "tandem.model");
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

/** The model picker: the configured models, Tandem's default, or a `provider:model` typed in. */
async function pickModel(): Promise<void> {
  const config = vscode.workspace.getConfiguration("tandem");
  const current = config.get<string | null>("model") ?? undefined;
  type Item = vscode.QuickPickItem & { value?: string; other?: boolean };
  const items: Item[] = modelChoices(config.get<Record<string, unknown>>("models"), current).map((choice) => ({
    label: choice.picked ? `$(check) ${choice.label}` : choice.label,
    description: choice.description,
    value: choice.value,
  }));
  items.push({ label: "Other…", description: "provider:model, e.g. anthropic:claude-sonnet-4-5", other: true });
  const picked = await vscode.window.showQuickPick(items, {
    title: "Tandem: model",
    placeHolder: "The model for the next turns (your user setting tandem.model; models are in tandem.models)",
  });
  if (!picked) {
    return;
  }
  let value = picked.value;
  if (picked.other) {
    value = (await vscode.window.showInputBox({ title: "Tandem: model", prompt: "provider:model", value: current }))?.trim();
    if (!value) {
      return;
    }
  }
  await config.update("model", value, vscode.ConfigurationTarget.Global);
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
