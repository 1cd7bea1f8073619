// Bundles the extension (src/extension.ts → dist/extension.js) with esbuild; with --tests, also
// each unit test (test/*.test.ts → dist/test/*.test.js) for Node's test runner; with
// --production, minified and without source maps (what the .vsix ships).
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");

const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: production ? false : "inline",
  minify: production,
  logLevel: "warning",
};

rmSync("dist", { recursive: true, force: true });
await build({
  ...common,
  entryPoints: ["src/extension.ts"],
  outfile: "dist/extension.js",
  external: ["vscode"],
});
// The schema VS Code validates settings files with (`jsonValidation`): the server's own.
mkdirSync("dist", { recursive: true });
copyFileSync("../../docs/settings.schema.json", "dist/settings.schema.json");
if (tests) {
  const entryPoints = readdirSync("test")
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => join("test", name));
  // The unit tests cover modules that do not import `vscode`; a test that did would fail to load.
  await build({ ...common, entryPoints, outdir: "dist/test" });
}
