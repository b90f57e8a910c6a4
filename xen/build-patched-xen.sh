#!/bin/bash
# build-patched-xen.sh: Debian's Xen 4.17 source (apt-get source xen) with
# xen/patches/*.patch applied, built once and cached under
# .cache/xen-build/KEY/xen (KEY: hash of the patches and the source version).
# Prints the hypervisor's path.  Exit 77 when it cannot be built here
# (no deb-src entry, no flex/bison): callers skip.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$REPO/.cache/xen-build
ver=$(apt-cache showsrc xen 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1)
[ -n "$ver" ] || { echo "no deb-src entry for xen (add 'deb-src http://deb.debian.org/debian bookworm main')" >&2; exit 77; }
for t in flex bison python3 make gcc; do
	command -v $t >/dev/null || { echo "$t missing (apt-get install $t)" >&2; exit 77; }
done
key=$( (echo "$ver"; cat "$REPO"/xen/patches/*.patch) | sha256sum | cut -c1-16)
out=$CACHE/$key
if [ -s "$out/xen" ]; then
	echo "$out/xen"
	exit 0
fi
mkdir -p "$CACHE"
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
