/**
 * The workspace's files as `@` mentions name them, for the composer's completion and the attach
 * menu's File… picker: `vscode.workspace.findFiles` over every workspace folder, without what
 * `files.exclude` and `search.exclude` hide, at most `MAX_FILES`. The list is kept and loaded
 * again only after a file was created or deleted (a FileSystemWatcher says so), a folder or an
 * exclude setting changed, and never more often than every `MIN_RELOAD_MS`, so that typing after
 * an `@` costs no search. Paths are what the server resolves (composer.ts `mentionPath`).
 */

import * as vscode from "vscode";
import { excludeGlob, mentionPath } from "./composer";

/** Files listed at most (all folders together): a huge tree must not stall the composer. */
const MAX_FILES = 5000;

/** A stale list is reloaded at most this often while files keep changing (a build writing). */
const MIN_RELOAD_MS = 3000;

export class WorkspaceFiles implements vscode.Disposable {
  private files: string[] | undefined;
  private loading: Promise<string[]> | undefined;
  private stale = true;
  private loadedAt = 0;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor() {
    const watcher = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
    const invalidate = () => {
      this.stale = true;
    };
    this.subscriptions.push(
      watcher,
      watcher.onDidCreate(invalidate),
      watcher.onDidDelete(invalidate),
      vscode.workspace.onDidChangeWorkspaceFolders(invalidate),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("files.exclude") || event.affectsConfiguration("search.exclude")) {
          invalidate();
        }
      }),
    );
  }

  dispose(): void {
    this.subscriptions.forEach((subscription) => subscription.dispose());
  }

  /** The mention paths of the workspace's files, sorted. */
  async list(): Promise<string[]> {
    const fresh = !this.stale || Date.now() - this.loadedAt < MIN_RELOAD_MS;
    if (this.files && fresh) {
      return this.files;
    }
    if (!this.loading) {
      this.stale = false;
      this.loading = this.load().finally(() => {
        this.loading = undefined;
      });
    }
    const files = await this.loading;
    this.files = files;
    this.loadedAt = Date.now();
    return files;
  }

  private async load(): Promise<string[]> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const roots = folders.map((folder) => folder.uri.fsPath);
    const found = new Set<string>();
    for (const folder of folders) {
      const left = MAX_FILES - found.size;
      if (left <= 0) {
        break;
      }
      const files = vscode.workspace.getConfiguration("files", folder.uri).get<Record<string, unknown>>("exclude");
      const search = vscode.workspace.getConfiguration("search", folder.uri).get<Record<string, unknown>>("exclude");
      const exclude = excludeGlob(files, search);
      const uris = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, "**/*"), exclude ?? null, left);
      for (const uri of uris) {
        const path = mentionPath(roots, uri.fsPath);
        if (path !== undefined) {
          found.add(path);
        }
      }
    }
    return [...found].sort();
  }
}
