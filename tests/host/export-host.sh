#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Export a real host session: CTF read by babeltrace2 with nothing on
# stderr and exactly report's events in report's order, following Trace
# Compass's reader rules (tests/ctf_tc_check.py); Perfetto JSON that
# parses, with host CPU tracks; Perfetto protobuf that protoc decodes and
# tests/perfetto_check.py finds equal to report and stat.  Two sessions:
# 1. system calls of tv-syscalls, recorded on this host whatever its KVM;
# 2. kvm events of the test VMM, recorded on a real KVM (this host's when
#    usable, else the lab's nested L1: kvm_run in lib.bash, TV_HOST_KVM=0
#    forces L1) and exported here, whose Perfetto JSON also has the VMM's
#    VM and vCPU thread tracks.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
command -v babeltrace2 >/dev/null || skip "needs babeltrace2 (make deps)"

check_export() {	# SESSION FIELD_PATTERN WANT_VM_TRACKS(0|1)
local S=$1 T=$TV_TMP/x-${1##*/} n
mkdir -p "$T"
"$TV" report --json "$S" > "$T/report.json" || fail "report"
"$TV" export --format ctf -o "$T/ctf" "$S" || fail "export ctf"
babeltrace2 --clock-cycles "$T/ctf" > "$T/bt.txt" 2> "$T/bt.err" || fail "babeltrace2"
[ ! -s "$T/bt.err" ] || { cat "$T/bt.err"; fail "babeltrace2 wrote to stderr"; }
python3 "$TV_ROOT/tests/ctf_tc_check.py" "$T/ctf" || fail "CTF breaks Trace Compass's rules"
python3 -c 'import json,sys; [print(json.loads(l)["ts"]) for l in open(sys.argv[1])]' \
	"$T/report.json" > "$T/ts.report"
sed -E 's/^\[0*([0-9]+)\].*/\1/' "$T/bt.txt" > "$T/ts.bt"
n=$(wc -l < "$T/ts.report")
[ "$n" -gt 2000 ] || fail "only $n events recorded"
cmp -s "$T/ts.report" "$T/ts.bt" || fail "babeltrace2 count or order differs from report"
grep -q "$2" "$T/bt.txt" || fail "fields not decoded: no '$2' in babeltrace2's output"
grep -q 'sched:sched_switch: .*prev_comm = "' "$T/bt.txt" || fail "char arrays not strings"
echo "babeltrace2: $n events, same timestamps in the same order, no warnings"

# Wall-clock dates: the recorder's CLOCK_REALTIME markers make the CTF clock
# offset; babeltrace2's first and last events must fall within the
# recording's wall-clock span (session meta start_realtime_ns + duration).
"$TV" report "$S" > "$T/report.txt" || fail "report"
grep -qE 'ftrace:raw_data tracevisor clock_realtime seq=0 20[0-9-]{8}T' "$T/report.txt" ||
	fail "report shows no clock_realtime marker at the start"
babeltrace2 --clock-date --clock-gmt "$T/ctf" > "$T/bt-date.txt" || fail "babeltrace2 --clock-date"
python3 - "$T/bt-date.txt" "$S/host/meta" <<'PY' || fail "CTF wall-clock dates"
import calendar, re, sys
meta = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[2]) if "=" in l)
start = int(meta["start_realtime_ns"]) / 1e9
end = start + int(meta["duration_ns"]) / 1e9
lines = open(sys.argv[1]).read().splitlines()
def wall(line):
    m = re.match(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{9})\]", line)
    assert m, line[:80]
    y, mo, d, h, mi, s, ns = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, s)) + ns / 1e9
first, last = wall(lines[0]), wall(lines[-1])
# The marker follows tracing_on by microseconds; events before it (a
# fraction of a second at most) are from the same instant of starting.
assert start - 1 <= first <= start + 1, (first, start)
assert first <= last <= end + 1, (last, end)
print("CTF dates: first event %.6f s after start_realtime, last %.3f s before the end" %
      (first - start, end - last))
PY
# report --date: the same wall clock, first and last line, text and JSON.
"$TV" report --date "$S" > "$T/report-date.txt" || fail "report --date"
"$TV" report --json --date "$S" > "$T/report-date.json" || fail "report --json --date"
python3 - "$T/report-date.txt" "$T/report-date.json" "$T/bt-date.txt" <<'PY' || fail "report --date"
import json, re, sys
text = [re.search(r"\] (\S+Z): ", l).group(1) for l in open(sys.argv[1])]
js = [json.loads(l)["date"] for l in open(sys.argv[2])]
bt = [l[1:30] for l in open(sys.argv[3])]
assert text == js, "text and JSON dates differ"
# babeltrace2: "[2026-11-22 21:39:16.186612899]"; ours: "2026-11-22T21:39:16.186612899Z"
ours = [t.replace("T", " ")[:-1] for t in (text[0], text[-1])]
assert ours == [bt[0], bt[-1]], (ours, bt[0], bt[-1])
print("report --date: %d events, %s .. %s, as babeltrace2 --clock-date" % (len(text), text[0], text[-1]))
PY
out=$("$TV" report --date "$TV_ROOT/tests/samples/abs-ts" 2>&1 >/dev/null) && fail "report --date without a marker: exit 0"
echo "$out" | grep -q "No wall-clock marker at the start of the session: path=" ||
	fail "report --date without a marker: $out"

"$TV" export --format perfetto-json -o "$T/p.json" "$S" || fail "export perfetto-json"
python3 -m json.tool "$T/p.json" > /dev/null || fail "perfetto output is not JSON"
python3 - "$T/p.json" "$n" "$3" <<'PY' || fail "perfetto tracks"
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["args"]["name"] for e in d if e["ph"] == "M"]
events = sum(1 for e in d if e["ph"] == "i")
assert any(n.startswith("host CPU ") for n in names), names
vm = any(n.startswith("VM tv-testvmm") for n in names), any(n.startswith("vCPU") for n in names)
assert vm == ((True, True) if sys.argv[3] == "1" else (False, False)), (vm, names)
assert events == int(sys.argv[2]), "%d instants for %s events" % (events, sys.argv[2])
print("perfetto: tracks %s, %d events" % (names, events))
PY
# The protobuf export: decoded by protoc, the events report's, the exit
# slices stat's (tests/perfetto_check.py), and task slices from sched_switch.
if command -v protoc >/dev/null; then
	"$TV" export -q --format perfetto -o "$T/p.pftrace" "$S" || fail "export perfetto"
	protoc -I "$TV_ROOT/doc/perfetto" --decode=perfetto.protos.Trace trace.proto <"$T/p.pftrace" \
		>"$T/p.txt" || fail "protoc cannot decode the perfetto export"
	"$TV" stat --json "$S" >"$T/stat.json" 2>/dev/null || fail "stat --json"
	python3 "$TV_ROOT/tests/perfetto_check.py" "$T/p.txt" "$T/report.json" "$T/stat.json" >"$T/pf.check" ||
		fail "perfetto (protobuf) export: $(cat "$T/pf.check")"
	cat "$T/pf.check"
	grep -qE "task/running slice names: [1-9]" "$T/pf.check" || fail "perfetto: no task slice from sched_switch"
	echo "perfetto: $(( $(wc -c <"$T/p.pftrace") / n )) bytes/event, JSON $(( $(wc -c <"$T/p.json") / n ))"
else
	echo "note: protoc not installed: the perfetto (protobuf) export is not checked" >&2
fi
}

S=$TV_TMP/sys
"$TV" record -q -o "$S" -e syscalls:sys_enter_lseek -e sched:sched_switch -e raw_syscalls -- \
	"$SYSCALLS" --seeks 1000 --quiet || fail "record"
check_export "$S" 'syscalls:sys_enter_lseek: .*{ .*offset = 4660' 0

# shellcheck disable=SC2016 # expanded where the script runs
kvm_run kvm '"$TV" record -q -o "$OUT/s" -e kvm -e sched:sched_switch -e raw_syscalls -- "$VMM" --outs 1000 --quiet'
check_export "$KVM_OUT/s" 'kvm:kvm_pio: .*{ .*port = 4660' 1
# Where kvm_exit fires (L1's SVM), each of the VMM's 1000 outs and its hlt
# is a VM exit slice on its vCPU's track (PVM: no kvm_exit, no slices).
python3 - "$TV_TMP/x-s/p.json" "$TV_TMP/x-s/report.json" <<'PY' || fail "perfetto VM exit slices"
import json, sys
slices = sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X")
exits = sum(1 for l in open(sys.argv[2]) if json.loads(l)["event"] == "kvm:kvm_exit")
assert (slices >= 1001) if exits else (slices == 0), (slices, exits)
print("perfetto: %d VM exit slices for %d kvm_exit" % (slices, exits))
PY
[ "$KVM_WHERE" = host ] || grep -q '"event":"kvm:kvm_exit"' "$TV_TMP/x-s/report.json" || fail "no kvm_exit in L1"
echo "exports of a syscall session (here) and a KVM session ($KVM_WHERE) ok"
