#!/usr/bin/env bash
# Checks that every file carrying Tandem's version carries the workspace's (version.sh), and,
# given a tag (check-versions.sh v0.2.0), that the tag is `v` + that version. Lists each file
# that disagrees and fails; prints the version when all agree. The release workflow runs it
# before it builds anything; the lint (lint.sh) runs it without a tag, so that a half-done
# version bump fails CI. The files are the ones docs/releasing.md says to change.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
version=$("$here/version.sh")
wrong=()

if [ $# -gt 1 ]; then
    echo "usage: $0 [TAG]" >&2
    exit 2
fi
if [ $# -eq 1 ] && [ "$1" != "v$version" ]; then
    wrong+=("the tag $1 is not v$version, the workspace's version (Cargo.toml [workspace.package])")
fi

# JSON fields, read by Node: `file`, then pairs of a label and an expression; each expression,
# evaluated with the file's contents as `j`, must give the version (an array, all of its values).
check_json() {
    local file=$1
    shift
    if [ ! -f "$file" ]; then
        wrong+=("$file is missing")
        return
    fi
    local label expression found
    while [ $# -ge 2 ]; do
        label=$1
        expression=$2
        shift 2
        if ! found=$(node -e '
            const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
            const v = (0, eval)("(j) => " + process.argv[2])(j);
            const all = Array.isArray(v) ? v : [v];
            const bad = all.filter((x) => x !== process.argv[3]);
            if (all.length === 0 || bad.length > 0) {
                console.log(all.length === 0 ? "nothing" : bad.map(String).join(", "));
                process.exit(1);
            }
        ' "$file" "$expression" "$version" 2>&1); then
            wrong+=("$file: $label is $found")
        fi
    done
}

# A `version = "..."` line of a TOML file: the first one after the line `section` (or the first
# in the file when `section` is empty).
check_toml() {
    local file=$1 section=$2 found
    if [ ! -f "$file" ]; then
        wrong+=("$file is missing")
        return
    fi
    found=$(awk -v section="$section" '
        BEGIN { on = (section == "") }
        section != "" && $0 == section { on = 1; next }
        on && /^version[[:space:]]*=/ { sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit }
    ' "$file")
    if [ "$found" != "$version" ]; then
        wrong+=("$file: version${section:+ after $section} is '${found:-nothing}'")
    fi
}

# A package's entry in a Cargo.lock (what `cargo build --locked` insists on).
check_lock() {
    local file=$1 package=$2
    check_toml "$file" "name = \"$package\""
}

check_lock Cargo.lock tandem
check_json clients/vscode/package.json version 'j.version'
check_json clients/vscode/package-lock.json version 'j.version' \
    'packages[""].version' 'j.packages[""].version'
check_json clients/npm/package.json version 'j.version' \
    'the optionalDependencies'"'"' versions' 'Object.values(j.optionalDependencies)'
check_toml clients/zed/extension.toml ""
check_toml clients/zed/Cargo.toml "[package]"
check_lock clients/zed/Cargo.lock tandem-zed
# shellcheck disable=SC2016 # the "$1" is the JavaScript regular expression's, not the shell's
check_json clients/zed/registry/agent.json version 'j.version' \
    'the version in each archive URL (.../download/vVERSION/tandem-VERSION-TARGET.tar.gz)' \
    'Object.values(j.distribution.binary).map((b) => b.archive.replace(/^https:\/\/github\.com\/tandem-lsp\/tandem\/releases\/download\/v([^/]+)\/tandem-\1-[^/]+\.tar\.gz$/, "$1"))'
mason=clients/nvim/mason/package.yaml
if [ ! -f "$mason" ]; then
    wrong+=("$mason is missing")
elif ! grep -q "^  id: pkg:github/tandem-lsp/tandem@v$version\$" "$mason"; then
    wrong+=("$mason: source.id is not pkg:github/tandem-lsp/tandem@v$version")
fi

if [ ${#wrong[@]} -gt 0 ]; then
    echo "check-versions.sh: the workspace's version is $version, but:" >&2
    printf '  %s\n' "${wrong[@]}" >&2
    echo "(docs/releasing.md lists the files a version bump changes)" >&2
    exit 1
fi
printf '%s\n' "$version"
