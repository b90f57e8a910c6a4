#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# Real Xen (lab `xen`, Debian's Xen 4.17, dom0 with 2 vCPUs): every record
# decoded and attributed.  `tracevisor record --xen` (all classes) and Xen's
# own `xentrace -e all` (imported) under the same dom0 workload (fork/exec,
# file I/O, toolstack hypercalls, idle gaps).  Checks, on both recordings:
# at most 1% of the records left undecoded (xen_other, or an HVM handler
# no event describes), none without a running vCPU (cur_dom 65535), the
# recorder's cpuN.running snapshot present for every CPU and naming a
# domain that exists, and stat with hypercalls per domain and no "unknown"
# rows.  Prints the per-class counts and the snapshot/scan agreement.
# Sessions are read on the host: reading 150k records in dom0 under TCG is
# slow.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"

run_lab xen '
TV=/opt/tracevisor/tracevisor
work() {
	i=0; while [ $i -lt 60 ]; do /bin/true; i=$((i+1)); done
	dd if=/dev/zero of=/tmp/f bs=64k count=64 2>/dev/null; cat /tmp/f >/dev/null; rm -f /tmp/f
	xl list >/dev/null 2>&1; xl info >/dev/null 2>&1
	sleep 0.3
	i=0; while [ $i -lt 60 ]; do /bin/true; i=$((i+1)); done
}
consume() { "$@" & P=$!; sleep 1; work; sleep 1; kill -INT $P; wait $P; }
consume $TV record --xen -o /tmp/tv 2>/out/tv.err || exit 21
consume xentrace -D -e all /tmp/x.trace >/out/xentrace.log 2>&1 || exit 22
# one tar file: the session is ~180 directories of format files, which
# cp -a over 9p takes minutes to write under TCG
tar -C /tmp -cf /out/tv.tar tv && cp /tmp/x.trace /out/x.trace || exit 23
exit 0' xen LAB_TIMEOUT=900 LAB_XEN_ARGS=dom0_max_vcpus=2
expect_rc 0 "dom0 script"
tar -C "$OUT" -xf "$OUT/tv.tar" || fail "cannot unpack the dom0 session"

khz=$(sed -n 's/^tsc_khz=//p' "$OUT/tv/xen/meta")
"$TV" import xentrace --cpu-khz "$khz" "$OUT/x.trace" -o "$OUT/xt" 2>"$T/import.err" ||
	fail "import xentrace: $(cat "$T/import.err")"
for s in tv xt; do
	"$TV" report --json "$OUT/$s" >"$T/$s.json" || fail "report $s"
	"$TV" stat "$OUT/$s" >"$T/$s.stat" || fail "stat $s"
done
python3 - "$T" "$OUT/tv/xen/meta" <<'PY' || fail "decoding or attribution (above)"
import collections, json, sys
t, meta_path = sys.argv[1], sys.argv[2]
meta = dict(l.rstrip("\n").split("=", 1) for l in open(meta_path) if "=" in l)
ok = True
for s in ("tv", "xt"):
    n = undec = unattr = 0
    names, undec_ids, first = collections.Counter(), collections.Counter(), {}
    for line in open("%s/%s.json" % (t, s)):
        e = json.loads(line)
        if not e["event"].startswith("xen:"):
            continue
        f = e["fields"]
        n += 1
        names[e["event"]] += 1
        if e["event"] in ("xen:xen_other", "xen:xen_hvm_handler"):
            undec += 1
            undec_ids["0x%x" % f["xen_event"]] += 1
        if f["cur_dom"] == 65535:
            unattr += 1
        first.setdefault(e["cpu"], (f["cur_dom"], f["cur_vcpu"]))
    print("%s: %d Xen records, %d classes, undecoded %d (%.3f%%), unattributed %d"
          % (s, n, len(names), undec, 100.0 * undec / max(n, 1), unattr))
    print("  " + ", ".join("%s %d" % (k[4:], v) for k, v in names.most_common()))
    if undec_ids:
        print("  undecoded ids: %s" % dict(undec_ids))
    if n < 10000 or undec > n / 100 or unattr:
        ok = False
    if s == "tv":
        agree = 0
        for cpu in sorted(first):
            snap = meta.get("cpu%d.running" % cpu)
            scan = "%d.%d" % first[cpu]
            print("  cpu%d: running at start %s by the first scheduler record, %s by the snapshot"
                  % (cpu, scan, snap))
            if not snap or snap.split(".")[0] not in ("0", "32767"):
                ok = False
            agree += snap == scan
        print("  snapshot agrees with the scan on %d of %d CPUs" % (agree, len(first)))
sys.exit(0 if ok else 1)
PY
for s in tv xt; do
	grep -q "^unknown " "$T/$s.stat" && fail "$s: stat has rows under VM unknown: $(grep "^unknown " "$T/$s.stat" | head -3)"
	grep -Eq "^d0 +all +hypercall:" "$T/$s.stat" || fail "$s: stat has no hypercalls per domain"
	grep -Eq "^d0 +[01] +hypercall:" "$T/$s.stat" || fail "$s: stat has no hypercalls per vCPU"
done
echo "PASS: both recordings decoded (at most 1% undecoded), every record attributed, hypercalls per domain in stat" >&2
