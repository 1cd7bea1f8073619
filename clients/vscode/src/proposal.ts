/**
 * Inline chat's proposal (`tandem.inlineChat.apply` = `propose`): the server sends one
 * `workspace/applyEdit` whose edits carry a change annotation with `needsConfirmation`. VS Code
 * shows such an edit in the Refactor Preview with the change *unticked*, so its obvious button,
 * Apply, applies nothing. The extension asks itself instead (Apply / Discard, beside a diff) and
 * hands the edit on without the confirmation flag when the user applies it, or answers
 * `applied: false` with `DECLINED` when they do not. Pure: no `vscode` import, unit-tested in Node.
 */

export interface Position {
  line: number;
  character: number;
}

export interface TextEdit {
  range: { start: Position; end: Position };
  newText: string;
  annotationId?: string;
}

interface ChangeAnnotation {
  label: string;
  needsConfirmation?: boolean;
  description?: string;
}

/** The parts of an LSP `WorkspaceEdit` this module reads. */
export interface WorkspaceEditLike {
  documentChanges?: unknown[];
  changeAnnotations?: Record<string, ChangeAnnotation>;
}

/** The `failureReason` of an edit the user declined; the chat recognises it (`declinedMessage`). */
export const DECLINED = "declined by the user";

/** Whether any of the edit's change annotations asks the user to confirm it. */
export function asksConfirmation(edit: WorkspaceEditLike): boolean {
  return Object.values(edit.changeAnnotations ?? {}).some((annotation) => annotation.needsConfirmation === true);
}

/** A copy of `edit` whose annotations (kept: their labels name the undo step) ask nothing. */
export function withoutConfirmation<T extends WorkspaceEditLike>(edit: T): T {
  if (!edit.changeAnnotations) {
    return edit;
  }
  const changeAnnotations = Object.fromEntries(
    Object.entries(edit.changeAnnotations).map(([id, annotation]) => [id, { ...annotation, needsConfirmation: false }]),
  );
  return { ...edit, changeAnnotations };
}

/** The one document the proposal changes: its URI, the version it was made for, its edits. */
export interface ProposedChange {
  uri: string;
  version: number | null;
  edits: TextEdit[];
}

/** The text document edits of `edit` (the server's proposal holds exactly one). */
export function proposedChanges(edit: WorkspaceEditLike): ProposedChange[] {
  const changes: ProposedChange[] = [];
  for (const change of edit.documentChanges ?? []) {
    const value = change as { textDocument?: { uri?: unknown; version?: unknown }; edits?: unknown };
    if (value.textDocument && typeof value.textDocument.uri === "string" && Array.isArray(value.edits)) {
      const version = typeof value.textDocument.version === "number" ? value.textDocument.version : null;
      changes.push({ uri: value.textDocument.uri, version, edits: value.edits as TextEdit[] });
    }
  }
  return changes;
}

/**
 * `text` with `edits` applied. Positions are LSP's (UTF-16 code units, which is what a JS string
 * indexes; lines end at `\n`, `\r\n` or `\r`); a character past a line's end clamps to it, a line
 * past the end to the end. The edits do not overlap and refer to the original text.
 */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "\n" || (char === "\r" && text[i + 1] !== "\n")) {
      lineStarts.push(i + 1);
    }
  }
  const offset = ({ line, character }: Position): number => {
    if (line >= lineStarts.length) {
      return text.length;
    }
    const start = lineStarts[line];
    let end = line + 1 < lineStarts.length ? lineStarts[line + 1] : text.length;
    // The line's own text excludes its break.
    while (end > start && (text[end - 1] === "\n" || text[end - 1] === "\r")) {
      end--;
    }
    return Math.min(start + character, end);
  };
  const sorted = edits
    .map((edit) => ({ start: offset(edit.range.start), end: offset(edit.range.end), newText: edit.newText }))
    .sort((a, b) => b.start - a.start || b.end - a.end);
  let result = text;
  for (const edit of sorted) {
    result = result.slice(0, edit.start) + edit.newText + result.slice(edit.end);
  }
  return result;
}

/**
 * The chat's words for a turn-end message about a declined proposal, or `undefined` when the
 * message is about something else ("the proposed inline edit was not applied (the editor's
 * reason): declined…", or from older servers "the inline edit was not applied (…); the
 * document may have changed…").
 */
export function declinedMessage(message: string | undefined): string | undefined {
  if (message?.includes("inline edit was not applied") && message.includes(`(${DECLINED})`)) {
    return "You discarded the proposed inline edit; nothing was changed.";
  }
  return undefined;
}
