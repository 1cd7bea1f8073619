/**
 * The server's log lines in the Tandem output at their own level. `tandem lsp --log-file -`
 * writes tracing's lines to standard error (`2026-05-01T10:00:00.123456Z  WARN tandem_lsp::x:
 * text`); the language client would show every one as `[error]`. Here each line's level is read
 * from it, and its timestamp dropped (the output channel writes its own). A line without a level
 * (the rest of a multi-line message) keeps the level of the line before it; a panic is an error.
 * Pure: no `vscode` import, unit-tested in Node.
 */

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

const LEVELS: Record<string, LogLevel> = {
  TRACE: "trace",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
};

const LINE = /^\d{4}-\d{2}-\d{2}T\S+\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+(.*)$/;

/** Reads lines in order; `previous` is the level a line without one gets. */
export function parseLogLine(line: string, previous: LogLevel = "info"): { level: LogLevel; text: string } {
  const match = LINE.exec(line);
  if (match) {
    return { level: LEVELS[match[1]] ?? previous, text: match[2] };
  }
  if (/^thread '.*' panicked at /.test(line)) {
    return { level: "error", text: line };
  }
  return { level: previous, text: line };
}
