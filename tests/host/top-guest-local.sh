#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# top --guest on this host, without a VM (tests/e2e/kvm-svm-top-guest.sh
# checks the joined rows on a real KVM guest): the agent's "virtio-serial
# port" is one end of a pty pair relayed to another (tests/host/ptyrelay.py).
# top starts the agent's session on its own recorder (x86-tsc), shows its
# intervals (JSON keys as without --guest), and at the end the guest is
# stopped first: the kept session lists host and guest-loc, complete, with
# the guest's sched_switch events and probes, readable by sync and stat
# --by guest-task; no tracefs instance of top or of the agent is left.
# Bad input: --guest with --bpf, a bad SPEC: one line, exit 1 or 2, nothing
# recorded.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
[ -x "$AGENT" ] || fail "build/tracevisor-agent missing (make)"
grep -qw x86-tsc "$TRACEFS/trace_clock" || fail "no x86-tsc trace clock here (top --guest needs it)"
python3 "$TV_ROOT/tests/host/ptyrelay.py" >"$TV_TMP/ptys" &
RELAY=$!
trap 'kill $RELAY ${APID:-} 2>/dev/null' EXIT
for _ in $(seq 10); do [ -s "$TV_TMP/ptys" ] && break; sleep 0.2; done
read -r GPTY HPTY <"$TV_TMP/ptys" || fail "pty relay did not start"
"$AGENT" -p 0 -s "$GPTY" -1 -H 2>"$TV_TMP/agent.log" &
APID=$!
S=$TV_TMP/s
"$TV" top --guest "serial:$HPTY,name:loc" --json --count 4 --interval 0.5 -o "$S" \
	>"$TV_TMP/top.jsonl" 2>"$TV_TMP/top.err" &
TOP=$!
wait $TOP || { cat "$TV_TMP/top.err" "$TV_TMP/agent.log" >&2; fail "top --guest failed"; }
wait $APID || fail "agent exited $?"
python3 - "$TV_TMP/top.jsonl" <<'PY' || fail "top --guest intervals"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1])]
assert len(ivs) == 4, "%d intervals, want 4" % len(ivs)
for iv in ivs:
    assert set(iv) >= {"t_ns", "interval_ns", "lost", "rows"}, iv.keys()
    assert iv["lost"] == 0, iv
    for r in iv["rows"]:
        assert "guest_task" in r and "guest_pid" in r, r
# the first interval starts with the recording (the agent's start inside it)
assert all(0.3e9 < iv["interval_ns"] < 3e9 for iv in ivs[1:]), [iv["interval_ns"] for iv in ivs]
assert all(b["t_ns"] > a["t_ns"] for a, b in zip(ivs, ivs[1:]))
PY
grep -q "^domains=host,guest-loc$" "$S/session.meta" || fail "session.meta: $(grep domains "$S/session.meta")"
grep -q "^status=complete$" "$S/guest-loc/meta" || fail "guest meta: $(grep status "$S/guest-loc/meta")"
grep -q "^clock=x86-tsc$" "$S/guest-loc/meta" || fail "the guest did not record with x86-tsc"
grep -q "^clock=x86-tsc$" "$S/host/meta" || fail "the host did not record with x86-tsc"
"$TV" report "$S" >"$TV_TMP/r" || fail "report of the session top kept"
sw=$(grep -c "^guest:loc .*sched:sched_switch" "$TV_TMP/r")
pongs=$(grep -c "^guest:loc .*pong_send" "$TV_TMP/r")
[ "$sw" -gt 0 ] && [ "$pongs" -gt 0 ] || fail "the guest's stream: $sw sched_switch, $pongs probes"
"$TV" sync "$S" >"$TV_TMP/sync" 2>&1 || { cat "$TV_TMP/sync" >&2; fail "sync of the session top kept"; }
"$TV" stat --by guest-task --json "$S" >/dev/null || fail "stat --by guest-task of the session top kept"
# top's and the agent's own instances (by pid: other people's recorders may run here)
! ls "$TRACEFS/instances" | grep -qE "^tracevisor-($TOP|agent-$APID)\$" || fail "an instance was left: $(ls "$TRACEFS/instances")"

"$TV" top --guest "serial:$HPTY,name:x" --bpf --count 1 >/dev/null 2>"$TV_TMP/e1" && fail "--guest with --bpf accepted"
[ "$(wc -l <"$TV_TMP/e1")" = 1 ] && grep -q "not with --replay or --bpf" "$TV_TMP/e1" || fail "--guest --bpf: $(cat "$TV_TMP/e1")"
"$TV" top --guest "bogus:1" --count 1 -o "$TV_TMP/never" >/dev/null 2>"$TV_TMP/e2" && fail "a bad SPEC accepted"
[ "$(wc -l <"$TV_TMP/e2")" = 1 ] || fail "bad SPEC: not one line: $(cat "$TV_TMP/e2")"
[ -e "$TV_TMP/never" ] && fail "a bad SPEC left a session"
echo "PASS: top --guest over a pty pair: 4 intervals, session host + guest-loc complete ($sw guest switches, $pongs probes), synced, no instance left; bad input one line" >&2
