#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record --guest ... --ust without a VM: tracevisor-agent on this host
# behind a pty relay (as guest-agent-local.sh) with its own registration
# socket, the host recorder on another.  A ust-demo registered with the
# agent lands in ust-guest-loc-PID/ (domain guest:loc), one registered with
# the host in ust-host-PID/ (domain host), both exact, both in order per
# thread, beside the guest kernel's and the host's events.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
DEMO=$TV_ROOT/build/examples/ust-demo
[ -x "$AGENT" ] && [ -x "$DEMO" ] || fail "build/tracevisor-agent or build/examples/ust-demo missing (make)"
python3 "$TV_ROOT/tests/host/ptyrelay.py" >"$TV_TMP/ptys" & RELAY=$!
trap 'kill $RELAY ${APID:-} 2>/dev/null' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$TV_TMP/ptys" ] && break; sleep 0.2; done
read -r GPTY HPTY <"$TV_TMP/ptys" || fail "pty relay did not start"
TRACEVISOR_UST_SOCK="$TV_TMP/guest-ust.sock" "$AGENT" -p 0 -s "$GPTY" -1 -H -v 2>"$TV_TMP/agent.log" &
APID=$!
S=$TV_TMP/s
"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$HPTY,name:loc" \
	--guest-events sched:sched_switch --ust-socket "$TV_TMP/host-ust.sock" --ust 'demo:*' -- sh -c "
	for i in \$(seq 100); do [ -S '$TV_TMP/guest-ust.sock' ] && break; sleep 0.1; done
	TRACEVISOR_UST='demo:*' TRACEVISOR_UST_MODE=blocking TRACEVISOR_UST_SOCK='$TV_TMP/guest-ust.sock' '$DEMO' 20000 2 &&
	TRACEVISOR_UST='demo:*' TRACEVISOR_UST_MODE=blocking '$DEMO' 10000 1" \
	2>"$TV_TMP/record.log" || { cat "$TV_TMP/record.log" "$TV_TMP/agent.log" >&2; fail "record failed"; }
wait $APID || fail "agent exited $?"
cat "$TV_TMP/record.log" >&2
grep -q "ust-guest-loc-" "$S/session.meta" || { cat "$TV_TMP/agent.log" >&2; fail "no guest traced process in session.meta"; }
grep -q "ust-host-" "$S/session.meta" || fail "no host traced process in session.meta"
"$TV" report --json "$S" > "$TV_TMP/report.json" || fail "report failed"
python3 - "$TV_TMP/report.json" <<'PY' || fail "report contents"
import json, sys
seqs = {}
kinds = set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    kinds.add((e["domain"], e["event"].split(":")[0]))
    if e["event"] == "demo:tick":
        seqs.setdefault((e["domain"], e["fields"]["thread"]), []).append(e["fields"]["seq"])
assert sorted(seqs) == [("guest:loc", 0), ("guest:loc", 1), ("host", 0)], sorted(seqs)
for k, s in seqs.items():
    n = 10000 if k[0] == "host" else 20000
    assert s == list(range(n)), (k, len(s))
assert ("guest:loc", "sched") in kinds and ("host", "sched") in kinds, kinds
print("ok: guest:loc 40000 and host 10000 demo:tick in order per thread, beside both kernels' sched events")
PY
