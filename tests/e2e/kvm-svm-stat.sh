#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1 script is single-quoted on purpose
# Issue 2 on a real SVM KVM host (the lab's nested L1): record + stat give
# kvm_exit/kvm_entry with SVM reasons io, cpuid and hlt and their latencies,
# for the test VMM (exact counts) and for a Linux L2 guest booting.  The
# sessions are decoded again on this host: a session is self-describing.
# Issue 27: both sessions exported as HTML here and loaded in headless
# chromium (tests/html_check.py): no console error, the page's stat rows
# equal L1's stat --json, zoom/pan/click on a real exit; screenshots in
# build/html-check/lab/.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
command -v chromium >/dev/null || skip "needs chromium for the HTML pages (make deps)"
TV=${TV:-$REPO/build/tracevisor}
N=300 M=200 K=100

run_lab kvm '
PATH=/opt/tracevisor:$PATH
tracevisor record -q -o /out/vmm -- /opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 || exit 21
tracevisor stat --json /out/vmm > /out/vmm-stat.json || exit 22
tracevisor stat /out/vmm > /out/vmm-stat.txt || exit 23
printf "%s\n" "echo L2 up" "exit 0" > /tmp/l2.sh
tracevisor record -q -o /out/l2 -- lab-guest --cid 3 --timeout 180 /tmp/l2.sh /tmp/l2 || exit 24
tracevisor stat --json /out/l2 > /out/l2-stat.json || exit 25
tracevisor stat /out/l2 > /out/l2-stat.txt || exit 26
exit 0' svm
expect_rc 0 "record/stat in the nested SVM host"

# stat rows of one reason, summed over VMs/vCPUs: count, and whether timed.
rows() {	# FILE REASON KEY
	python3 -c '
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["reason"] == sys.argv[2]]
print(sum(r[sys.argv[3]] or 0 for r in rows) if rows else 0)' "$@"
}
check_eq() { [ "$2" = "$3" ] || fail "$1: got $2, want $3"; echo "ok: $1 = $3" >&2; }

S=$OUT/vmm-stat.json
check_eq "mode" "$(python3 -c 'import json,sys; print({r["mode"] for r in json.load(open(sys.argv[1]))})' "$S")" "{'exits'}"
# --repeat 2: the first hlt is followed by an entry, so it is timed too.
check_eq "io exits of the test VMM" "$(rows "$S" io count)" $((2 * (N + M)))
check_eq "cpuid exits" "$(rows "$S" cpuid count)" $((2 * K))
check_eq "hlt exits" "$(rows "$S" hlt count)" 2
for r in io cpuid hlt; do
	[ "$(rows "$S" $r p50_ns)" -gt 0 ] || fail "$r has no exit->entry latency"
done
# The same session decoded here, with this host's tracevisor (L1 runs 6.1).
"$TV" stat --json "$OUT/vmm" > "$T/vmm-host.json" || fail "host cannot decode the L1 session"
cmp -s <(python3 -m json.tool "$S") <(python3 -m json.tool "$T/vmm-host.json") ||
	fail "stat differs between L1 and this host"
"$TV" report "$OUT/vmm" | grep -q "kvm:kvm_exit .*reason io" || fail "report lacks SVM io exits"

S=$OUT/l2-stat.json
n=$(python3 -c 'import json,sys; print(sum(r["count"] for r in json.load(open(sys.argv[1]))))' "$S")
[ "$n" -gt 1000 ] || fail "only $n exits while L2 Linux booted"
for r in npf io; do
	[ "$(rows "$S" $r count)" -gt 0 ] || fail "no $r exits while L2 booted"
done
python3 - "$S" <<'PY' || fail "L2 exits not attributed to the QEMU VM and its vCPU"
import json, sys
rows = json.load(open(sys.argv[1]))
assert any(r["vm"].startswith("qemu") and r["vcpu"] == "0" for r in rows), rows[:3]
PY
for s in vmm l2; do
	"$TV" export --format html -o "$T/lab-$s.html" "$OUT/$s" || fail "export --format html of the $s session"
	mkdir -p "$REPO/build/html-check/lab"
	python3 "$REPO/tests/html_check.py" "$T/lab-$s.html" "$OUT/$s-stat.json" "$REPO/build/html-check/lab" \
		--expect-lanes vcpu > "$REPO/build/html-check/lab/lab-$s.txt" 2>&1 ||
		{ cat "$REPO/build/html-check/lab/lab-$s.txt" >&2; fail "browser check of the $s session's page"; }
	cat "$REPO/build/html-check/lab/lab-$s.txt" >&2
done
cat "$OUT/vmm-stat.txt" "$OUT/l2-stat.txt" >&2
echo "PASS: SVM exits io/cpuid/hlt exact with latencies; L2 boot: $n exits; both HTML pages checked in chromium" >&2
