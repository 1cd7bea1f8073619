/**
 * The extension's entry point: starts `tandem lsp` (server.ts), wires the chat (chat.ts,
 * chatView.ts), the review of the agent's edits (review.ts), the forwarding of VS Code's
 * diagnostics (diagnostics.ts), the status bar item, the palette commands, the editor's focus,
 * and the middleware that gives the server's code-action commands what only the editor can
 * supply (an instruction typed by the user, the chat's session).
 */

import { homedir } from "node:os";
import * as vscode from "vscode";
import { State, type LanguageClient, type Middleware } from "vscode-languageclient/node";
import { Chat } from "./chat";
import { CHAT_VIEW, ChatView } from "./chatView";
import { forwardDiagnostics } from "./diagnostics";
import { DIFF_SCHEME, DiffDocuments } from "./diffs";
import { applyTextEdits, asksConfirmation, DECLINED, proposedChanges, withoutConfirmation } from "./proposal";
import type { ApprovalParams, ContextItem, EventParams, SaveDocumentsParams, TurnStarted } from "./protocol";
import { contextLabel } from "./render";
import { Review } from "./review";
import { saveDocuments } from "./save";
import { checkServer, describeSource, resolveServer } from "./binary";
import { configurationMiddleware, createClient, reportUnavailable } from "./server";
import { userSettings } from "./settings";

/** How long the server may take to answer `initialize` before the chat says it has not. */
const INITIALIZE_TIMEOUT_MS = 10_000;

/** Server commands (code actions) that start a turn: they go to the chat's session. */
const TURN_COMMANDS = new Set([
  "tandem.ask",
  "tandem.explain",
  "tandem.writeTests",
  "tandem.document",
  "tandem.fixDiagnostic",
  "tandem.runInstruction",
  "tandem.inlineChat",
  "tandem.compress",
  "tandem.restore",
]);

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Tandem", { log: true });
  const report = (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    output.appendLine(`Tandem: ${message}`);
    void vscode.window.showErrorMessage(`Tandem: ${message}`);
  };
  const chat = new Chat(() => client);
  const diffs = new DiffDocuments();
  const view = new ChatView(context.extensionUri, chat, diffs, report);
  const review = new Review(chat, diffs);
  const status = vscode.window.createStatusBarItem("tandem.status", vscode.StatusBarAlignment.Right, 100);
  status.name = "Tandem";
  context.subscriptions.push(
    output,
    chat,
    diffs,
    view,
    review,
    status,
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, diffs),
    vscode.window.registerWebviewViewProvider(CHAT_VIEW, view, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.languages.registerCodeLensProvider({ scheme: "file" }, review),
    vscode.languages.registerCodeLensProvider({ scheme: "untitled" }, review),
  );

  const updateStatus = () => {
    const running = chat.running;
    const percent = contextLabel(chat.view()).match(/(\d+)%/)?.[1];
    status.text = `${running ? "$(loading~spin)" : "$(sparkle)"} Tandem${percent ? ` ${percent}%` : ""}`;
    status.tooltip = running
      ? "Tandem is working: click to cancel or open the chat"
      : `Tandem${contextLabel(chat.view()) ? ` — ${contextLabel(chat.view())}` : ""}: click to open the chat`;
    status.command = "tandem.statusMenu";
    status.show();
  };
  context.subscriptions.push(chat.onDidChange(updateStatus));
  // No model to use: said in VS Code's words, with the way to the settings, once per start.
  let toldNotSetUp = false;
  chat.onNotSetUp = (message) => {
    if (toldNotSetUp) {
      return;
    }
    toldNotSetUp = true;
    void vscode.window.showWarningMessage(message, "Open Settings").then((choice) => {
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "tandem.model");
      }
    });
  };
  updateStatus();

  /** Gives the server's code-action commands the instruction and session only the editor has. */
  const middleware: Middleware = {
    workspace: {
      ...configurationMiddleware,
      // Inline chat's proposal: asked here, not in the Refactor Preview (proposal.ts says why).
      handleApplyEdit: async (params, next) => {
        const token = new vscode.CancellationTokenSource().token;
        if (!asksConfirmation(params.edit)) {
          return next(params, token);
        }
        const apply = await confirmProposal(params.label, params.edit, diffs);
        return apply
          ? next({ ...params, edit: withoutConfirmation(params.edit) }, token)
          : { applied: false, failureReason: DECLINED };
      },
    },
    executeCommand: async (command, args, next) => {
      const argument = { ...((args[0] as Record<string, unknown> | undefined) ?? {}) };
      if (command === "tandem.ask" && !argument.instruction) {
        const instruction = await vscode.window.showInputBox({
          title: "Ask Tandem",
          prompt: "What should Tandem do with the selection?",
          ignoreFocusOut: true,
        });
        if (!instruction?.trim()) {
          return undefined;
        }
        argument.instruction = instruction;
      }
      if (TURN_COMMANDS.has(command) && !argument.sessionId) {
        argument.sessionId = await chat.ensureSession();
      }
      const result = await next(command, [argument, ...args.slice(1)]);
      if (TURN_COMMANDS.has(command)) {
        chat.reveal(false);
      }
      return result;
    },
  };

  // VS Code's diagnostics go to the running server as they change; a server that was not
  // running missed some, so each start (a restart after a crash too) gets all of them.
  const diagnostics = forwardDiagnostics(
    {
      diagnostics: (uri) => vscode.languages.getDiagnostics(uri),
      all: () => vscode.languages.getDiagnostics(),
      documents: () => vscode.workspace.textDocuments,
      asUri: (uri) => client?.code2ProtocolConverter.asUri(uri) ?? uri.toString(),
    },
    (listener) => vscode.languages.onDidChangeDiagnostics(listener),
    (params) => {
      if (client?.isRunning()) {
        client
          .sendNotification("tandem/didChangeDiagnostics", params)
          .catch((error: unknown) => output.appendLine(`Tandem: forwarding diagnostics: ${String(error)}`));
      }
    },
  );
  context.subscriptions.push(diagnostics);

  const unavailable = (problem: string, fix = 'See "Tandem: Show Log", then run "Tandem: Restart Server".') => {
    chat.setUnavailable(`Tandem cannot start: ${problem} ${fix}`);
    void reportUnavailable(problem, fix, output);
  };
  const start = async () => {
    chat.setUnavailable(undefined);
    toldNotSetUp = false;
    // The binary: `tandem.path`, else the server a platform build brings, else PATH.
    const environment = {
      configured: vscode.workspace.getConfiguration("tandem").get<string>("path"),
      extensionPath: context.extensionPath,
      version: String(context.extension.packageJSON.version),
      platform: process.platform,
      arch: process.arch,
      path: process.env.PATH ?? "",
      home: homedir(),
    };
    const resolved = resolveServer(environment);
    if (!resolved.ok) {
      unavailable(resolved.problem, resolved.fix);
      return;
    }
    const broken = await checkServer(resolved.path, resolved.source, environment);
    if (broken) {
      unavailable(broken.problem, broken.fix);
      return;
    }
    output.appendLine(`Tandem: starting ${resolved.path} lsp (${describeSource(resolved.source)})`);
    const started = createClient(resolved.path, output, middleware, (problem) => unavailable(problem));
    started.onNotification("tandem/event", (params: EventParams) => {
      chat.handleEvent(params);
      review.handleEvent(params);
    });
    started.onDidChangeState((change) => {
      if (change.newState === State.Running) {
        chat.setUnavailable(undefined);
        chat.serverStarted();
        // Once `start()` is done: `initialized` and the open documents went first.
        started.start().then(
          () => diagnostics.sendAll(),
          () => {},
        );
      }
    });
    started.onRequest("tandem/requestApproval", async (params: ApprovalParams) => ({
      decision: await chat.requestApproval(params),
    }));
    // Before the agent's command, search or MCP tool: its unsaved edits go to disk.
    started.onRequest("tandem/saveDocuments", (params: SaveDocumentsParams) =>
      saveDocuments(params, vscode.workspace.textDocuments, vscode.Uri.parse, (line) => output.appendLine(line)),
    );
    client = started;
    // A server that never answers `initialize` would leave the chat looking ready but dead: say
    // so after a while, and take the notice back if it answers after all.
    const silent = setTimeout(() => {
      if (client === started && !started.isRunning()) {
        const notice =
          `Tandem's server (${resolved.path}) has not answered \`initialize\` after ${INITIALIZE_TIMEOUT_MS / 1000} s, ` +
          `so the chat cannot be used yet. It may still start; if not, see "Tandem: Show Log" and run "Tandem: Restart Server".`;
        output.warn(notice);
        chat.setUnavailable(notice);
      }
    }, INITIALIZE_TIMEOUT_MS);
    try {
      await started.start();
      sendFocus();
    } catch (error) {
      // initializationFailedHandler or the error handler has told the user already.
      output.appendLine(`Tandem: the server did not start: ${String(error)}`);
    } finally {
      clearTimeout(silent);
    }
  };
  const stop = async () => {
    const running = client;
    client = undefined;
    if (running) {
      await running.stop().catch((error: unknown) => output.appendLine(`Tandem: stopping the server: ${String(error)}`));
    }
  };
  context.subscriptions.push({ dispose: () => void stop() });

  /** `tandem/didChangeActiveEditor`: the server tells the model what the user looks at. */
  let focusTimer: NodeJS.Timeout | undefined;
  const sendFocus = () => {
    clearTimeout(focusTimer);
    focusTimer = setTimeout(() => {
      const editor = vscode.window.activeTextEditor;
      if (!client?.isRunning()) {
        return;
      }
      if (editor && !["file", "untitled"].includes(editor.document.uri.scheme)) {
        return; // an output panel or a diff side: the user's focus has not moved off their files
      }
      const selection = editor && {
        start: { line: editor.selection.anchor.line, character: editor.selection.anchor.character },
        end: { line: editor.selection.active.line, character: editor.selection.active.character },
      };
      void client.sendNotification("tandem/didChangeActiveEditor", {
        textDocument: editor ? { uri: editor.document.uri.toString() } : null,
        selection,
      });
    }, 100);
  };
  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(sendFocus),
    vscode.window.onDidChangeTextEditorSelection(sendFocus),
    { dispose: () => clearTimeout(focusTimer) },
  );

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("tandem.path")) {
        await stop();
        await start();
        return;
      }
      if (event.affectsConfiguration("tandem")) {
        toldNotSetUp = false;
      }
      if (event.affectsConfiguration("tandem") && client?.isRunning()) {
        // The user's settings are trusted, so they go their own way; the workspace's are pulled.
        await client.sendNotification("tandem/didChangeUserSettings", { settings: userSettings() });
        await client.sendNotification("workspace/didChangeConfiguration", { settings: null });
      }
    }),
  );

  const serverCommand = async (command: string, argument: Record<string, unknown>) => {
    if (!client?.isRunning()) {
      throw new Error("Tandem's server is not running (see the Tandem output).");
    }
    return client.sendRequest("workspace/executeCommand", { command, arguments: [argument] });
  };
  const guarded =
    <A extends unknown[]>(run: (...args: A) => Promise<unknown> | unknown) =>
    async (...args: A) => {
      try {
        await run(...args);
      } catch (error) {
        report(error);
      }
    };
  const register = (id: string, run: (...args: never[]) => Promise<unknown> | unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, guarded(run)));

  register("tandem.askSelection", async () => {
    const editor = vscode.window.activeTextEditor;
    const instruction = await vscode.window.showInputBox({
      title: "Ask Tandem",
      prompt: editor ? "Ask about, or ask for a change to, the selection or file" : "Ask Tandem",
      ignoreFocusOut: true,
    });
    if (!instruction?.trim()) {
      return;
    }
    const attachments: ContextItem[] = [];
    if (editor && ["file", "untitled"].includes(editor.document.uri.scheme)) {
      const { start, end } = editor.selection;
      attachments.push(
        editor.selection.isEmpty
          ? { uri: editor.document.uri.toString() }
          : { uri: editor.document.uri.toString(), range: { start: { line: start.line, character: start.character }, end: { line: end.line, character: end.character } } },
      );
    }
    await chat.prompt(instruction, attachments);
  });
  register("tandem.inlineChatSelection", async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("Tandem: inline chat works on a selection in an editor.");
      return;
    }
    const selection = editor.selection.isEmpty ? editor.document.lineAt(editor.selection.active.line).range : editor.selection;
    const instruction = await vscode.window.showInputBox({
      title: "Tandem inline chat",
      prompt: `What should Tandem change in lines ${selection.start.line + 1}-${selection.end.line + 1}?`,
      ignoreFocusOut: true,
    });
    if (!instruction?.trim() || !client?.isRunning()) {
      return;
    }
    const sessionId = await chat.ensureSession();
    await client.sendRequest<TurnStarted>("tandem/inlineChat", {
      uri: editor.document.uri.toString(),
      range: {
        start: { line: selection.start.line, character: selection.start.character },
        end: { line: selection.end.line, character: selection.end.character },
      },
      instruction,
      sessionId,
    });
  });
  register("tandem.newSession", async () => {
    await chat.newSession();
    chat.reveal(true);
  });
  register("tandem.sessions", () => chat.pickSession());
  register("tandem.cancelTurn", async () => {
    if (!(await chat.cancel())) {
      void vscode.window.showInformationMessage("Tandem: nothing is running.");
    }
  });
  register("tandem.compressSession", async () => {
    await serverCommand("tandem.compress", { sessionId: await chat.ensureSession() });
    chat.reveal(false);
  });
  register("tandem.restoreFiles", async () => {
    const answer = await vscode.window.showWarningMessage(
      "Put back the files the latest turn that changed files (and every turn after it) changed?",
      { modal: true },
      "Restore",
    );
    if (answer === "Restore") {
      await serverCommand("tandem.restore", { sessionId: await chat.ensureSession() });
      chat.reveal(false);
    }
  });
  register("tandem.openTranscript", () => serverCommand("tandem.showTranscript", chat.sessionId ? { sessionId: chat.sessionId } : {}));
  register("tandem.showLog", () => output.show());
  register("tandem.restartServer", async () => {
    await stop();
    await start();
  });
  register("tandem.reviewChanges", (uri?: string) => review.show(typeof uri === "string" ? uri : undefined));
  register("tandem.acceptHunk", (ref: Parameters<Review["accept"]>[0]) => review.accept(ref));
  register("tandem.rejectHunk", (ref: Parameters<Review["reject"]>[0]) => review.reject(ref));
  register("tandem.acceptAllChanges", () => review.acceptAll());
  register("tandem.rejectAllChanges", () => review.rejectAll());
  register("tandem.statusMenu", async () => {
    if (!chat.running) {
      chat.reveal(true);
      return;
    }
    const picked = await vscode.window.showQuickPick(["Open the chat", "Cancel the running turn"], { title: "Tandem is working" });
    if (picked === "Open the chat") {
      chat.reveal(true);
    } else if (picked === "Cancel the running turn") {
      await chat.cancel();
    }
  });

  // Not awaited: activation must end at once, or VS Code leaves the chat view blank (it
  // resolves a view only once its extension is active) for as long as the server takes.
  void start();
}

/**
 * Shows the proposal as a diff beside its document and asks *Apply* / *Discard*. Closing the
 * notification discards. The diff's tab closes once the user has chosen.
 */
async function confirmProposal(
  label: string | undefined,
  edit: Parameters<typeof proposedChanges>[0],
  diffs: DiffDocuments,
): Promise<boolean> {
  const opened: vscode.Uri[] = [];
  for (const change of proposedChanges(edit)) {
    const uri = vscode.Uri.parse(change.uri);
    const document = vscode.workspace.textDocuments.find((open) => open.uri.toString() === uri.toString());
    if (!document) {
      continue;
    }
    const before = document.getText();
    const name = vscode.workspace.asRelativePath(uri);
    const left = diffs.put(before, name);
    const right = diffs.put(applyTextEdits(before, change.edits), name);
    opened.push(left);
    // Not a preview tab: that would take the place of the document's own preview tab.
    await vscode.commands.executeCommand("vscode.diff", left, right, `Proposed: ${name} (Tandem)`, {
      preview: false,
      preserveFocus: true,
    });
  }
  const choice = await vscode.window.showInformationMessage(
    `${label ?? "Tandem: inline edit"}: apply the proposed change?`,
    "Apply",
    "Discard",
  );
  const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs);
  const diffTabs = tabs.filter(
    (tab) => tab.input instanceof vscode.TabInputTextDiff && opened.some((uri) => uri.toString() === (tab.input as vscode.TabInputTextDiff).original.toString()),
  );
  if (diffTabs.length > 0) {
    await vscode.window.tabGroups.close(diffTabs).then(undefined, () => false);
  }
  return choice === "Apply";
}

export async function deactivate(): Promise<void> {
  const running = client;
  client = undefined;
  await running?.stop();
}
