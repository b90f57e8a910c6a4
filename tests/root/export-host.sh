#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
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

# Wall-clock dates: the recorder's CLOCK_REALTIME markers make the CTF clock
# offset; babeltrace2's first and last events must fall within the
# recording's wall-clock span (session meta start_realtime_ns + duration).
"$TV" report "$S" > "$TV_TMP/report.txt" || fail "report"
grep -qE 'ftrace:raw_data tracevisor clock_realtime seq=0 20[0-9-]{8}T' "$TV_TMP/report.txt" ||
	fail "report shows no clock_realtime marker at the start"
babeltrace2 --clock-date --clock-gmt "$TV_TMP/ctf" > "$TV_TMP/bt-date.txt" || fail "babeltrace2 --clock-date"
python3 - "$TV_TMP/bt-date.txt" "$S/host/meta" <<'PY' || fail "CTF wall-clock dates"
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
"$TV" report --date "$S" > "$TV_TMP/report-date.txt" || fail "report --date"
"$TV" report --json --date "$S" > "$TV_TMP/report-date.json" || fail "report --json --date"
python3 - "$TV_TMP/report-date.txt" "$TV_TMP/report-date.json" "$TV_TMP/bt-date.txt" <<'PY' || fail "report --date"
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
