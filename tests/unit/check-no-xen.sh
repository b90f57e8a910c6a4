#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A host without the Xen libraries builds and runs tracevisor: build in a
# scratch directory with pkg-config seeing everything but Xen's .pc files
# (so TV_WITH_XEN is detected as 0, as on a KVM-only host), then check that
# neither the CLI nor libtracevisor.so needs a libxen*.so, that a Xen
# session still decodes exactly as with the full build, and that
# `record --xen` fails with one line saying why.
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
FULL=${TV_BUILD:-build}
[ -x "$FULL/tracevisor" ] || { echo "no $FULL/tracevisor: run make first" >&2; exit 77; }
command -v pkg-config >/dev/null || { echo "pkg-config not installed" >&2; exit 77; }
# The build below decides TV_WITH_XEN itself, whatever an outer make passes.
unset MAKEFLAGS MFLAGS MAKELEVEL TV_WITH_XEN
tmp=${TV_TMP:-$(mktemp -d)}
B=$tmp/build-no-xen
pc=$tmp/pkgconfig
mkdir -p "$pc"
for p in libtracefs libtraceevent libzstd libvirt libvirt-qemu; do
	d=$(pkg-config --variable=pcfiledir "$p" 2>/dev/null) || continue
	ln -sf "$d/$p.pc" "$pc/$p.pc"
done
# Their Requires (libtraceevent's, ...) without Xen's.
for f in /usr/lib/x86_64-linux-gnu/pkgconfig/*.pc /usr/lib/pkgconfig/*.pc /usr/share/pkgconfig/*.pc; do
	[ -e "$f" ] || continue
	case ${f##*/} in xen*) continue ;; esac
	[ -e "$pc/${f##*/}" ] || ln -s "$f" "$pc/${f##*/}"
done
if ! PKG_CONFIG_LIBDIR=$pc PKG_CONFIG_PATH= make -s -j2 BUILD="$B" "$B/tracevisor" >"$tmp/make.log" 2>&1; then
	tail -n 30 "$tmp/make.log"
	echo "FAIL: the build without the Xen libraries failed"
	exit 1
fi
fail() { echo "FAIL: $*"; exit 1; }
grep -q -- '-DTV_HAVE_XEN' "$tmp/make.log" && fail "TV_WITH_XEN was not detected as 0"
for f in "$B/tracevisor" "$B/libtracevisor.so.0"; do
	if ldd "$f" | grep -i 'libxen'; then fail "${f##*/} needs libxen without Xen support"; fi
	ldd "$f" | grep -q 'not found' && fail "${f##*/} misses a library: $(ldd "$f" | grep 'not found')"
done
nm -u "$B"/obj/*/*.o | grep -E ' (xc_|xencall_|xenevtchn_|xenforeignmemory_|xtl_|xs_)' &&
	fail "an object still calls libxen"

# A Xen session decodes, reports and is analysed as with the full build.
for t in "$FULL" "$B"; do
	rm -rf "$tmp/x"
	"$t/tracevisor" import xentrace --cpu-khz 2400000 tests/samples/xen-two-cpus.xentrace -o "$tmp/x" \
		>/dev/null 2>&1 || fail "$t/tracevisor import xentrace failed"
	"$t/tracevisor" report "$tmp/x" >"$tmp/report.${t##*/}" 2>&1 || fail "$t/tracevisor report failed"
	"$t/tracevisor" stat "$tmp/x" >"$tmp/stat.${t##*/}" 2>&1 || fail "$t/tracevisor stat failed"
done
[ -s "$tmp/report.${FULL##*/}" ] || fail "empty report of the Xen sample"
cmp -s "$tmp/report.${FULL##*/}" "$tmp/report.${B##*/}" || fail "report of the Xen sample differs without Xen support"
cmp -s "$tmp/stat.${FULL##*/}" "$tmp/stat.${B##*/}" || fail "stat of the Xen sample differs without Xen support"

# Recording Xen: one clear line, non-zero, nothing left behind.
err=$("$B/tracevisor" record --xen -o "$tmp/s" -- true 2>&1 >/dev/null) && fail "record --xen succeeded without Xen support"
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "record --xen said more than one line: $err"
case $err in *"built without"*libxen*) ;; *) fail "record --xen error does not say why: $err" ;; esac
[ -e "$tmp/s" ] && fail "record --xen left $tmp/s behind"
echo "check-no-xen: built without libxen ($(ldd "$B/tracevisor" | wc -l) libraries), Xen sample reports the same; record --xen: $err"
