/**
 * What the chat's composer offers besides the text box: the model picker's choices (from the
 * `tandem.models` setting; the choice is written to `tandem.model`, which the server reads from
 * the next turn), the completion of `/` commands (from `tandem/commands`), the completion of
 * `@` mentions of workspace files (the list comes from files.ts), and the texts the attach menu
 * inserts (the selection, the active file's problems). Pure: no `vscode` import, unit-tested in
 * Node.
 */

export interface ModelChoice {
  label: string;
  description?: string;
  /** What `tandem.model` becomes: a name, or `undefined` for Tandem's own choice. */
  value: string | undefined;
  picked: boolean;
}

/** The configured models by name, then "Tandem's default"; the current one is `picked`. */
export function modelChoices(models: Record<string, unknown> | undefined, current: string | undefined): ModelChoice[] {
  const choices: ModelChoice[] = Object.entries(models ?? {}).map(([name, config]) => {
    const { provider, model } = (config ?? {}) as { provider?: unknown; model?: unknown };
    const description = [provider, model].filter((part) => typeof part === "string" && part !== "").join(" · ");
    return { label: name, description: description || undefined, value: name, picked: name === current };
  });
  if (current && !choices.some((choice) => choice.value === current)) {
    choices.unshift({ label: current, description: "set in tandem.model", value: current, picked: true });
  }
  choices.push({
    label: "Tandem's default",
    description: "the first configured model, else what the environment's API key allows",
    value: undefined,
    picked: !current,
  });
  return choices;
}

/** The composer's label for the model: its name, or "Default model". */
export function modelLabel(current: string | undefined): string {
  return current?.trim() ? current.trim() : "Default model";
}

export interface CommandInfo {
  name: string;
  description?: string;
  argumentHint?: string;
}

/**
 * The commands a prompt being typed could be completing: the text is a `/` and the start of a
 * name (nothing after it yet); the names that start with it, then those that contain it, at most
 * `limit`. Anything else: none.
 */
export function matchCommands(commands: CommandInfo[], text: string, limit = 8): CommandInfo[] {
  const typed = /^\/([^\s/]*)$/.exec(text);
  if (!typed) {
    return [];
  }
  const word = typed[1].toLowerCase();
  const starts = commands.filter((command) => command.name.toLowerCase().startsWith(word));
  const contains = commands.filter((command) => !command.name.toLowerCase().startsWith(word) && command.name.toLowerCase().includes(word));
  return [...starts, ...contains].slice(0, limit);
}

// ---------------------------------------------------------------------------------------------
// `@` mentions: finding the one being typed, matching workspace paths, writing them back.
// The rules are the server's (server/extensions/src/mentions/mod.rs): an `@` starts a mention at the
// start of the text, after whitespace, or after an opening bracket or quote; `@"…"` quotes a
// path with spaces (on one line); `\@` is a literal `@`.

/** Characters after which an `@` may start a mention (besides whitespace). */
const OPENERS = new Set(["(", "[", "{", "<", '"', "'", "`"]);

/** The `@` mention the caret is in: where it is in the text, and what is typed after the `@`. */
export interface MentionQuery {
  /** Where the `@` is. */
  start: number;
  /** Where the mention ends: the caret, or the end of the word (or quote) the caret is in. */
  end: number;
  /** What is typed between the `@` (and its opening quote) and the caret. */
  query: string;
  /** Typed as `@"…`. */
  quoted: boolean;
}

/** Whether an `@` at `at` in `text` may start a mention. */
function startsMention(text: string, at: number): boolean {
  if (at === 0) {
    return true;
  }
  const before = text[at - 1];
  return /\s/.test(before) || OPENERS.has(before);
}

/**
 * The mention being typed at `caret`: the `@` before the caret that starts a mention, with no
 * whitespace between it and the caret (or, quoted, no closing quote or line break). `undefined`
 * when the caret is not in one (an e-mail address, `\@`, a finished `@"…"`).
 */
export function mentionAt(text: string, caret: number): MentionQuery | undefined {
  const before = text.slice(0, caret);
  // Quoted: `@"` then anything but a quote or a line break, up to the caret.
  const quoted = /@"([^"\n]*)$/.exec(before);
  if (quoted && startsMention(text, quoted.index)) {
    const closing = text.slice(caret).search(/["\n]/);
    const end = closing >= 0 && text[caret + closing] === '"' ? caret + closing + 1 : caret;
    return { start: quoted.index, end, query: quoted[1], quoted: true };
  }
  const plain = /@([^\s@]*)$/.exec(before);
  if (!plain || !startsMention(text, plain.index) || plain[1].startsWith('"')) {
    return undefined;
  }
  const rest = /^\S*/.exec(text.slice(caret))?.[0] ?? "";
  return { start: plain.index, end: caret + rest.length, query: plain[1], quoted: false };
}

/** How a path is written as a mention: `@path`, or `@"path"` when it holds whitespace. */
export function mentionOf(path: string): string {
  return /\s/.test(path) ? `@"${path}"` : `@${path}`;
}

/**
 * The paths a mention may name, for the completion list: the files given, and every directory
 * that holds one (ending in `/`, as `@src/` mentions a directory).
 */
export function withDirectories(files: readonly string[]): string[] {
  const directories = new Set<string>();
  for (const file of files) {
    for (let slash = file.indexOf("/", 1); slash > 0; slash = file.indexOf("/", slash + 1)) {
      directories.add(file.slice(0, slash + 1));
    }
  }
  return [...files, ...directories];
}

/** The last segment of a path (a directory's without its trailing `/`). */
function basename(path: string): string {
  const trimmed = path.endsWith("/") ? path.slice(0, -1) : path;
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

/** Whether the characters of `query` appear in `text` in order. */
function subsequence(query: string, text: string): boolean {
  let at = 0;
  for (const c of text) {
    if (c === query[at]) {
      at++;
      if (at === query.length) {
        return true;
      }
    }
  }
  return at === query.length;
}

/**
 * The paths that match what follows an `@`, best first, at most `limit`: the file name starts
 * with it, then the path does, then the file name contains it, then the path does, then its
 * characters appear in the path in order. Case does not matter; within a rank, shorter paths
 * (then alphabetical order) come first. An empty query lists the shortest paths; a folder's
 * path (`src/`) lists what is in it.
 */
export function matchPaths(paths: readonly string[], query: string, limit = 12): string[] {
  const typed = query.toLowerCase();
  const rank = (path: string): number => {
    const lower = path.toLowerCase();
    const name = basename(lower);
    if (typed === "" || name.startsWith(typed)) {
      return 0;
    }
    if (lower.startsWith(typed)) {
      return 1;
    }
    if (name.includes(typed)) {
      return 2;
    }
    if (lower.includes(typed)) {
      return 3;
    }
    return subsequence(typed, lower) ? 4 : -1;
  };
  return paths
    .map((path) => ({ path, rank: rank(path) }))
    // A folder typed in full (just taken from the list) is not offered again: its files are.
    .filter((entry) => entry.rank >= 0 && !(entry.path.endsWith("/") && entry.path.toLowerCase() === typed))
    .sort((a, b) => a.rank - b.rank || a.path.length - b.path.length || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .slice(0, limit)
    .map((entry) => entry.path);
}

/** A replacement of `text.slice(start, end)` by `text`, and where the caret goes after it. */
export interface Replacement {
  start: number;
  end: number;
  text: string;
}

/**
 * What taking `path` for the mention `mention` (of `text`) does: the typed word becomes the
 * mention of `path` and a space (none when whitespace follows already; none after a directory,
 * so that typing goes on inside it).
 */
export function completeMention(text: string, mention: MentionQuery, path: string): Replacement {
  const written = mentionOf(path);
  const directory = path.endsWith("/") && !written.startsWith('@"');
  const space = directory || /^\s/.test(text.slice(mention.end)) ? "" : " ";
  return { start: mention.start, end: mention.end, text: written + space };
}

/**
 * `insertion` put at `caret` in `text`, returning the new text and caret. An inline insertion
 * (a mention) gets a space before it unless whitespace or an opening bracket is there (else its
 * `@` would not start a mention) and one after unless whitespace follows; a block (a fenced
 * selection, a list of problems) starts on a line of its own and ends with a line break.
 */
export function insertAtCaret(text: string, caret: number, insertion: string, block: boolean): { text: string; caret: number } {
  const at = Math.max(0, Math.min(caret, text.length));
  const before = text.slice(0, at);
  const after = text.slice(at);
  let inserted: string;
  if (block) {
    const lead = before === "" || before.endsWith("\n") ? "" : "\n";
    inserted = `${lead}${insertion.replace(/\n+$/, "")}\n`;
  } else {
    const last = before.slice(-1);
    const lead = before === "" || /\s/.test(last) || OPENERS.has(last) ? "" : " ";
    const trail = /^\s/.test(after) ? "" : " ";
    inserted = `${lead}${insertion}${trail}`;
  }
  return { text: before + inserted + after, caret: at + inserted.length };
}

/**
 * The mention path of `file` (an absolute path) for the server, which resolves relative paths
 * against its first workspace root (the first workspace folder) and accepts absolute paths in
 * any root: relative (with `/`) inside `roots[0]`, absolute inside another root, `undefined`
 * outside them all. `roots` are absolute folder paths, in the workspace's order.
 */
export function mentionPath(roots: readonly string[], file: string): string | undefined {
  const inside = (root: string): string | undefined => {
    const trimmed = root.replace(/[\\/]+$/, "");
    if (file.length > trimmed.length && file.startsWith(trimmed) && /[\\/]/.test(file[trimmed.length])) {
      return file.slice(trimmed.length + 1).replace(/\\/g, "/");
    }
    return undefined;
  };
  if (roots.length === 0) {
    return undefined;
  }
  const relative = inside(roots[0]);
  if (relative !== undefined) {
    return relative;
  }
  return roots.slice(1).some((root) => inside(root) !== undefined) ? file : undefined;
}

/**
 * One glob for `findFiles` that excludes what `files.exclude` and `search.exclude` do (passing
 * an exclude pattern drops VS Code's default of `files.exclude`, so both are given). Only `true`
 * entries count (a `{"when": …}` condition cannot be told to `findFiles`); patterns with braces
 * are expanded, as a `{a,b}` group cannot hold another. `undefined` when nothing is excluded.
 */
export function excludeGlob(...settings: (Record<string, unknown> | undefined)[]): string | undefined {
  const patterns = new Set<string>();
  for (const setting of settings) {
    for (const [pattern, on] of Object.entries(setting ?? {})) {
      if (on === true) {
        expandBraces(pattern).forEach((expanded) => patterns.add(expanded));
      }
    }
  }
  if (patterns.size === 0) {
    return undefined;
  }
  return patterns.size === 1 ? [...patterns][0] : `{${[...patterns].join(",")}}`;
}

/** `a{b,c{d,e}}` as `ab`, `acd`, `ace`: every choice of every brace group. */
export function expandBraces(pattern: string): string[] {
  const open = pattern.indexOf("{");
  if (open < 0) {
    return [pattern];
  }
  let depth = 0;
  const commas: number[] = [];
  for (let at = open; at < pattern.length; at++) {
    const c = pattern[at];
    if (c === "{") {
      depth++;
    } else if (c === "}") {
      depth--;
      if (depth === 0) {
        const bounds = [open, ...commas, at];
        const rest = expandBraces(pattern.slice(at + 1));
        const head = pattern.slice(0, open);
        const choices = bounds.slice(1).flatMap((bound, index) => expandBraces(pattern.slice(bounds[index] + 1, bound)));
        return choices.flatMap((choice) => rest.map((tail) => head + choice + tail));
      }
    } else if (c === "," && depth === 1) {
      commas.push(at);
    }
  }
  // An unclosed brace is literal.
  return [pattern];
}

// ---------------------------------------------------------------------------------------------
// The attach menu's texts: the selection and the problems of the active file.

/** A fence of backticks longer than any run of them in `text`. */
function fenceFor(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  return "`".repeat(Math.max(3, longest + 1));
}

/**
 * The selection as a prompt's context: a mention of its file (mentions carry no line range, so
 * the model gets the whole file and this excerpt), then a fenced block headed by
 * `path:start-end` (1-based lines; `path:line` for one line). `language` is the editor's
 * language id, left out when it is plain text. A file the server cannot attach (outside the
 * workspace, unsaved: not `mentionable`) gets no mention; the excerpt is all there is.
 */
export function selectionText(
  path: string,
  language: string | undefined,
  startLine: number,
  endLine: number,
  text: string,
  mentionable = true,
): string {
  const body = text.replace(/\n+$/, "");
  const fence = fenceFor(body);
  const lines = startLine === endLine ? `${startLine}` : `${startLine}-${endLine}`;
  const info = language && language !== "plaintext" ? language : "";
  const mention = mentionable ? `${mentionOf(path)}\n` : "";
  return `${mention}${path}:${lines}\n${fence}${info}\n${body}\n${fence}`;
}

/** A diagnostic of the active file, as the attach menu lists it. */
export interface Problem {
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  /** VS Code's `DiagnosticSeverity`: 0 error, 1 warning, 2 information, 3 hint. */
  severity: number;
  message: string;
  source?: string;
}

const SEVERITIES = ["error", "warning", "info", "hint"];

/**
 * The problems of the file `path` as a prompt's context: a line naming the file (a mention, so
 * the file goes along), then one line per problem, `path:line:col severity message (source)`,
 * errors first, then by position; at most `limit`, and how many more. `undefined` when there
 * are none. A file that is not `mentionable` (see `selectionText`) is named without the `@`.
 */
export function problemsText(path: string, problems: readonly Problem[], limit = 20, mentionable = true): string | undefined {
  if (problems.length === 0) {
    return undefined;
  }
  const sorted = [...problems].sort((a, b) => a.severity - b.severity || a.line - b.line || a.column - b.column);
  const lines = sorted.slice(0, limit).map((problem) => {
    const severity = SEVERITIES[problem.severity] ?? "problem";
    const message = problem.message.replace(/\s+/g, " ").trim();
    const source = problem.source ? ` (${problem.source})` : "";
    return `${path}:${problem.line}:${problem.column} ${severity} ${message}${source}`;
  });
  const more = sorted.length > limit ? [`… and ${sorted.length - limit} more`] : [];
  const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
  return [`${count} in ${mentionable ? mentionOf(path) : path}:`, ...lines, ...more].join("\n");
}
