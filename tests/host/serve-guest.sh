#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor serve --flight-recorder SIZE --guest SPEC: a local
# tracevisor-agent (its "virtio-serial port" a pty pair relayed to another,
# tests/host/ptyrelay.py, as in guest-agent-local.sh) joins serve's flight
# recorder, and its stream's figures are served.  Checks:
#  - tracevisor_guest_stream_up{guest="loc"} 1 while the agent traces;
#    its sync probes answered rise between two scrapes 2 s apart, never
#    above those sent; no frame refused; promtool passes on every scrape;
#  - POST /snapshot (Alertmanager's payload) takes the guest's ring:
#    the snapshot has guest-loc, and the bytes received rise;
#  - the agent killed and its channel closed: up 0, the figures kept;
#  - SIGTERM: status 0;
#  - --guest without --flight-recorder, and two guests of one name: one
#    line each, status 2.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v promtool >/dev/null || skip "promtool not installed (make deps)"
host_kvm_usable || skip "no usable KVM on this host ($KVM_WHY): the flight recorder's kvm events need one"
AGENT=$TV_ROOT/build/tracevisor-agent
[ -x "$AGENT" ] || fail "build/tracevisor-agent missing (make)"
T=$TV_TMP
SERVES=()
# shellcheck disable=SC2154 # p: the trap's own loop variable
trap 'for p in "${SERVES[@]}" ${RELAY:-} ${APID:-}; do kill "$p" 2>/dev/null; done' EXIT

"$TV" serve --guest serial:/dev/null,name:x 2>"$T/e1"
expect_eq "--guest without --flight-recorder: status" "$?" 2
[ "$(wc -l <"$T/e1")" = 1 ] && grep -q -- "--guest records the guests in the flight recorder" "$T/e1" ||
	fail "--guest without --flight-recorder: $(cat "$T/e1")"
"$TV" serve --flight-recorder 1M --guest serial:/dev/null,name:x --guest serial:/dev/zero,name:x 2>"$T/e2"
expect_eq "two guests named x: status" "$?" 2
[ "$(wc -l <"$T/e2")" = 1 ] && grep -q "two guests named 'x'" "$T/e2" || fail "two guests named x: $(cat "$T/e2")"

python3 "$TV_ROOT/tests/host/ptyrelay.py" >"$T/ptys" &
RELAY=$!
for _ in $(seq 25); do [ -s "$T/ptys" ] && break; sleep 0.2; done
read -r GPTY HPTY <"$T/ptys" || fail "pty relay did not start"
# -H: no hypercall probes (this host is itself a guest of some hypervisor)
"$AGENT" -p 0 -s "$GPTY" -1 -H 2>"$T/agent.log" &
APID=$!
S=$T/flight
serve_start --flight-recorder 4M -o "$S" --guest "serial:$HPTY,name:loc"
scrape() { curl -sf "http://127.0.0.1:$SERVE_PORT/metrics" >"$T/$1.prom" || fail "scrape $1"
	promtool check metrics <"$T/$1.prom" >"$T/$1.promtool" 2>&1 || fail "promtool on $1: $(head -n 5 "$T/$1.promtool")"; }
val() {	# SCRAPE METRIC{LABELS}: its value
	awk -v k="$2" '$1 == k { print $2 }' "$T/$1.prom"
}
scrape m1
sleep 2
scrape m2
expect_eq "stream up" "$(val m2 'tracevisor_guest_stream_up{guest="loc"}')" 1
a1=$(val m1 'tracevisor_guest_sync_probes_answered_total{guest="loc"}')
a2=$(val m2 'tracevisor_guest_sync_probes_answered_total{guest="loc"}')
p2=$(val m2 'tracevisor_guest_sync_probes_total{guest="loc"}')
[ -n "$a1" ] && [ -n "$a2" ] && [ "$a2" -gt "$a1" ] && [ "$a2" -le "$p2" ] ||
	fail "probes answered $a1 -> $a2 of $p2 sent"
for c in unsolicited_pong unsolicited_hcall_done stream_ended; do
	expect_eq "refused $c" "$(val m2 "tracevisor_guest_frames_refused_total{guest=\"loc\",cause=\"$c\"}")" 0
done
b2=$(val m2 'tracevisor_guest_stream_bytes_total{guest="loc"}')
echo "ok: guest loc up, sync probes answered $a1 -> $a2 (of $p2 sent), $b2 bytes"

c=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	--data-binary "@$TV_ROOT/tests/samples/alertmanager/webhook-v4.json" "http://127.0.0.1:$SERVE_PORT/snapshot")
[ "$c" = 200 ] || fail "POST /snapshot: HTTP $c: $(cat "$T/body")"
[ -d "$S/snapshot-1/guest-loc" ] || fail "the snapshot has no guest-loc: $(ls "$S/snapshot-1")"
scrape m3
b3=$(val m3 'tracevisor_guest_stream_bytes_total{guest="loc"}')
[ "$b3" -gt "$b2" ] || fail "bytes received after the snapshot: $b2 -> $b3"
echo "ok: POST /snapshot took guest-loc, bytes received $b2 -> $b3"

# the agent killed and its channel closed (the relay, which holds the
# pty masters, goes too: the host end reads EOF; a virtio-serial port
# whose guest died stays open, and the stream then stays up until serve's
# next start)
kill -9 "$APID" "$RELAY"
wait "$APID" "$RELAY" 2>/dev/null
APID= RELAY=
for _ in $(seq 50); do
	scrape m4
	[ "$(val m4 'tracevisor_guest_stream_up{guest="loc"}')" = 0 ] && break
	sleep 0.2
done
expect_eq "stream up after the agent was killed" "$(val m4 'tracevisor_guest_stream_up{guest="loc"}')" 0
a4=$(val m4 'tracevisor_guest_sync_probes_answered_total{guest="loc"}')
[ "$a4" -ge "$a2" ] || fail "figures lost when the agent died: answered $a2 -> $a4"
echo "ok: agent killed: up 0, $a4 probes answered kept"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
expect_eq "serve's status on SIGTERM" "$?" 0
echo "ok: serve --guest stopped with status 0"
