#!/bin/bash
# Export a real host session: CTF read by babeltrace2 with nothing on
# stderr and exactly report's events in report's order, following Trace
# Compass's reader rules (tests/ctf_tc_check.py); Perfetto JSON that
# parses, with host CPU tracks and the VMM's vCPU thread track.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
require_kvm
command -v babeltrace2 >/dev/null || skip "needs babeltrace2 (make deps)"
S=$TV_TMP/s

"$TV" record -q -o "$S" -e kvm -e sched:sched_switch -e raw_syscalls -- \
	"$TV_BUILD/tests/tv-testvmm" --outs 1000 --quiet || fail "record"
"$TV" report --json "$S" > "$TV_TMP/report.json" || fail "report"
"$TV" export --format ctf -o "$TV_TMP/ctf" "$S" || fail "export ctf"
babeltrace2 --clock-cycles "$TV_TMP/ctf" > "$TV_TMP/bt.txt" 2> "$TV_TMP/bt.err" || fail "babeltrace2"
[ ! -s "$TV_TMP/bt.err" ] || { cat "$TV_TMP/bt.err"; fail "babeltrace2 wrote to stderr"; }
python3 "$TV_ROOT/tests/ctf_tc_check.py" "$TV_TMP/ctf" || fail "CTF breaks Trace Compass's rules"
python3 -c 'import json,sys; [print(json.loads(l)["ts"]) for l in open(sys.argv[1])]' \
	"$TV_TMP/report.json" > "$TV_TMP/ts.report"
sed -E 's/^\[0*([0-9]+)\].*/\1/' "$TV_TMP/bt.txt" > "$TV_TMP/ts.bt"
n=$(wc -l < "$TV_TMP/ts.report")
[ "$n" -gt 2000 ] || fail "only $n events recorded"
cmp -s "$TV_TMP/ts.report" "$TV_TMP/ts.bt" || fail "babeltrace2 count or order differs from report"
grep -q 'kvm:kvm_pio: .*{ .*port = ' "$TV_TMP/bt.txt" || fail "kvm_pio fields not decoded"
grep -q 'sched:sched_switch: .*prev_comm = "' "$TV_TMP/bt.txt" || fail "char arrays not strings"
echo "babeltrace2: $n events, same timestamps in the same order, no warnings"

"$TV" export --format perfetto -o "$TV_TMP/p.json" "$S" || fail "export perfetto"
python3 -m json.tool "$TV_TMP/p.json" > /dev/null || fail "perfetto output is not JSON"
python3 - "$TV_TMP/p.json" "$n" <<'PY' || fail "perfetto tracks"
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["args"]["name"] for e in d if e["ph"] == "M"]
events = sum(1 for e in d if e["ph"] == "i")
assert any(n.startswith("host CPU ") for n in names), names
assert any(n.startswith("VM tv-testvmm") for n in names), names
assert any(n.startswith("vCPU") for n in names), names
assert events == int(sys.argv[2]), "%d instants for %s events" % (events, sys.argv[2])
print("perfetto: tracks %s, %d events" % (names, events))
PY
