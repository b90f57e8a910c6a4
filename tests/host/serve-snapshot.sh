#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor serve --flight-recorder SIZE: the host flight recorder kept
# armed, and POST /snapshot with Alertmanager's webhook payload (version 4,
# tests/samples/alertmanager/webhook-v4.json: two firing alerts, one
# resolved) behind --web.config.file's bearer token:
#  - no credentials, or a wrong token: 401, "Unauthorized", no snapshot;
#  - malformed payloads (cut JSON, not an object, version 3, an alert
#    without alertname): 400 and one line naming what is wrong, no snapshot;
#    a body over 256 KiB: 413; GET /snapshot: 405;
#  - resolved alerts only: 200, no snapshot;
#  - the real payload: 200 "snapshot DIR/snapshot-1", its session.meta with
#    alert= and alert_vm= (both firing alerts' vm labels, sanitised), and
#    the test VMM's 5 port writes (made before the alert) read back by
#    report and stat from the snapshot;
#  - serve without --flight-recorder: POST /snapshot gets 404; -o alone is
#    refused in one line;
#  - SIGTERM: status 0, the session DIR itself written, the instance removed;
#  - --max-snapshots 2 --trigger-holdoff 1s: a POST within the holdoff and
#    one past the cap get 429 and one line, nothing written; the counts in
#    /metrics (promtool passes); a burst of 120 POSTs meets the rate bound
#    (429); a bad --trigger-holdoff: one line, non-zero status.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
command -v curl >/dev/null || skip "curl not installed (make deps)"
host_kvm_usable || skip "no usable KVM on this host ($KVM_WHY): the snapshot's kvm events need one"
T=$TV_TMP
PAYLOAD=$TV_ROOT/tests/samples/alertmanager/webhook-v4.json
SERVES=()
start() {	# ARGS...: serve with the token's web config (PORT, SP)
	serve_start --web.config.file "$T/web.yml" "$@"
	PORT=$SERVE_PORT SP=$SERVE_PID
}
# shellcheck disable=SC2154 # p: the trap's own loop variable
trap 'for p in "${SERVES[@]}"; do kill "$p" 2>/dev/null; done' EXIT
post() {	# DATA-FILE [CURL-ARGS...]: POST /snapshot, the status printed, the body in $T/body
	local data=$1
	shift
	curl -s -o "$T/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "@$data" "$@" "http://127.0.0.1:$PORT/snapshot"
}
AUTH=(-H "Authorization: Bearer s3cret-$$")
echo "s3cret-$$" >"$T/token"
printf 'bearer_token_file: %s\n' "$T/token" >"$T/web.yml"
S=$T/flight
no_snapshot() { [ -z "$(ls -d "$S"/snapshot-* 2>/dev/null)" ] || fail "$1: a snapshot was written: $(ls -d "$S"/snapshot-*)"; }

start --flight-recorder 1M -o "$S"
grep -q "Flight recorder armed: .* POST /snapshot writes $S/snapshot-N" "$T/serve.err" ||
	fail "where snapshots go not said: $(cat "$T/serve.err")"
# 1. authentication first: nothing read, nothing written
c=$(post "$PAYLOAD")
[ "$c" = 401 ] && [ "$(cat "$T/body")" = Unauthorized ] || fail "no credentials: HTTP $c: $(cat "$T/body")"
c=$(post "$PAYLOAD" -H "Authorization: Bearer wrong")
[ "$c" = 401 ] || fail "a wrong token: HTTP $c"
no_snapshot "401s"
echo "ok: no credentials or a wrong token: 401, no snapshot"
# 2. malformed payloads: 400 and one line saying what
bad() {	# NAME DATA WANT-SUBSTRING
	printf '%s' "$2" >"$T/bad.json"
	c=$(post "$T/bad.json" "${AUTH[@]}")
	[ "$c" = 400 ] || fail "$1: HTTP $c, want 400: $(cat "$T/body")"
	[ "$(wc -l <"$T/body")" = 1 ] && grep -q "^invalid Alertmanager webhook: .*$3" "$T/body" ||
		fail "$1: the 400 is not one line with '$3': $(cat "$T/body")"
	echo "ok: $1: 400: $(cat "$T/body")"
}
bad "cut JSON" "$(head -c 300 "$PAYLOAD")" "not JSON: unexpected end"
bad "trailing data" '{"version":"4","alerts":[]} x' "trailing data"
bad "not an object" '["version","4"]' "not a JSON object"
bad "version 3" '{"version":"3","alerts":[]}' 'version "4"'
bad "no alerts" '{"version":"4"}' 'no "alerts" array'
bad "no alertname" '{"version":"4","alerts":[{"status":"firing","labels":{"vm":"a"}}]}' 'alerts\[0\] has no labels.alertname'
head -c 300000 /dev/zero | tr '\0' ' ' >"$T/big.json"
c=$(post "$T/big.json" "${AUTH[@]}")
[ "$c" = 413 ] || fail "a 300 KB body: HTTP $c, want 413"
c=$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" "http://127.0.0.1:$PORT/snapshot")
[ "$c" = 405 ] || fail "GET /snapshot: HTTP $c, want 405"
no_snapshot "malformed payloads"
echo "ok: a 300 KB body: 413; GET: 405; no snapshot"
# 3. resolved only: no snapshot
python3 - "$PAYLOAD" >"$T/resolved.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["status"] = "resolved"
for a in d["alerts"]:
    a["status"] = "resolved"
print(json.dumps(d))
PY
c=$(post "$T/resolved.json" "${AUTH[@]}")
[ "$c" = 200 ] && grep -qx "no firing alert: no snapshot" "$T/body" || fail "resolved only: HTTP $c: $(cat "$T/body")"
no_snapshot "resolved alerts"
echo "ok: resolved alerts only: 200, no snapshot"
# 4. the VM's exits before the alert, then the alert: the snapshot holds them
"$VMM" --outs 5 --quiet & vmm=$!
wait $vmm || fail "the test VMM failed"
c=$(post "$PAYLOAD" "${AUTH[@]}")
[ "$c" = 200 ] || fail "the payload: HTTP $c: $(cat "$T/body")"
expect_eq "the answer" "$(cat "$T/body")" "snapshot $S/snapshot-1"
alert_snapshot_check "$S/snapshot-1" TracevisorVMExitLatencyHigh "web-3,db 1_x" $vmm
"$TV" stat --json "$S/snapshot-1" >"$T/stat.json" || fail "stat of the snapshot"
grep -q "tv-testvmm\[$vmm\]" "$T/stat.json" || fail "stat of the snapshot lacks the VMM: $(head -c 400 "$T/stat.json")"
echo "ok: the alert's snapshot: alert=, alert_vm= sanitised, the 5 port writes read by report and stat"
kill -TERM $SP
wait $SP
expect_eq "serve's status after SIGTERM" $? 0
"$TV" report "$S" >/dev/null || fail "the session DIR at the stop: not readable"
instance_left $SP && fail "tracefs instance tracevisor-$SP left"
echo "ok: SIGTERM: status 0, the session written, no instance left"
# 5. without --flight-recorder: 404; -o alone refused
start
c=$(post "$PAYLOAD" "${AUTH[@]}")
[ "$c" = 404 ] && grep -q "serve --flight-recorder SIZE" "$T/body" || fail "no flight recorder: HTTP $c: $(cat "$T/body")"
kill -TERM $SP
wait $SP
"$TV" serve -o "$T/x" 2>"$T/o.err"
expect_eq "-o without --flight-recorder: status" $? 2
expect_eq "its error" "$(cat "$T/o.err")" "tracevisor serve: -o DIR is the flight recorder's: give --flight-recorder SIZE"
# 6. the webhook's snapshots bounded: --max-snapshots 2 --trigger-holdoff 1s
S2=$T/bounded
start --flight-recorder 1M -o "$S2" --max-snapshots 2 --trigger-holdoff 1s
grep -q "POST /snapshot writes $S2/snapshot-N (at most 2, 1 s apart)" "$T/serve.err" ||
	fail "the bounds not said: $(cat "$T/serve.err")"
refused() {	# WANT-LINE: POST gets 429 with it, no snapshot made
	c=$(post "$PAYLOAD" "${AUTH[@]}")
	[ "$c" = 429 ] && grep -q "^snapshot refused: $1" "$T/body" || fail "want 429 '$1': HTTP $c: $(cat "$T/body")"
}
c=$(post "$PAYLOAD" "${AUTH[@]}")
[ "$c" = 200 ] && grep -qx "snapshot $S2/snapshot-1" "$T/body" || fail "the first: HTTP $c: $(cat "$T/body")"
refused "--trigger-holdoff 1 s, the last one 0\.[0-9]* s ago"
sleep 1.2
c=$(post "$PAYLOAD" "${AUTH[@]}")
[ "$c" = 200 ] && grep -qx "snapshot $S2/snapshot-2" "$T/body" || fail "after the holdoff: HTTP $c: $(cat "$T/body")"
sleep 1.2
refused "--max-snapshots 2 taken"
expect_eq "snapshots kept" "$(cd "$S2" && echo snapshot-*)" "snapshot-1 snapshot-2"
grep -q "POST /snapshot refused: --max-snapshots 2 taken" "$T/serve.err" || fail "the refusal not logged: $(cat "$T/serve.err")"
curl -s "${AUTH[@]}" "http://127.0.0.1:$PORT/metrics" >"$T/m.txt"
promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1 || fail "promtool check metrics: $(cat "$T/promtool.out")"
for want in 'tracevisor_alert_snapshots_total 2' 'tracevisor_alert_snapshots_refused_total{cause="holdoff"} 1' \
	'tracevisor_alert_snapshots_refused_total{cause="max_snapshots"} 1'; do
	grep -qxF "$want" "$T/m.txt" || fail "/metrics lacks '$want': $(grep snapshots "$T/m.txt")"
done
sz=$(du -sb "$S2"/snapshot-1 "$S2"/snapshot-2 | awk '{ s += $1 } END { print s }')
# the disk they take: about the ring each (--flight-recorder 1M)
[ "$sz" -le $((2 * (1024 + 128) * 1024)) ] || fail "2 snapshots of a 1M ring take $sz bytes"
echo "ok: --max-snapshots 2 --trigger-holdoff 1s: 2 snapshots ($sz bytes), a POST within the holdoff and one past the cap: 429, counted"
# the rate bound on POST /snapshot: a burst of 120 gets 429s (resolved alerts: no snapshot either way)
CURLS=()
for _ in $(seq 120); do
	curl -s -o /dev/null -w '%{http_code}\n' -X POST -H 'Content-Type: application/json' \
		--data-binary "@$T/resolved.json" "${AUTH[@]}" "http://127.0.0.1:$PORT/snapshot" >>"$T/burst" &
	CURLS+=("$!")
done
wait "${CURLS[@]}"
n429=$(grep -cx 429 "$T/burst")
[ "$n429" -gt 0 ] && [ "$(grep -cx 200 "$T/burst")" -ge 20 ] || fail "a burst of 120 POSTs: $(sort "$T/burst" | uniq -c)"
echo "ok: a burst of 120 POST /snapshot: $n429 got 429"
kill -TERM $SP
wait $SP
"$TV" serve --flight-recorder 1M -o "$T/y" --trigger-holdoff 5 --listen "127.0.0.1:$(free_port)" 2>"$T/h.err"
rc=$?
[ $rc != 0 ] && [ "$(wc -l <"$T/h.err")" = 1 ] && grep -q "Invalid --trigger-holdoff: '5'" "$T/h.err" ||
	fail "--trigger-holdoff 5: status $rc: $(cat "$T/h.err")"
"$TV" serve --max-snapshots 3 2>"$T/m.err"
expect_eq "--max-snapshots without --flight-recorder: status" $? 2
echo "PASS: serve --flight-recorder: Alertmanager's webhook takes snapshots"
