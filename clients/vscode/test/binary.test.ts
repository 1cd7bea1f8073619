/**
 * Unit tests of src/binary.ts, on real files and processes in a temporary folder: the order
 * `tandem.path` → the server a platform build bundles → PATH, the bundled server made executable
 * when its mode was lost, what the user is told when there is no server (the universal build; a
 * platform without a build, Windows among them), and the `--version` check by where the binary
 * came from.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundledServer, checkServer, type Environment, resolveServer, SERVER_TARGETS } from "../src/binary";

const TANDEM = '#!/bin/sh\necho "tandem 0.1.0 (c28a321 2026-12-02, x86_64-unknown-linux-musl)"\n';

/** Writes an executable (or, with `mode`, any) script at `path`. */
function script(path: string, text: string, mode = 0o755): string {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

/** A temporary world: an installed extension folder, a PATH folder and a home. */
function world(): { root: string; env: Environment } {
  const root = mkdtempSync(join(tmpdir(), "tandem-binary-test-"));
  const env: Environment = {
    configured: undefined,
    extensionPath: join(root, "extension"),
    version: "0.1.0",
    platform: "linux",
    arch: "x64",
    path: [join(root, "empty"), join(root, "bin")].join(":"),
    home: join(root, "home"),
  };
  mkdirSync(env.extensionPath, { recursive: true });
  return { root, env };
}

test("the bundled server is used when tandem.path is not set, before a tandem on PATH", () => {
  const { root, env } = world();
  script(join(root, "bin/tandem"), TANDEM);
  const bundled = script(bundledServer(env.extensionPath), TANDEM);
  assert.equal(bundled, join(env.extensionPath, "server", "tandem"));
  assert.deepEqual(resolveServer(env), { ok: true, path: bundled, source: "bundled" });
  // An empty or blank setting is no setting.
  assert.deepEqual(resolveServer({ ...env, configured: "  " }), { ok: true, path: bundled, source: "bundled" });
});

test("tandem.path wins over the bundled server, with ~ expanded", () => {
  const { root, env } = world();
  script(bundledServer(env.extensionPath), TANDEM);
  const mine = script(join(root, "home/bin/tandem"), TANDEM);
  assert.deepEqual(resolveServer({ ...env, configured: mine }), { ok: true, path: mine, source: "setting" });
  assert.deepEqual(resolveServer({ ...env, configured: "~/bin/tandem" }), { ok: true, path: mine, source: "setting" });
});

test("a broken tandem.path is told, never replaced by the bundled server", () => {
  const { root, env } = world();
  script(bundledServer(env.extensionPath), TANDEM);
  const missing = resolveServer({ ...env, configured: join(root, "no-such-dir/tandem") });
  assert.equal(missing.ok, false);
  assert.ok(!missing.ok && missing.problem.includes('"tandem.path" was not found or is not executable'), JSON.stringify(missing));
  assert.ok(!missing.ok && missing.fix.includes("clear it"), JSON.stringify(missing));
  const relative = resolveServer({ ...env, configured: "bin/tandem" });
  assert.ok(!relative.ok && relative.problem.includes("must be an absolute path"), JSON.stringify(relative));
});

test("the universal build (no server/) falls back to the first tandem on PATH", () => {
  const { root, env } = world();
  mkdirSync(join(root, "empty"), { recursive: true });
  // Not executable: skipped, as a shell would.
  script(join(root, "empty/tandem"), TANDEM, 0o644);
  const onPath = script(join(root, "bin/tandem"), TANDEM);
  assert.deepEqual(resolveServer(env), { ok: true, path: onPath, source: "path" });
});

test("a bundled server that lost its executable bits is made executable, tandem-confine too", () => {
  const { env } = world();
  const bundled = script(bundledServer(env.extensionPath), TANDEM, 0o644);
  const confine = script(join(env.extensionPath, "server/tandem-confine"), "#!/bin/sh\n", 0o644);
  assert.deepEqual(resolveServer(env), { ok: true, path: bundled, source: "bundled" });
  assert.equal(statSync(bundled).mode & 0o777, 0o755);
  assert.equal(statSync(confine).mode & 0o777, 0o755);
});

test("no server anywhere, universal build on a platform with a build: which .vsix to install, or tandem.path", () => {
  const { env } = world();
  const resolved = resolveServer(env);
  assert.equal(resolved.ok, false);
  if (resolved.ok) return;
  assert.match(resolved.problem, /universal build, which has no server inside/);
  assert.match(resolved.problem, /no `tandem` on PATH/);
  assert.match(resolved.problem, /"tandem\.path" is not set/);
  assert.ok(resolved.fix.includes("tandem-0.1.0-linux-x64.vsix"), resolved.fix);
  assert.ok(resolved.fix.includes("Marketplace"), resolved.fix);
  assert.ok(resolved.fix.includes('"Install" section of the extension\'s README says ("How to Install")'), resolved.fix);
  assert.ok(resolved.fix.includes('set "tandem.path"'), resolved.fix);
  assert.ok(resolved.fix.includes("Tandem: Restart Server"), resolved.fix);
  const mac = resolveServer({ ...env, platform: "darwin", arch: "arm64" });
  assert.ok(!mac.ok && mac.fix.includes("tandem-0.1.0-darwin-arm64.vsix"), JSON.stringify(mac));
});

test("no build for Windows: the platforms that have one, and WSL or Remote - SSH", () => {
  const { env } = world();
  const resolved = resolveServer({ ...env, platform: "win32", arch: "x64" });
  assert.equal(resolved.ok, false);
  if (resolved.ok) return;
  assert.match(resolved.problem, /no server for this platform \(win32-x64\)/);
  for (const target of SERVER_TARGETS) {
    assert.ok(resolved.fix.includes(target), `${target} missing from: ${resolved.fix}`);
  }
  assert.match(resolved.fix, /does not run on Windows itself/);
  assert.match(resolved.fix, /WSL or over Remote - SSH/);
  assert.ok(!resolved.fix.includes(".vsix"), resolved.fix);
  const other = resolveServer({ ...env, platform: "freebsd", arch: "x64" });
  assert.ok(!other.ok && other.fix.includes("build Tandem from source") && other.fix.includes("How to Install"), JSON.stringify(other));
  assert.ok(!other.ok && other.fix.includes('set "tandem.path"'), JSON.stringify(other));
});

test("--version: Tandem passes; another program, or one that fails, is told by where it came from", async () => {
  const { root, env } = world();
  assert.equal(await checkServer(script(join(root, "ok/tandem"), TANDEM), "bundled", env), undefined);
  const impostor = script(join(root, "impostor/tandem"), "#!/bin/sh\necho 'hello 1.0'\n");
  const told = await checkServer(impostor, "path", env);
  assert.ok(told?.problem.includes("found on PATH") && told.problem.includes('is not Tandem: `--version` printed "hello 1.0"'), JSON.stringify(told));
  const setting = await checkServer(impostor, "setting", env);
  assert.ok(setting?.problem.includes('(from "tandem.path")'), JSON.stringify(setting));
});

test("a bundled server built for another platform says so", async () => {
  const { env } = world();
  const bundled = script(bundledServer(env.extensionPath), "#!/bin/sh\nexit 126\n");
  writeFileSync(join(env.extensionPath, "server/target"), "darwin-arm64\n");
  const told = await checkServer(bundled, "bundled", env);
  assert.ok(told?.problem.startsWith(`the server bundled with the extension ("${bundled}") did not run`), JSON.stringify(told));
  assert.ok(told?.problem.includes("It was built for darwin-arm64, and this machine is linux-x64."), JSON.stringify(told));
  assert.ok(told?.fix.includes("build for linux-x64"), JSON.stringify(told));
  // Alpine's build is Linux's: no talk of another platform.
  writeFileSync(join(env.extensionPath, "server/target"), "alpine-x64\n");
  const alpine = await checkServer(bundled, "bundled", env);
  assert.ok(alpine && !alpine.problem.includes("built for"), JSON.stringify(alpine));
});
