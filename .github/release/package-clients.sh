#!/usr/bin/env bash
# Packages a client for every release target from the release archives:
#   package-clients.sh vscode|npm ARCHIVE_DIR OUT_DIR [VERSION]
#
# ARCHIVE_DIR holds archive.sh's tandem-VERSION-TARGET.tar.gz and their .sha256 files; each
# archive is checked against its checksum and unpacked into a folder of its own, which is
# handed to the client's packaging script:
#   vscode: a platform .vsix per VS Code target, OUT_DIR/tandem-VERSION-VSCODE_TARGET.vsix
#           (clients/vscode's `npm run package:platform`; run `npm ci --prefix clients/vscode`
#           first). linux-x64 and alpine-x64 carry the x86_64 musl binaries, linux-arm64 and
#           alpine-arm64 the aarch64 ones: static, they run on glibc and musl systems alike.
#   npm:    a platform package per npm target and the main package, as tarballs in OUT_DIR
#           (clients/npm/pack.mjs).
# VERSION defaults to the workspace's. RELEASE_TARGETS (Rust targets, space-separated) limits
# the targets, for a trial with the archives one machine can build; a release packages all.
set -euo pipefail

usage() {
    echo "usage: $0 vscode|npm ARCHIVE_DIR OUT_DIR [VERSION]" >&2
    exit 2
}
if [ $# -lt 3 ] || [ $# -gt 4 ]; then usage; fi
kind=$1
archives=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${4:-$("$here/version.sh")}
targets=${RELEASE_TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin}

# Each client's platforms, as CLIENT_PLATFORM:RUST_TARGET.
case $kind in
    vscode)
        platforms="linux-x64:x86_64-unknown-linux-musl alpine-x64:x86_64-unknown-linux-musl
            linux-arm64:aarch64-unknown-linux-musl alpine-arm64:aarch64-unknown-linux-musl
            darwin-x64:x86_64-apple-darwin darwin-arm64:aarch64-apple-darwin"
        ;;
    npm)
        platforms="linux-x64:x86_64-unknown-linux-musl linux-arm64:aarch64-unknown-linux-musl
            darwin-x64:x86_64-apple-darwin darwin-arm64:aarch64-apple-darwin"
        ;;
    *) usage ;;
esac

sha256_check() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum --check --quiet "$1"
    else
        shasum -a 256 --check --quiet "$1"
    fi
}

unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
for platform in $platforms; do
    client_platform=${platform%%:*}
    target=${platform#*:}
    case " $targets " in
        *" $target "*) ;;
        *) continue ;;
    esac
    archive="tandem-$version-$target.tar.gz"
    if [ ! -d "$unpacked/$target" ]; then
        if [ ! -f "$archives/$archive" ] || [ ! -f "$archives/$archive.sha256" ]; then
            echo "package-clients.sh: $archives has no $archive and $archive.sha256" >&2
            exit 1
        fi
        (cd "$archives" && sha256_check "$archive.sha256")
        mkdir "$unpacked/$target"
        tar -xzf "$archives/$archive" -C "$unpacked/$target"
    fi
    echo "== $kind $client_platform (from $archive)"
    case $kind in
        vscode)
            npm run --silent package:platform --prefix "$root/clients/vscode" -- \
                --target "$client_platform" --server "$unpacked/$target" \
                --out "$out/tandem-$version-$client_platform.vsix"
            ;;
        npm)
            node "$root/clients/npm/pack.mjs" --version "$version" --target "$client_platform" \
                --binaries "$unpacked/$target" --out "$out"
            ;;
    esac
done
ls -l "$out"
