#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record --guest ... --ust without a VM: tracevisor-agent on this host
# behind a pty relay (as guest-agent-local.sh) with its own registration
# socket, the host recorder on another.  A ust-demo registered with the
# agent lands in ust-guest-loc-PID/ (domain guest:loc), one registered with
# the host in ust-host-PID/ (domain host), both exact, both in order per
# thread, beside the guest kernel's and the host's events.
# Then record --ust-mode blocking --ust-buffer 32Kx8 (issue 28): the policy
# reaches the guest's processes through the agent (START's ust_mode,
# ust_subbuf_size, ust_nr_subbufs): the burst of `ust-demo 100000 2`,
# registered with the agent with no TRACEVISOR_UST_MODE, keeps all
# 200,000 events, runs with the buffers asked, and the summary says so.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
DEMO=$TV_ROOT/build/examples/ust-demo
[ -x "$AGENT" ] && [ -x "$DEMO" ] || fail "build/tracevisor-agent or build/examples/ust-demo missing (make)"
pty_relay
trap 'kill $RELAY ${APID:-} 2>/dev/null' EXIT
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

# 2. the recorder's policy, through the agent
unset TRACEVISOR_UST TRACEVISOR_UST_MODE TRACEVISOR_UST_SUBBUF_SIZE TRACEVISOR_UST_NR_SUBBUFS
TRACEVISOR_UST_SOCK="$TV_TMP/guest-ust.sock" "$AGENT" -p 0 -s "$GPTY" -1 -H -v 2>"$TV_TMP/agent2.log" &
APID=$!
S=$TV_TMP/s2
"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$HPTY,name:loc" \
	--guest-events sched:sched_switch --ust-socket "$TV_TMP/host-ust.sock" --ust 'demo:*' \
	--ust-mode blocking --ust-buffer 32Kx8 -- sh -c "
	for i in \$(seq 100); do [ -S '$TV_TMP/guest-ust.sock' ] && break; sleep 0.1; done
	TRACEVISOR_UST_SOCK='$TV_TMP/guest-ust.sock' '$DEMO' 100000 2" \
	2>"$TV_TMP/record2.log" || { cat "$TV_TMP/record2.log" "$TV_TMP/agent2.log" >&2; fail "record (policy) failed"; }
wait $APID || fail "agent exited $?"
M=$(echo "$S"/ust-guest-loc-*/meta)
[ -f "$M" ] || { cat "$TV_TMP/record2.log" "$TV_TMP/agent2.log" >&2; fail "policy: no ust-guest-loc-*/meta"; }
val() { sed -n "s/^$1=//p" "$M"; }
[ "$(val mode)" = blocking ] && [ "$(val subbuf_size)" = 32768 ] && [ "$(val nr_subbufs)" = 8 ] ||
	{ cat "$M" >&2; fail "the guest's process ran with $(val mode), $(val nr_subbufs) x $(val subbuf_size)"; }
[ "$(val events_total)" = 200000 ] && [ "$(val lost_total)" = 0 ] ||
	{ cat "$TV_TMP/record2.log" >&2; fail "guest burst: $(val events_total) events, $(val lost_total) lost (want 200000, 0)"; }
grep -q "^tracevisor record: ust: guest-loc pid [0-9]* (ust-demo): blocking, 8 x 32 KiB per CPU, 200000 events, 0 lost$" \
	"$TV_TMP/record2.log" || { cat "$TV_TMP/record2.log" >&2; fail "no summary line of the guest process's policy"; }
echo "ok: the guest's ust-demo ran blocking, 8 x 32 KiB, as record asked: 200000 events, 0 lost"
