# SPDX-License-Identifier: GPL-2.0
# record --ust --flight-recorder SIZE with `tracevisor snapshot`: a program
# (build/examples/ust-steps) emits a known sequence per thread and pauses at
# known points; a snapshot at each point holds a gap-free tail of every
# thread's sequence that ends at that point, at most SIZE bytes; the
# recording goes on and writes the last tail into the session at the end;
# report, stat and export read a snapshot like any session.  Bad input: a
# session without a flight recorder, a PID that is not one.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
STEPS="$TV_ROOT/build/examples/ust-steps"
[ -x "$STEPS" ] || fail "no $STEPS (make)"
export TRACEVISOR_UST_SOCK="$TV_TMP/ust.sock"
SIZE=1048576
N=200000
check_tail() {	# REPORT END THREADS MUST_ALL: each thread's seqs gap-free, ending at END-1
	python3 - "$@" <<'PY'
import re, sys
end, threads, must_all = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "all"
seqs = {}
for line in open(sys.argv[1]):
    m = re.search(r"demo:tick thread=(\d+) seq=(\d+)", line)
    if m:
        seqs.setdefault(int(m.group(1)), []).append(int(m.group(2)))
assert seqs, "no demo:tick events"
assert set(seqs) <= set(range(threads)), ("threads", sorted(seqs))
if must_all:
    assert sorted(seqs) == list(range(threads)), ("threads", sorted(seqs))
for t, s in seqs.items():
    assert s == list(range(s[0], s[0] + len(s))), ("gap in thread", t, [b for a, b in zip(s, s[1:]) if b != a + 1][:3])
    assert s[-1] == end - 1, ("thread", t, "ends at", s[-1], "not", end - 1)
print(sum(len(s) for s in seqs.values()))
PY
}
run() {	# NAME THREADS STEPS
	local name=$1 threads=$2 steps=$3 S=$TV_TMP/$1 W=$TV_TMP/$1.w k snap n
	mkdir -p "$W"
	"$TV" record -o "$S" -e syscalls:sys_enter_getppid --ust 'demo:*' --flight-recorder 1M \
		-- "$STEPS" $N "$steps" "$threads" "$W" > "$TV_TMP/$name.out" 2> "$TV_TMP/$name.err" &
	local rec=$!
	for k in $(seq "$steps"); do
		for _ in $(seq 600); do [ -e "$W/step$k" ] && break; sleep 0.1; done
		[ -e "$W/step$k" ] || fail "$name: step $k not reached: $(cat "$TV_TMP/$name.err")"
		if [ $((k % 2)) = 1 ]; then
			snap=$("$TV" snapshot "$S") || fail "$name: snapshot $k by DIR failed"
		else
			snap=$("$TV" snapshot "$rec") || fail "$name: snapshot $k by PID failed"
		fi
		expect_eq "$name: snapshot $k's directory" "$snap" "$(realpath "$S")/snapshot-$k"
		touch "$W/go$k"
		"$TV" report "$snap" > "$TV_TMP/$name.r$k" || fail "$name: report of snapshot $k"
		n=$(check_tail "$TV_TMP/$name.r$k" $((k * N)) "$threads" some) || fail "$name: snapshot $k is not a gap-free tail ending at $((k * N - 1))"
		bytes=$(cat "$snap"/ust-host-*/cpu*.ust | wc -c)
		[ "$bytes" -le $SIZE ] || fail "$name: snapshot $k holds $bytes bytes > $SIZE"
		echo "ok: $name: snapshot $k: $n events, $bytes bytes, gap-free up to seq $((k * N - 1))"
		"$TV" stat --json "$snap" > "$TV_TMP/$name.s$k" || fail "$name: stat of snapshot $k"
		expect_eq "$name: stat count of snapshot $k" "$(python3 -c "import json,sys; print(sum(r['count'] for r in json.load(open(sys.argv[1])) if r.get('mode')=='ust' and r['reason']=='demo:tick'))" "$TV_TMP/$name.s$k")" "$n"
		# the HTML page marks the trigger at the snapshot's last record (issue 27)
		"$TV" export --format html -q -o "$TV_TMP/$name.$k.html" "$snap" || fail "$name: html export of snapshot $k"
		python3 - "$TV_TMP/$name.$k.html" <<'PY' || fail "$name: snapshot $k's trigger not marked in the page"
import json, re, sys
d = json.loads(re.search(r'<script type="application/json" id="tv-data">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
assert d["snapshot_ns"] is not None and d["snapshot_ns"] == d["span_ns"] > 0, (d["snapshot_ns"], d["span_ns"])
assert any(l["status"] == "snapshot" for l in d["losses"]), d["losses"]
PY
		if command -v babeltrace2 >/dev/null; then
			"$TV" export --format ctf -q -o "$TV_TMP/$name.ctf$k" "$snap" || fail "$name: export of snapshot $k"
			expect_eq "$name: babeltrace2 = report, snapshot $k" "$(babeltrace2 "$TV_TMP/$name.ctf$k" | grep -c 'demo:tick')" "$n"
		fi
	done
	wait $rec || fail "$name: record: $(cat "$TV_TMP/$name.err")"
	"$TV" report "$S" > "$TV_TMP/$name.final" || fail "$name: report of the session"
	n=$(check_tail "$TV_TMP/$name.final" $((steps * N)) "$threads" some) || fail "$name: the session's last tail"
	echo "ok: $name: the session at the end: $n events up to seq $((steps * N - 1))"
	[ ! -e "$S/flight-recorder" ] || fail "$name: DIR/flight-recorder left after the end"
}
# one thread: every snapshot ends exactly where the program paused
run one 1 2
# two threads on any CPUs: every thread present is gap-free and ends at the pause
run two 2 3
# snapshots while the writers run flat out (ust-demo, 2 threads): each is a
# gap-free tail per thread within SIZE, and the later one goes further
DEMO="$TV_ROOT/build/examples/ust-demo"
S=$TV_TMP/live
"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid --ust 'demo:*' --flight-recorder 1M \
	-- "$DEMO" 40000000 2 > "$TV_TMP/live.out" 2> "$TV_TMP/live.err" &
rec=$!
prev=-1
for k in 1 2; do
	for _ in $(seq 100); do
		snap=$("$TV" snapshot "$S" 2>/dev/null) && break	# none until ust-demo registered
		sleep 0.1
	done
	[ -n "${snap:-}" ] && [ -d "$snap" ] || fail "live: snapshot $k not taken: $(cat "$TV_TMP/live.err")"
	"$TV" report "$snap" > "$TV_TMP/live.r$k" || fail "live: report of snapshot $k"
	bytes=$(cat "$snap"/ust-host-*/cpu*.ust | wc -c)
	[ "$bytes" -le $SIZE ] || fail "live: snapshot $k holds $bytes bytes > $SIZE"
	last=$(python3 - "$TV_TMP/live.r$k" <<'PY'
import re, sys
seqs = {}
for line in open(sys.argv[1]):
    m = re.search(r"demo:tick thread=(\d+) seq=(\d+)", line)
    if m:
        seqs.setdefault(int(m.group(1)), []).append(int(m.group(2)))
assert seqs, "no events"
for t, s in seqs.items():
    assert s == list(range(s[0], s[0] + len(s))), ("gap in thread", t)
print(max(s[-1] for s in seqs.values()))
PY
) || fail "live: snapshot $k is not gap-free per thread"
	[ "$last" -gt "$prev" ] || fail "live: snapshot $k ends at seq $last, not after the one before ($prev)"
	echo "ok: live: snapshot $k: gap-free per thread up to seq $last, $bytes bytes"
	prev=$last
	sleep 0.5
done
kill -INT $rec; wait $rec
# bad input: one line, non-zero
expect_fail_line() {	# WHAT PATTERN COMMAND...
	local what=$1 pat=$2; shift 2
	if "$@" > "$TV_TMP/bad.out" 2> "$TV_TMP/bad.err"; then fail "$what: exit 0"; fi
	[ "$(wc -l < "$TV_TMP/bad.err")" = 1 ] || fail "$what: not one line: $(cat "$TV_TMP/bad.err")"
	grep -q "$pat" "$TV_TMP/bad.err" || fail "$what: $(cat "$TV_TMP/bad.err")"
	echo "ok: $what: $(cat "$TV_TMP/bad.err")"
}
expect_fail_line "snapshot of a finished session" "No flight recorder runs for this session" "$TV" snapshot "$TV_TMP/one"
expect_fail_line "snapshot of no directory" "No flight recorder runs" "$TV" snapshot "$TV_TMP/nothing"
sleep 30 & other=$!
expect_fail_line "snapshot of a PID that is not a recorder" "Not a flight recorder: pid=$other" "$TV" snapshot "$other"
kill $other
expect_fail_line "--flight-recorder with -b" "not with -b" "$TV" record -o "$TV_TMP/x" -b 64 --flight-recorder 1M -- true
expect_fail_line "--flight-recorder with a bad size" "invalid --flight-recorder size" "$TV" record -o "$TV_TMP/x" --ust --flight-recorder 12Q -- true
echo "record --ust --flight-recorder with tracevisor snapshot: gap-free tails, bounded"
