/**
 * Unit tests of src/composer.ts: the model picker's choices, the completion of `/` commands and
 * of `@` mentions, and the texts the attach menu inserts (issue 38, item 10).
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  completeMention,
  excludeGlob,
  expandBraces,
  insertAtCaret,
  matchCommands,
  matchPaths,
  mentionAt,
  mentionOf,
  mentionPath,
  modelChoices,
  modelLabel,
  problemsText,
  selectionText,
  withDirectories,
} from "../src/composer";

test("the model picker lists the configured models, the current one picked, and the default", () => {
  const models = { claude: { provider: "anthropic", model: "claude-sonnet-4-5" }, local: { provider: "openai" } };
  const choices = modelChoices(models, "local");
  assert.deepEqual(
    choices.map(({ label, description, value, picked }) => [label, description, value, picked]),
    [
      ["claude", "anthropic · claude-sonnet-4-5", "claude", false],
      ["local", "openai", "local", true],
      ["Tandem's default", choices[2].description, undefined, false],
    ],
  );
  // A `provider:model` set by hand is shown (and picked), not lost.
  assert.deepEqual(modelChoices({}, "gemini:gemini-2.5-flash").map((choice) => [choice.label, choice.picked]), [
    ["gemini:gemini-2.5-flash", true],
    ["Tandem's default", false],
  ]);
  assert.equal(modelChoices(undefined, undefined)[0].picked, true);
  assert.equal(modelLabel(undefined), "Default model");
  assert.equal(modelLabel(" claude "), "claude");
});

test("`/` completion: names that start with what is typed, then those that contain it; none once an argument starts", () => {
  const commands = [{ name: "clear" }, { name: "compress" }, { name: "git:commit" }, { name: "help" }];
  assert.deepEqual(matchCommands(commands, "/").map((c) => c.name), ["clear", "compress", "git:commit", "help"]);
  assert.deepEqual(matchCommands(commands, "/c").map((c) => c.name), ["clear", "compress", "git:commit"]);
  assert.deepEqual(matchCommands(commands, "/COM").map((c) => c.name), ["compress", "git:commit"]);
  assert.deepEqual(matchCommands(commands, "/clear now"), []);
  assert.deepEqual(matchCommands(commands, "clear"), []);
  assert.equal(matchCommands(commands, "/", 2).length, 2);
});

/** `text` with `|` as the caret: the text without it, and the caret's offset. */
function caret(marked: string): [string, number] {
  const at = marked.indexOf("|");
  return [marked.slice(0, at) + marked.slice(at + 1), at];
}

test("`@` starts a mention where the server says: at the start, after whitespace, brackets and quotes", () => {
  const at = (marked: string) => {
    const found = mentionAt(...caret(marked));
    return found && [found.start, found.end, found.query, found.quoted];
  };
  assert.deepEqual(at("@|"), [0, 1, "", false]);
  assert.deepEqual(at("@ca|"), [0, 3, "ca", false]);
  assert.deepEqual(at("explain @src/ma|"), [8, 15, "src/ma", false]);
  assert.deepEqual(at("see (@ca|) now"), [5, 9, "ca", false]);
  for (const opener of ["[", "{", "<", '"', "'", "`", "\n", "\t"]) {
    assert.deepEqual(at(`x ${opener}@ca|`), [3, 6, "ca", false], `after ${JSON.stringify(opener)}`);
  }
  // The whole word the caret is in is what a completion replaces.
  assert.deepEqual(at("@ca|lc.py and more"), [0, 8, "ca", false]);
  // Not mentions: an e-mail address, an escaped `@`, a word already ended by a space.
  assert.equal(at("mail user@exa|"), undefined);
  assert.equal(at("write \\@prop|"), undefined);
  assert.equal(at("@calc.py |"), undefined);
  assert.equal(at("no at sign|"), undefined);
  // Quoted: open until its closing quote, which a completion replaces too.
  assert.deepEqual(at('read @"release no|'), [5, 17, "release no", true]);
  assert.deepEqual(at('read @"release no|tes.md" now'), [5, 24, "release no", true]);
  assert.equal(at('read @"a b.md" |'), undefined);
  assert.equal(at('@"first\nline|'), undefined);
});

test("`@` completion ranks file names that start with the query first, then paths, then contains, then in order", () => {
  const paths = withDirectories(["src/main.rs", "src/lib.rs", "docs/maintainers.md", "Cargo.toml", "tests/domain/mail.rs", "README.md"]);
  assert.deepEqual(paths.slice(6), ["src/", "docs/", "tests/", "tests/domain/"]);
  assert.deepEqual(matchPaths(paths, "ma"), ["src/main.rs", "docs/maintainers.md", "tests/domain/mail.rs", "tests/domain/"]);
  assert.deepEqual(matchPaths(paths, "MAIN"), ["src/main.rs", "docs/maintainers.md", "tests/domain/", "tests/domain/mail.rs"]);
  assert.deepEqual(matchPaths(paths, "src/"), ["src/lib.rs", "src/main.rs"]);
  assert.deepEqual(matchPaths(paths, "src"), ["src/", "src/lib.rs", "src/main.rs"]);
  assert.deepEqual(matchPaths(paths, "src/l"), ["src/lib.rs"]);
  assert.deepEqual(matchPaths(paths, "tdm"), ["tests/domain/", "tests/domain/mail.rs"]);
  assert.deepEqual(matchPaths(paths, "zzz"), []);
  // Nothing typed: the shortest paths, at most `limit`.
  assert.deepEqual(matchPaths(paths, "", 3), ["src/", "docs/", "tests/"]);
});

test("a mention is written quoted when its path has whitespace, and completing replaces the typed word only", () => {
  assert.equal(mentionOf("src/lib.rs"), "@src/lib.rs");
  assert.equal(mentionOf("docs/release notes.md"), '@"docs/release notes.md"');
  const complete = (marked: string, path: string) => {
    const [text, at] = caret(marked);
    const mention = mentionAt(text, at);
    assert.ok(mention, marked);
    const { start, end, text: inserted } = completeMention(text, mention, path);
    return text.slice(0, start) + inserted + text.slice(end);
  };
  assert.equal(complete("explain @ca|", "calc.py"), "explain @calc.py ");
  assert.equal(complete("explain @ca| please", "calc.py"), "explain @calc.py please");
  assert.equal(complete("explain @ca|lc.p and", "calc.py"), "explain @calc.py and");
  assert.equal(complete("@rel|", "docs/release notes.md"), '@"docs/release notes.md" ');
  assert.equal(complete('@"rel|', "docs/release notes.md"), '@"docs/release notes.md" ');
  assert.equal(complete('@"rel|ease" x', "docs/release notes.md"), '@"docs/release notes.md" x');
  // A directory: no space, so that typing goes on inside it.
  assert.equal(complete("@sr|", "src/"), "@src/");
});

test("the server resolves mentions against the first workspace folder; other folders' files are absolute", () => {
  const roots = ["/w/app", "/w/lib/"];
  assert.equal(mentionPath(roots, "/w/app/src/main.rs"), "src/main.rs");
  assert.equal(mentionPath(roots, "/w/lib/util.rs"), "/w/lib/util.rs");
  assert.equal(mentionPath(roots, "/w/application/x.rs"), undefined);
  assert.equal(mentionPath(roots, "/elsewhere/x.rs"), undefined);
  assert.equal(mentionPath([], "/w/app/x.rs"), undefined);
  assert.equal(mentionPath(["C:\\w\\app"], "C:\\w\\app\\src\\main.rs"), "src/main.rs");
});

test("files.exclude and search.exclude become one glob for findFiles, braces expanded", () => {
  assert.deepEqual(expandBraces("**/*.{js,map}"), ["**/*.js", "**/*.map"]);
  assert.deepEqual(expandBraces("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
  assert.deepEqual(expandBraces("a{b"), ["a{b"]);
  assert.equal(
    excludeGlob({ "**/.git": true, "**/*.{o,a}": true, "**/off": false, "**/*.js": { when: "$(basename).ts" } }, { "**/node_modules": true, "**/.git": true }),
    "{**/.git,**/*.o,**/*.a,**/node_modules}",
  );
  assert.equal(excludeGlob({ "**/node_modules": true }), "**/node_modules");
  assert.equal(excludeGlob(undefined, {}), undefined);
});

test("attachments go in at the caret: a mention between spaces, a block on lines of its own", () => {
  const insert = (marked: string, insertion: string, block: boolean) => {
    const result = insertAtCaret(...caret(marked), insertion, block);
    return result.text.slice(0, result.caret) + "|" + result.text.slice(result.caret);
  };
  assert.equal(insert("|", "@a.rs", false), "@a.rs |");
  assert.equal(insert("explain|", "@a.rs", false), "explain @a.rs |");
  assert.equal(insert("explain | now", "@a.rs", false), "explain @a.rs| now");
  assert.equal(insert("see (|)", "@a.rs", false), "see (@a.rs |)");
  assert.equal(insert("|", "block\n", true), "block\n|");
  assert.equal(insert("look at|", "block", true), "look at\nblock\n|");
  assert.equal(insert("look at\n|more", "block", true), "look at\nblock\n|more");
});

test("the selection is a mention of its file and a fenced block headed by path:lines", () => {
  assert.equal(
    selectionText("calc.py", "python", 1, 2, "def add(a, b):\n    return a + b\n"),
    "@calc.py\ncalc.py:1-2\n```python\ndef add(a, b):\n    return a + b\n```",
  );
  // One line; plain text has no language; backticks inside get a longer fence; spaces quote.
  assert.equal(selectionText("my notes.txt", "plaintext", 4, 4, "a ```b``` c"), '@"my notes.txt"\nmy notes.txt:4\n````\na ```b``` c\n````');
  // A file the server cannot attach (outside the workspace, unsaved): the excerpt alone.
  assert.equal(selectionText("Untitled-1", undefined, 1, 1, "x"), "@Untitled-1\nUntitled-1:1\n```\nx\n```");
  assert.equal(selectionText("Untitled-1", undefined, 1, 1, "x", false), "Untitled-1:1\n```\nx\n```");
});

test("problems: errors first, then by position, one line each, capped", () => {
  const problems = [
    { line: 9, column: 1, severity: 1, message: "unused variable", source: "ts" },
    { line: 5, column: 30, severity: 0, message: "Type 'number' is not\n  assignable to 'string'.", source: "ts" },
    { line: 2, column: 3, severity: 3, message: "could be const" },
    { line: 1, column: 7, severity: 0, message: "missing import" },
  ];
  assert.equal(
    problemsText("src/calc.ts", problems),
    [
      "4 problems in @src/calc.ts:",
      "src/calc.ts:1:7 error missing import",
      "src/calc.ts:5:30 error Type 'number' is not assignable to 'string'. (ts)",
      "src/calc.ts:9:1 warning unused variable (ts)",
      "src/calc.ts:2:3 hint could be const",
    ].join("\n"),
  );
  assert.equal(problemsText("a.ts", problems, 2)?.split("\n").slice(-1)[0], "… and 2 more");
  assert.equal(problemsText("a.ts", [{ line: 1, column: 1, severity: 2, message: "note" }]), "1 problem in @a.ts:\na.ts:1:1 info note");
  assert.equal(problemsText("a.ts", []), undefined);
  assert.equal(problemsText("Untitled-1", [{ line: 1, column: 1, severity: 0, message: "x" }], 20, false)?.split("\n")[0], "1 problem in Untitled-1:");
});
