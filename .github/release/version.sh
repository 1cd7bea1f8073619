#!/usr/bin/env bash
# Prints the workspace's version: `version` in the root Cargo.toml's `[workspace.package]`, the
# one version every package and client of a release carries (docs/releasing.md). Fails when the
# section or the key is missing, or the value is not a plain `X.Y.Z` version: the VS Code
# Marketplace takes no pre-release suffix, so a release has none.
set -euo pipefail

manifest="$(cd "$(dirname "$0")/../.." && pwd)/Cargo.toml"
if [ ! -f "$manifest" ]; then
    echo "version.sh: no $manifest" >&2
    exit 1
fi
version=$(awk '
    /^[[:space:]]*\[/ { in_section = ($0 ~ /^[[:space:]]*\[workspace\.package\][[:space:]]*$/) }
    in_section && /^[[:space:]]*version[[:space:]]*=/ {
        sub(/^[^=]*=[[:space:]]*"/, "")
        sub(/".*$/, "")
        print
        exit
    }
' "$manifest")
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "version.sh: $manifest has no [workspace.package] version of the form X.Y.Z (found '$version')" >&2
    exit 1
fi
printf '%s\n' "$version"
