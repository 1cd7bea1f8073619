/**
 * Which `tandem` binary the extension runs, and whether it runs: `tandem.path` when the user set
 * it, else the server bundled in a platform build of the extension (`<extension>/server/tandem`,
 * put there by scripts/package-platform.mjs), else `tandem` on PATH (what the universal build,
 * which has no server inside, relies on). When none is found, or the one found does not run, the
 * failure says why in the user's terms: which platforms have a build with the server inside, and
 * how to install Tandem and set `tandem.path` otherwise. No `vscode` import, so that the unit
 * tests (test/binary.test.ts) run it with real files and processes.
 */

import { execFile } from "node:child_process";
import { accessSync, chmodSync, constants, readFileSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** The VS Code platforms (`vsce --target`) whose .vsix has the server inside. */
export const SERVER_TARGETS = ["linux-x64", "linux-arm64", "alpine-x64", "alpine-arm64", "darwin-x64", "darwin-arm64"];

/** Where the extension's README says how to install Tandem (also its Marketplace page). */
export const INSTALL_URL = "https://github.com/tandem-lsp/tandem/blob/main/clients/vscode/README.md#install";

/** Where the binary came from: the setting, the extension's own `server/`, or PATH. */
export type Source = "setting" | "bundled" | "path";

/** The binary to run, or what is wrong and what to do about it (both whole sentences). */
export type Resolved = { ok: true; path: string; source: Source } | { ok: false; problem: string; fix: string };

/** What resolution depends on; `process`'s values in the extension, chosen ones in tests. */
export interface Environment {
  /** `tandem.path`, as the user wrote it. */
  configured: string | undefined;
  /** The extension's installed folder (`context.extensionPath`). */
  extensionPath: string;
  /** The extension's version (its package.json), for the name of a platform .vsix. */
  version: string;
  platform: NodeJS.Platform;
  arch: string;
  /** `PATH`. */
  path: string;
  home: string;
}

/** This machine as a VS Code platform name (`linux-x64`, `darwin-arm64`, `win32-x64`…). */
export function vscodeTarget(platform: NodeJS.Platform, arch: string): string {
  return `${platform}-${arch}`;
}

/** Whether the release has a platform build (with the server inside) for this machine. */
export function hasServerBuild(platform: NodeJS.Platform, arch: string): boolean {
  return SERVER_TARGETS.includes(vscodeTarget(platform, arch));
}

/** The bundled server of the extension installed at `extensionPath` (it may not be there). */
export function bundledServer(extensionPath: string): string {
  return join(extensionPath, "server", "tandem");
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isExecutableFile(path: string): boolean {
  if (!isFile(path)) {
    return false;
  }
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes the bundled `tandem` and `tandem-confine` executable when they are not: vsce keeps the
 * files' modes and VS Code restores them, but a .vsix unpacked by another tool may lose them.
 * They are the extension's own files, so this changes nothing of the user's.
 */
function makeExecutable(server: string): string | undefined {
  for (const file of [server, join(server, "..", "tandem-confine")]) {
    if (isFile(file) && !isExecutableFile(file)) {
      try {
        chmodSync(file, statSync(file).mode | 0o755);
      } catch (error) {
        return `the server bundled with the extension ("${file}") is not executable, and making it so failed: ${String(error)}.`;
      }
    }
  }
  return undefined;
}

/** The platform build's folder says which platform it was built for (server/target). */
function bundledTarget(extensionPath: string): string | undefined {
  try {
    return readFileSync(join(extensionPath, "server", "target"), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

const RESTART = 'then run "Tandem: Restart Server".';

/** Where the notification's "How to Install" button leads; the chat's notice says it in words. */
const HOW = 'as the "Install" section of the extension\'s README says ("How to Install")';

/** How to get a server when this copy of the extension has none (nor PATH, nor the setting). */
function noServerFix(env: Environment): string {
  const target = vscodeTarget(env.platform, env.arch);
  if (hasServerBuild(env.platform, env.arch)) {
    return (
      `Install the extension's build for ${target} instead, which has it (the Marketplace and Open VSX pick it ` +
      `for you; as a file, tandem-${env.version}-${target}.vsix), or install Tandem ${HOW} and set "tandem.path" ` +
      `to the binary's absolute path; ${RESTART}`
    );
  }
  const builds = `Builds with the server inside exist for ${SERVER_TARGETS.join(", ")}`;
  if (env.platform === "win32") {
    return (
      `${builds}; Tandem does not run on Windows itself. Open the folder in WSL or over Remote - SSH on a Linux ` +
      `or macOS machine: the extension runs there, with its server.`
    );
  }
  return `${builds}. On ${target}, build Tandem from source ${HOW} and set "tandem.path" to the binary's absolute path; ${RESTART}`;
}

/** `tandem.path` when set (`~` expanded), else the bundled server, else the first `tandem` on PATH. */
export function resolveServer(env: Environment): Resolved {
  const setting = env.configured?.trim();
  const settingFix = `Correct "tandem.path" in your user settings (or clear it to use the server the extension brings), ${RESTART}`;
  if (setting) {
    const expanded = setting.startsWith("~/") ? join(env.home, setting.slice(2)) : setting;
    if (!isAbsolute(expanded)) {
      return { ok: false, problem: `"tandem.path" must be an absolute path, not "${setting}".`, fix: settingFix };
    }
    if (!isExecutableFile(expanded)) {
      return {
        ok: false,
        problem: `the Tandem binary "${expanded}" set in "tandem.path" was not found or is not executable.`,
        fix: settingFix,
      };
    }
    return { ok: true, path: expanded, source: "setting" };
  }
  const bundled = bundledServer(env.extensionPath);
  if (isFile(bundled)) {
    const failed = makeExecutable(bundled);
    if (failed) {
      return { ok: false, problem: failed, fix: `Reinstall the extension, or set "tandem.path"; ${RESTART}` };
    }
    return { ok: true, path: bundled, source: "bundled" };
  }
  for (const dir of env.path.split(delimiter)) {
    if (dir && isExecutableFile(join(dir, "tandem"))) {
      return { ok: true, path: join(dir, "tandem"), source: "path" };
    }
  }
  const which = hasServerBuild(env.platform, env.arch)
    ? "this copy of the extension is the universal build, which has no server inside"
    : `the extension has no server for this platform (${vscodeTarget(env.platform, env.arch)})`;
  return {
    ok: false,
    problem: `${which}, and there is no \`tandem\` on PATH ("tandem.path" is not set).`,
    fix: noServerFix(env),
  };
}

/** What a failed `--version` means, by where the binary came from. */
function didNotRun(path: string, source: Source, env: Environment, why: string): { problem: string; fix: string } {
  switch (source) {
    case "setting":
      return {
        problem: `"${path}" (from "tandem.path") ${why}`,
        fix: `Set "tandem.path" to a Tandem binary that runs here (or clear it to use the server the extension brings), ${RESTART}`,
      };
    case "path":
      return {
        problem: `"${path}" (the \`tandem\` found on PATH) ${why}`,
        fix: `Install Tandem ${HOW} and set "tandem.path" to the binary's absolute path; ${RESTART}`,
      };
    case "bundled": {
      const here = vscodeTarget(env.platform, env.arch);
      const built = bundledTarget(env.extensionPath);
      // Alpine's builds are Linux's (static musl binaries): either runs on any Linux.
      const linux = (target: string) => target.replace(/^alpine-/, "linux-");
      const other = built !== undefined && linux(built) !== linux(here);
      return {
        problem:
          `the server bundled with the extension ("${path}") ${why}` +
          (other ? ` It was built for ${built}, and this machine is ${here}.` : ""),
        fix:
          `Install the extension's build for ${here}` +
          (hasServerBuild(env.platform, env.arch) ? "" : ` (there is none: builds exist for ${SERVER_TARGETS.join(", ")})`) +
          `, or install Tandem ${HOW} and set "tandem.path"; ${RESTART}`,
      };
    }
  }
}

/**
 * Runs `tandem --version`: a binary that is not Tandem (or cannot run here) fails now, once,
 * with what to do; `undefined` when it is Tandem.
 */
export function checkServer(path: string, source: Source, env: Environment): Promise<{ problem: string; fix: string } | undefined> {
  return new Promise((resolve) => {
    execFile(path, ["--version"], { timeout: 10_000 }, (error, stdout) => {
      if (error) {
        resolve(didNotRun(path, source, env, `did not run: ${error.message.split("\n")[0]}.`));
      } else if (!stdout.startsWith("tandem ")) {
        resolve(didNotRun(path, source, env, `is not Tandem: \`--version\` printed "${stdout.trim()}".`));
      } else {
        resolve(undefined);
      }
    });
  });
}

/** How the log names where the server came from. */
export function describeSource(source: Source): string {
  switch (source) {
    case "setting":
      return 'from "tandem.path"';
    case "bundled":
      return "bundled with the extension";
    case "path":
      return "found on PATH";
  }
}
