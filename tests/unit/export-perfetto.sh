#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# export --format perfetto (Perfetto's protobuf TracePackets, issue #27):
# the output of the committed samples svm-exits, synced-multi (after sync)
# and xen-domu is decoded by protoc against doc/perfetto/trace.proto (our
# transcription of Perfetto's field numbers), replayed as trace_processor
# reads it (incremental clock, interned names, track descriptors) and
# compared with the session by tests/perfetto_check.py: per domain the
# events of report --json (names, timestamps), per CPU track report's
# count, per VM (KVM) and Xen domain and exit reason stat --json's count of
# exits, one sync instant per domain, flows from exits to guest CPUs.  Then
# the checker must fail on altered decodings (an event missing, a timestamp
# moved, an exit slice renamed), and a bad output path is one clear error.
# The decoded text of svm-exits and synced-multi is also golden
# (tests/unit/golden-outputs.sh).  Needs protoc (make deps); no root.
. "$(dirname "$0")/../host/lib.bash"
command -v protoc >/dev/null || skip "needs protoc (protobuf-compiler; make deps)"
command -v python3 >/dev/null || skip "needs python3"
cd "$TV_ROOT" || exit 1
T=$TV_TMP
CHECK="python3 tests/perfetto_check.py"

check_sample() {	# SAMPLE
	local s=$T/$1
	rm -rf "$s"; cp -r "tests/samples/$1" "$s"
	if [ -d "$s/guest-good" ]; then
		rm -rf "$s/sync"
		"$TV" sync "$s" >/dev/null || fail "$1: sync failed"
	fi
	"$TV" export -q --format perfetto -o "$s.pftrace" "$s" 2>"$T/err" || fail "$1: export: $(cat "$T/err")"
	[ -s "$T/err" ] && fail "$1: export said: $(cat "$T/err")"
	protoc --decode=perfetto.protos.Trace doc/perfetto/trace.proto <"$s.pftrace" >"$s.txt" 2>"$T/err" ||
		fail "$1: protoc cannot decode the export: $(head -c 300 "$T/err")"
	"$TV" report --json "$s" >"$s.jsonl" || fail "$1: report --json"
	"$TV" stat --json "$s" >"$s.stat.json" 2>/dev/null || fail "$1: stat --json"
	$CHECK "$s.txt" "$s.jsonl" "$s.stat.json" >"$s.check" 2>&1 || fail "$1: $(cat "$s.check")"
	sed "s/^/$1: /" "$s.check" >&2
}

check_sample svm-exits
check_sample synced-multi
check_sample xen-domu
grep -q "flows ended on the guest: 41" "$T/synced-multi.check" ||
	fail "synced-multi: not one flow per exit of vm good's vCPU 0: $(tail -n 1 "$T/synced-multi.check")"
grep -q "exit slices: 3055 in 7" "$T/xen-domu.check" ||
	fail "xen-domu: not stat's 3055 HVM exits of d1: $(tail -n 1 "$T/xen-domu.check")"

# The checker fails on what it checks.
must_fail() {	# WHAT SAMPLE PYTHON-EDIT (of the decoded text, in variable t)
	python3 -c "import sys; t = open(sys.argv[1]).read(); $3; open(sys.argv[2], 'w').write(t)" \
		"$T/$2.txt" "$T/bad.txt" || fail "cannot alter the decoding ($1)"
	cmp -s "$T/$2.txt" "$T/bad.txt" && fail "the alteration changed nothing ($1)"
	$CHECK "$T/bad.txt" "$T/$2.jsonl" "$T/$2.stat.json" >/dev/null 2>"$T/bad.err" &&
		fail "the checker passes a decoding with $1"
	grep -q FAIL "$T/bad.err" || fail "the checker names nothing for $1"
}
must_fail "an instant missing" synced-multi \
	"i = t.rindex('type: TYPE_INSTANT'); t = t[:i] + 'type: TYPE_SLICE_BEGIN' + t[i + 18:]"
must_fail "a timestamp moved" synced-multi \
	"import re; m = list(re.finditer(r'\n  timestamp: (\d+)\n', t))[-5]; t = t[:m.start(1)] + str(int(m.group(1)) + 1) + t[m.end(1):]"
must_fail "an exit slice renamed" svm-exits "t = t.replace('name: \"exit hlt\"', 'name: \"exit io\"', 1)"
must_fail "a Xen HVM exit renamed" xen-domu "t = t.replace('name: \"exit cpuid\"', 'name: \"exit msr\"', 1)"

out=$("$TV" export -q --format perfetto -o /nonexistent/dir/p.pftrace "$T/svm-exits" 2>&1) &&
	fail "export to a missing directory: exit 0"
echo "$out" | grep -q 'Cannot create output file: path="/nonexistent/dir/p.pftrace", errno=2' ||
	fail "export to a missing directory says: $out"
echo "export --format perfetto: three samples decode with protoc and match report and stat" >&2
