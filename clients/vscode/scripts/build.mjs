// Bundles the extension (src/extension.ts → dist/extension.js) with esbuild; with --tests, also
// each unit test (test/*.test.ts → dist/test/*.test.js) for Node's test runner; with
// --production, minified and without source maps (what the .vsix ships). Everything it reads is
// inside clients/vscode, so a copy of the folder builds and packages outside the repository.
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
// The schema VS Code validates settings files with (`jsonValidation`): the server's own, kept
// in this folder as settings.schema.json (`npm run sync-settings` copies it from the repository's
// docs/, and `npm test` checks the copy is current there).
mkdirSync("dist/codicons", { recursive: true });
copyFileSync("settings.schema.json", "dist/settings.schema.json");
// The editor's icon font for the chat webview (a webview does not get VS Code's own), with its
// licence (CC BY 4.0, which asks for the attribution the LICENSE file gives).
for (const file of ["codicon.css", "codicon.ttf"]) {
  copyFileSync(join("node_modules/@vscode/codicons/dist", file), join("dist/codicons", file));
}
copyFileSync("node_modules/@vscode/codicons/LICENSE", "dist/codicons/LICENSE");
if (tests) {
  const entryPoints = readdirSync("test")
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => join("test", name));
  // The unit tests cover modules that do not import `vscode`; a test that did would fail to load.
  await build({ ...common, entryPoints, outdir: "dist/test" });
}
