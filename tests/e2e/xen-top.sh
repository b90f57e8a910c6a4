#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# tracevisor top --xen, live, in the lab's `xen` topology (issue #12 point
# 6): one PVH domU d1 (lab-domu, the fork/exec workload of
# XEN_DOMUS_START's /tmp/domu.sh) runs while dom0 runs `top --xen --json
# --count 8 -o DIR`, then `top --xen -o DIR2` until SIGINT.  Checks: rows
# for Domain-0 and d1 with real SVM exit reasons (d1 is PVH) and
# latencies, runstates with shares; summed over the intervals, every
# (domain, vcpu, reason) count and total equals `stat` of the kept
# session (tests/top_check.py), and so does `top --replay` of it; without
# -o, the temporary session's Xen streams give back what was read (their
# disk use stays under a third of their size) and are removed; no
# record lost, or the loss is in the intervals; SIGINT ends top at once
# with exit 0, and xentrace can start after it (Xen's tracing and buffers
# released).  One-line errors: --vm of no domain, Xen's tracing taken by
# a running xentrace.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"

DOM0="$XEN_DOMUS_START"'
$TV top --xen --vm nosuch --count 1 --json >/out/bad-vm.out 2>/out/bad-vm.err; echo $? >/out/bad-vm.rc
[ -e /tmp/nosuch ] && echo left >/out/bad-vm.left
xen_domu1_start
# Xen tracing busy: a running xentrace has VIRQ_TBUF
xentrace -D -e all -T 4 /tmp/xt-busy.bin >/dev/null 2>&1 & X=$!
sleep 1.5
$TV top --xen --count 1 --json >/dev/null 2>/out/busy.err; echo $? >/out/busy.rc
wait $X
read -r t0 _ </proc/uptime
$TV top --xen --json --interval 1 --count 8 -o /tmp/top >/out/top.jsonl 2>/out/top.err; echo $? >/out/top.rc
read -r t1 _ </proc/uptime; echo "$t0 $t1" >/out/top.time
$TV stat --json /tmp/top >/out/top-stat.json 2>/out/top-stat.err || exit 30
$TV stat /tmp/top >/out/top-stat.txt 2>>/out/top-stat.err || exit 30
$TV top --replay /tmp/top --speed 0 --interval 0.5 --json >/out/top-replay.jsonl 2>/out/top-replay.err || exit 31
$TV top --replay /tmp/top --speed 0 --interval 1000 --batch >/out/top-replay.txt 2>&1 || exit 32
# without -o: the temporary session gives back what was read
mkdir -p /tmp/tt
TMPDIR=/tmp/tt $TV top --xen --json --interval 1 --count 13 >/out/top3.jsonl 2>/out/top3.err & P=$!
sleep 10
stat -c "%n %s %b %B" /tmp/tt/tracevisor-top.*/xen/cpu*.xen >/out/top3.sizes 2>&1
wait $P; echo $? >/out/top3.rc
ls /tmp/tt >/out/top3.left
# until SIGINT
TRACEVISOR_DEBUG=1 $TV top --xen --json --interval 1 -o /tmp/top2 >/out/top2.jsonl 2>/out/top2.err & P=$!
for i in $(seq 100); do [ -s /out/top2.jsonl ] && break; sleep 0.1; done
sleep 3
read -r t0 _ </proc/uptime
kill -INT $P; wait $P; echo $? >/out/top2.rc
read -r t1 _ </proc/uptime; echo "$t0 $t1" >/out/top2.stop
$TV stat --json /tmp/top2 >/out/top2-stat.json 2>/out/top2-stat.err || exit 33
$TV stat /tmp/top2 >/out/top2-stat.txt 2>>/out/top2-stat.err || exit 33
# tracing and buffers released: xentrace starts and records
xentrace -D -e all -T 2 /tmp/xt-after.bin >/out/xt-after.out 2>&1; echo $? >/out/xt-after.rc
wc -c </tmp/xt-after.bin >/out/xt-after.size 2>/dev/null
xl destroy d1
exit 0'
run_lab xen "$DOM0" xen LAB_TIMEOUT=900
expect_rc 0 "dom0 script"

[ "$(cat "$OUT/bad-vm.rc")" != 0 ] || fail "top --xen --vm nosuch succeeded"
[ "$(wc -l <"$OUT/bad-vm.err")" = 1 ] || fail "--vm nosuch: not one line: $(cat "$OUT/bad-vm.err")"
grep -q 'Cannot find Xen domain: name="nosuch"' "$OUT/bad-vm.err" || fail "--vm nosuch: $(cat "$OUT/bad-vm.err")"
[ "$(cat "$OUT/busy.rc")" != 0 ] || fail "top --xen ran beside xentrace"
[ "$(wc -l <"$OUT/busy.err")" = 1 ] || fail "xentrace running: not one line: $(cat "$OUT/busy.err")"
grep -q 'another trace consumer running' "$OUT/busy.err" || fail "xentrace running: $(cat "$OUT/busy.err")"
[ "$(cat "$OUT/top.rc")" = 0 ] || fail "top --xen --count 8 exited $(cat "$OUT/top.rc"): $(tail -n 5 "$OUT/top.err")"
[ "$(cat "$OUT/top2.rc")" = 0 ] || fail "top --xen (SIGINT) exited $(cat "$OUT/top2.rc"): $(tail -n 5 "$OUT/top2.err")"
[ "$(cat "$OUT/xt-after.rc")" = 0 ] && [ "$(cat "$OUT/xt-after.size" 2>/dev/null || echo 0)" -gt 0 ] ||
	fail "xentrace after top: rc $(cat "$OUT/xt-after.rc"), $(cat "$OUT/xt-after.size" 2>/dev/null) bytes: $(tail -n 3 "$OUT/xt-after.out")"
[ "$(cat "$OUT/top3.rc")" = 0 ] || fail "top --xen without -o exited $(cat "$OUT/top3.rc"): $(tail -n 5 "$OUT/top3.err")"
[ ! -s "$OUT/top3.left" ] || fail "top --xen without -o left its temporary session: $(cat "$OUT/top3.left")"
# the Xen streams read so far take (almost) no disk: one read buffer each
awk '{ size += $2; disk += $3 * $4; n++ }
END {
	printf "top --xen without -o, after 10 s: %d Xen stream files of %d bytes take %d bytes on disk\n", n, size, disk
	exit !(n >= 1 && size > 1048576 && disk < size / 3)
}' "$OUT/top3.sizes" >&2 || fail "top --xen without -o keeps what it read: $(cat "$OUT/top3.sizes")"
read -r a b <"$OUT/top2.stop"
awk -v a="$a" -v b="$b" 'BEGIN { printf "top --xen ended %.1f s after SIGINT\n", b - a }' >&2

# Each interval ends at "now" from dom0's TSC: the newest record read in an
# interval is just before its end (a TSC ahead of Xen's would leave a gap)
python3 - "$OUT/top2.err" <<'PY' || fail "top --xen's interval ends against its records (above)"
import re, sys
pairs = [tuple(map(int, m.groups())) for m in
         re.finditer(r"interval limit (\d+), newest record read (\d+)", open(sys.argv[1]).read())]
assert len(pairs) >= 3, "no debug lines: %s" % pairs
gaps = [pairs[i - 1][0] - pairs[i][1] for i in range(2, len(pairs))]
assert all(0 <= g < 200e6 for g in gaps), "limit - newest record (ns): %s" % gaps
print("interval end - newest record read: %.1f-%.1f ms" % (min(gaps) / 1e6, max(gaps) / 1e6), file=sys.stderr)
PY
for s in top top2; do
	echo -n "$s: " >&2
	python3 "$REPO/tests/top_check.py" "$OUT/$s.jsonl" "$OUT/$s-stat.json" >&2 ||
		fail "$s: top --xen's intervals do not sum to stat of the kept session"
done
echo -n "top --replay: " >&2
python3 "$REPO/tests/top_check.py" "$OUT/top-replay.jsonl" "$OUT/top-stat.json" >&2 ||
	fail "top --replay of the kept Xen session does not sum to its stat"

# every Xen record and every loss of the kept session is in one interval
for s in top top2; do
	python3 - "$OUT/$s.jsonl" "$OUT/$s-stat.txt" <<'PY' || fail "$s: records or losses differ from stat's"
import json, re, sys
ivs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
m = re.match(r"Xen analysis of \S+: (\d+) records, (\d+) lost", open(sys.argv[2]).readline())
assert m, "no Xen header in stat's output"
got = (sum(iv["records"] for iv in ivs), sum(iv["lost"] for iv in ivs))
want = (int(m.group(1)), int(m.group(2)))
assert got == want, "records, lost: top %s, stat %s" % (got, want)
print("%s: %d records, %d lost in %d intervals, as stat" % (sys.argv[1].split("/")[-1], got[0], got[1], len(ivs)), file=sys.stderr)
PY
done
python3 - "$OUT/top.jsonl" "$OUT/top-stat.json" <<'PY' || fail "top --xen's rows (above)"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
stat = json.load(open(sys.argv[2]))
assert len(ivs) == 8, "%d intervals, --count 8" % len(ivs)
assert all(iv["mode"] == "xen" and iv["source"] == "xen" for iv in ivs), "mode/source"
rows = [r for iv in ivs for r in iv["rows"]]
for r in rows:
    for k in ("vm", "vcpu", "reason", "kind", "domid", "share", "count", "rate", "p50_ns", "p99_ns", "max_ns", "total_ns"):
        assert k in r, "row without %s: %s" % (k, r)
doms = {r["vm"] for r in rows}
assert "Domain-0[0]" in doms, "no Domain-0 rows: %s" % sorted(doms)
d1 = [r for r in rows if r["vm"].startswith("d1[")]
assert d1, "no rows for the domU d1: %s" % sorted(doms)
exits = {}
for r in d1:
    if r["kind"] == "exit":
        exits[r["reason"]] = exits.get(r["reason"], 0) + r["count"]
svm = {"vmexit:io", "vmexit:rdtsc", "vmexit:hlt", "vmexit:cpuid", "vmexit:msr", "vmexit:npf", "vmexit:vmmcall", "vmexit:interrupt"}
assert set(exits) & svm, "d1 has no SVM exit reasons: %s" % exits
timed = [r for r in d1 if r["kind"] == "exit" and r["p50_ns"] is not None]
assert timed, "d1's exits have no latencies"
for who in ("Domain-0[0]", d1[0]["vm"]):
    rs = [r for r in rows if r["vm"] == who and r["kind"] == "runstate"]
    assert rs, "%s: no runstate rows" % who
    assert any(r["share"] and r["share"] > 0 for r in rs), "%s: no runstate share" % who
    assert {r["reason"] for r in rs} & {"runstate:running"}, "%s: never running" % who
# the shares of one vCPU in one interval: at most the whole interval, up to
# the rounding of each row's share to 4 decimals (a lab run: 1.0001 + 2e-16)
for iv in ivs:
    per = {}
    for r in iv["rows"]:
        if r["kind"] == "runstate" and r["share"] is not None:
            k = (r["vm"], r["vcpu"])
            per[k] = per.get(k, 0) + r["share"]
    assert all(v <= 1.0002 for v in per.values()), "shares over 100%%: %s" % per
lost = sum(iv["lost"] for iv in ivs)
hc = sum(r["count"] for r in rows if r["kind"] == "hypercall" and r["vcpu"] != "all")
print("top --xen: %d intervals, %d domains, d1 exits %s, %d timed exit rows, %d hypercalls, %d lost" %
      (len(ivs), len(doms), dict(sorted(exits.items())), len(timed), hc, lost), file=sys.stderr)
PY
grep -q '^tracevisor top --xen - /tmp/top' "$OUT/top-replay.txt" || fail "top --replay --batch of the Xen session: $(head -n 3 "$OUT/top-replay.txt")"
exit 0
