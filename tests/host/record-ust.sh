# SPDX-License-Identifier: GPL-2.0
# record --ust with the real libtracevisor-ust (build/examples/ust-demo):
# blocking mode, every (thread, seq) once and in order per thread in report
# and counted exactly by stat; discard mode, recorded + lost = emitted; a
# ust-demo killed with SIGKILL mid-run, its events recovered gap-free per
# thread; the CTF export read by babeltrace2 with report's count.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
DEMO="$TV_ROOT/build/examples/ust-demo"
[ -x "$DEMO" ] || fail "no $DEMO (make)"
export TRACEVISOR_UST_SOCK="$TV_TMP/ust.sock"
check_seqs() {	# REPORT N THREADS: each thread's seqs 0..N-1 once, in order (N=0: gap-free from 0)
	python3 - "$@" <<'PY'
import re, sys
want, threads = int(sys.argv[2]), int(sys.argv[3])
seqs = {}
for line in open(sys.argv[1]):
    m = re.search(r"demo:tick thread=(\d+) seq=(\d+)", line)
    if m:
        seqs.setdefault(int(m.group(1)), []).append(int(m.group(2)))
assert sorted(seqs) == list(range(threads)), ("threads", sorted(seqs))
for t, s in seqs.items():
    n = want or len(s)
    assert s == list(range(n)), ("thread", t, len(s), n, [x for i, x in enumerate(s[:n]) if x != i][:3])
print(sum(len(s) for s in seqs.values()))
PY
}
# 1. blocking: exact
S=$TV_TMP/blocking
TRACEVISOR_UST='demo:*' TRACEVISOR_UST_MODE=blocking "$TV" record -q -o "$S" -e syscalls:sys_enter_getppid \
	--ust 'demo:*' -- "$DEMO" 50000 4 > "$TV_TMP/demo.out" 2> "$TV_TMP/rec.err" || fail "record: $(cat "$TV_TMP/rec.err")"
"$TV" report "$S" > "$TV_TMP/report" || fail "report failed"
expect_eq "blocking: events in order per thread" "$(check_seqs "$TV_TMP/report" 50000 4)" 200000
expect_eq "domain shown" "$(grep -m1 'demo:tick' "$TV_TMP/report" | awk '{print $1}')" host
"$TV" stat --json "$S" > "$TV_TMP/stat.json" || fail "stat failed"
expect_eq "stat count" "$(python3 -c "import json,sys; print(sum(r['count'] for r in json.load(open(sys.argv[1])) if r.get('mode')=='ust' and r['reason']=='demo:tick'))" "$TV_TMP/stat.json")" 200000
"$TV" export --format ctf -q -o "$TV_TMP/ctf" "$S" || fail "export failed"
# Perfetto (protobuf): report's events, and a track per traced thread with its ticks
if command -v protoc >/dev/null; then
	"$TV" export --format perfetto -q -o "$TV_TMP/p.pftrace" "$S" || fail "export perfetto failed"
	protoc -I "$TV_ROOT/doc/perfetto" --decode=perfetto.protos.Trace trace.proto <"$TV_TMP/p.pftrace" \
		>"$TV_TMP/p.txt" || fail "protoc cannot decode the perfetto export"
	"$TV" report --json "$S" >"$TV_TMP/report.json" || fail "report --json"
	python3 "$TV_ROOT/tests/perfetto_check.py" "$TV_TMP/p.txt" "$TV_TMP/report.json" "$TV_TMP/stat.json" \
		>"$TV_TMP/pf.check" || fail "perfetto export: $(cat "$TV_TMP/pf.check")"
	expect_eq "perfetto: thread tracks of ust-demo" "$(grep -c 'name: "ust-demo (tid [0-9]*)"' "$TV_TMP/p.txt")" 4
fi
if command -v babeltrace2 >/dev/null; then
	expect_eq "babeltrace2 = report" "$(babeltrace2 "$TV_TMP/ctf" | grep -c 'demo:tick')" 200000
	# a stream per thread (and CPU): each names its thread in its packets and
	# holds only that thread's events; per thread, babeltrace2 counts what report does
	babeltrace2 "$TV_TMP/ctf" > "$TV_TMP/bt.txt" || fail "babeltrace2"
	python3 - "$TV_TMP/report" "$TV_TMP/bt.txt" "$TV_TMP/ctf" <<'PY' || fail "CTF streams per thread"
import collections, os, re, sys
rep = collections.Counter(int(m.group(1)) for l in open(sys.argv[1])
                          for m in [re.search(r"-(\d+)\s+\[\d+\] [\d.]+: demo:tick", l)] if m)
bt = collections.Counter()
for l in open(sys.argv[2]):
    m = re.search(r"demo:tick: \{ cpu_id = \d+, domain_id = \d+, tid = (\d+) \}, \{ pid = (\d+),", l)
    if m:
        assert m.group(1) == m.group(2), ("packet tid != event tid", l)
        bt[int(m.group(1))] += 1
assert len(rep) == 4 and rep == bt, (rep, bt)
files = [f for f in os.listdir(sys.argv[3]) if f.startswith("ust-host-")]
tids = {int(re.search(r"_tid(\d+)_cpu\d+$", f).group(1)) for f in files}
assert tids == set(rep), (files, rep)
print("ok: CTF: %d thread streams over %d files, per-thread counts %s = report's" % (len(tids), len(files), sorted(bt.values())))
PY
fi
# 2. discard with small buffers: recorded + lost = emitted (a run long enough
# to register: a process that exits before it reaches its consumer is not seen)
S=$TV_TMP/discard
TRACEVISOR_UST='demo:*' TRACEVISOR_UST_MODE=discard TRACEVISOR_UST_SUBBUF_SIZE=4096 TRACEVISOR_UST_NR_SUBBUFS=2 \
	"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid --ust 'demo:*' -- "$DEMO" 20000000 2 \
	> "$TV_TMP/demo.out" 2> "$TV_TMP/rec.err" || fail "record: $(cat "$TV_TMP/rec.err")"
rec=$("$TV" report "$S" | grep -c 'demo:tick')
lost=$(cat "$S"/ust-host-*/meta | sed -n 's/^lost_total=//p')
expect_eq "discard: recorded + lost" "$((rec + lost))" 40000000
echo "ok: discard: $rec recorded, $lost lost (counted by the writers)"
# 2b. overwrite (flight recorder) while consumed: windows may be lost, what is
# recorded is never out of order per thread, and the newest events are there
S=$TV_TMP/overwrite
TRACEVISOR_UST='demo:*' TRACEVISOR_UST_MODE=overwrite "$TV" record -q -o "$S" -e syscalls:sys_enter_getppid \
	--ust 'demo:*' -- "$DEMO" 10000000 2 > "$TV_TMP/demo.out" 2> "$TV_TMP/rec.err" || fail "record: $(cat "$TV_TMP/rec.err")"
"$TV" report "$S" > "$TV_TMP/report" || fail "report of the overwrite run"
python3 - "$TV_TMP/report" <<'PY' || fail "overwrite mode"
import re, sys
seqs = {}
for line in open(sys.argv[1]):
    m = re.search(r"demo:tick thread=(\d+) seq=(\d+)", line)
    if m:
        seqs.setdefault(int(m.group(1)), []).append(int(m.group(2)))
assert seqs, "nothing recorded"
for t, s in seqs.items():
    assert all(b > a for a, b in zip(s, s[1:])), ("thread %d out of order" % t)
assert any(s[-1] == 9999999 for s in seqs.values()), {t: s[-1] for t, s in seqs.items()}
print("ok: overwrite: %d events kept, in order per thread, the newest included" % sum(len(s) for s in seqs.values()))
PY
# 3. SIGKILL mid-run: every committed event recovered, gap-free per thread
S=$TV_TMP/killed
TRACEVISOR_UST='demo:*' TRACEVISOR_UST_MODE=blocking "$TV" record -q -o "$S" -e syscalls:sys_enter_getppid \
	--ust 'demo:*' -- sh -c "'$DEMO' 50000000 2 & p=\$!; sleep 0.5; kill -KILL \$p; wait \$p; true" \
	2> "$TV_TMP/rec.err" || fail "record: $(cat "$TV_TMP/rec.err")"
grep -q '^status=ended' "$S"/ust-host-*/meta || fail "killed process not marked ended"
"$TV" report "$S" > "$TV_TMP/report" || fail "report of the killed run failed"
n=$(check_seqs "$TV_TMP/report" 0 2) || fail "killed run: a gap in a thread's events"
[ "$n" -gt 1000 ] || fail "killed run: only $n events"
echo "ok: SIGKILL: $n events recovered, gap-free per thread"
# 4. Ctrl-C while a process traces:
# a valid session, the process's events contiguous per thread up to the end
S=$TV_TMP/sigint
"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid --ust 'demo:*' 2> "$TV_TMP/rec.err" & rec=$!
wait_tracing $rec
for _ in $(seq 100); do [ -S "$TRACEVISOR_UST_SOCK" ] && break; sleep 0.1; done
TRACEVISOR_UST="demo:*" TRACEVISOR_UST_MODE=blocking "$DEMO" 50000000 2 > "$TV_TMP/demo.out" & demo=$!
for _ in $(seq 100); do ls "$S"/ust-host-*/cpu*.ust >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
kill -0 $demo 2>/dev/null || fail "ust-demo ended before the SIGINT: the test needs it running"
kill -INT $rec
wait $rec || fail "record exited $? on SIGINT: $(cat "$TV_TMP/rec.err")"
wait $demo || fail "ust-demo failed once its consumer left"
[ -e "$S/session.meta" ] || fail "no session.meta after SIGINT"
grep -q '^status=complete' "$S"/ust-host-*/meta || fail "live process not marked complete"
"$TV" report "$S" > "$TV_TMP/report" || fail "report after SIGINT"
python3 - "$TV_TMP/report" <<'PY' || fail "events after SIGINT not contiguous per thread"
import re, sys
seqs = {}
for line in open(sys.argv[1]):
    m = re.search(r"demo:tick thread=(\d+) seq=(\d+)", line)
    if m:
        seqs.setdefault(int(m.group(1)), []).append(int(m.group(2)))
assert seqs and all(s == list(range(s[0], s[0] + len(s))) for s in seqs.values()), \
    {t: (s[0], len(s)) for t, s in seqs.items()}
print("ok: SIGINT: %d events, contiguous per thread" % sum(len(s) for s in seqs.values()))
PY
# 5. Short programs started while record listens, without TRACEVISOR_UST:
# each is registered and enabled by the session before main() (READY), so
# every event of a program that lives a few milliseconds is recorded.
S=$TV_TMP/short
"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid --ust 'demo:*' 2> "$TV_TMP/rec.err" & rec=$!
wait_tracing $rec
for _ in $(seq 100); do [ -S "$TRACEVISOR_UST_SOCK" ] && break; sleep 0.1; done
for _ in 1 2 3 4 5; do "$DEMO" 1000 2 >/dev/null || fail "ust-demo failed"; done
kill -INT $rec; wait $rec || fail "record of short programs: $(cat "$TV_TMP/rec.err")"
rows=$("$TV" stat --json "$S" | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin) if r.get("reason") == "demo:tick"]
print(" ".join(str(r["count"]) for r in rows))') || fail "stat of short programs"
[ "$rows" = "2000 2000 2000 2000 2000" ] || fail "short programs: demo:tick counts '$rows', not 5 x 2000"
echo "ok: 5 short programs, 2000 events each, all recorded"
echo "record --ust with libtracevisor-ust: exact"
