/**
 * Hunks of the agent's edits for per-hunk review: the runs of lines where a document differs
 * from its baseline (the text before the agent touched it), and the two ways to settle one —
 * revert it in the document, or accept it into the baseline so it no longer shows — plus the note
 * that tells the agent which of its changes the user rejected. Pure: no `vscode` import, no I/O.
 *
 * Hunks are positions in two specific texts. Reverting or accepting one changes a text, so a
 * caller that settles several must recompute the hunks after each one (settling from the last
 * hunk to the first would also work, but recomputing is what keeps the callers simple and right).
 */

import { diffArrays } from "diff";

/**
 * One run of changed lines. Indexes are 0-based line indexes; every line keeps its own line ending
 * ("\n" or "\r\n") so that putting lines back restores the text byte for byte, and only a text's
 * last line may lack one.
 */
export interface Hunk {
  /** Where the run starts in the baseline; for a pure insertion, where the new lines go. */
  oldStart: number;
  oldLines: string[];
  /** Where the run starts in the current text; for a pure deletion, where the lines were. */
  newStart: number;
  newLines: string[];
}

/** The text's lines, each with its line ending; "" has no lines. */
export function splitLines(text: string): string[] {
  // Splitting after "\n" keeps "\r\n" whole; a lone "\r" is not a line break in source files.
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** Where `current` differs from `baseline`, as runs of changed lines in document order. */
export function computeHunks(baseline: string, current: string): Hunk[] {
  const hunks: Hunk[] = [];
  let open: Hunk | undefined;
  let oldIndex = 0;
  let newIndex = 0;
  for (const change of diffArrays(splitLines(baseline), splitLines(current))) {
    if (!change.added && !change.removed) {
      open = undefined;
      oldIndex += change.count;
      newIndex += change.count;
      continue;
    }
    if (!open) {
      open = { oldStart: oldIndex, oldLines: [], newStart: newIndex, newLines: [] };
      hunks.push(open);
    }
    if (change.removed) {
      open.oldLines.push(...change.value);
      oldIndex += change.count;
    } else {
      open.newLines.push(...change.value);
      newIndex += change.count;
    }
  }
  return hunks;
}

/**
 * `current` with the hunk's lines put back to the baseline's. Throws when `current` no longer
 * holds the hunk's lines where the hunk says (a stale hunk), rather than corrupting the text.
 */
export function revertHunk(current: string, hunk: Hunk): string {
  return replaceLines(current, hunk.newStart, hunk.newLines, hunk.oldLines);
}

/**
 * `baseline` with the hunk's lines taken from the current text, so the hunk no longer shows.
 * Throws on a stale hunk, like `revertHunk`.
 */
export function acceptHunk(baseline: string, hunk: Hunk): string {
  return replaceLines(baseline, hunk.oldStart, hunk.oldLines, hunk.newLines);
}

function replaceLines(text: string, start: number, expected: string[], replacement: string[]): string {
  const lines = splitLines(text);
  const found = lines.slice(start, start + expected.length);
  if (start > lines.length || found.length !== expected.length || found.some((line, i) => line !== expected[i])) {
    throw new Error("the text changed since the hunk was computed");
  }
  lines.splice(start, expected.length, ...replacement);
  return lines.join("");
}

/** Where the hunk is in the current text, 1-based: "line 4", "lines 4-6", "deleted after line 3". */
export function hunkHeader(hunk: Hunk): string {
  const first = hunk.newStart + 1;
  const count = hunk.newLines.length;
  if (count === 0) {
    return hunk.newStart === 0 ? "deleted at the start of the file" : `deleted after line ${hunk.newStart}`;
  }
  return count === 1 ? `line ${first}` : `lines ${first}-${first + count - 1}`;
}

/**
 * The note sent to the agent with the next prompt, so it knows which of its changes are gone and
 * does not build on them (or make them again unasked). Plain text; the same input gives the same
 * note.
 */
export function describeRejections(rejections: { path: string; hunk: Hunk }[]): string {
  return rejections
    .map(({ path, hunk }) => {
      const what = hunk.newLines.length > 0
        ? `your change to ${hunkHeader(hunk)}`
        : `your deletion ${hunk.newStart === 0 ? "at the start of the file" : `after line ${hunk.newStart}`}`;
      const parts = [`In ${path} the user rejected ${what}; it was reverted to:`];
      parts.push(hunk.oldLines.length > 0 ? fenced(hunk.oldLines) : "(the lines were removed)");
      if (hunk.newLines.length > 0) {
        parts.push("The text you had written there, now gone:", fenced(hunk.newLines));
      }
      return parts.join("\n");
    })
    .join("\n\n");
}

/** The lines in a code fence longer than any run of backticks in them, so none can close it. */
function fenced(lines: string[]): string {
  const body = lines.join("").replace(/\r\n/g, "\n").replace(/\n$/, "");
  const longestRun = Math.max(0, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longestRun + 1));
  return `${fence}\n${body}\n${fence}`;
}
