/**
 * Unit tests of src/hunks.ts: hunks between a baseline and the current text, reverting and
 * accepting one, the header and the rejection note, across line endings and edge cases.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  acceptHunk,
  computeHunks,
  describeRejections,
  hunkHeader,
  revertHunk,
  splitLines,
  type Hunk,
} from "../src/hunks";

test("splitLines keeps each line's ending", () => {
  const cases: [string, string[]][] = [
    ["", []],
    ["a", ["a"]],
    ["a\n", ["a\n"]],
    ["a\nb", ["a\n", "b"]],
    ["a\r\nb\r\n", ["a\r\n", "b\r\n"]],
    ["\n\n", ["\n", "\n"]],
  ];
  for (const [text, lines] of cases) {
    assert.deepEqual(splitLines(text), lines, JSON.stringify(text));
    assert.equal(splitLines(text).join(""), text);
  }
});

/** Every hunk, reverted alone on the current text, and accepted alone into the baseline. */
interface Case {
  name: string;
  baseline: string;
  current: string;
  hunks: Hunk[];
  headers: string[];
}

const cases: Case[] = [
  {
    name: "identical texts",
    baseline: "a\nb\n",
    current: "a\nb\n",
    hunks: [],
    headers: [],
  },
  {
    name: "two separate hunks",
    baseline: "1\n2\n3\n4\n5\n6\n7\n",
    current: "1\nTWO\n3\n4\n5\nSIX\nSIX.5\n7\n",
    hunks: [
      { oldStart: 1, oldLines: ["2\n"], newStart: 1, newLines: ["TWO\n"] },
      { oldStart: 5, oldLines: ["6\n"], newStart: 5, newLines: ["SIX\n", "SIX.5\n"] },
    ],
    headers: ["line 2", "lines 6-7"],
  },
  {
    name: "insertion only",
    baseline: "a\nb\n",
    current: "a\nx\ny\nb\n",
    hunks: [{ oldStart: 1, oldLines: [], newStart: 1, newLines: ["x\n", "y\n"] }],
    headers: ["lines 2-3"],
  },
  {
    name: "deletion only",
    baseline: "a\nb\nc\nd\n",
    current: "a\nd\n",
    hunks: [{ oldStart: 1, oldLines: ["b\n", "c\n"], newStart: 1, newLines: [] }],
    headers: ["deleted after line 1"],
  },
  {
    name: "deletion at the start",
    baseline: "a\nb\n",
    current: "b\n",
    hunks: [{ oldStart: 0, oldLines: ["a\n"], newStart: 0, newLines: [] }],
    headers: ["deleted at the start of the file"],
  },
  {
    name: "no trailing newline, last line changed",
    baseline: "a\nb",
    current: "a\nc",
    hunks: [{ oldStart: 1, oldLines: ["b"], newStart: 1, newLines: ["c"] }],
    headers: ["line 2"],
  },
  {
    name: "a line appended after a last line without newline",
    baseline: "a\nb",
    current: "a\nb\nc",
    hunks: [{ oldStart: 1, oldLines: ["b"], newStart: 1, newLines: ["b\n", "c"] }],
    headers: ["lines 2-3"],
  },
  {
    name: "CRLF",
    baseline: "a\r\nb\r\nc\r\n",
    current: "a\r\nB\r\nc\r\n",
    hunks: [{ oldStart: 1, oldLines: ["b\r\n"], newStart: 1, newLines: ["B\r\n"] }],
    headers: ["line 2"],
  },
  {
    name: "a line ending changed from CRLF to LF",
    baseline: "a\r\nb\r\n",
    current: "a\r\nb\n",
    hunks: [{ oldStart: 1, oldLines: ["b\r\n"], newStart: 1, newLines: ["b\n"] }],
    headers: ["line 2"],
  },
  {
    name: "new file",
    baseline: "",
    current: "x\ny\n",
    hunks: [{ oldStart: 0, oldLines: [], newStart: 0, newLines: ["x\n", "y\n"] }],
    headers: ["lines 1-2"],
  },
  {
    name: "file emptied",
    baseline: "x\n",
    current: "",
    hunks: [{ oldStart: 0, oldLines: ["x\n"], newStart: 0, newLines: [] }],
    headers: ["deleted at the start of the file"],
  },
];

for (const c of cases) {
  test(`hunks: ${c.name}`, () => {
    const hunks = computeHunks(c.baseline, c.current);
    assert.deepEqual(hunks, c.hunks);
    assert.deepEqual(hunks.map(hunkHeader), c.headers);
    for (const hunk of hunks) {
      // Settling a hunk either way makes exactly that hunk disappear and leaves the others.
      const others = hunks.filter((other) => other !== hunk);
      const reverted = revertHunk(c.current, hunk);
      assert.deepEqual(
        computeHunks(c.baseline, reverted).map((h) => [h.oldStart, h.oldLines]),
        others.map((h) => [h.oldStart, h.oldLines]),
      );
      const accepted = acceptHunk(c.baseline, hunk);
      assert.deepEqual(
        computeHunks(accepted, c.current).map((h) => [h.newStart, h.newLines]),
        others.map((h) => [h.newStart, h.newLines]),
      );
    }
    // Settling all of them, recomputing after each, gives the other text exactly.
    let current = c.current;
    for (let h = computeHunks(c.baseline, current); h.length > 0; h = computeHunks(c.baseline, current)) {
      current = revertHunk(current, h[0]);
    }
    assert.equal(current, c.baseline);
    let baseline = c.baseline;
    for (let h = computeHunks(baseline, c.current); h.length > 0; h = computeHunks(baseline, c.current)) {
      baseline = acceptHunk(baseline, h[h.length - 1]);
    }
    assert.equal(baseline, c.current);
  });
}

test("revert one of two hunks leaves the other, exactly", () => {
  const baseline = "1\n2\n3\n4\n5\n";
  const current = "1\nA\nB\n3\n4\nC\n";
  const [first, second] = computeHunks(baseline, current);
  assert.equal(revertHunk(current, first), "1\n2\n3\n4\nC\n");
  assert.equal(revertHunk(current, second), "1\nA\nB\n3\n4\n5\n");
  assert.equal(acceptHunk(baseline, first), "1\nA\nB\n3\n4\n5\n");
  // The second hunk's positions are stale once the first, of another length, is reverted.
  assert.throws(() => revertHunk(revertHunk(current, first), second), /changed since the hunk was computed/);
});

test("describeRejections", () => {
  const note = describeRejections([
    { path: "src/calc.py", hunk: { oldStart: 3, oldLines: ["    return a - b\r\n"], newStart: 3, newLines: ["    return a + b\r\n"] } },
    { path: "src/new.py", hunk: { oldStart: 0, oldLines: [], newStart: 0, newLines: ["x = 1\n", "y = 2"] } },
    { path: "README.md", hunk: { oldStart: 1, oldLines: ["```sh\n", "make\n", "```\n"], newStart: 1, newLines: [] } },
  ]);
  assert.equal(
    note,
    [
      "In src/calc.py the user rejected your change to line 4; it was reverted to:",
      "```",
      "    return a - b",
      "```",
      "The text you had written there, now gone:",
      "```",
      "    return a + b",
      "```",
      "",
      "In src/new.py the user rejected your change to lines 1-2; it was reverted to:",
      "(the lines were removed)",
      "The text you had written there, now gone:",
      "```",
      "x = 1",
      "y = 2",
      "```",
      "",
      "In README.md the user rejected your deletion after line 1; it was reverted to:",
      "````",
      "```sh",
      "make",
      "```",
      "````",
    ].join("\n"),
  );
  assert.equal(describeRejections([]), "");
});
