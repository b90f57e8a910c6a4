#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libtracevisor.so exports exactly the functions include/tracevisor/tracevisor.h
# declares: every one of them (lib/libtracevisor.map is not behind the header)
# and nothing else (no internal helper leaks).  Names each difference.
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
SO=${TV_BUILD:-build}/libtracevisor.so.0
[ -f "$SO" ] || { echo "no $SO: run make first" >&2; exit 77; }
aux=$(mktemp)
trap 'rm -f "$aux"' EXIT
${CC:-cc} -fsyntax-only -aux-info "$aux" -Iinclude -x c include/tracevisor/tracevisor.h ||
	{ echo "cannot parse include/tracevisor/tracevisor.h"; exit 1; }
declared=$(grep 'include/tracevisor/tracevisor.h' "$aux" | grep -v ' static ' |
	sed -E 's/\(.*//; s/.*[ *]([A-Za-z_][A-Za-z0-9_]*) *$/\1/' | sort -u)
exported=$(nm -D --defined-only "$SO" | awk '$2 ~ /[TDBRWVGSi]/ {print $3}' | sed 's/@.*//' |
	grep -v '^LIBTRACEVISOR_' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
bad=0
for s in $missing; do echo "declared in the public header but not exported: $s (lib/libtracevisor.map, or not defined)"; bad=1; done
for s in $extra; do echo "exported but not in the public header: $s"; bad=1; done
# Every exported function carries the version node.
unversioned=$(nm -D --defined-only "$SO" | awk '$2 == "T" && $3 !~ /@@LIBTRACEVISOR_/ {print $3}')
for s in $unversioned; do echo "exported without a version: $s"; bad=1; done
[ $bad = 0 ] || exit 1
echo "check-exports: $(echo "$exported" | wc -l) symbols exported, the $(echo "$declared" | wc -l) functions of the public header"

# The same for the user-space tracer: libtracevisor-ust.so exports exactly
# what include/tracevisor/ust.h declares (guest/ust/libtracevisor-ust.map).
UST_SO=${TV_BUILD:-build}/libtracevisor-ust.so.0
[ -f "$UST_SO" ] || { echo "no $UST_SO: run make first"; exit 1; }
${CC:-cc} -fsyntax-only -aux-info "$aux" -Iinclude -x c include/tracevisor/ust.h ||
	{ echo "cannot parse include/tracevisor/ust.h"; exit 1; }
declared=$(grep 'include/tracevisor/ust.h' "$aux" | grep -v ' static ' |
	sed -E 's/\(.*//; s/.*[ *]([A-Za-z_][A-Za-z0-9_]*) *$/\1/' | sort -u)
exported=$(nm -D --defined-only "$UST_SO" | awk '$2 ~ /[TDBRWVGSi]/ {print $3}' | sed 's/@.*//' |
	grep -v '^LIBTRACEVISOR_UST_' | sort -u)
for s in $(comm -23 <(echo "$declared") <(echo "$exported")); do
	echo "declared in include/tracevisor/ust.h but not exported: $s (guest/ust/libtracevisor-ust.map)"; bad=1
done
for s in $(comm -13 <(echo "$declared") <(echo "$exported")); do
	echo "libtracevisor-ust exports what ust.h does not declare: $s"; bad=1
done
[ $bad = 0 ] || exit 1
echo "check-exports: libtracevisor-ust exports the $(echo "$declared" | wc -l) functions of ust.h"
