/**
 * Starting `tandem lsp`: finding the binary (`tandem.path`, else PATH), checking that it runs,
 * and the language client with what Tandem needs from it — the `experimental.tandem`
 * capabilities, the user's settings as trusted `initializationOptions`, the workspace's as the
 * answer to `workspace/configuration`, and one clear message (never a stack of them) when the
 * server cannot be had.
 */

import { execFile } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
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
import { type LogLevel, parseLogLine } from "./log";
import { projectSettings, userSettings } from "./settings";

/** Where the binary was looked for, and what was found. */
export type Resolved = { ok: true; path: string } | { ok: false; problem: string };

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) {
      return false;
    }
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `tandem.path` when set (`~` expanded), else the first `tandem` on PATH. */
export function resolveServer(configured: string | undefined, path = process.env.PATH ?? ""): Resolved {
  const setting = configured?.trim();
  if (setting) {
    const expanded = setting.startsWith("~/") ? join(homedir(), setting.slice(2)) : setting;
    if (!isAbsolute(expanded)) {
      return { ok: false, problem: `"tandem.path" must be an absolute path, not "${setting}".` };
    }
    if (!isExecutableFile(expanded)) {
      return {
        ok: false,
        problem: `the Tandem binary "${expanded}" set in "tandem.path" was not found or is not executable.`,
      };
    }
    return { ok: true, path: expanded };
  }
  for (const dir of path.split(delimiter)) {
    if (dir && isExecutableFile(join(dir, "tandem"))) {
      return { ok: true, path: join(dir, "tandem") };
    }
  }
  return { ok: false, problem: `the \`tandem\` binary was not found on PATH and "tandem.path" is not set.` };
}

/** Runs `tandem --version`: a binary that is not Tandem (or cannot run here) fails now, once. */
export function checkServer(path: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(path, ["--version"], { timeout: 10_000 }, (error, stdout) => {
      if (error) {
        resolve(`"${path}" (from "tandem.path" or PATH) did not run: ${error.message.split("\n")[0]}`);
      } else if (!stdout.startsWith("tandem ")) {
        resolve(`"${path}" (from "tandem.path" or PATH) is not Tandem: \`--version\` printed "${stdout.trim()}".`);
      } else {
        resolve(undefined);
      }
    });
  });
}

const FIX =
  'Install Tandem (`cargo install --path server/tandem` in its repository) and set "tandem.path" ' +
  "to the binary's absolute path, then run \"Tandem: Restart Server\".";

/** The one message a user sees when the server cannot be had, with the way out. */
export async function reportUnavailable(problem: string, output: vscode.LogOutputChannel): Promise<void> {
  output.appendLine(`Tandem cannot start: ${problem}`);
  const choice = await vscode.window.showErrorMessage(
    `Tandem cannot start: ${problem} ${FIX}`,
    "Open Settings",
    "Show Log",
  );
  if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "tandem.path");
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
