#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-patched-xen.sh: Debian's Xen 4.17 source (apt-get source xen) with
# xen/patches/*.patch applied, built once and cached under
# $(scripts/cache-dir)/xen-build/KEY/xen (KEY: hash of the patches and the
# source version), outside the clone and under a lock (two runs build once).
# Prints the hypervisor's path.  Exits non-zero, saying what is missing,
# when it cannot be built (no deb-src entry, no flex/bison: `make deps`
# provides both).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$("$REPO/scripts/cache-dir")/xen-build
# apt-cache exits 100 without a deb-src entry: say so (set -e would not)
ver=$(apt-cache showsrc xen 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
[ -n "$ver" ] || { echo "build-patched-xen: apt-cache showsrc xen: no source entry for xen (run 'make deps': it adds deb-src entries)" >&2; exit 2; }
for t in flex bison python3 make gcc; do
	command -v $t >/dev/null || { echo "build-patched-xen: $t missing (run 'make deps')" >&2; exit 2; }
done
key=$( (echo "$ver"; cat "$REPO"/xen/patches/*.patch) | sha256sum | cut -c1-16)
out=$CACHE/$key
if [ -s "$out/xen" ]; then
	echo "$out/xen"
	exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/$key.lock"
flock 9 # a concurrent run may be building the same key: wait for it
if [ -s "$out/xen" ]; then
	echo "$out/xen"
	exit 0
fi
echo "build-patched-xen: building Xen $ver with xen/patches (about 1-2 min, once per machine)" >&2
work=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -q "xen=$ver" >build.log 2>&1) ||
	{ tail -n 5 "$work/build.log" >&2; echo "apt-get source xen failed" >&2; exit 77; }
src=$(find "$work" -maxdepth 1 -type d -name 'xen-*' | head -n 1)
for p in "$REPO"/xen/patches/*.patch; do
	patch -d "$src" -p1 -s <"$p" || { echo "patch does not apply: $p" >&2; exit 1; }
done
make -C "$src/xen" olddefconfig >>"$work/build.log" 2>&1
make -C "$src/xen" -j"$(nproc)" >>"$work/build.log" 2>&1 ||
	{ tail -n 20 "$work/build.log" >&2; exit 1; }
mkdir -p "$out"
cp "$src/xen/xen" "$out/xen.tmp" && mv "$out/xen.tmp" "$out/xen"
echo "$out/xen"
