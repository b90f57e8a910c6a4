#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# top --bpf --time-function on this host (tests/e2e/kvm-svm-top-func.sh
# times a kernel function with kprobes in the lab's L1):
#  - a user-space function (uprobe/uretprobe through perf events) of
#    tv-timed, called N times, each sleeping U us: top's func:tv_timed_call
#    row counts N calls exactly, p50 and p99 at least U (within the
#    histogram's 3.1%) and within 5% (+ 20 us) of stat's on a recording of
#    the same run (record --time-function), max no more than stat's max
#    (+ 5%), total within 2%; 0 lost; nothing left in tracefs after SIGINT;
#  - a kernel function: counted exactly (N getppid calls of tv-syscalls)
#    where the kernel lets BPF reach it (kprobes or fentry), else one line
#    naming why, exit 1;
#  - bad input: an unknown symbol in a file, a missing file, an unknown
#    kernel function, a malformed name: one line each, exit 1, nothing left.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
TIMED="$TV_ROOT/build/tests/tv-timed"
[ -x "$TIMED" ] || fail "$TIMED missing (make)"
N=200 U=2000 T=$TV_TMP
# left PID...: probes on our file, or of the runs PID... (their groups,
# libbpf's legacy tracefs ones): what this test could leave, not what
# other people's runs have on this host meanwhile
left() { echo $(($(probes_left "$@") + $(cat $TRACEFS/uprobe_events 2>/dev/null | grep -cF "$TIMED"))); }

# top_until_int NAME ARGS...: top --bpf --json in the background (TOP) until its first interval
top_until_int() {
	local name=$1
	shift
	"$TV" top --bpf --json --interval 1 "$@" >"$T/$name.jsonl" 2>"$T/$name.err" &
	TOP=$!
	for _ in $(seq 100); do [ -s "$T/$name.jsonl" ] && break; sleep 0.1; done
	[ -s "$T/$name.jsonl" ] || fail "$name: top gave no interval in 10 s: $(cat "$T/$name.err")"
}
stop_top() {
	sleep 1.5
	kill -INT $TOP
	wait $TOP || fail "top ended by SIGINT exited $?: $(cat "$T/$1.err")"
}

top_until_int user --time-function "$TIMED:tv_timed_call"
"$TV" record -q -o "$T/rec" --time-function "$TIMED:tv_timed_call" -- "$TIMED" --calls $N --sleep-us $U --quiet &
REC=$!
wait $REC || fail "record --time-function of tv-timed failed"
stop_top user
[ "$(left $TOP $REC)" = 0 ] || fail "probes left after top and record: $(cat $TRACEFS/dynamic_events $TRACEFS/uprobe_events)"
"$TV" stat --json "$T/rec" >"$T/rec.json" || fail "stat of the recording failed"
python3 - "$T/user.jsonl" "$T/rec.json" $N $U <<'PY' || fail "top --bpf's func:tv_timed_call row"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
stat = [r for r in json.load(open(sys.argv[2])) if r["reason"] == "func:tv_timed_call"]
n, u = int(sys.argv[3]), int(sys.argv[4]) * 1000
assert all(iv["source"] == "bpf" for iv in ivs), "not the in-kernel aggregation"
assert sum(iv["lost"] for iv in ivs) == 0, "lost"
rows = [r for iv in ivs for r in iv["rows"] if r["reason"] == "func:tv_timed_call"]
assert rows and all(r["vm"].startswith("tv-timed[") and r["vcpu"] == "-" for r in rows), rows
assert len(stat) == 1 and stat[0]["count"] == n, stat
s = stat[0]
assert sum(r["count"] for r in rows) == n, "top counted %d calls, want %d" % (sum(r["count"] for r in rows), n)
total = sum(r["total_ns"] for r in rows)
assert abs(total - s["total_ns"]) <= 0.02 * s["total_ns"], "total: top %d, stat %d" % (total, s["total_ns"])
whole = [r for r in rows if r["count"] == n]
for r in whole:   # every call in one interval: its percentiles are the run's
    for k in ("p50_ns", "p99_ns"):
        assert r[k] >= u * (1 - 1 / 32.0), "%s %d below the %d ns sleep" % (k, r[k], u)
        assert abs(r[k] - s[k]) <= 0.05 * s[k] + 20000, "%s: top %d, stat %d" % (k, r[k], s[k])
    assert r["max_ns"] <= s["max_ns"] * 1.05, "max: top %d, stat %d" % (r["max_ns"], s["max_ns"])
print("top --bpf func:tv_timed_call: %d calls (= stat's), 0 lost, total %.1f ms (stat %.1f)%s" %
      (n, total / 1e6, s["total_ns"] / 1e6,
       "; p50 %d / p99 %d ns (stat %d / %d)" % (whole[0]["p50_ns"], whole[0]["p99_ns"], s["p50_ns"], s["p99_ns"])
       if whole else "; the calls spanned two intervals"))
PY

# A kernel function: kprobes, or fentry where the kernel allows it.
"$TV" top --bpf --json --interval 1 --time-function __x64_sys_getppid >"$T/kern.jsonl" 2>"$T/kern.err" &
TOP=$!
for _ in $(seq 100); do [ -s "$T/kern.jsonl" ] || ! kill -0 $TOP 2>/dev/null && break; sleep 0.1; done
if kill -0 $TOP 2>/dev/null; then
	"$SYSCALLS" --getppids 1000 >"$T/kern.work" || fail "tv-syscalls failed"
	stop_top kern
	# our tv-syscalls' row only (others may run on this host meanwhile)
	w=$(sed -n 's/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$T/kern.work")
	got=$(python3 -c 'import json,sys; print(sum(r["count"] for l in open(sys.argv[1]) for r in json.loads(l)["rows"] if r["reason"] == "func:__x64_sys_getppid" and r["vm"] == sys.argv[2]))' "$T/kern.jsonl" "tv-syscalls[$w]")
	[ "$got" = 1000 ] || fail "kernel function __x64_sys_getppid: $got calls, want 1000"
	echo "kernel function timed here: __x64_sys_getppid 1000 calls" >&2
else
	wait $TOP && fail "top --time-function of a kernel function ended with status 0 and no output"
	[ "$(wc -l <"$T/kern.err")" = 1 ] && grep -q "Cannot time function \"__x64_sys_getppid\"" "$T/kern.err" ||
		fail "a kernel function BPF cannot reach here: $(cat "$T/kern.err")"
	echo "kernel function not reachable by BPF here (the lab's L1 test does it): $(cat "$T/kern.err")" >&2
fi
[ "$(left $TOP)" = 0 ] || fail "probes left after the kernel function's top: $(cat $TRACEFS/dynamic_events)"

# Bad input: one line, exit 1, nothing left.
pids=()
for bad in "$TIMED:no_such_function_xyz|no such function" "/nonexistent/dir/prog:main|No such file" \
	"no_such_kernel_function_xyz|no such function in /proc/kallsyms" "bad-name|Invalid function"; do
	"$TV" top --bpf --json --count 1 --time-function "${bad%%|*}" >"$T/bad.out" 2>"$T/bad.err" &
	pids+=($!)
	wait $! && fail "\"${bad%%|*}\" was accepted"
	[ "$(wc -l <"$T/bad.err")" = 1 ] && grep -q "${bad#*|}" "$T/bad.err" || fail "\"${bad%%|*}\": $(cat "$T/bad.err")"
	[ ! -s "$T/bad.out" ] || fail "\"${bad%%|*}\": output on stdout: $(cat "$T/bad.out")"
done
[ "$(left "${pids[@]}")" = 0 ] || fail "probes left after the failed runs"
echo "PASS: top --bpf --time-function: uprobe row = stat's ($N calls), kernel function, errors" >&2
