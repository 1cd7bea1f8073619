#!/usr/bin/env bash
# Writes a release archive: archive.sh TARGET BIN_DIR OUT_DIR [VERSION]
#
# OUT_DIR/tandem-VERSION-TARGET.tar.gz holds, flat (no top folder), the two binaries from
# BIN_DIR (`tandem` and `tandem-confine`, the OS sandbox's launcher, which `tandem` looks for
# beside its own executable) and README.md, LICENSE-MIT and LICENSE-APACHE from the repository
# root. Beside it, OUT_DIR/tandem-VERSION-TARGET.tar.gz.sha256 in `sha256sum` format. VERSION
# defaults to the workspace's (version.sh). Prints the archive's path.
#
# The archive is reproducible: the same inputs give the same tar stream on every machine
# (names in sorted order, every file's mtime the SOURCE_DATE_EPOCH or else the commit's time,
# owner and group 0 with no names, mode 0755 for the binaries and 0644 for the texts, no gzip
# name or timestamp). The tar is written by Python's tarfile rather than by `tar`, so that macOS
# (BSD tar) and Linux (GNU tar) make the same one; the gzip bytes can still differ where the
# zlib does.
set -euo pipefail

usage() {
    echo "usage: $0 TARGET BIN_DIR OUT_DIR [VERSION]" >&2
    exit 2
}
if [ $# -lt 3 ] || [ $# -gt 4 ]; then usage; fi
target=$1
bin_dir=$2
out_dir=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${4:-$("$here/version.sh")}

if ! [[ "$target" =~ ^[a-z0-9_]+(-[a-z0-9_.]+)+$ ]]; then
    echo "archive.sh: '$target' is not a target triple (e.g. x86_64-unknown-linux-musl)" >&2
    exit 2
fi
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "archive.sh: '$version' is not a version of the form X.Y.Z" >&2
    exit 2
fi

missing=()
for binary in tandem tandem-confine; do
    if [ ! -f "$bin_dir/$binary" ] || [ ! -x "$bin_dir/$binary" ]; then
        missing+=("$bin_dir/$binary (an executable file)")
    fi
done
for text in README.md LICENSE-MIT LICENSE-APACHE; do
    if [ ! -f "$root/$text" ]; then
        missing+=("$root/$text")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "archive.sh: cannot archive, missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi

if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    mtime=$SOURCE_DATE_EPOCH
elif ! mtime=$(git -C "$root" log -1 --format=%ct 2>/dev/null); then
    echo "archive.sh: set SOURCE_DATE_EPOCH (the files' time, in seconds since 1970): $root is not a Git checkout whose commit time could stand in" >&2
    exit 1
fi
if ! [[ "$mtime" =~ ^[0-9]+$ ]]; then
    echo "archive.sh: SOURCE_DATE_EPOCH must be whole seconds since 1970, not '$mtime'" >&2
    exit 2
fi

mkdir -p "$out_dir"
name="tandem-$version-$target.tar.gz"
python3 - "$out_dir/$name" "$mtime" \
    "tandem=$bin_dir/tandem" "tandem-confine=$bin_dir/tandem-confine" \
    "README.md=$root/README.md" "LICENSE-MIT=$root/LICENSE-MIT" \
    "LICENSE-APACHE=$root/LICENSE-APACHE" <<'PYTHON'
import gzip
import hashlib
import os
import sys
import tarfile

archive, mtime, members = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
binaries = {"tandem", "tandem-confine"}
partial = archive + ".partial"
with open(partial, "wb") as raw:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=mtime) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name, path in sorted(member.split("=", 1) for member in members):
                info = tarfile.TarInfo(name)
                info.size = os.path.getsize(path)
                info.mtime = mtime
                info.mode = 0o755 if name in binaries else 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with open(path, "rb") as source:
                    tar.addfile(info, source)
os.replace(partial, archive)

digest = hashlib.sha256()
with open(archive, "rb") as written:
    for block in iter(lambda: written.read(1 << 20), b""):
        digest.update(block)
with open(archive + ".sha256", "w") as sums:
    sums.write(f"{digest.hexdigest()}  {os.path.basename(archive)}\n")
PYTHON
printf '%s\n' "$out_dir/$name"
