/**
 * Starting `tandem lsp`, with the binary binary.ts chose and checked: the language client with
 * what Tandem needs from it — the `experimental.tandem` capabilities, the user's settings as
 * trusted `initializationOptions`, the workspace's as the answer to `workspace/configuration` —
 * and one clear message (never a stack of them) when the server cannot be had.
 */

import { createInterface } from "node:readline";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  RevealOutputChannelOn,
  ServerOptions,
  StaticFeature,
} from "vscode-languageclient/node";
import { INSTALL_URL } from "./binary";
import { type LogLevel, parseLogLine } from "./log";
import { projectSettings, userSettings } from "./settings";

/**
 * The one message a user sees when the server cannot be had: what is wrong, then the way out
 * (`fix`), with buttons for the setting, the install instructions and the log.
 */
export async function reportUnavailable(problem: string, fix: string, output: vscode.LogOutputChannel): Promise<void> {
  output.appendLine(`Tandem cannot start: ${problem} ${fix}`);
  const choice = await vscode.window.showErrorMessage(
    `Tandem cannot start: ${problem} ${fix}`,
    "Open Settings",
    "How to Install",
    "Show Log",
  );
  if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "tandem.path");
  } else if (choice === "How to Install") {
    await vscode.env.openExternal(vscode.Uri.parse(INSTALL_URL));
  } else if (choice === "Show Log") {
    output.show();
  }
}

/**
 * Declares `experimental.tandem`: this client handles `tandem/event`, answers approvals, saves
 * the documents `tandem/saveDocuments` lists (save.ts), and forwards VS Code's diagnostics with
 * `tandem/didChangeDiagnostics` (diagnostics.ts).
 */
const tandemCapabilities: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.experimental = {
      ...(capabilities.experimental ?? {}),
      tandem: { events: true, requestApproval: true, saveDocuments: true, diagnostics: true },
    };
  },
  initialize() {},
  getState() {
    return { kind: "static" };
  },
  clear() {},
};

/** Restarts after a crash stay quiet; past this many in `CRASH_WINDOW_MS` the user is told. */
const MAX_QUIET_RESTARTS = 3;
const CRASH_WINDOW_MS = 3 * 60_000;

export function createClient(
  path: string,
  output: vscode.LogOutputChannel,
  middleware: Middleware,
  onGaveUp: (message: string) => void,
): LanguageClient {
  // The server logs to standard error, which the client shows in the Tandem output, each line at
  // its own level (log.ts).
  const serverOptions: ServerOptions = {
    run: { command: path, args: ["--log-file", "-", "lsp"] },
    debug: { command: path, args: ["--log-file", "-", "--log-level", "debug", "lsp"] },
  };
  const crashes: number[] = [];
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    outputChannel: output,
    stdioOptions: {
      stdout: (input, channel) => {
        // Only LSP messages go to standard output; the client reads them from its own stream.
        createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (line) => channel.info(line));
      },
      stderr: (input, channel) => {
        let level: LogLevel = "info";
        createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (line) => {
          const parsed = parseLogLine(line, level);
          level = parsed.level;
          channel[level](parsed.text);
        });
      },
    },
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: () => ({ settings: userSettings() }),
    initializationFailedHandler: (error) => {
      onGaveUp(`the server failed to initialize: ${String(error?.message ?? error)}`);
      return false;
    },
    errorHandler: {
      error: (error, _message, count) => {
        output.appendLine(`Tandem: connection error: ${error.message}`);
        return { action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true };
      },
      closed: () => {
        const now = Date.now();
        crashes.push(now);
        while (crashes.length > 0 && now - crashes[0] > CRASH_WINDOW_MS) {
          crashes.shift();
        }
        if (crashes.length <= MAX_QUIET_RESTARTS) {
          output.appendLine("Tandem: the server stopped; restarting it.");
          return { action: CloseAction.Restart, handled: true };
        }
        onGaveUp(`the server stopped ${crashes.length} times in three minutes (see the log).`);
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
    middleware,
  };
  const client = new LanguageClient("tandem", "Tandem", serverOptions, clientOptions);
  client.registerFeature(tandemCapabilities);
  return client;
}

/**
 * `workspace/configuration` for the `tandem` section gets only what the workspace sets: the
 * user's own settings went in `initializationOptions` (and `tandem/didChangeUserSettings`),
 * where the server trusts them; a cloned repository's `.vscode/settings.json` must not be.
 */
export const configurationMiddleware: Middleware["workspace"] = {
  configuration: async (params, token, next) => {
    const answers = await next(params, token);
    if (!Array.isArray(answers)) {
      return answers;
    }
    return params.items.map((item, index) =>
      item.section === "tandem" ? projectSettings(item.scopeUri) : answers[index],
    );
  },
};
