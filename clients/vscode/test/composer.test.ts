/**
 * Unit tests of src/composer.ts: the model picker's choices and the completion of `/` commands
 * (issue 38, item 10).
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { matchCommands, modelChoices, modelLabel } from "../src/composer";

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
