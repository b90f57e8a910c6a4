#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# tv-lab: own-machine: --xen-pages 1024: Xen's trace buffer size is fixed until it reboots (a shared Xen has 32 pages from boot)
# Issue #12 point 3: three-layer sync for Xen domUs, in the lab's `xen`
# topology.  A PV (d1) and a PVH (d2) domU with agents and a fork/exec
# workload (XEN_DOMUS_START, as tests/e2e/xen-domu.sh), recorded with Xen
# and dom0 in one session: `record --xen -e sched:sched_switch --guest
# xen:d1 --guest xen:d2` (Xen classes sched, hvm, guest: 0 records lost).
# Each agent brackets HVMOP_xentrace probes (TRC_GUEST|0x477, through its
# privcmd) with HCALL_BEFORE/AFTER markers; dom0 brackets its own
# (TRC_GUEST|0x476); pings go over the PV console channel
# (doc/sync-probes.md).
# On the patched Xen (records carry the TSC): `sync --json` must put each
# domU via xen with a bound below the message probes' (the path not
# taken, alt_bound_ns), 0 causality violations over every probe pair,
# and no guest event outside its vCPU's running intervals in Xen's
# runstate records beyond the bound; babeltrace2 reads the CTF export with
# report's event count; stat has HVM exit reasons with latencies for the
# PVH domU and runstates for both (a PV domU makes no HVM exits).
# Twice on the patched Xen: every vCPU pinned to pCPU 0, and free to move
# between the two pCPUs (a real user's setup).  Free, each pCPU stamps its
# own Xen system time (µs to ms apart under TCG) and the pvclock domains
# follow the pCPU they run on; sync puts every domain on Xen's common time
# line (pCPU 0's), so the same checks hold with 0 violations, message
# probes included, and the vCPUs must have moved (doc/sync-probes.md,
# "One time line").
# On stock Xen: the same session records, and sync says the Xen records
# carry no TSC and aligns the domUs by message probes.
# tv-timeout: 2400 (tests/run-tests: three lab runs, each booted again when a PVH domU triple-faults)
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"
command -v babeltrace2 >/dev/null || fail "babeltrace2 not installed (apt-get install babeltrace2)"
patched_xen

# PIN=1: every vCPU on pCPU 0, as a user would to keep one Xen clock.
dom0_script() {
	printf '%s\n' "$XEN_DOMUS_START" "xen_domus_start 0" \
		"[ $1 = 1 ] && for d in Domain-0 d1 d2; do xl vcpu-pin \$d all 0 || exit 24; done"
	printf '%s\n' "$DOM0_RECORD"
}
DOM0_RECORD='t0=$(date +%s)
$TV record --xen --xen-events sched,hvm,guest --xen-pages 1024 -e sched:sched_switch \
	--guest xen:d1 --guest xen:d2 -o /tmp/tv >/out/record.out 2>/out/record.err & P=$!
sleep 20
kill -INT $P; wait $P; echo $? > /out/record-rc
echo $(( $(date +%s) - t0 )) > /out/record-seconds
lab-domu --wait d1; echo $? > /out/d1-rc
lab-domu --wait d2; echo $? > /out/d2-rc
xl vcpu-list > /out/vcpu-list.txt
# one tar file: a session is ~180 directories of format files, which cp -a
# over 9p takes minutes to write under TCG (xen-record: 207 -> 74 s)
tar -C /tmp -cf /out/tv.tar tv || exit 23
exit 0'

# run_xen NAME [ENV...]: the lab (run again by run_lab when a domU died in
# QEMU's emulated SVM) and its dom0 script's results.
run_xen() {
	local name=$1
	shift
	run_lab xen "$(dom0_script "$PIN")" "$name" LAB_TIMEOUT=1100 "$@"
	expect_rc 0 "dom0 script ($name)"
	tar -C "$OUT" -xf "$OUT/tv.tar" || fail "$name: cannot unpack the dom0 session"
	[ "$(cat "$OUT/record-rc")" = 0 ] || fail "$name: record exited $(cat "$OUT/record-rc"): $(tail -n 5 "$OUT/record.err")"
	for d in d1 d2; do
		[ "$(cat "$OUT/$d-rc")" = 0 ] || fail "$name: domU $d ended with $(cat "$OUT/$d-rc") (agent: $(tail -n 3 "$OUT/$d/agent.err" 2>/dev/null))"
	done
	cat "$OUT/record.err" >&2
}

# ---- patched Xen: the domU -> Xen -> dom0 path, pinned ($1 = pinned) or free
check_patched() {
local mode=$1
PIN=$([ "$mode" = pinned ] && echo 1 || echo 0)
run_xen "patched-$mode" LAB_XEN="$XEN_BIN"
S=$OUT/tv
"$TV" sync "$S" >"$T/sync.txt" 2>&1 || fail "sync failed: $(tail -n 5 "$T/sync.txt")"
cat "$T/sync.txt" >&2
"$TV" sync --json --dry-run "$S" >"$T/sync.json" 2>"$T/sync-json.err" || fail "sync --json failed: $(cat "$T/sync-json.err")"
python3 - "$T/sync.json" "$S" "$mode" <<'PY' || fail "patched Xen ($mode): domU sync (above)"
import json, sys
res = json.load(open(sys.argv[1]))
dom = {d["domain"]: d for d in res["domains"]}
ok = True
for name in ("guest-d1", "guest-d2"):
    d = dom.get(name)
    if not d:
        print("no %s in sync --json" % name); ok = False; continue
    meta = dict(l.rstrip("\n").split("=", 1) for l in open("%s/%s/meta" % (sys.argv[2], name)) if "=" in l)
    print("%s (%s, domid %s): %s via %s, %s, bound %s ns, %d pairs; message probes alone (via %s): bound %s ns; "
          "causality %d/%d; runstate: %d of %d guest events outside" % (
              name, "PV" if name == "guest-d1" else "PVH", meta.get("xen_domid"), d["method"], d["via"],
              d["quality"], d["bound_ns"], d["probe_pairs"], d["alt_via"], d["alt_bound_ns"],
              d["causality_violations"], d["pairs_checked"], d["runstate_events_outside"],
              d["runstate_events_checked"]))
    if d["method"] != "hull" or d["via"] != "xen" or d["bound_ns"] is None:
        print("%s: not synchronised via xen with a bound: %s" % (name, d["message"])); ok = False
        continue
    if sys.argv[3] == "free" and d["alt_via"] is None:
        # across pCPUs the message probes may fit no one line: then there is no path to compare
        print("%s: the message probes alone fit no line (pCPUs' times differ)" % name)
    elif d["alt_via"] != "host" or d["alt_bound_ns"] is None or d["alt_bound_ns"] <= d["bound_ns"]:
        print("%s: the message-probe path (%s, %s ns) is not worse than via xen (%s ns)" % (
            name, d["alt_via"], d["alt_bound_ns"], d["bound_ns"])); ok = False
    if d["probe_pairs"] < 10:
        print("%s: only %d hypercall probe pairs" % (name, d["probe_pairs"])); ok = False
    if d["runstate_events_checked"] < 1000:
        print("%s: only %d guest events checked against Xen's runstates" % (name, d["runstate_events_checked"])); ok = False
    if d["runstate_events_outside"]:
        print("%s: %d guest events outside their vCPU's running intervals" % (name, d["runstate_events_outside"])); ok = False
for name, d in dom.items():
    if d["held_rounds"]:
        print("%s: %d probe rounds left out (clock held across the hypercall)" % (name, d["held_rounds"]))
    if d.get("misplaced_rounds"):
        print("%s: %d hypercall rounds left out (markers on another pCPU than Xen's record)" % (name, d["misplaced_rounds"]))
    if d["causality_violations"]:
        print("%s: %d causality violations of %d (%d of message probes)" % (
            name, d["causality_violations"], d["pairs_checked"], d["message_violations"]))
        ok = False
x = dom.get("xen", {})
print("xen: %s via %s, %s, bound %s ns, %s pairs, %s pieces" % (x.get("method"), x.get("via"), x.get("quality"), x.get("bound_ns"), x.get("probe_pairs"), x.get("pieces")))
if x.get("method") != "hull" or x.get("via") != "host" or x.get("pieces"):
    print("xen not synchronised against dom0 by one line: %s" % x.get("message")); ok = False
sys.exit(0 if ok else 1)
PY
"$TV" report "$S" >"$T/report.txt" 2>"$T/report.err" || fail "report: $(tail -n 3 "$T/report.err")"
rp=$(wc -l <"$T/report.txt")
"$TV" export --format ctf -o "$T/ctf" "$S" >/dev/null 2>"$T/ctf.err" || fail "export ctf: $(tail -n 3 "$T/ctf.err")"
bt=$(babeltrace2 "$T/ctf" 2>"$T/bt.err" | wc -l) || fail "babeltrace2: $(tail -n 3 "$T/bt.err")"
[ "$bt" = "$rp" ] && [ "$rp" -gt 100000 ] || fail "babeltrace2 read $bt events of the CTF export, report $rp"
echo "ok: babeltrace2 reads $bt events of the CTF export = report" >&2
"$TV" stat "$S" >"$T/stat.txt" 2>"$T/stat.err" || fail "stat: $(tail -n 3 "$T/stat.err")"
id1=$(sed -n 's/^xen_domid=//p' "$S/guest-d1/meta")
id2=$(sed -n 's/^xen_domid=//p' "$S/guest-d2/meta")
# the PVH domU: real SVM exits, timed; both: Xen's runstates of their vCPU
grep -Eq "^d$id2 +0 +vmexit:(io|rdtsc|cpuid|hypercall|msr) +[0-9]+ +[0-9.]+[num]?s +[0-9.]+[num]?s" "$T/stat.txt" ||
	fail "stat: no timed HVM exit row for d2 (domid $id2): $(grep "^d$id2 " "$T/stat.txt" | head -5)"
for id in "$id1" "$id2"; do
	grep -Eq "^d$id +0 +runstate:running +[0-9]+ " "$T/stat.txt" || fail "stat: no runstate row for domid $id"
done
grep -E "^d($id1|$id2) " "$T/stat.txt" | grep -E "vmexit:|runstate:running" | head -n 8 >&2
# stat --by guest-task: the PVH domU's exits name the domU task they interrupted
"$TV" stat --by guest-task --json "$S" >"$T/stat-task.json" 2>"$T/stat-task.err" || fail "stat --by guest-task: $(tail -n 3 "$T/stat-task.err")"
python3 - "$T/stat-task.json" "d$id2" <<'PY' || fail "$mode: stat --by guest-task (above)"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))
        if r.get("mode") == "xen" and r["vm"] == sys.argv[2] and r["reason"].startswith("vmexit:")]
named = sum(r["count"] for r in rows if r.get("guest_task") not in (None, "", "?"))
total = sum(r["count"] for r in rows)
tasks = sorted({r["guest_task"] for r in rows if r.get("guest_task") not in (None, "", "?")})
print("%s: %d of %d exits named a guest task: %s" % (sys.argv[2], named, total, ", ".join(tasks[:8])))
# exits outside the guest's trace (before its first event, after its last) stay "?"
sys.exit(0 if total and named * 10 >= total * 8 and "tracevisor-agen" in tasks else 1)
PY
if [ "$mode" = free ]; then
	# the point of this run: the domUs' vCPUs ran on both pCPUs
	"$TV" report --json "$S" 2>/dev/null | grep '"event":"xen:xen_runstate_change"' |
		python3 -c '
import json, sys
ids = {int(i) for i in sys.argv[1:]}
cpus = {}
for l in sys.stdin:
    e = json.loads(l); f = e["fields"]
    if f["new_state"] == 0 and f["domid"] in ids:
        cpus.setdefault(f["domid"], set()).add(e["cpu"])
print("pCPUs the domUs ran on: %s" % {d: sorted(c) for d, c in cpus.items()})
sys.exit(0 if any(len(c) > 1 for c in cpus.values()) else 1)' "$id1" "$id2" >&2 ||
		fail "free: no domU vCPU ran on more than one pCPU"
fi
patched_line="$patched_line [$mode] $(grep -E "^guest-d[12] " "$T/sync.txt" | awk '{ printf "%s%s via %s bound %s ns %s", (NR > 1 ? "; " : ""), $1, $3, $6, $9 }')"
}
patched_line=
check_patched pinned
check_patched free


# ---- stock Xen: records without the TSC: said, and the domUs aligned by message probes
PIN=1
run_xen stock
S=$OUT/tv
"$TV" sync --json --dry-run "$S" >"$T/sync-stock.json" 2>"$T/sync-stock.err" || fail "stock: sync --json failed: $(cat "$T/sync-stock.err")"
"$TV" sync --dry-run "$S" >"$T/sync-stock.txt" 2>&1 || fail "stock: sync failed"
cat "$T/sync-stock.txt" >&2
python3 - "$T/sync-stock.json" <<'PY' || fail "stock Xen: sync (above)"
import json, sys
dom = {d["domain"]: d for d in json.load(open(sys.argv[1]))["domains"]}
ok = True
for name in ("guest-d1", "guest-d2"):
    d = dom.get(name, {})
    print("%s: %s via %s, bound %s ns: %s" % (name, d.get("method"), d.get("via"), d.get("bound_ns"), d.get("message")))
    if "no TSC" not in d.get("message", ""):
        print("%s: sync does not say the Xen records carry no TSC" % name); ok = False
    if d.get("method") != "hull" or d.get("via") != "host":
        print("%s: not aligned by its message probes" % name); ok = False
    if d.get("causality_violations"):
        print("%s: %d causality violations" % (name, d["causality_violations"])); ok = False
x = dom.get("xen", {})
if x.get("method") != "none" or "no TSC" not in x.get("message", ""):
    print("xen: %s: %s (expected none, no TSC)" % (x.get("method"), x.get("message"))); ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS: Xen domUs synchronised via Xen on the patched Xen ($patched_line); stock Xen says what is missing" >&2
