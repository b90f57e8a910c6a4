#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1 script is single-quoted on purpose
# tv-lab: own-machine: the only scenario with its LAB_EXTRA (prometheus): a shared machine would only idle after it
# tracevisor serve scraped by a real Prometheus server (Debian's 2.42,
# brought into the lab's nested SVM L1 with LAB_EXTRA; both run there, on
# its loopback: L1 has no network) every second, with contrib/prometheus's
# rules loaded, while the test VMM runs a known exit mix twice in one
# process: run 1, a pause of a few scrapes (tv-testvmm --pause: out of
# KVM_RUN, no exit open), then run 2 under `record` (started before the
# VMM is resumed: record's command sends the SIGUSR1).
#
# Why two runs: increase() sees what a series gains between its samples
# in the window; a series' first sample is its base, whatever it holds,
# and serve's series are born at their VM's first exit of that reason.
# Run 1 gives every reason of the mix a series; the pause gives them a
# sample before run 2 starts, so that increase() over run 2 sees all of it.
# Prometheus extrapolates increase() from the first and last samples to
# the window's ends (promql/functions.go, extrapolatedRate): evaluated at
# the last sample's time T1 over a range starting exactly at T0, the last
# sample of the pause (2.x's windows include their start), that
# extrapolation is zero and increase() is exact.  Through the HTTP API:
#  - sum by (reason) (increase(tracevisor_vm_exits_total{vm=~"..."}[R]))
#    at T1, R = T1 - T0, equals stat's counts of the recording of run 2 for
#    every reason, and io/cpuid/hlt equal the mix; a reason born during
#    run 2 (no sample at T0: a stray intr) has its first sample's value
#    left out by increase(), which the test checks as such and says;
#  - the same increase() over [2m] at T1 + 0.5 s (windows not aligned
#    to samples) equals Prometheus's extrapolation formula applied to the
#    raw samples of that window: the difference from stat is explained;
#  - histogram_quantile(0.99, sum by (reason, le) (increase(..._bucket
#    {vm=~"..."}[R]))) at T1 is within its bucket's width of stat's p99;
#  - the target is up and the recording rule's series exist (the rules load);
#  - serve stops with status 0 on SIGTERM.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
PROM=$(command -v prometheus) || skip "prometheus not installed (make deps: Debian prometheus)"
N=400 M=200 K=150
q() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
SEL='{vm=~"tv-testvmm.*"}'
# queries with a range of the L1's making: the text around it, encoded
QINC_A=$(q "sum by (reason) (increase(tracevisor_vm_exits_total$SEL[") QINC_B=$(q "]))")
QP99_A=$(q "histogram_quantile(0.99, sum by (reason, le) (increase(tracevisor_vm_exit_latency_seconds_bucket$SEL[")
QP99_B=$(q "])))")
QIO=$(q "tracevisor_vm_exits_total{vm=~\"tv-testvmm.*\",reason=\"io\"}[10m]")
QRAW=$(q "tracevisor_vm_exits_total$SEL[2m]")
QINC2=$(q "sum by (reason) (increase(tracevisor_vm_exits_total$SEL[2m]))")
QCOUNT=$(q "sum by (reason) (tracevisor_vm_exits_total$SEL)")
QUP=$(q 'up{job="tracevisor"}')
QRULE=$(q 'vm_reason:tracevisor_vm_exits:rate1m')
mkdir -p "$T/extra"
cp "$REPO/contrib/prometheus/tracevisor-rules.yml" "$REPO/tests/lab/serve-l1.sh" "$T/extra/"

run_lab kvm '
PATH=/opt/tracevisor:$PATH
. '"$T"'/extra/serve-l1.sh
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up
API=http://127.0.0.1:9090/api/v1/query
printf "%s\n" "global:" "  scrape_interval: 1s" "  evaluation_interval: 1s" \
	"rule_files: [\"'"$T"'/extra/tracevisor-rules.yml\"]" "scrape_configs:" \
	"  - job_name: tracevisor" "    static_configs: [{targets: [\"127.0.0.1:9477\"]}]" > /tmp/prom.yml
tracevisor serve > /out/serve.out 2> /out/serve.err &
S=$!
prometheus --config.file=/tmp/prom.yml --storage.tsdb.path=/tmp/prom --web.listen-address=127.0.0.1:9090 > /out/prom.log 2>&1 &
P=$!
wait_for "$API?query='"$QUP"'" "\"1\"\]" 30 /out/prom.log /out/serve.err
/opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 --pause --quiet &
V=$!
echo $V > /out/vmm.pid
# run 1 over when it waits for SIGUSR1 (rt_sigtimedwait, x86-64 syscall 128)
i=0
until [ "$(cut -d" " -f1 /proc/$V/syscall 2>/dev/null)" = 128 ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || exit 31
	sleep 0.1
done
# the paused VM scraped a few times: its series hold run 1
sleep 5
rm -f /tmp/vmm.done
tracevisor record -q -o /out/rec -e kvm:kvm_exit -e kvm:kvm_entry -- \
	sh -c "kill -USR1 $V; until [ -e /tmp/vmm.done ]; do sleep 0.05; done" &
R=$!
wait $V || exit 21
touch /tmp/vmm.done
wait $R || exit 28
# a few scrapes after the run: Prometheus has its last counts
sleep 5
wget -q -O /out/io.json "$API?query='"$QIO"'" || exit 22
# T0: the last sample of the pause (io = run 1 = N + M); T1: the last one
T0=$(tr "[" "\n" < /out/io.json | grep "^[0-9.]*,\"'$((N + M))'\"\]" | tail -1 | cut -d, -f1)
T1=$(tr "[" "\n" < /out/io.json | grep "^[0-9.]*,\"[0-9]*\"\]" | tail -1 | cut -d, -f1)
[ -n "$T0" ] && [ -n "$T1" ] || exit 23
RANGE=$(awk -v a="$T0" -v b="$T1" "BEGIN { printf \"%d\", (b - a) * 1000 + 0.5 }")ms
T2=$(awk -v b="$T1" "BEGIN { printf \"%.3f\", b + 0.5 }")
echo "$T0 $T1 $RANGE $T2" > /out/times
wget -q -O /out/inc.json "$API?time=$T1&query='"$QINC_A"'$RANGE'"$QINC_B"'" || exit 24
wget -q -O /out/p99.json "$API?time=$T1&query='"$QP99_A"'$RANGE'"$QP99_B"'" || exit 24
wget -q -O /out/count.json "$API?time=$T1&query='"$QCOUNT"'" || exit 24
wget -q -O /out/count0.json "$API?time=$T0&query='"$QCOUNT"'" || exit 24
wget -q -O /out/inc2.json "$API?time=$T2&query='"$QINC2"'" || exit 24
wget -q -O /out/raw.json "$API?time=$T2&query='"$QRAW"'" || exit 24
wget -q -O /out/rule.json "$API?query='"$QRULE"'" || exit 25
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
python3 "$REPO/tests/e2e/serve_promql_check.py" "$OUT" $N $M $K || fail "PromQL against stat of the same run"
echo "PASS: serve-prometheus: increase() = stat's counts, p99 within its bucket, extrapolation as Prometheus's formula, rules loaded, SIGTERM clean" >&2
