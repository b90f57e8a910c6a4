#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1 script is single-quoted on purpose
# tv-lab: own-machine: the only scenario with its LAB_EXTRA (prometheus): a shared machine would only idle after it
# tracevisor serve scraped by a real Prometheus server (Debian's, brought
# into the lab's nested SVM L1 with LAB_EXTRA; both run there, on its
# loopback: L1 has no network) every second, with contrib/prometheus's
# rules loaded, while the test VMM runs a known exit mix under `record`.
# Through Prometheus's HTTP API, after the run:
#  - sum by (reason) (tracevisor_vm_exits_total{vm="tv-testvmm[PID]"})
#    equals stat's counts of the recording of the same run, for every
#    reason, and io/cpuid/hlt equal the mix;
#  - histogram_quantile(0.99, sum by (le, reason) (..._bucket{vm=...}))
#    is within its bucket's width of stat's p99, for io and cpuid;
#  - the target is up and the recording rule's series exist (the rules load);
#  - serve stops with status 0 on SIGTERM.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
PROM=$(command -v prometheus) || skip "prometheus not installed (make deps: Debian prometheus)"
N=400 M=200 K=150
q() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
SEL='{vm=~"tv-testvmm.*"}'
QCOUNT=$(q "sum by (vm, reason) (tracevisor_vm_exits_total$SEL)")
QP99=$(q "histogram_quantile(0.99, sum by (vm, reason, le) (tracevisor_vm_exit_latency_seconds_bucket$SEL))")
QINC=$(q "sum by (vm, reason) (increase(tracevisor_vm_exits_total${SEL}[2m]))")
QUP=$(q 'up{job="tracevisor"}')
QRULE=$(q 'vm_reason:tracevisor_vm_exits:rate1m')
mkdir -p "$T/extra"
cp "$REPO/contrib/prometheus/tracevisor-rules.yml" "$T/extra/"

run_lab kvm '
PATH=/opt/tracevisor:$PATH
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up
API=http://127.0.0.1:9090/api/v1/query?query=
printf "%s\n" "global:" "  scrape_interval: 1s" "  evaluation_interval: 1s" \
	"rule_files: [\"'"$T"'/extra/tracevisor-rules.yml\"]" "scrape_configs:" \
	"  - job_name: tracevisor" "    static_configs: [{targets: [\"127.0.0.1:9477\"]}]" > /tmp/prom.yml
tracevisor serve > /out/serve.out 2> /out/serve.err &
S=$!
prometheus --config.file=/tmp/prom.yml --storage.tsdb.path=/tmp/prom --web.listen-address=127.0.0.1:9090 > /out/prom.log 2>&1 &
P=$!
i=0
until wget -q -O /out/up.json "${API}'"$QUP"'" 2>/dev/null && grep -q "\"1\"\]" /out/up.json; do
	i=$((i + 1))
	[ $i -lt 300 ] || { tail -20 /out/prom.log >&2; cat /out/serve.err >&2; exit 30; }
	sleep 0.5
done
tracevisor record -q -o /out/rec -e kvm:kvm_exit -e kvm:kvm_entry -- sh -c "echo \$\$ > /out/vmm.pid; exec /opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 --quiet" || exit 21
# a few scrapes after the run: Prometheus has its last counts
sleep 5
wget -q -O /out/count.json "${API}'"$QCOUNT"'" || exit 22
wget -q -O /out/p99.json "${API}'"$QP99"'" || exit 23
wget -q -O /out/inc.json "${API}'"$QINC"'" || exit 24
wget -q -O /out/rule.json "${API}'"$QRULE"'" || exit 25
wget -q -O /out/scrape.txt http://127.0.0.1:9477/metrics || exit 26
kill -TERM $P
kill -TERM $S
rc=0
wait $S || rc=$?
echo $rc > /out/serve.rc
wait $P || true
tracevisor stat --json /out/rec > /out/rec-stat.json || exit 27
exit 0' serve-prometheus LAB_EXTRA="$PROM $T/extra" LAB_TIMEOUT=420
expect_rc 0 "serve scraped by Prometheus in the nested SVM host"

[ "$(cat "$OUT/serve.rc")" = 0 ] || fail "serve's status after SIGTERM: $(cat "$OUT/serve.rc"): $(cat "$OUT/serve.err")"
python3 - "$OUT" $N $M $K <<'PY' || fail "PromQL against stat of the same run"
import json, sys
o, n, m, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
vm = "tv-testvmm[%s]" % open(o + "/vmm.pid").read().strip()
def result(name):
    d = json.load(open("%s/%s.json" % (o, name)))
    assert d["status"] == "success", d
    return d["data"]["result"]
prom = {r["metric"]["reason"]: float(r["value"][1]) for r in result("count") if r["metric"]["vm"] == vm}
stat = json.load(open(o + "/rec-stat.json"))
want = {}
for r in stat:
    if r["vm"] == vm:
        want[r["reason"]] = want.get(r["reason"], 0) + r["count"]
assert prom and prom == {r: float(c) for r, c in want.items()}, "Prometheus %s, stat %s" % (prom, want)
assert (prom["io"], prom["cpuid"], prom["hlt"]) == (2 * (n + m), 2 * k, 2), prom
print("PromQL sum by (reason): %s = stat's" % {r: int(c) for r, c in sorted(prom.items())})
bounds = [256e-9 * 4 ** i for i in range(13)]
p99 = {r["metric"]["reason"]: float(r["value"][1]) for r in result("p99") if r["metric"]["vm"] == vm}
for reason in ("io", "cpuid"):
    rows = [r for r in stat if r["vm"] == vm and r["reason"] == reason]
    s = max(r["p99_ns"] for r in rows) / 1e9
    p = p99[reason]
    hi = min(b for b in bounds if b >= p)
    lo = max([0] + [b for b in bounds if b < hi])
    assert abs(p - s) <= hi - lo, "%s: PromQL p99 %.6f s, stat %.6f s, bucket (%g, %g]" % (reason, p, s, lo, hi)
    print("%s p99: PromQL %.1f us, stat %.1f us, bucket (%.1f, %.1f] us" % (reason, p * 1e6, s * 1e6, lo * 1e6, hi * 1e6))
inc = {r["metric"]["reason"]: float(r["value"][1]) for r in result("inc") if r["metric"]["vm"] == vm}
print("increase()[2m] (extrapolated by Prometheus, from the series' first scrape): %s" %
      {r: round(v, 1) for r, v in sorted(inc.items())})
assert result("rule"), "the recording rule vm_reason:tracevisor_vm_exits:rate1m has no series"
PY
echo "PASS: serve-prometheus: PromQL counts = stat's, p99 within its bucket, rules loaded, SIGTERM clean" >&2
