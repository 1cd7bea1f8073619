/**
 * The server's settings as VS Code holds them: every `tandem.<key>` the extension contributes
 * (generated from the server's JSON Schema, see scripts/sync-settings.mjs) except the ones that
 * are the extension's own. Only values someone set are sent, never VS Code's type defaults, and
 * they are split by who set them: the user (trusted, like the user's settings file) or the
 * workspace (read by the server like the project's `.tandem/settings.json`).
 */

import * as vscode from "vscode";

/** Keys under `tandem.` that configure the extension, not the server. */
const EXTENSION_KEYS = new Set(["path", "trace.server"]);

/** The server's top-level settings keys, read from the extension's own contribution. */
function serverKeys(): string[] {
  const extension = vscode.extensions.getExtension("tandem.tandem");
  const properties: Record<string, unknown> =
    extension?.packageJSON?.contributes?.configuration?.properties ?? {};
  return Object.keys(properties)
    .filter((name) => name.startsWith("tandem."))
    .map((name) => name.slice("tandem.".length))
    .filter((key) => !EXTENSION_KEYS.has(key) && !key.includes("."));
}

function collect(pick: (inspected: ReturnType<vscode.WorkspaceConfiguration["inspect"]>) => unknown, scope?: vscode.Uri): Record<string, unknown> {
  const configuration = vscode.workspace.getConfiguration("tandem", scope);
  const settings: Record<string, unknown> = {};
  for (const key of serverKeys()) {
    const value = pick(configuration.inspect(key));
    if (value !== undefined) {
      settings[key] = value;
    }
  }
  return settings;
}

/** What the user set in their own settings: sent as trusted settings. */
export function userSettings(): Record<string, unknown> {
  return collect((inspected) => inspected?.globalValue);
}

/** What the workspace (or the folder of `scopeUri`) sets: read like a project's settings file. */
export function projectSettings(scopeUri?: string): Record<string, unknown> {
  const scope = scopeUri ? vscode.Uri.parse(scopeUri) : vscode.workspace.workspaceFolders?.[0]?.uri;
  return collect((inspected) => inspected?.workspaceFolderValue ?? inspected?.workspaceValue, scope);
}
