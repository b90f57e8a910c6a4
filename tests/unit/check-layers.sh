#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The layering of doc/architecture.md, checked on the built objects: every
# undefined symbol of build/obj/FOLDER/*.o is resolved to the object that
# defines it, and a reference from a folder to one it may not use fails,
# naming the file and the symbol.  The CLI (tools/) may use only what the
# public header declares; the agent (guest/) only lib/format/proto.c.
#   lib/                     nothing above it; inside, its roles one way:
#                            util < format < xen, ust < reader (no cycle)
#   kvm/, xen/               lib/ (not each other)
#   sync/ (clock estimation) lib/ kvm/ xen/
#   analysis/ (stat tables)  lib/ kvm/ xen/ sync/
#   export/ (CTF, Perfetto)  lib/ kvm/ xen/ sync/ analysis/
#   host/                    lib/ kvm/ xen/ sync/ analysis/
#   tools/                   include/tracevisor/tracevisor.h (the public headers) only
#   guest/                   lib/format/proto.c, lib/util/elf_sym.c, lib/util/write_all.c, lib/ust/ust_consumer.c and lib/ust/ust_listen.c (libc only)
#   guest/ust/               lib/ust/ust_abi.h, include/tracevisor/ust.h (libc, liburcu)
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
OBJ=${TV_BUILD:-build}/obj
[ -d "$OBJ/lib" ] || { echo "no objects in $OBJ: run make first" >&2; exit 77; }
command -v nm >/dev/null || { echo "nm (binutils) not installed" >&2; exit 77; }

allowed() {	# from to
	case $1 in
	lib) [ "$2" = lib ] ;;
	kvm | xen) [ "$2" = lib ] ;;
	sync) case $2 in lib | kvm | xen) true ;; *) false ;; esac ;;
	analysis) case $2 in lib | kvm | xen | sync) true ;; *) false ;; esac ;;
	export) case $2 in lib | kvm | xen | sync | analysis) true ;; *) false ;; esac ;;
	host) case $2 in lib | kvm | xen | sync | analysis) true ;; *) false ;; esac ;;
	tools) true ;;	# checked against the public header below
	*) false ;;
	esac
}

# An object's source path; generated sources (build/gen/FOLDER/...) are
# their folder's.
layer_file() {
	local f=${1#"$OBJ"/}
	case $f in
	*/gen/*) f=${f#*/gen/} ;;
	esac
	echo "$f"
}

# Objects of sources that still exist (a renamed source leaves its old .o).
objs=()
while IFS= read -r o; do
	src=${o#"$OBJ"/}
	[ -f "${src%.o}.c" ] && objs+=("$o")
done < <(find "$OBJ" -name '*.o' | sort)
[ ${#objs[@]} -gt 0 ] || { echo "no objects under $OBJ" >&2; exit 77; }

declare -A def
for o in "${objs[@]}"; do
	f=$(layer_file "$o")
	while read -r _ _ sym; do
		def[$sym]=$f
	done < <(nm --defined-only -g "$o" | awk 'NF == 3 && $2 ~ /[TDBRVWGS]/')
done

# The functions and variables the public headers declare (what tools/ may use).
declare -A public
aux=$(mktemp)
trap 'rm -f "$aux"' EXIT
${CC:-cc} -fsyntax-only -aux-info "$aux" -Iinclude -x c include/tracevisor/tracevisor.h 2>/dev/null ||
	{ echo "cannot parse include/tracevisor/tracevisor.h" >&2; exit 1; }
while read -r sym; do public[$sym]=1; done < <(
	grep '/\* include/tracevisor/' "$aux" | grep -v ' static ' |
		sed -E 's/\(.*//; s/.*[ *]([A-Za-z_][A-Za-z0-9_]*) *$/\1/')

bad=0 refs=0
for o in "${objs[@]}"; do
	file=$(layer_file "$o")
	from=${file%%/*}
	for sym in $(nm -u "$o" | awk '{print $2}'); do
		to_file=${def[$sym]:-}
		[ -n "$to_file" ] || continue	# libc, libtraceevent, ...
		to=${to_file%%/*}
		[ "$to" = "$from" ] && continue
		refs=$((refs + 1))
		if ! allowed "$from" "$to"; then
			echo "layer violation: ${file%.o}.c uses $sym from ${to_file%.o}.c ($from/ may not use $to/)"
			bad=$((bad + 1))
		elif [ "$from" = tools ] && [ -z "${public[$sym]:-}" ]; then
			echo "layer violation: ${file%.o}.c uses $sym from ${to_file%.o}.c, which the public header does not declare"
			bad=$((bad + 1))
		fi
	done
done

# Sources: no include reaching into another folder upwards, lib/reader/reader_internal.h
# only inside lib/, the agent on lib/format/proto.h, lib/util/elf_sym.h,
# lib/util/write_all.h, lib/ust/ust_consumer.h and lib/ust/ust_listen.h alone (libc-only files it builds in).
while IFS= read -r line; do
	file=${line%%:*}
	from=${file%%/*}
	inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
	case $inc in
	../*/*) to=${inc#../}; to=${to%%/*}
		allowed "$from" "$to" || { echo "layer violation: $file includes $inc ($from/ may not use $to/)"; bad=$((bad + 1)); } ;;
	esac
	case $inc in
	../*/*internal.h) echo "layer violation: $file includes $inc (a folder's internal header is for that folder)"
		bad=$((bad + 1)) ;;
	esac
	if { [ "$inc" = reader_internal.h ] || [ "$inc" = format_io.h ]; } && [ "$from" != lib ]; then
		echo "layer violation: $file includes $inc, lib/'s own (upper layers use lib/tv_internal.h)"
		bad=$((bad + 1))
	fi
	if [ "$from" = tools ] && [ "$inc" != tracevisor/tracevisor.h ] && [ "$inc" != cmd.h ]; then
		echo "layer violation: $file includes $inc (tools/ uses the public header only)"
		bad=$((bad + 1))
	fi
	if [ "$from" = guest ] && [ "$inc" != proto.h ] && [ "$inc" != elf_sym.h ] && [ "$inc" != ust_consumer.h ] &&
		[ "$inc" != ust_listen.h ] && [ "$inc" != write_all.h ] &&
		[ ! -f "guest/$inc" ]; then
		echo "layer violation: $file includes $inc (guest/ uses its own headers, lib/format/proto.h, lib/util/elf_sym.h, lib/util/write_all.h, lib/ust/ust_consumer.h and lib/ust/ust_listen.h only)"
		bad=$((bad + 1))
	fi
done < <(grep -H '^#include "' lib/*.[ch] lib/*/*.[ch] kvm/*.[ch] xen/*.[ch] sync/*.[ch] analysis/*.[ch] export/*.[ch] \
	host/*.[ch] tools/*.[ch] guest/*.[ch] 2>/dev/null)

# The user-space tracer (guest/ust/, linked into applications): its own
# headers, its public header and the shared-memory contract lib/ust/ust_abi.h
# only (and, outside the tree, libc and liburcu).  Its objects reference no
# other folder: the symbol check above already fails on any (guest/ may
# use nothing of the library's layers).
while IFS= read -r line; do
	file=${line%%:*}
	inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
	case $inc in
	tracevisor/ust.h | ust_abi.h) ;;
	*) [ -f "guest/ust/$inc" ] || {
		echo "layer violation: $file includes $inc (guest/ust/ uses its own headers, tracevisor/ust.h and lib/ust/ust_abi.h only)"
		bad=$((bad + 1)); } ;;
	esac
done < <(grep -H '^#include "' guest/ust/*.[ch] 2>/dev/null)

# lib/'s roles (lib/ROLE/*.c) use each other one way: the graph of which
# role's objects use which other's has no cycle (tsort finds one).
edges=$(for o in "${objs[@]}"; do
	file=$(layer_file "$o")
	case $file in lib/*/*) ;; *) continue ;; esac
	from=${file#lib/}; from=${from%%/*}
	for sym in $(nm -u "$o" | awk '{print $2}'); do
		to_file=${def[$sym]:-}
		case $to_file in lib/*/*) ;; *) continue ;; esac
		to=${to_file#lib/}; to=${to%%/*}
		[ "$to" = "$from" ] || echo "$from $to"
	done
done | sort -u)
if ! loop=$(tsort <<<"$edges" 2>&1 >/dev/null) || [ -n "$loop" ]; then
	echo "layer violation: lib/'s roles use each other in a loop:" $(grep -v 'input contains a loop' <<<"$loop" | sed 's/^tsort: //')
	bad=$((bad + 1))
fi

SRC_DIRS='lib kvm xen sync analysis export host tools guest'
# One name, one file: no source or folder header's name repeats across
# folders (the public topic headers are included as tracevisor/NAME.h).
while read -r n name; do
	echo "layer violation: $n files are named $name:" $(find $SRC_DIRS -name "$name" | sort)
	bad=$((bad + 1))
done < <(find $SRC_DIRS -name '*.[ch]' -printf '%f\n' | sort | uniq -dc)

if [ "$bad" -gt 0 ]; then
	echo "check-layers: $bad references against doc/architecture.md's direction"
	exit 1
fi
echo "check-layers: ${#objs[@]} objects, $refs references across folders, all downward"
