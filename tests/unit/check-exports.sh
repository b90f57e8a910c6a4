#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libtracevisor.so exports exactly the functions its public headers declare
# (include/tracevisor/*.h, all under the umbrella tracevisor.h), each one
# used by a client program, and no more of them than doc/architecture.md
# allows:
#   - every topic header of include/tracevisor/ is included by tracevisor.h;
#   - exported == declared == listed in lib/libtracevisor.map, each with the
#     version node (no internal helper leaks, nothing declared is missing);
#   - every exported function is used by a client: the CLI (undefined
#     symbols of build/obj/tools/*.o) or the sources of examples/, bench/
#     and guest/ (a function only the library or its unit tests use belongs
#     in an internal header: lib/tv_internal.h, kvm/kvm_recorder.h, ...);
#   - doc/architecture.md's sentence "libtracevisor.so exports N functions
#     (at most M)" has N the exported count and N <= M: M is the limit,
#     stated there only; "libtracevisor-ust.so exports K functions" too.
# Names each difference.
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
BUILD=${TV_BUILD:-build}
SO=$BUILD/libtracevisor.so.0
DOC=doc/architecture.md
[ -f "$SO" ] || { echo "no $SO: run make first" >&2; exit 77; }
aux=$(mktemp)
trap 'rm -f "$aux"' EXIT
bad=0

# Function names @header's declarations give, read from cc -aux-info
# ($1: the header to parse, $2: the path pattern of the declaring files).
declared_in() {
	${CC:-cc} -fsyntax-only -aux-info "$aux" -Iinclude -x c "$1" || return 1
	grep -E "/\\* $2" "$aux" | grep -v ' static ' |
		sed -E 's/\(.*//; s/.*[ *]([A-Za-z_][A-Za-z0-9_]*) *$/\1/' | sort -u
}
exported_by() {	# so, version-node prefix
	nm -D --defined-only "$1" | awk '$2 ~ /[TDBRWVGSi]/ {print $3}' | sed 's/@.*//' |
		grep -v "^$2" | sort -u
}
# $declared against $exported, each difference named ($1: the headers, $2: the map).
compare() {
	for s in $(comm -23 <(echo "$declared") <(echo "$exported")); do
		echo "declared in $1 but not exported: $s ($2, or not defined)"; bad=1
	done
	for s in $(comm -13 <(echo "$declared") <(echo "$exported")); do
		echo "exported but not declared in $1: $s"; bad=1
	done
}

# The umbrella includes every topic header (ust.h is libtracevisor-ust's).
for h in include/tracevisor/*.h; do
	b=${h#include/}
	case $b in tracevisor/tracevisor.h | tracevisor/ust.h) continue ;; esac
	grep -q "^#include <$b>" include/tracevisor/tracevisor.h ||
		{ echo "$h is not included by include/tracevisor/tracevisor.h"; bad=1; }
done

declared=$(declared_in include/tracevisor/tracevisor.h 'include/tracevisor/') ||
	{ echo "cannot parse include/tracevisor/tracevisor.h"; exit 1; }
exported=$(exported_by "$SO" LIBTRACEVISOR_)
mapped=$(sed -n '/global:/,/local:/p' lib/libtracevisor.map | grep -oE '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;' |
	tr -d ' \t;' | sort -u)
compare "the public headers" lib/libtracevisor.map
for s in $(comm -3 <(echo "$declared") <(echo "$mapped") | tr -d '\t'); do
	echo "lib/libtracevisor.map and the public headers differ on: $s"; bad=1
done
unversioned=$(nm -D --defined-only "$SO" | awk '$2 == "T" && $3 !~ /@@LIBTRACEVISOR_/ {print $3}')
for s in $unversioned; do echo "exported without a version: $s"; bad=1; done

# Every exported function has a client.
[ -n "$(ls "$BUILD"/obj/tools/*.o 2>/dev/null)" ] || { echo "no $BUILD/obj/tools/*.o: run make first" >&2; exit 77; }
used=$( { nm -u "$BUILD"/obj/tools/*.o | awk '{print $2}'
	grep -rhoE --include='*.[ch]' '\btv_[A-Za-z0-9_]+' examples bench guest; } | sort -u)
for s in $(comm -23 <(echo "$exported") <(echo "$used")); do
	echo "exported but used by no client (tools/, examples/, bench/, guest/): $s (move it to an internal header)"; bad=1
done

# The figures of doc/architecture.md.
n=$(echo "$exported" | grep -c .)
line=$(grep -oE 'libtracevisor\.so exports [0-9]+ functions \(at most [0-9]+\)' "$DOC")
if [ -z "$line" ]; then
	echo "$DOC does not say \"libtracevisor.so exports N functions (at most M)\""; bad=1
else
	said=$(sed -E 's/.*exports ([0-9]+) functions.*/\1/' <<<"$line")
	limit=$(sed -E 's/.*at most ([0-9]+)\)/\1/' <<<"$line")
	[ "$said" = "$n" ] || { echo "$DOC says libtracevisor.so exports $said functions; it exports $n"; bad=1; }
	[ "$n" -le "$limit" ] || { echo "libtracevisor.so exports $n functions, more than the $limit $DOC allows"; bad=1; }
fi
[ $bad = 0 ] || exit 1
echo "check-exports: libtracevisor.so exports the $n functions of the public headers (at most $limit), each used by a client"

# The same for the user-space tracer: libtracevisor-ust.so exports exactly
# what include/tracevisor/ust.h declares (guest/ust/libtracevisor-ust.map).
UST_SO=$BUILD/libtracevisor-ust.so.0
[ -f "$UST_SO" ] || { echo "no $UST_SO: run make first"; exit 1; }
declared=$(declared_in include/tracevisor/ust.h 'include/tracevisor/ust.h') ||
	{ echo "cannot parse include/tracevisor/ust.h"; exit 1; }
exported=$(exported_by "$UST_SO" LIBTRACEVISOR_UST_)
compare include/tracevisor/ust.h guest/ust/libtracevisor-ust.map
n=$(echo "$declared" | grep -c .)
said=$(grep -oE 'libtracevisor-ust\.so exports [0-9]+ functions' "$DOC" | grep -oE '[0-9]+')
[ "$said" = "$n" ] || { echo "$DOC says libtracevisor-ust.so exports ${said:-?} functions; ust.h declares $n"; bad=1; }
[ $bad = 0 ] || exit 1
echo "check-exports: libtracevisor-ust exports the $n functions of ust.h"
