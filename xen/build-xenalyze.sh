#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-xenalyze.sh: Xen's own trace analyser, xenalyze, from Debian's Xen
# 4.17 source (apt-get source xen; Debian does not package it), built once
# and cached under $(scripts/cache-dir)/xenalyze/VERSION/xenalyze, under a
# lock.  The reference the Xen decoding is compared with
# (tests/e2e/xen-decode-hvm.sh).  Prints the binary's path; exits non-zero
# saying what is missing (no deb-src entry: `make deps` adds them).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$("$REPO/scripts/cache-dir")/xenalyze
ver=$(apt-cache showsrc xen 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
[ -n "$ver" ] || { echo "build-xenalyze: apt-cache showsrc xen: no source entry for xen (run 'make deps': it adds deb-src entries)" >&2; exit 2; }
command -v gcc >/dev/null || { echo "build-xenalyze: gcc missing" >&2; exit 2; }
out=$CACHE/$ver
if [ -x "$out/xenalyze" ]; then
	echo "$out/xenalyze"
	exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/$ver.lock"
flock 9 # a concurrent run may be building it: wait for it
if [ -x "$out/xenalyze" ]; then
	echo "$out/xenalyze"
	exit 0
fi
work=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -q --download-only "xen=$ver" >build.log 2>&1) ||
	{ tail -n 5 "$work/build.log" >&2; echo "build-xenalyze: apt-get source xen failed" >&2; exit 77; }
tar -C "$work" -xJf "$work"/xen_*.orig.tar.xz --wildcards '*/tools/xentrace/*' '*/tools/include/*' \
	'*/xen/include/public/*'
src=$(find "$work" -maxdepth 1 -type d -name 'xen-*' | head -n 1)
# the public headers as <xen/...>, where the tools' build installs them
mkdir -p "$work/inc" && cp -r "$src/xen/include/public" "$work/inc/xen"
gcc -O2 -w -I"$src/tools/xentrace" -I"$src/tools/include" -I"$work/inc" -D__XEN_TOOLS__ \
	-o "$work/xenalyze" "$src/tools/xentrace/xenalyze.c" "$src/tools/xentrace/mread.c" -lm \
	>>"$work/build.log" 2>&1 || { tail -n 20 "$work/build.log" >&2; exit 1; }
mkdir -p "$out"
cp "$work/xenalyze" "$out/xenalyze.tmp" && mv "$out/xenalyze.tmp" "$out/xenalyze"
echo "$out/xenalyze"
