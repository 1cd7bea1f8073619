/**
 * The chat view: a webview view in Tandem's side bar container. It loads media/chat.js and
 * media/chat.css under a strict Content Security Policy (scripts only with this load's nonce,
 * no inline handlers, no remote anything), posts the HTML that render.ts makes from the chat's
 * state, and turns the webview's messages into calls on the chat, the diff documents and the
 * editor. Model output is rendered by render.ts with HTML off; the CSP is the second wall.
 * The composer's completions (`/` commands, `@` files) and its attach menu (a file, the
 * selection, the active file's problems) are answered here; what they match and insert is
 * composer.ts's.
 */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { Chat } from "./chat";
import type { DiffDocuments } from "./diffs";
import {
  type CommandInfo,
  completeMention,
  insertAtCaret,
  matchCommands,
  matchPaths,
  mentionAt,
  mentionOf,
  mentionPath,
  modelChoices,
  modelLabel,
  problemsText,
  selectionText,
  withDirectories,
} from "./composer";
import { WorkspaceFiles } from "./files";
import type { ApprovalDecision } from "./protocol";
import { contextLabel, renderChat, shortContextLabel } from "./render";

export const CHAT_VIEW = "tandem.chat";

/** Re-rendering on every streamed chunk would flood the webview: at most this often. */
const RENDER_INTERVAL_MS = 50;

type Message =
  | { type: "ready" }
  | { type: "prompt"; text: string; images?: { mimeType: string; data: string }[] }
  | { type: "imageTooLarge"; bytes: number }
  | { type: "stop" }
  | { type: "open"; uri: string; line?: number }
  | { type: "diff"; callId: string }
  | { type: "approvalDiff"; requestId: number }
  | { type: "approve"; requestId: number; decision: string; feedback?: string }
  | { type: "link"; href: string }
  | { type: "openSettings" }
  | { type: "pickModel" }
  | { type: "complete"; text: string; caret?: number }
  | { type: "attach"; text: string; caret: number };

/** One row of the composer's suggestions: taking it replaces `start..end` of the prompt. */
interface Suggestion {
  label: string;
  description?: string;
  /** A codicon's name. */
  icon: string;
  start: number;
  end: number;
  insert: string;
}

/** How long the `/` commands fetched from the server are reused while the user types. */
const COMMANDS_TTL_MS = 10_000;

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private commands: { at: number; list: CommandInfo[] } | undefined;
  private readonly files = new WorkspaceFiles();
  /** The last file list with its directories added (`withDirectories`), kept while it is current. */
  private paths: { files: string[]; paths: string[] } | undefined;
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
    this.files.dispose();
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
<div id="images" hidden></div>
<div id="composer-row"><textarea id="prompt" rows="3" placeholder="Ask Tandem — @ to attach files, / for commands, paste a screenshot (Enter sends, Shift+Enter for a new line)" aria-describedby="hint"></textarea><button id="send">Send</button><button id="stop" hidden>Stop</button></div>
<div id="composer-bar"><button id="attach" title="Attach context: a file, the selection, the active file's problems" aria-label="Attach context"><span class="codicon codicon-mention"></span></button><button id="model" title="The model (tandem.model): click to choose"><span class="codicon codicon-chip"></span><span id="model-name"></span></button><span id="hint" title="Start with / for a command; type @ and part of a path for a workspace file or folder (Tab or Enter takes it); the @ button attaches a file, the selection or the problems">/ commands · @ files</span></div>
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

  /**
   * The composer's suggestions for `text` with the caret at `caret`: `/` commands (the server's
   * list, fetched again after a while, as command files change) while the prompt is a `/` and a
   * name; workspace files and folders while the caret is in an `@` mention.
   */
  private async suggestions(text: string, caret: number): Promise<Suggestion[]> {
    if (/^\/[^\s/]*$/.test(text)) {
      if (!this.commands || Date.now() - this.commands.at > COMMANDS_TTL_MS) {
        this.commands = { at: Date.now(), list: await this.chat.commands() };
      }
      return matchCommands(this.commands.list, text).map((command) => ({
        label: `/${command.name}${command.argumentHint ? ` ${command.argumentHint}` : ""}`,
        description: command.description,
        icon: "symbol-keyword",
        start: 0,
        end: text.length,
        insert: `/${command.name} `,
      }));
    }
    const mention = mentionAt(text, caret);
    if (!mention) {
      return [];
    }
    const files = await this.files.list();
    if (this.paths?.files !== files) {
      this.paths = { files, paths: withDirectories(files) };
    }
    return matchPaths(this.paths.paths, mention.query).map((path) => {
      const { start, end, text: insert } = completeMention(text, mention, path);
      const directory = path.endsWith("/");
      const trimmed = directory ? path.slice(0, -1) : path;
      const slash = trimmed.lastIndexOf("/");
      return {
        label: trimmed.slice(slash + 1) + (directory ? "/" : ""),
        description: slash >= 0 ? trimmed.slice(0, slash) : undefined,
        icon: directory ? "folder" : "file",
        start,
        end,
        insert,
      };
    });
  }

  private async receive(message: Message): Promise<void> {
    switch (message.type) {
      case "ready":
        this.render();
        return;
      case "prompt":
        // The server tells the model what the editor shows (file, cursor, selection) itself.
        // Pasted images travel as context items; the server refuses them for a model that
        // takes none, and the turn says so.
        await this.chat.prompt(
          message.text.trim() === "" ? "What is in this image?" : message.text,
          (message.images ?? []).map((image) => ({ mimeType: image.mimeType, data: image.data })),
        );
        return;
      case "imageTooLarge":
        void vscode.window.showWarningMessage(
          `Tandem: that image is ${Math.round(message.bytes / 1024 / 1024)} MB; paste one of at most 20 MB.`,
        );
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
        const items = await this.suggestions(message.text, message.caret ?? message.text.length);
        await this.view?.webview.postMessage({ type: "suggestions", text: message.text, caret: message.caret, items });
        return;
      }
      case "attach": {
        const insertion = await pickAttachment(() => this.files.list());
        if (insertion) {
          const result = insertAtCaret(message.text, message.caret, insertion.text, insertion.block);
          await this.view?.webview.postMessage({ type: "insert", base: message.text, ...result, insertion: insertion.text });
          this.view?.show(false);
        }
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

/** What the attach menu puts in the prompt: a mention (inline) or a block of lines. */
interface Insertion {
  text: string;
  block: boolean;
}

/**
 * The attach menu: File… (a workspace file, as `@path`), Current selection (a mention of its
 * file and the selected lines, fenced), Problems (the active file's diagnostics). `undefined`
 * when the user dismissed it or there was nothing to attach (then a message says why).
 */
async function pickAttachment(files: () => Promise<string[]>): Promise<Insertion | undefined> {
  // The editor the user was in (the chat has the focus now); not an output or a diff's side.
  const editor = [vscode.window.activeTextEditor, ...vscode.window.visibleTextEditors].find(
    (candidate) => candidate && ["file", "untitled", "vscode-remote"].includes(candidate.document.uri.scheme),
  );
  const document = editor?.document;
  const shown = document ? displayPath(document.uri) : undefined;
  const selection = editor && !editor.selection.isEmpty ? editor.selection : undefined;
  const problems = document ? vscode.languages.getDiagnostics(document.uri) : [];
  type Item = vscode.QuickPickItem & { choice: "file" | "selection" | "problems" };
  const items: Item[] = [
    { choice: "file", label: "$(file) File…", description: "a workspace file, as @path" },
    {
      choice: "selection",
      label: "$(selection) Current selection",
      description: selection && shown ? `${shown.path}:${lineRange(selection).join("-")}` : "nothing is selected in an editor",
    },
    {
      choice: "problems",
      label: "$(warning) Problems",
      description: shown ? `${problems.length === 0 ? "none" : problems.length} in ${shown.path}` : "no file is open in an editor",
    },
  ];
  const picked = await vscode.window.showQuickPick(items, { title: "Tandem: attach to the prompt", placeHolder: "What to attach" });
  switch (picked?.choice) {
    case undefined:
      return undefined;
    case "file": {
      type FileItem = vscode.QuickPickItem & { path: string };
      const choices: FileItem[] = (await files()).map((path) => {
        const slash = path.lastIndexOf("/");
        return { label: path.slice(slash + 1), description: slash >= 0 ? path.slice(0, slash) : undefined, path };
      });
      if (choices.length === 0) {
        void vscode.window.showInformationMessage("Tandem: the workspace has no files to attach (open a folder first).");
        return undefined;
      }
      const file = await vscode.window.showQuickPick(choices, {
        title: "Tandem: attach a file",
        placeHolder: "A workspace file; the prompt gets @path and the model its text",
        matchOnDescription: true,
      });
      return file && { text: mentionOf(file.path), block: false };
    }
    case "selection": {
      if (!document || !selection || !shown) {
        void vscode.window.showInformationMessage("Tandem: select some text in an editor first; nothing was attached.");
        return undefined;
      }
      const [start, end] = lineRange(selection);
      const range = new vscode.Range(selection.start, selection.end);
      const text = selectionText(shown.path, document.languageId, start, end, document.getText(range), shown.mentionable);
      return { text, block: true };
    }
    case "problems": {
      if (!document || !shown) {
        void vscode.window.showInformationMessage("Tandem: open a file in an editor first; its problems are what gets attached.");
        return undefined;
      }
      const text = problemsText(
        shown.path,
        problems.map((problem) => ({
          line: problem.range.start.line + 1,
          column: problem.range.start.character + 1,
          severity: problem.severity,
          message: problem.message,
          source: problem.source,
        })),
        20,
        shown.mentionable,
      );
      if (!text) {
        void vscode.window.showInformationMessage(`Tandem: VS Code reports no problems in ${shown.path}; nothing was attached.`);
        return undefined;
      }
      return { text, block: true };
    }
  }
}

/**
 * How the attach menu names a document: as the server resolves a mention (composer.ts
 * `mentionPath`), or, outside the workspace folders (or unsaved), as VS Code shows it, without
 * a mention, which the server would not attach.
 */
function displayPath(uri: vscode.Uri): { path: string; mentionable: boolean } {
  const roots = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
  const path = uri.scheme === "file" || uri.scheme === "vscode-remote" ? mentionPath(roots, uri.fsPath) : undefined;
  return path !== undefined ? { path, mentionable: true } : { path: vscode.workspace.asRelativePath(uri), mentionable: false };
}

/** A selection's 1-based first and last lines; a selection that ends at a line's start leaves it out. */
function lineRange(selection: vscode.Selection): [number, number] {
  const { start, end } = selection;
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  return [start.line + 1, last + 1];
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
