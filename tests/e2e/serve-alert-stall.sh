#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1 script is single-quoted on purpose
# tv-lab: own-machine: its LAB_EXTRA (prometheus, prometheus-alertmanager) is no other scenario's
# The alert path of #26 on real exits, all in the lab's nested SVM L1 (its
# loopback): tracevisor serve --flight-recorder; Debian's Prometheus
# scraping it every second with contrib/prometheus's rules, whose
# TracevisorVMExitLatencyHigh (a VM's p99 exit->entry over 1m > 100 ms)
# is the alert; Debian's Alertmanager posting its webhook to serve's
# POST /snapshot.  The stall: the test VMM (the VMM process, QEMU's part
# here) stopped for 1 s with SIGSTOP/SIGCONT.
#
# Where a stop shows: a stopped thread runs no guest code, so the exit
# open when it stopped lasts until the vCPU's next entry, after SIGCONT:
# one exit of at least the stop's length.  Which exit depends on where the
# thread was: in the guest, the stop's kick makes an exit (intr) and
# KVM_RUN returns EINTR; in the VMM's user space, it is the exit being
# handled.  To make it a known one, the VMM handles each port write for
# 30 ms (tv-testvmm --io-delay-us 30000: a slow device model) and the stop
# is sent while its thread sleeps there (/proc/PID/syscall: nanosleep),
# inside an io exit.  The other io exits last ~30 ms (bucket le=0.067),
# p99 stays under the rule's 100 ms: without the stall nothing fires.
# 40 port writes keep the VM's exits in the 1m window under 100, so the
# one stalled exit is the window's p99.
# Checked: Prometheus has the alert firing for the VM; Alertmanager sent
# the webhook (none failed); serve's snapshot-1 has alert= and alert_vm=
# the VM's label; stat of the snapshot has the VM's io exit of >= 1 s;
# no snapshot before the stall.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
PROM=$(command -v prometheus) || skip "prometheus not installed (make deps: Debian prometheus)"
AM=$(command -v prometheus-alertmanager) || skip "prometheus-alertmanager not installed (make deps)"
# its notification templates, read at start (without them it sends nothing)
AMT="/usr/share/prometheus/alertmanager/default.tmpl /usr/share/prometheus/alertmanager/email.tmpl"
for f in $AMT; do
	[ -f "$f" ] || skip "$f missing (Debian's prometheus-alertmanager)"
done
q() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
QUP=$(q 'up{job="tracevisor"}')
QALERT=$(q 'ALERTS{alertname="TracevisorVMExitLatencyHigh",alertstate="firing"}')
QP99=$(q 'histogram_quantile(0.99, sum by (vm, le) (rate(tracevisor_vm_exit_latency_seconds_bucket{vm=~"tv-testvmm.*"}[1m])))')
mkdir -p "$T/extra"
cp "$REPO/contrib/prometheus/tracevisor-rules.yml" "$REPO/tests/lab/serve-l1.sh" "$T/extra/"
cat >"$T/extra/am.yml" <<'EOT'
route:
  receiver: tracevisor-snapshot
  group_by: [alertname, vm]
  group_wait: 0s
  group_interval: 1m
  repeat_interval: 1h
receivers:
  - name: tracevisor-snapshot
    webhook_configs:
      - url: http://127.0.0.1:9477/snapshot
        send_resolved: false
EOT
cat >"$T/extra/prom.yml" <<EOT
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$T/extra/tracevisor-rules.yml]
alerting:
  alertmanagers:
    - static_configs: [{targets: ["127.0.0.1:9093"]}]
scrape_configs:
  - job_name: tracevisor
    static_configs: [{targets: ["127.0.0.1:9477"]}]
EOT

run_lab kvm '
PATH=/opt/tracevisor:$PATH
. '"$T"'/extra/serve-l1.sh
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up
API=http://127.0.0.1:9090/api/v1/query?query=
F=/tmp/flight
tracevisor serve --flight-recorder 8M -o $F > /out/serve.out 2> /out/serve.err &
S=$!
prometheus-alertmanager --config.file='"$T"'/extra/am.yml --storage.path=/tmp/am \
	--web.listen-address=127.0.0.1:9093 --cluster.listen-address= > /out/am.log 2>&1 &
A=$!
prometheus --config.file='"$T"'/extra/prom.yml --storage.tsdb.path=/tmp/prom \
	--web.listen-address=127.0.0.1:9090 > /out/prom.log 2>&1 &
P=$!
wait_for "${API}'"$QUP"'" "\"1\"\]" 30 /out/prom.log /out/serve.err
wait_for http://127.0.0.1:9093/-/ready "" 33 /out/am.log
/opt/tracevisor/tests/tv-testvmm --outs 40 --io-delay-us 30000 --quiet &
V=$!
echo $V > /out/vmm.pid
sleep 0.3
# stop it inside a port write: its thread in nanosleep (x86-64: 35) or clock_nanosleep (230)
i=0
until grep -Eq "^(35|230) " /proc/$V/syscall 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 2000 ] || exit 31
done
kill -STOP $V
cut -d" " -f1 /proc/$V/syscall > /out/stop.syscall
ls -d $F/snapshot-* > /out/before-stall.ls 2>/dev/null
sleep 1
kill -CONT $V
wait $V || exit 21
i=0
until [ -f $F/snapshot-1/session.meta ]; do
	i=$((i + 1))
	[ $i -lt 120 ] || { wget -q -O /out/p99.json "${API}'"$QP99"'"; tail -5 /out/am.log >&2; tail -5 /out/serve.err >&2; exit 32; }
	sleep 0.5
done
echo $((i / 2)) > /out/snapshot.after
wget -q -O /out/alerts.json "${API}'"$QALERT"'" || exit 22
wget -q -O /out/p99.json "${API}'"$QP99"'" || exit 22
wget -q -O /out/am-metrics.txt http://127.0.0.1:9093/metrics || exit 23
cp $F/snapshot-1/session.meta /out/snapshot.meta
tracevisor stat --json $F/snapshot-1 > /out/snap-stat.json || exit 24
kill -TERM $P $A
kill -TERM $S
rc=0
wait $S || rc=$?
echo $rc > /out/serve.rc
wait $P $A || true
exit 0' serve-alert-stall LAB_EXTRA="$PROM $AM $AMT $T/extra" LAB_TIMEOUT=420
expect_rc 0 "the stall's alert through Prometheus and Alertmanager to serve's snapshot"

[ "$(cat "$OUT/serve.rc")" = 0 ] || fail "serve's status after SIGTERM: $(cat "$OUT/serve.rc"): $(cat "$OUT/serve.err")"
[ ! -s "$OUT/before-stall.ls" ] || fail "a snapshot before the stall: $(cat "$OUT/before-stall.ls")"
vmm=$(cat "$OUT/vmm.pid")
vm="tv-testvmm[$vmm]"
grep -qx "alert=TracevisorVMExitLatencyHigh" "$OUT/snapshot.meta" && grep -qxF "alert_vm=$vm" "$OUT/snapshot.meta" ||
	fail "snapshot-1's alert keys: $(cat "$OUT/snapshot.meta")"
grep -qF "\"vm\":\"$vm\"" "$OUT/alerts.json" || fail "Prometheus has no firing TracevisorVMExitLatencyHigh for $vm: $(cat "$OUT/alerts.json")"
ok=$(sed -n 's/^alertmanager_notifications_total{integration="webhook"} //p' "$OUT/am-metrics.txt")
bad=$(sed -n 's/^alertmanager_notifications_failed_total{integration="webhook"} //p' "$OUT/am-metrics.txt")
[ "${ok:-0}" -ge 1 ] && [ "${bad:-x}" = 0 ] || fail "Alertmanager's webhook: ${ok:-?} sent, ${bad:-?} failed: $(tail -n 5 "$OUT/am.log")"
python3 - "$OUT" "$vm" <<'PY' || fail "the stalled exit in the snapshot"
import json, sys
out, vm = sys.argv[1], sys.argv[2]
rows = [r for r in json.load(open(out + "/snap-stat.json")) if r["vm"] == vm and r["max_ns"] is not None]
assert rows, "stat of snapshot-1 has no timed exit of %s" % vm
top = max(rows, key=lambda r: r["max_ns"])
assert top["max_ns"] >= 1e9, "the longest exit of %s in snapshot-1: %s %d ns, want >= 1 s" % (vm, top["reason"], top["max_ns"])
assert top["reason"] == "io", "the stalled exit is %s, want io (stopped inside a port write)" % top["reason"]
p99 = json.load(open(out + "/p99.json"))["data"]["result"]
print("snapshot-1: %s's longest exit: %s, %.3f s (%d io exits); PromQL p99 over 1m then: %s s"
      % (vm, top["reason"], top["max_ns"] / 1e9, sum(r["count"] for r in rows if r["reason"] == "io"),
         ", ".join(r["value"][1] for r in p99)))
PY
echo "stopped in syscall $(cat "$OUT/stop.syscall"); snapshot ~$(cat "$OUT/snapshot.after") s after the VMM ended; Alertmanager: $ok webhook sent, 0 failed"
echo "PASS: serve-alert-stall: a 1 s stop of the VMM -> p99 alert -> Alertmanager -> serve's snapshot holding the >= 1 s io exit" >&2
