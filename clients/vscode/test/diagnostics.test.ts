/**
 * Unit tests of src/diagnostics.ts, the forwarding of VS Code's diagnostics to Tandem, on fake
 * URIs, documents and events: the LSP shape of each diagnostic, what one change sends (files
 * only, every source, the open document's version or null, the client's spelling of the URI),
 * and the full report after a start.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  diagnosticsReport,
  forwardDiagnostics,
  toProtocolDiagnostic,
  type DiagnosticLike,
  type DiagnosticsHost,
  type UriLike,
} from "../src/diagnostics";
import type { DidChangeDiagnosticsParams } from "../src/protocol";

/** A `vscode.Uri` as far as the forwarder looks; `toString` escapes like VS Code's (`%3A`). */
class FakeUri implements UriLike {
  constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  toString(): string {
    return `${this.scheme}://${this.path.replace(/:/g, "%3A")}`;
  }
}

const file = (path: string) => new FakeUri("file", path);

function range(line: number, character: number, endCharacter: number) {
  return { start: { line, character }, end: { line, character: endCharacter } };
}

const WRONG_TYPE: DiagnosticLike = {
  range: range(2, 6, 11),
  message: "Type 'string' is not assignable to type 'number'.",
  severity: 0,
  source: "ts",
  code: 2322,
};

/** VS Code with `diagnostics` per URI string and `documents` open at their versions. */
function host(
  diagnostics: Map<string, DiagnosticLike[]>,
  documents: { uri: FakeUri; version: number }[],
): DiagnosticsHost<FakeUri> & { uris: Map<string, FakeUri> } {
  const uris = new Map<string, FakeUri>();
  return {
    uris,
    diagnostics: (uri) => diagnostics.get(uri.toString()) ?? [],
    all: () => [...diagnostics.entries()].map(([key, found]) => [uris.get(key) ?? file(key), found] as const),
    documents: () => documents,
    // The language client's spelling: here VS Code's, with a marker to show it was used.
    asUri: (uri) => `${uri.toString()}#client`,
  };
}

test("a diagnostic keeps its range, message, source and code, with LSP's severity", () => {
  assert.deepEqual(toProtocolDiagnostic(WRONG_TYPE), {
    range: { start: { line: 2, character: 6 }, end: { line: 2, character: 11 } },
    message: "Type 'string' is not assignable to type 'number'.",
    severity: 1,
    code: 2322,
    source: "ts",
  });
  const severities = [0, 1, 2, 3].map((severity) => toProtocolDiagnostic({ ...WRONG_TYPE, severity }).severity);
  assert.deepEqual(severities, [1, 2, 3, 4], "Error, Warning, Information, Hint");
});

test("a code with a link is sent as its value; LSP's tags are kept, others dropped", () => {
  const lint: DiagnosticLike = {
    range: range(0, 0, 3),
    message: "'x' is assigned a value but never used.",
    severity: 1,
    source: "eslint",
    code: { value: "no-unused-vars", target: file("/docs/no-unused-vars") },
    tags: [1, 7],
  };
  const converted = toProtocolDiagnostic(lint);
  assert.equal(converted.code, "no-unused-vars");
  assert.deepEqual(converted.tags, [1]);
  assert.equal("codeDescription" in converted, false);
  // Without a source, code or known severity, those fields are left out rather than null.
  const bare = toProtocolDiagnostic({ range: range(0, 0, 1), message: "bad", severity: 9 });
  assert.deepEqual(bare, { range: range(0, 0, 1), message: "bad" });
});

test("a change sends every source's diagnostics of each file, with the open document's version", () => {
  const calc = file("/project/calc.ts");
  const closed = file("/project/other.ts");
  const lint: DiagnosticLike = { range: range(0, 0, 5), message: "Missing semicolon.", severity: 1, source: "eslint" };
  const vscode = host(
    new Map([
      [calc.toString(), [WRONG_TYPE, lint]],
      [closed.toString(), []],
    ]),
    [{ uri: file("/project/calc.ts"), version: 7 }],
  );
  const report = diagnosticsReport([calc, new FakeUri("untitled", "Untitled-1"), closed], vscode);
  assert.deepEqual(report, {
    documents: [
      {
        uri: "file:///project/calc.ts#client",
        version: 7,
        diagnostics: [toProtocolDiagnostic(WRONG_TYPE), toProtocolDiagnostic(lint)],
      },
      // Cleared diagnostics are sent (empty), so the server forgets them; not open: no version.
      { uri: "file:///project/other.ts#client", version: null, diagnostics: [] },
    ],
  });
});

test("URIs are spelled as the language client spells them, and each document is sent once", () => {
  const drive = file("/c:/project/calc.ts");
  const vscode = host(new Map([[drive.toString(), [WRONG_TYPE]]]), [{ uri: file("/c:/project/calc.ts"), version: 3 }]);
  const report = diagnosticsReport([drive, file("/c:/project/calc.ts")], vscode);
  assert.equal(report?.documents.length, 1);
  assert.equal(report?.documents[0].uri, "file:///c%3A/project/calc.ts#client");
  assert.equal(report?.documents[0].version, 3);
});

test("no notification for changes that touch no file", () => {
  const vscode = host(new Map(), []);
  assert.equal(diagnosticsReport([new FakeUri("vscode-notebook-cell", "nb#cell1"), new FakeUri("git", "/x")], vscode), undefined);
  assert.equal(diagnosticsReport([], vscode), undefined);
});

test("each change event sends one notification at once; sendAll sends everything; dispose stops", () => {
  const calc = file("/project/calc.ts");
  const util = file("/project/util.ts");
  const diagnostics = new Map([
    [calc.toString(), [WRONG_TYPE]],
    [util.toString(), [] as DiagnosticLike[]],
  ]);
  const vscode = host(diagnostics, [{ uri: calc, version: 1 }]);
  vscode.uris.set(calc.toString(), calc);
  vscode.uris.set(util.toString(), util);
  let listener: ((event: { uris: readonly FakeUri[] }) => unknown) | undefined;
  let disposed = false;
  const sent: DidChangeDiagnosticsParams[] = [];
  const forwarder = forwardDiagnostics(
    vscode,
    (subscribed) => {
      listener = subscribed;
      return { dispose: () => (disposed = true) };
    },
    (params) => sent.push(params),
  );
  assert.ok(listener, "subscribed to the change event");
  assert.equal(sent.length, 0, "nothing is sent before a change or a start");

  forwarder.sendAll();
  assert.deepEqual(
    sent.map((params) => params.documents.map((document) => document.uri)),
    [["file:///project/calc.ts#client", "file:///project/util.ts#client"]],
  );

  diagnostics.set(calc.toString(), []);
  listener({ uris: [calc] });
  listener({ uris: [new FakeUri("output", "log")] });
  assert.equal(sent.length, 2, "one notification for the file's change, none for the output's");
  assert.deepEqual(sent[1], { documents: [{ uri: "file:///project/calc.ts#client", version: 1, diagnostics: [] }] });

  forwarder.dispose();
  assert.equal(disposed, true);
});
