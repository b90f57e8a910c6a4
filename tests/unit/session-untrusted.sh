#!/bin/bash
# Sessions as untrusted input (issue #11, item 9), unprivileged but run with
# the CLI: every command gets one clear error naming the file, never a hang
# (timeout 20 s per command), for a FIFO, a symlink to /dev/null, a symlink
# out of the session and a garbage header_page.  (A real recording killed
# with SIGKILL, which needs root: tests/host/record-killed.sh.)
. "$(dirname "$0")/../host/lib.bash"
cd "$TV_ROOT" || exit 1
SAMPLE=tests/samples/svm-exits
mk() { rm -rf "$TV_TMP/$1"; cp -r "$SAMPLE" "$TV_TMP/$1"; echo "$TV_TMP/$1"; }

expect_error() {	# session pattern what
	local s=$1 pat=$2 what=$3 cmd out rc
	for cmd in "report" "report --json" "stat" "sync" "export --format ctf -o $TV_TMP/out.ctf" \
		   "export --format perfetto-json -o $TV_TMP/out.json" \
		   "export --format perfetto -o $TV_TMP/out.pftrace" \
		   "export --format html -o $TV_TMP/out.html"; do
		rm -rf "$TV_TMP/out.ctf" "$TV_TMP/out.json" "$TV_TMP/out.pftrace" "$TV_TMP/out.html"
		out=$(timeout 20 "$TV" $cmd "$s" 2>&1 >/dev/null); rc=$?
		[ $rc = 124 ] && fail "$what: tracevisor $cmd hangs"
		[ $rc = 1 ] || fail "$what: tracevisor $cmd exit $rc: $out"
		echo "$out" | grep -q "$pat" || fail "$what: tracevisor $cmd says: $out"
	done
}

s=$(mk fifo); rm "$s/host/cpu0.raw"; mkfifo "$s/host/cpu0.raw"
expect_error "$s" "Not a regular file in the session: path=\"$s/host/cpu0.raw\", type=FIFO" FIFO
s=$(mk dev); rm "$s/host/cpu1.raw"; ln -s /dev/null "$s/host/cpu1.raw"
expect_error "$s" "Not a regular file in the session: path=\"$s/host/cpu1.raw\", type=character device" device
s=$(mk out); cp "$s/host/cpu0.raw" "$TV_TMP/outside.raw"; rm "$s/host/cpu0.raw"
ln -s "$TV_TMP/outside.raw" "$s/host/cpu0.raw"
expect_error "$s" "File outside the session: path=\"$s/host/cpu0.raw\" is a symlink leading out" "symlink out"
s=$(mk fifo-fmt); f=$(ls -d "$s"/host/events/kvm/kvm_exit)/format; rm "$f"; mkfifo "$f"
expect_error "$s" "Not a regular file in the session: path=\"$f\", type=FIFO" "FIFO format"
s=$(mk fifo-meta); rm "$s/host/meta"; mkfifo "$s/host/meta"
expect_error "$s" "Not a regular file in the session: path=\"$s/host/meta\"" "FIFO meta"
s=$(mk hp); head -c 300 /dev/urandom | base64 >"$s/host/header_page"
expect_error "$s" "Corrupt header page format: path=\"$s/host/header_page\"" "garbage header_page"
s=$(mk hp2); sed -i 's/offset:16;/offset:24;/' "$s/host/header_page"
expect_error "$s" "Corrupt header page format: path=\"$s/host/header_page\"" "header_page data offset"
# A symlink inside the session is fine.
s=$(mk in); mv "$s/host/cpu0.raw" "$s/cpu0.data"; ln -s ../cpu0.data "$s/host/cpu0.raw"
"$TV" report "$s" | cmp -s - "$SAMPLE/expected.txt" || fail "symlink inside the session: report differs"
# A comm holding a newline (anyone may name a task so: prctl(PR_SET_NAME))
# splits its saved_cmdlines line: the tasks after it keep their names.
s=$(mk comm-nl); { printf '999 \033[2Jhost\nX\233\n'; cat "$SAMPLE/host/saved_cmdlines"; } >"$s/host/saved_cmdlines"
"$TV" report "$s" | cmp -s - "$SAMPLE/expected.txt" ||
	fail "a comm with a newline in saved_cmdlines: report differs: $("$TV" report "$s" | head -n 1)"
echo "untrusted sessions refused with one clear error; a comm with a newline spoils no other" >&2
