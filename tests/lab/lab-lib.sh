# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2012
# Helpers for tests/lab/lab: Debian package cache, file-tree and cpio
# assembly, shared-library collection. Sourced by `lab`; needs LAB_DIR
# (this directory) and CACHE (the cache root) to be set.

log() { printf 'lab: %s\n' "$*" >&2; }

# Infrastructure failure (not the SCRIPT's): exit 125, like `git bisect run`
# uses for "cannot test", so callers can tell it apart from SCRIPT statuses.
die() {
	printf 'lab: error: %s\n' "$*" >&2
	exit 125
}

# Install host-side tools only when missing (never the guest packages).
ensure_host_tools() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	command -v cpio >/dev/null || missing+=(cpio)
	command -v depmod >/dev/null || missing+=(kmod)
	command -v gzip >/dev/null || missing+=(gzip)
	command -v flock >/dev/null || missing+=(util-linux)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing host tools: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 ||
		die "cannot install ${missing[*]} on the host"
}

# The kernel package that linux-image-amd64 currently points at.
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}

# Fill the associative array VER (package -> candidate version) for "$@".
declare -A VER
resolve_versions() {
	local line pkg=""
	while IFS= read -r line; do
		case $line in
		[!\ ]*:) pkg=${line%:} ;;
		*Candidate:*) VER[$pkg]=${line##*Candidate: } ;;
		esac
	done < <(apt-cache policy "$@" 2>/dev/null)
	for pkg in "$@"; do
		case ${VER[$pkg]:-} in
		"" | "(none)") die "no candidate version for package $pkg (apt-get update?)" ;;
		esac
	done
}

# Download (once) and extract (once) a package; print the extraction dir.
# The deb is never installed: dpkg-deb -x into the cache only.
pkg_tree() {
	local pkg=$1 ver=${VER[$1]} dir deb
	dir=$CACHE/x/${pkg}_${ver//:/%3a}
	if [ ! -e "$dir/.done" ]; then
		# one lock per package and version: two lab runs (CI and a
		# developer, two clones) sharing the cache download it once
		mkdir -p "$CACHE/x"
		exec 8>"$dir.lock"
		flock 8
		if [ ! -e "$dir/.done" ]; then
			deb=$(fetch_deb "$pkg" "$ver") || exit 125
			rm -rf "$dir" && mkdir -p "$dir"
			dpkg-deb -x "$deb" "$dir" || die "cannot extract $deb"
			touch "$dir/.done"
		fi
		exec 8>&-
	fi
	printf '%s\n' "$dir"
}

fetch_deb() {
	local pkg=$1 ver=$2 f
	f=$(ls "$CACHE/debs/${pkg}_${ver//:/%3a}"_*.deb 2>/dev/null | head -n1)
	if [ -z "$f" ]; then
		log "downloading $pkg $ver"
		mkdir -p "$CACHE/debs/tmp"
		# into a private directory first: a reader never sees a partial .deb
		local tmp
		tmp=$(mktemp -d "$CACHE/debs/tmp/dl.XXXXXX")
		(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root \
			"$pkg=$ver" >/dev/null 2>&1) || { rm -rf "$tmp"; die "apt-get download $pkg=$ver failed"; }
		mv "$tmp"/*.deb "$CACHE/debs/" && rm -rf "$tmp"
		f=$(ls "$CACHE/debs/${pkg}_${ver//:/%3a}"_*.deb 2>/dev/null | head -n1)
	fi
	[ -n "$f" ] || die "downloaded $pkg but cannot find its .deb"
	printf '%s\n' "$f"
}

is_elf() {
	[ -f "$1" ] && [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = 177ELF ]
}

# The libraries tracevisor opens with dlopen() where it uses them
# (lib/util/dl.c, kvm/bpf_dl.c, host/serve_dl.c, lib/format/compress.c,
# tools/top_screen.c): ldd cannot see them, the lab's machines need them.
TV_DLOPEN_LIBS="libbpf.so.1 libzstd.so.1 libssl.so.3 libcrypto.so.3 libcrypt.so.1 libyaml-0.so.2 libjson-c.so.5 libncursesw.so.6 libtinfo.so.6"

# Their paths on the host (x86-64), for the ELF files given when tracevisor's are among them.
dlopen_deps() {
	local f so
	for f in "$@"; do
		case ${f##*/} in
		tracevisor | libtracevisor.so*)
			for so in $TV_DLOPEN_LIBS; do
				ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }'
			done
			return ;;
		esac
	done
}

# Absolute paths of the shared libraries (and the ELF interpreter) that the
# given ELF files need, as resolved by the host's ldd. LIB_PATH may add
# directories (extracted debs) to the search.
lib_deps() {
	lib_deps_all "$@" | sort -u
}

lib_deps_all() {
	local f extra LDD_ERR
	LDD_ERR=$(mktemp)
	# shellcheck disable=SC2064 # the file's name now
	trap "rm -f '$LDD_ERR'" RETURN
	extra=$(dlopen_deps "$@")
	# shellcheck disable=SC2086 # paths without spaces, one per word
	[ -n "$extra" ] && set -- "$@" $extra && printf '%s\n' $extra
	for f in "$@"; do
		is_elf "$f" || continue
		# static ELF files (tracevisor-agent, tv-testvmm): ldd fails, no
		# libraries; tracevisor's own failing is said (tests/lab/lab,
		# opt_libs_check)
		{ LD_LIBRARY_PATH=${LIB_PATH:-} ldd "$f" 2>"$LDD_ERR" ||
			case ${f##*/} in tracevisor | libtracevisor.so*)
				log "warning: ldd $f failed: $(tr '\n' ' ' <"$LDD_ERR" | cut -c1-300)" ;;
			esac; } | while IFS= read -r line; do
			case $line in
			*"=> not found"*) log "warning: $f needs ${line%% =>*} which is not on the host" ;;
			esac
			printf '%s\n' "$line"
		done
	done | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while IFS= read -r lib; do
		printf '%s\n' "$lib"
		# glibc dlopen()s libgcc_s for the unwinding in pthread_exit() and
		# pthread_cancel(), which ldd cannot see: without it a threaded
		# program aborts there (trace-cmd agent: "libgcc_s.so.1 must be
		# installed for pthread_exit to work")
		if [ "${lib##*/}" = libc.so.6 ] && [ -e "${lib%/*}/libgcc_s.so.1" ]; then
			printf '%s\n' "${lib%/*}/libgcc_s.so.1"
		fi
	done | sort -u
}

# Copy libraries into ROOT under their own path, merged-/usr style
# (/lib/x → ROOT/usr/lib/x), dereferencing symlinks. Paths under SKIP_PREFIX
# under any of SKIP_PREFIXES (build/, shipped
# as /opt/tracevisor) are left out.
install_libs() {
	local root=$1 lib dest p
	shift
	for lib in "$@"; do
		for p in ${SKIP_PREFIXES:-}; do
			case $lib in "$p"/*) continue 2 ;; esac
		done
		case $lib in
		"$CACHE"/x/*) continue ;; # from an extracted deb: copied with its tree
		/usr/*) dest=$root$lib ;;
		*) dest=$root/usr$lib ;;
		esac
		[ -e "$dest" ] && continue
		mkdir -p "${dest%/*}" || die "cannot create ${dest%/*}"
		cp -L "$lib" "$dest" || die "cannot copy $lib"
	done
}

# Copy ELF files and everything they link against into ROOT.
install_elf_with_libs() {
	local root=$1
	shift
	mapfile -t _libs < <(lib_deps "$@")
	install_libs "$root" "${_libs[@]}"
}

# A skeleton merged-/usr root with busybox and its applets.
make_skeleton() {
	local root=$1 bb=$2 a
	mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{dev,proc,sys,out,tmp,run,root,etc,lab,opt,mnt,var}
	ln -s usr/bin "$root/bin"
	ln -s usr/sbin "$root/sbin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	cp "$bb" "$root/usr/bin/busybox"
	for a in $("$bb" --list); do
		[ -e "$root/usr/bin/$a" ] || ln -s busybox "$root/usr/bin/$a"
	done
	echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
	echo "root:x:0:" >"$root/etc/group"
	# busybox has no ldd; glibc's loader can list a binary's libraries
	# shellcheck disable=SC2016 # $f belongs to the generated script
	printf '#!/bin/sh\nfor f; do echo "$f:"; /lib64/ld-linux-x86-64.so.2 --list "$f"; done\n' \
		>"$root/usr/bin/ldd"
	chmod 755 "$root/usr/bin/ldd"
}

# Copy the modules named in "$@" (module names, - or _) and their
# dependencies from KTREE (an extracted kernel deb) into ROOT, and write
# ROOT/lab/modules: the .ko paths in load order (dependencies first).
install_modules() {
	local root=$1 ktree=$2 kver=$3 m
	shift 3
	local mdir=$ktree/lib/modules/$kver
	[ -e "$mdir/modules.dep" ] || depmod -b "$ktree" "$kver" || die "depmod failed"
	mkdir -p "$root/usr/lib/modules/$kver"
	for m in "$@"; do
		awk -v want="$m" '
			function norm(s) { gsub("-", "_", s); return s }
			{ p = $1; sub(":$", "", p); n = p; sub(".*/", "", n); sub("\\.ko.*$", "", n)
			  if (norm(n) != norm(want)) next
			  for (i = NF; i >= 2; i--) print $i   # deps, most basic first
			  print p; found = 1; exit }
			END { if (!found) exit 1 }' "$mdir/modules.dep" ||
			grep -q "/${m//-/[-_]}\.ko" "$mdir/modules.builtin" ||
			die "module $m is neither in modules.dep nor built in"
	done | awk '!seen[$0]++' >"$root/lab/modules"
	while IFS= read -r m; do
		mkdir -p "$root/usr/lib/modules/$kver/${m%/*}"
		cp "$mdir/$m" "$root/usr/lib/modules/$kver/$m"
	done <"$root/lab/modules"
	echo "$kver" >"$root/lab/kver"
}

# The uncompressed ELF vmlinux inside a bzImage (like the kernel's
# scripts/extract-vmlinux). Booting it directly (QEMU's PVH entry; Xen's
# dom0 ELF loader) skips the xz decompression that costs seconds under TCG.
extract_vmlinux() {
	local bz=$1 out=$2 magic unpack off
	for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
		unpack=${magic%%:*}
		# shellcheck disable=SC2013 # offsets are single words
		for off in $(LC_ALL=C grep -obUaP "${magic#*:}" "$bz" 2>/dev/null | cut -d: -f1); do
			tail -c +$((off + 1)) "$bz" | "$unpack" -dc >"$out" 2>/dev/null
			is_elf "$out" && return 0
		done
	done
	rm -f "$out"
	return 1
}

# newc cpio of directory ROOT on stdout, owned by root.
cpio_of() {
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet)
}

# Hash of the lab's own sources: part of every image cache key.
lab_sources_hash() {
	(cd "$LAB_DIR" && cat lab lab-lib.sh init lab-guest lab-domu xlinfo.c lab-chan.c) | sha256sum | cut -c1-16
}
