/**
 * Unit tests of src/proposal.ts: recognising inline chat's proposal (an annotation that needs
 * confirmation), handing it on without the flag, the text it proposes, and the words for one the
 * user declined (issue 38, item 7).
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  applyTextEdits,
  asksConfirmation,
  DECLINED,
  declinedMessage,
  proposedChanges,
  withoutConfirmation,
} from "../src/proposal";

/** What the server sends for a proposal (server/lsp/src/inline.rs `final_edit`). */
const PROPOSAL = {
  documentChanges: [
    {
      textDocument: { uri: "file:///w/calc.py", version: 3 },
      edits: [
        {
          range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } },
          newText: '    """Return the sum of a and b."""\n',
          annotationId: "tandem.inlineChat",
        },
      ],
    },
  ],
  changeAnnotations: {
    "tandem.inlineChat": { label: "Tandem: inline edit of lines 1-2", needsConfirmation: true, description: "Proposed" },
  },
};

test("a proposal asks for confirmation; a plain edit or a confirmed annotation does not", () => {
  assert.equal(asksConfirmation(PROPOSAL), true);
  assert.equal(asksConfirmation({ documentChanges: PROPOSAL.documentChanges }), false);
  assert.equal(asksConfirmation(withoutConfirmation(PROPOSAL)), false);
});

test("withoutConfirmation keeps the edits and the annotation's label, and leaves the original alone", () => {
  const plain = withoutConfirmation(PROPOSAL);
  assert.deepEqual(plain.documentChanges, PROPOSAL.documentChanges);
  assert.deepEqual(plain.changeAnnotations?.["tandem.inlineChat"], {
    label: "Tandem: inline edit of lines 1-2",
    needsConfirmation: false,
    description: "Proposed",
  });
  assert.equal(PROPOSAL.changeAnnotations["tandem.inlineChat"].needsConfirmation, true);
});

test("proposedChanges and applyTextEdits give the proposed text", () => {
  const [change] = proposedChanges(PROPOSAL);
  assert.equal(change.uri, "file:///w/calc.py");
  assert.equal(change.version, 3);
  const calc = "def add(a, b):\n    return a + b\n";
  assert.equal(applyTextEdits(calc, change.edits), 'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b\n');
});

test("applyTextEdits: UTF-16 positions, CRLF and lone CR lines, clamping, several edits", () => {
  const edit = (sl: number, sc: number, el: number, ec: number, newText: string) => ({
    range: { start: { line: sl, character: sc }, end: { line: el, character: ec } },
    newText,
  });
  // "😀" is two UTF-16 code units: character 3 is after it.
  assert.equal(applyTextEdits("a😀b\n", [edit(0, 3, 0, 4, "B")]), "a😀B\n");
  assert.equal(applyTextEdits("one\r\ntwo\rthree", [edit(1, 0, 1, 3, "2"), edit(2, 0, 2, 5, "3")]), "one\r\n2\r3");
  // Past the line's end: its end, not into the next line; past the last line: the end.
  assert.equal(applyTextEdits("ab\ncd", [edit(0, 99, 0, 99, "!")]), "ab!\ncd");
  assert.equal(applyTextEdits("ab\ncd", [edit(9, 0, 9, 0, "\nef")]), "ab\ncd\nef");
  // Given in any order, applied against the original text.
  assert.equal(applyTextEdits("abc", [edit(0, 0, 0, 1, "A"), edit(0, 2, 0, 3, "C")]), "AbC");
  assert.equal(applyTextEdits("abc", [edit(0, 2, 0, 3, "C"), edit(0, 0, 0, 1, "A")]), "AbC");
});

test("declinedMessage recognises only the server's words for the declined proposal", () => {
  const declined = `the inline edit was not applied (${DECLINED}); the document may have changed while Tandem worked — run it again`;
  assert.equal(declinedMessage(declined), "You discarded the proposed inline edit; nothing was changed.");
  assert.equal(declinedMessage(declined.replace(DECLINED, "the editor gave no reason")), undefined);
  assert.equal(declinedMessage(undefined), undefined);
});
