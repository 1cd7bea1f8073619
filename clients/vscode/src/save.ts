/**
 * Answers `tandem/saveDocuments`: before the agent runs a shell command, a search or an MCP
 * tool, the server lists the open documents the agent changed that are not saved, so that what
 * runs reads the agent's changes rather than the old files on disk. Each listed document that is
 * open is saved as it is (the whole document, the user's own typing in it included) with VS
 * Code's ordinary save, so format-on-save, `didSave` and other extensions' save hooks run. The
 * answer lists the documents whose file now holds the document: those saved now and those that
 * were not dirty. Nothing throws: a document that cannot be saved is left out of the answer (the
 * server then tells the model its command read the file without the change) and said in the log.
 *
 * No `vscode` import: the documents and the URI parser are passed in (`vscode.workspace.
 * textDocuments`, `vscode.Uri.parse`), so the unit tests run it under plain Node.
 */

import type { SaveDocumentsParams, SaveDocumentsResult } from "./protocol";

/** What the handler needs of a `vscode.Uri`. */
export interface UriLike {
  readonly scheme: string;
  readonly fsPath: string;
  toString(): string;
}

/** What the handler needs of a `vscode.TextDocument`. */
export interface SavableDocument {
  readonly uri: UriLike;
  readonly isDirty: boolean;
  readonly isUntitled: boolean;
  save(): PromiseLike<boolean>;
}

/**
 * Whether `document` is the one `uri` names. The server's URIs are not always spelled as VS Code
 * spells them (`%3A` or `:` in a Windows drive, the case of percent escapes), so files compare
 * by path, other schemes by their normalised string.
 */
function isDocument(document: SavableDocument, uri: UriLike): boolean {
  if (document.uri.scheme !== uri.scheme) {
    return false;
  }
  return uri.scheme === "file" ? document.uri.fsPath === uri.fsPath : document.uri.toString() === uri.toString();
}

/** Saves `uri`'s open document; returns whether its file now holds it, logging why not. */
async function saveOne(
  raw: string,
  documents: readonly SavableDocument[],
  parse: (uri: string) => UriLike,
  log: (line: string) => void,
): Promise<boolean> {
  try {
    const uri = parse(raw);
    const document = documents.find((candidate) => isDocument(candidate, uri));
    if (!document) {
      log(`Tandem: not saving ${raw} before the agent's command: it is not open.`);
      return false;
    }
    if (!document.isDirty) {
      return true;
    }
    if (document.isUntitled) {
      // Saving an untitled document opens a Save As dialog, which the agent's turn would wait on.
      log(`Tandem: not saving ${raw} before the agent's command: it has never been saved.`);
      return false;
    }
    // `save()` answers false when it failed (the file changed on disk, a read-only file: VS Code
    // tells the user), and also when the document was saved meanwhile: the flag decides.
    const saved = (await document.save()) || !document.isDirty;
    if (!saved) {
      log(`Tandem: could not save ${raw}, so the agent's command reads it without the unsaved changes.`);
    }
    return saved;
  } catch (error) {
    log(`Tandem: could not save ${raw} before the agent's command: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}

/** The `tandem/saveDocuments` handler; the URIs it answers are spelled as the server sent them. */
export async function saveDocuments(
  params: SaveDocumentsParams | null | undefined,
  documents: readonly SavableDocument[],
  parse: (uri: string) => UriLike,
  log: (line: string) => void,
): Promise<SaveDocumentsResult> {
  const uris = Array.isArray(params?.uris) ? params.uris.filter((uri): uri is string => typeof uri === "string") : [];
  const saved: string[] = [];
  // One at a time: a failed save may show VS Code's message about it; several at once would
  // stack them.
  for (const uri of uris) {
    if (await saveOne(uri, documents, parse, log)) {
      saved.push(uri);
    }
  }
  return { saved };
}
