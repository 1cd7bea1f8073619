/**
 * Unit tests of src/log.ts: the server's log lines keep their level in the Tandem output
 * (issue 38, item 12), rather than all showing as `[error]` because they came on stderr.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { parseLogLine } from "../src/log";

test("each of tracing's levels is read, and the timestamp dropped", () => {
  const at = "2026-11-28T19:58:00.123456Z";
  assert.deepEqual(parseLogLine(`${at}  INFO tandem_lsp::server: initialized`), { level: "info", text: "tandem_lsp::server: initialized" });
  assert.deepEqual(parseLogLine(`${at}  WARN tandem_lsp: slow`), { level: "warn", text: "tandem_lsp: slow" });
  assert.deepEqual(parseLogLine(`${at} ERROR tandem: broke`), { level: "error", text: "tandem: broke" });
  assert.deepEqual(parseLogLine(`${at} DEBUG x: y`), { level: "debug", text: "x: y" });
  assert.deepEqual(parseLogLine(`${at} TRACE x: y`), { level: "trace", text: "x: y" });
});

test("a line without a level continues the one before; a panic is an error", () => {
  const first = parseLogLine("2026-11-28T19:58:00Z  WARN tandem: two lines:");
  assert.deepEqual(parseLogLine("  the second", first.level), { level: "warn", text: "  the second" });
  assert.deepEqual(parseLogLine("plain text"), { level: "info", text: "plain text" });
  assert.equal(parseLogLine("thread 'main' panicked at server/src/x.rs:1:2:", "info").level, "error");
  // A level word later in the text is not the line's level.
  assert.equal(parseLogLine("something ERROR happened").level, "info");
});
