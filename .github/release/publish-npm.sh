#!/usr/bin/env bash
# Publishes the release's npm packages: publish-npm.sh TARBALL_DIR VERSION
#
# TARBALL_DIR holds package-clients.sh npm's tarballs. The four platform packages go first and
# the main package, @tandem-lsp/tandem, last, so that its optionalDependencies exist on the
# registry from the moment it does. A package whose version is already on the registry is left
# alone, so a failed run can be run again. `--provenance` links each package to this workflow
# run (npm needs the job's OIDC token: `permissions: id-token: write`); the registry's token is
# NODE_AUTH_TOKEN, written into .npmrc by actions/setup-node.
set -euo pipefail

[ $# -eq 2 ] || {
    echo "usage: $0 TARBALL_DIR VERSION" >&2
    exit 2
}
dir=$1
version=$2

packages="tandem-linux-x64 tandem-linux-arm64 tandem-darwin-x64 tandem-darwin-arm64 tandem"
# All or none: every tarball must be there before the first is published.
for package in $packages; do
    if [ ! -f "$dir/tandem-lsp-$package-$version.tgz" ]; then
        echo "publish-npm.sh: no $dir/tandem-lsp-$package-$version.tgz" >&2
        exit 1
    fi
done
for package in $packages; do
    tarball="$dir/tandem-lsp-$package-$version.tgz"
    if [ "$(npm view "@tandem-lsp/$package@$version" version 2>/dev/null)" = "$version" ]; then
        echo "@tandem-lsp/$package@$version is already published"
        continue
    fi
    npm publish "$tarball" --provenance --access public
done
