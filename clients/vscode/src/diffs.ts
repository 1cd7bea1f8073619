/**
 * Read-only virtual documents (`tandem-diff:` URIs) holding texts VS Code's diff editor
 * compares: a tool call's file before and after, an approval's proposed change, and the
 * baseline of a file under review. Each document is named after its file, so the diff editor
 * highlights it in the file's language.
 */

import { basename } from "node:path";
import * as vscode from "vscode";

export const DIFF_SCHEME = "tandem-diff";

export class DiffDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private next = 1;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? "";
  }

  /** A document holding `text`, named after `fileName`; `key` reuses (and updates) one. */
  put(text: string, fileName: string, key?: string): vscode.Uri {
    const path = `/${key ?? String(this.next++)}/${basename(fileName)}`;
    this.texts.set(path, text);
    const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path });
    this.changed.fire(uri);
    return uri;
  }

  /** Opens VS Code's diff editor on `before` ↔ `after` (an actual file, or a text). */
  async show(before: string, after: string | vscode.Uri, fileName: string, title: string): Promise<void> {
    const left = this.put(before, fileName);
    const right = typeof after === "string" ? this.put(after, fileName) : after;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
