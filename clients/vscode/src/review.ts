/**
 * Review of the agent's edits. The first time a session's turn changes a file, the file's text
 * before that change becomes its baseline; from then on every hunk between the baseline and the
 * buffer gets CodeLenses (Accept, Reject, Review) and a highlight. Accepting a hunk moves it
 * into the baseline; rejecting one puts the baseline's lines back with a workspace edit (undoable)
 * and tells the agent with the session's next prompt (`tandem/addNote`). "Review" opens VS Code's
 * diff editor on baseline ↔ buffer. The hunk arithmetic is the pure module hunks.ts.
 */

import { basename } from "node:path";
import * as vscode from "vscode";
import type { Chat } from "./chat";
import type { DiffDocuments } from "./diffs";
import { acceptHunk, computeHunks, describeRejections, Hunk, hunkHeader } from "./hunks";
import type { EventParams } from "./protocol";

/** The label the agent sees rejected hunks under. */
const REJECTED = "Changes of yours the user rejected in the editor";

interface Tracked {
  baseline: string;
  sessionId: string;
  /** The path the agent named, for notes and titles. */
  path: string;
}

/** Which hunk a CodeLens was made for: its index, and enough to check it is still that hunk. */
interface HunkRef {
  uri: string;
  index: number;
  newStart: number;
  newText: string;
}

export class Review implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly tracked = new Map<string, Tracked>();
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly chat: Chat,
    private readonly diffs: DiffDocuments,
  ) {
    this.subscriptions.push(
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (this.tracked.has(event.document.uri.toString())) {
          this.refresh();
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
    );
  }

  dispose(): void {
    this.subscriptions.forEach((subscription) => subscription.dispose());
    this.decoration.dispose();
    this.lensesChanged.dispose();
  }

  /** Files under review, for the Review command's picker. */
  files(): { uri: string; path: string }[] {
    return [...this.tracked].map(([uri, { path }]) => ({ uri, path }));
  }

  /** A finished edit of the agent's: its file is reviewed from the text before it. */
  handleEvent(params: EventParams): void {
    const event = params.event;
    if (params.replay || event.type !== "toolCall" || event.status !== "success" || !event.diff) {
      return;
    }
    const uri = vscode.Uri.parse(event.diff.uri).toString();
    if (!this.tracked.has(uri)) {
      this.tracked.set(uri, {
        baseline: event.diff.oldText ?? "",
        sessionId: params.sessionId,
        path: event.diff.path,
      });
    }
    this.refresh();
  }

  private refresh(): void {
    this.lensesChanged.fire();
    this.decorate();
  }

  /** The hunks of an open document under review; a file with none leaves review. */
  private hunks(document: vscode.TextDocument): Hunk[] {
    const key = document.uri.toString();
    const entry = this.tracked.get(key);
    if (!entry) {
      return [];
    }
    const hunks = computeHunks(entry.baseline, document.getText());
    if (hunks.length === 0) {
      this.tracked.delete(key);
    }
    return hunks;
  }

  private decorate(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const ranges = this.hunks(editor.document)
        .filter((hunk) => hunk.newLines.length > 0)
        .map((hunk) => new vscode.Range(hunk.newStart, 0, hunk.newStart + hunk.newLines.length - 1, 0));
      editor.setDecorations(this.decoration, ranges);
    }
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const uri = document.uri.toString();
    return this.hunks(document).flatMap((hunk, index) => {
      const line = Math.min(hunk.newStart, Math.max(0, document.lineCount - 1));
      const range = new vscode.Range(line, 0, line, 0);
      const ref: HunkRef = { uri, index, newStart: hunk.newStart, newText: hunk.newLines.join("") };
      const what = `Tandem's change to ${hunkHeader(hunk)}`;
      return [
        new vscode.CodeLens(range, { title: "Accept", tooltip: `Keep ${what}`, command: "tandem.acceptHunk", arguments: [ref] }),
        new vscode.CodeLens(range, { title: "Reject", tooltip: `Undo ${what}`, command: "tandem.rejectHunk", arguments: [ref] }),
        new vscode.CodeLens(range, { title: "Review", tooltip: "Compare the file with how it was before Tandem's changes", command: "tandem.reviewChanges", arguments: [uri] }),
      ];
    });
  }

  /** The hunk a lens named, if the buffer still has it (it may have moved or changed since). */
  private async find(ref: HunkRef): Promise<{ document: vscode.TextDocument; entry: Tracked; hunk: Hunk } | undefined> {
    const entry = this.tracked.get(ref.uri);
    if (!entry) {
      return undefined;
    }
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(ref.uri));
    const hunks = computeHunks(entry.baseline, document.getText());
    const same = (hunk: Hunk) => hunk.newLines.join("") === ref.newText;
    const hunk =
      hunks.find((candidate) => candidate.newStart === ref.newStart && same(candidate)) ??
      (hunks.filter(same).length === 1 ? hunks.find(same) : undefined);
    if (!hunk) {
      void vscode.window.showWarningMessage("Tandem: that change is no longer in the file as it was; nothing was done.");
      return undefined;
    }
    return { document, entry, hunk };
  }

  async accept(ref: HunkRef): Promise<void> {
    const found = await this.find(ref);
    if (found) {
      found.entry.baseline = acceptHunk(found.entry.baseline, found.hunk);
      this.refresh();
    }
  }

  async reject(ref: HunkRef): Promise<void> {
    const found = await this.find(ref);
    if (!found) {
      return;
    }
    const { document, entry, hunk } = found;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(
      document.uri,
      new vscode.Range(hunk.newStart, 0, hunk.newStart + hunk.newLines.length, 0),
      hunk.oldLines.join(""),
    );
    if (await vscode.workspace.applyEdit(edit)) {
      await this.chat.addNote(entry.sessionId, REJECTED, describeRejections([{ path: entry.path, hunk }]));
    } else {
      void vscode.window.showWarningMessage(`Tandem: the editor refused to revert ${hunkHeader(hunk)} of ${entry.path}.`);
    }
  }

  /** Accepts every hunk of every file under review. */
  acceptAll(): void {
    this.tracked.clear();
    this.refresh();
  }

  /** Puts every file under review back to its baseline. */
  async rejectAll(): Promise<void> {
    for (const [uri, entry] of [...this.tracked]) {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
      const hunks = computeHunks(entry.baseline, document.getText());
      if (hunks.length === 0) {
        continue;
      }
      const edit = new vscode.WorkspaceEdit();
      const end = document.lineAt(document.lineCount - 1).range.end;
      edit.replace(document.uri, new vscode.Range(new vscode.Position(0, 0), end), entry.baseline);
      if (await vscode.workspace.applyEdit(edit)) {
        await this.chat.addNote(entry.sessionId, REJECTED, describeRejections(hunks.map((hunk) => ({ path: entry.path, hunk }))));
      }
    }
  }

  /** Opens the diff editor on a file's baseline ↔ its buffer (picking the file when not given). */
  async show(uri?: string): Promise<void> {
    let target = uri;
    if (!target) {
      const files = this.files();
      if (files.length === 0) {
        void vscode.window.showInformationMessage("Tandem: no changes of the agent's are waiting for review.");
        return;
      }
      target =
        files.length === 1
          ? files[0].uri
          : (await vscode.window.showQuickPick(files.map((file) => ({ label: file.path, uri: file.uri })), { title: "Tandem: review changes" }))?.uri;
    }
    const entry = target && this.tracked.get(target);
    if (!target || !entry) {
      return;
    }
    const left = this.diffs.put(entry.baseline, entry.path, `baseline/${encodeURIComponent(target)}`);
    await vscode.commands.executeCommand("vscode.diff", left, vscode.Uri.parse(target), `${basename(entry.path)}: Tandem's changes`);
  }
}
