#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# Real Xen with our patch (xen/patches/, built from `apt-get source xen` and
# cached): the consumer finds the exported TSC scale and records in Xen
# system time (clock=xen-system), Xen writes TRC_TRACE_TSCALE at each
# calibration, and sync points injected from dom0 (tracevisor xen-mark,
# HVMOP_xentrace) carry the TSC and land on dom0's own clock up to one
# constant offset.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
patched_xen

run_lab xen '
TV=/opt/tracevisor/tracevisor
$TV record --xen -o /tmp/p -- sh -c "$TV xen-mark 11 > /tmp/m1; sleep 3; $TV xen-mark 22 > /tmp/m2" 2>/out/rec.err || exit 20
$TV report /tmp/p | grep -E "xen_guest|xen_tscale" > /out/p.events
cp /tmp/m1 /tmp/m2 /out/ && mkdir -p /out/p/xen && cp /tmp/p/xen/meta /out/p/xen/
exit 0' patched LAB_XEN="$XEN_BIN"
expect_rc 0 "dom0 script on the patched Xen"

m=$OUT/p/xen/meta
grep -q "^clock=xen-system$" "$m" || fail "consumer did not use the exported time scale: $(grep clock= "$m")"
grep -q "^missing=" "$m" && fail "patched Xen reported as lacking: $(grep missing= "$m")"
for c in 0 1; do
	[ "$(sed -n "s/^cpu$c.tsc_to_system_mul=//p" "$m")" -gt 0 ] || fail "no time scale for CPU $c"
done
[ "$(grep -c xen_tscale "$OUT/p.events")" -ge 2 ] || fail "no in-band TRC_TRACE_TSCALE records"
python3 - "$OUT" <<'PY' || fail "sync points (above)"
import re, sys
out = sys.argv[1]
marks = {}
for line in open(out + "/p.events"):
    if "xen_guest" not in line:
        continue
    ts = float(line.split()[2].rstrip(":"))
    has_tsc = re.search(r"has_tsc=(\d+)", line).group(1)
    word = re.search(r" data=(\d+)", line).group(1)
    marks[word] = (ts, has_tsc)
ok = True
spans = []
for word, f in (("11", "m1"), ("22", "m2")):
    if word not in marks:
        print("sync point %s missing" % word); ok = False; continue
    ts, has_tsc = marks[word]
    if has_tsc != "1":
        print("sync point %s has no TSC" % word); ok = False
    kv = dict(x.split("=") for x in open("%s/%s" % (out, f)).read().split())
    lo, hi = int(kv["mono_before_ns"]) / 1e9, int(kv["mono_after_ns"]) / 1e9
    # offsets (xen - dom0) this sync point allows: the hypercall ran between
    spans.append((ts - hi, ts - lo))
    print("sync point %s: xen %.9f s, dom0 monotonic [%.9f, %.9f] s, offset in [%.6f, %.6f] s"
          % (word, ts, lo, hi, ts - hi, ts - lo))
# one clock up to a constant: some offset fits both.  2 ms slack: under TCG
# the emulated TSC makes Xen's per-CPU extrapolation between calibrations
# (which dom0's clock follows too) wander by up to ~1 ms (measured 0.1-0.8 ms).
if len(spans) == 2 and max(s[0] for s in spans) > min(s[1] for s in spans) + 0.002:
    print("no common offset: Xen's time is not dom0's clock plus a constant"); ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS: patched Xen: clock=xen-system, $(grep -c xen_tscale "$OUT/p.events") tscale records, sync points with TSC on dom0's clock" >&2
