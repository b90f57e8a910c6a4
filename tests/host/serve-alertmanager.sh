#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The whole alert path with the real components (Debian's prometheus and
# prometheus-alertmanager, started here): serve --flight-recorder with a
# bearer token; Prometheus scrapes it (the token as credentials_file) and
# evaluates an alert rule on serve's own metrics (this host's PVM KVM fires
# no kvm_exit, so contrib's latency alert cannot fire here: the rule is
# test-only, on tracevisor_bpf_programs_attached, with a vm label);
# Alertmanager routes it to a webhook receiver posting to serve's
# /snapshot with the token.  Checked: the snapshot appears with
# alert=TracevisorTestSnapshot and alert_vm=the rule's vm, report reads
# the test VMM's port writes made before it, Alertmanager counts the
# webhook delivered and none failed, and serve said where it went.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
for t in curl prometheus prometheus-alertmanager promtool; do
	command -v $t >/dev/null || skip "$t not installed (make deps)"
done
host_kvm_usable || skip "no usable KVM on this host ($KVM_WHY): the snapshot's kvm events need one"
T=$TV_TMP
S=$T/flight
SERVES=()
# shellcheck disable=SC2154 # p: the trap's own loop variable
trap 'for p in "${SERVES[@]}"; do kill "$p" 2>/dev/null; done' EXIT
echo "am-token-$$" >"$T/token"
printf 'bearer_token_file: %s\n' "$T/token" >"$T/web.yml"
serve_start --web.config.file "$T/web.yml" --flight-recorder 4M -o "$S"
SPORT=$SERVE_PORT SP=$SERVE_PID
"$VMM" --outs 5 --quiet & vmm=$!
wait $vmm || fail "the test VMM failed"

APORT=$(free_port)
cat >"$T/am.yml" <<EOT
route:
  receiver: tracevisor-snapshot
  group_by: [alertname, instance]
  group_wait: 0s
  group_interval: 1m
  repeat_interval: 1h
receivers:
  - name: tracevisor-snapshot
    webhook_configs:
      - url: http://127.0.0.1:$SPORT/snapshot
        send_resolved: false
        http_config:
          authorization: {credentials_file: $T/token}
EOT
prometheus-alertmanager --config.file="$T/am.yml" --storage.path="$T/am" --web.listen-address=127.0.0.1:$APORT \
	--cluster.listen-address= >"$T/am.log" 2>&1 &
SERVES+=("$!")
cat >"$T/rules.yml" <<'EOT'
groups:
  - name: tracevisor-test
    rules:
      - alert: TracevisorTestSnapshot
        expr: tracevisor_bpf_programs_attached > 0
        labels:
          vm: tv-test-vm
        annotations:
          summary: "test-only: serve's programs are attached"
EOT
promtool check rules "$T/rules.yml" >/dev/null || fail "the test rule: $(promtool check rules "$T/rules.yml" 2>&1)"
PPORT=$(free_port)
cat >"$T/prom.yml" <<EOT
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$T/rules.yml, $TV_ROOT/contrib/prometheus/tracevisor-rules.yml]
alerting:
  alertmanagers:
    - static_configs: [{targets: ["127.0.0.1:$APORT"]}]
scrape_configs:
  - job_name: tracevisor
    authorization: {credentials_file: $T/token}
    static_configs: [{targets: ["127.0.0.1:$SPORT"]}]
EOT
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" --web.listen-address=127.0.0.1:$PPORT \
	>"$T/prom.log" 2>&1 &
SERVES+=("$!")
for i in $(seq 120); do
	[ -f "$S/snapshot-1/session.meta" ] && break
	[ "$i" = 120 ] && fail "no snapshot within 60 s: serve: $(tail -n 3 "$T/serve.err"); alertmanager: $(tail -n 3 "$T/am.log"); prometheus: $(tail -n 3 "$T/prom.log")"
	sleep 0.5
done
echo "ok: Prometheus -> Alertmanager -> serve: $S/snapshot-1 after ~$((i / 2)) s"
alert_snapshot_check "$S/snapshot-1" TracevisorTestSnapshot tv-test-vm $vmm
m=$(curl -s "http://127.0.0.1:$APORT/metrics")
ok=$(echo "$m" | sed -n 's/^alertmanager_notifications_total{integration="webhook"} //p')
bad=$(echo "$m" | sed -n 's/^alertmanager_notifications_failed_total{integration="webhook"} //p')
[ "${ok:-0}" -ge 1 ] && [ "${bad:-x}" = 0 ] || fail "Alertmanager's webhook: $ok sent, $bad failed: $(tail -n 5 "$T/am.log")"
echo "ok: alert=, alert_vm= from the rule; the 5 port writes; Alertmanager: $ok webhook sent, 0 failed"
kill -TERM $SP
wait $SP
expect_eq "serve's status after SIGTERM" $? 0
echo "PASS: a Prometheus alert through Alertmanager's webhook takes serve's snapshot"
