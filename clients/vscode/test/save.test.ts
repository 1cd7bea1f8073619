/**
 * Unit tests of src/save.ts, the `tandem/saveDocuments` handler, on fake documents: which
 * documents are saved, what the answer lists, and that failures are logged, never thrown.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { saveDocuments, type SavableDocument, type UriLike } from "../src/save";

/** Like `vscode.Uri.parse` as far as the handler looks: scheme, decoded path, normalised text. */
function parse(raw: string): UriLike {
  const url = new URL(raw);
  const scheme = url.protocol.slice(0, -1);
  return { scheme, fsPath: scheme === "file" ? decodeURIComponent(url.pathname) : "", toString: () => url.href };
}

/** An open document; `save` does what `outcome` says and counts its calls. */
class FakeDocument implements SavableDocument {
  readonly uri: UriLike;
  saves = 0;
  constructor(
    uri: string,
    public isDirty: boolean,
    private readonly outcome: "saves" | "fails" | "throws" = "saves",
    readonly isUntitled = false,
  ) {
    this.uri = parse(uri);
  }
  async save(): Promise<boolean> {
    this.saves += 1;
    if (this.outcome === "throws") {
      throw new Error("EACCES: permission denied");
    }
    if (this.outcome === "fails" || !this.isDirty) {
      return false;
    }
    this.isDirty = false;
    return true;
  }
}

function run(params: unknown, documents: FakeDocument[]) {
  const log: string[] = [];
  const answer = saveDocuments(params as never, documents, parse, (line) => log.push(line));
  return answer.then((result) => ({ saved: result.saved, log }));
}

test("saves the listed dirty documents and answers them with those already saved", async () => {
  const calc = new FakeDocument("file:///project/calc.py", true);
  const clean = new FakeDocument("file:///project/clean.py", false);
  // The user's own unsaved typing in a document the server did not list stays unsaved.
  const draft = new FakeDocument("file:///project/draft.py", true);
  const { saved, log } = await run({ uris: ["file:///project/calc.py", "file:///project/clean.py"] }, [calc, clean, draft]);
  assert.deepEqual(saved, ["file:///project/calc.py", "file:///project/clean.py"]);
  assert.equal(calc.saves, 1);
  assert.equal(calc.isDirty, false);
  assert.equal(clean.saves, 0, "a document that is not dirty is not saved again");
  assert.equal(draft.saves, 0);
  assert.equal(draft.isDirty, true);
  assert.deepEqual(log, []);
});

test("finds the document however the server spelled its URI, and answers the server's spelling", async () => {
  // VS Code escapes `@` and the drive's colon; the server may not.
  const document = new FakeDocument("file:///c%3A/project/c%40lc.py", true);
  const { saved } = await run({ uris: ["file:///c:/project/c@lc.py"] }, [document]);
  assert.deepEqual(saved, ["file:///c:/project/c@lc.py"]);
  assert.equal(document.saves, 1);
});

test("leaves out, and logs, what it cannot save, and goes on with the rest", async () => {
  const conflict = new FakeDocument("file:///project/conflict.py", true, "fails");
  const locked = new FakeDocument("file:///project/locked.py", true, "throws");
  const untitled = new FakeDocument("untitled:Untitled-1", true, "saves", true);
  const calc = new FakeDocument("file:///project/calc.py", true);
  const { saved, log } = await run(
    {
      uris: [
        "file:///project/conflict.py",
        "file:///project/locked.py",
        "file:///project/closed.py",
        "untitled:Untitled-1",
        "not a uri",
        "file:///project/calc.py",
      ],
    },
    [conflict, locked, untitled, calc],
  );
  assert.deepEqual(saved, ["file:///project/calc.py"]);
  assert.equal(untitled.saves, 0, "saving an untitled document would open a Save As dialog");
  assert.equal(log.length, 5, log.join("\n"));
  for (const [line, expected] of [
    [log[0], /could not save file:\/\/\/project\/conflict\.py/],
    [log[1], /locked\.py.*EACCES/],
    [log[2], /closed\.py.*not open/],
    [log[3], /Untitled-1.*never been saved/],
    [log[4], /not a uri/],
  ] as const) {
    assert.match(line, expected);
  }
});

test("a document saved meanwhile counts as saved", async () => {
  const document = new FakeDocument("file:///project/calc.py", true, "fails");
  document.save = async () => {
    document.isDirty = false; // saved by the user while VS Code was busy: `save()` says false
    return false;
  };
  const { saved, log } = await run({ uris: ["file:///project/calc.py"] }, [document]);
  assert.deepEqual(saved, ["file:///project/calc.py"]);
  assert.deepEqual(log, []);
});

test("malformed params save nothing and throw nothing", async () => {
  const document = new FakeDocument("file:///project/calc.py", true);
  for (const params of [null, undefined, {}, { uris: "file:///project/calc.py" }, { uris: [1, null, {}] }]) {
    const { saved } = await run(params, [document]);
    assert.deepEqual(saved, [], JSON.stringify(params));
  }
  assert.equal(document.saves, 0);
});
