#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record --guest ... --ust --ust-mode blocking: the policy reaches a
# guest's traced processes through the agent (START's ust_mode,
# ust_subbuf_size, ust_nr_subbufs), without a VM: tracevisor-agent on this
# host behind a pty relay (as guest-agent-ust.sh).  The burst of
# `ust-demo 100000 2`, registered with the agent and with no
# TRACEVISOR_UST_MODE, keeps all 200,000 events in ust-guest-loc-PID/,
# runs with the --ust-buffer asked, and the summary says so.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
DEMO=$TV_ROOT/build/examples/ust-demo
[ -x "$AGENT" ] && [ -x "$DEMO" ] || fail "build/tracevisor-agent or build/examples/ust-demo missing (make)"
unset TRACEVISOR_UST TRACEVISOR_UST_MODE TRACEVISOR_UST_SUBBUF_SIZE TRACEVISOR_UST_NR_SUBBUFS
python3 "$TV_ROOT/tests/host/ptyrelay.py" >"$TV_TMP/ptys" & RELAY=$!
trap 'kill $RELAY ${APID:-} 2>/dev/null' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$TV_TMP/ptys" ] && break; sleep 0.2; done
read -r GPTY HPTY <"$TV_TMP/ptys" || fail "pty relay did not start"
TRACEVISOR_UST_SOCK="$TV_TMP/guest-ust.sock" "$AGENT" -p 0 -s "$GPTY" -1 -H -v 2>"$TV_TMP/agent.log" &
APID=$!
S=$TV_TMP/s
"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$HPTY,name:loc" \
	--guest-events sched:sched_switch --ust-socket "$TV_TMP/host-ust.sock" --ust 'demo:*' \
	--ust-mode blocking --ust-buffer 32Kx8 -- sh -c "
	for i in \$(seq 100); do [ -S '$TV_TMP/guest-ust.sock' ] && break; sleep 0.1; done
	TRACEVISOR_UST_SOCK='$TV_TMP/guest-ust.sock' '$DEMO' 100000 2" \
	2>"$TV_TMP/record.log" || { cat "$TV_TMP/record.log" "$TV_TMP/agent.log" >&2; fail "record failed"; }
wait $APID || fail "agent exited $?"
M=$(echo "$S"/ust-guest-loc-*/meta)
[ -f "$M" ] || { cat "$TV_TMP/record.log" "$TV_TMP/agent.log" >&2; fail "no ust-guest-loc-*/meta"; }
val() { sed -n "s/^$1=//p" "$M"; }
[ "$(val mode)" = blocking ] && [ "$(val subbuf_size)" = 32768 ] && [ "$(val nr_subbufs)" = 8 ] ||
	{ cat "$M" >&2; fail "the guest's process ran with $(val mode), $(val nr_subbufs) x $(val subbuf_size)"; }
[ "$(val events_total)" = 200000 ] && [ "$(val lost_total)" = 0 ] ||
	{ cat "$TV_TMP/record.log" >&2; fail "guest burst: $(val events_total) events, $(val lost_total) lost (want 200000, 0)"; }
grep -q "^tracevisor record: ust: guest-loc pid [0-9]* (ust-demo): blocking, 8 x 32 KiB per CPU, 200000 events, 0 lost$" \
	"$TV_TMP/record.log" || { cat "$TV_TMP/record.log" >&2; fail "no summary line of the guest process's policy"; }
echo "ok: the guest's ust-demo ran blocking, 8 x 32 KiB, as record asked: 200000 events, 0 lost"
