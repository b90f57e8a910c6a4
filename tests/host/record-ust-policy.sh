#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record --ust-mode / --ust-buffer: the recorder sets its traced processes'
# buffer policy (issue 28).  The burst of `ust-demo 100000 2` (200,000
# events from two threads, faster than a 20 ms consumer tick) in 8 x 64 KiB
# per CPU: --ust-mode blocking keeps all of them with no TRACEVISOR_UST_MODE
# in the program's environment, discard keeps fewer and counts the rest
# (recorded + lost = 200,000), --ust-buffer 256Kx16 is what the process
# runs with, and a process's own TRACEVISOR_UST_MODE still wins over the
# recorder's (the summary says so).  Each case: the summary line naming
# the policy the process ran with, and the session's meta.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
DEMO=$TV_ROOT/build/examples/ust-demo
[ -x "$DEMO" ] || fail "build/examples/ust-demo missing (make)"
export TRACEVISOR_UST_SOCK="$TV_TMP/ust.sock"
unset TRACEVISOR_UST TRACEVISOR_UST_MODE TRACEVISOR_UST_SUBBUF_SIZE TRACEVISOR_UST_NR_SUBBUFS

# run NAME ARGS...: record the burst with ARGS; the summary in $TV_TMP/NAME.log
run() {
	local name=$1
	shift
	"$TV" record -o "$TV_TMP/$name" -e syscalls:sys_enter_getppid --ust 'demo:*' "$@" \
		-- "$DEMO" 100000 2 >/dev/null 2>"$TV_TMP/$name.log" ||
		{ cat "$TV_TMP/$name.log" >&2; fail "$name: record failed"; }
}
# meta NAME KEY: the traced process's value of KEY
meta() { sed -n "s/^$2=//p" "$TV_TMP/$1"/ust-host-*/meta; }

run blocking --ust-mode blocking
[ "$(meta blocking events_total)" = 200000 ] && [ "$(meta blocking lost_total)" = 0 ] ||
	{ cat "$TV_TMP/blocking.log" >&2; fail "blocking: $(meta blocking events_total) events, $(meta blocking lost_total) lost (want 200000, 0)"; }
[ "$(meta blocking mode)" = blocking ] || fail "blocking: the process ran in $(meta blocking mode)"
grep -q "^tracevisor record: ust: host pid [0-9]* (ust-demo): blocking, 8 x 64 KiB per CPU, 200000 events, 0 lost$" \
	"$TV_TMP/blocking.log" || { cat "$TV_TMP/blocking.log" >&2; fail "blocking: no summary line of the process's policy"; }

run discard --ust-mode discard
ev=$(meta discard events_total) lost=$(meta discard lost_total)
[ "$(meta discard mode)" = discard ] && [ "$lost" -gt 0 ] && [ $((ev + lost)) = 200000 ] ||
	{ cat "$TV_TMP/discard.log" >&2; fail "discard: $ev events + $lost lost (want some lost, 200000 in all)"; }
grep -q "(ust-demo): discard, 8 x 64 KiB per CPU, $ev events, $lost lost$" "$TV_TMP/discard.log" ||
	{ cat "$TV_TMP/discard.log" >&2; fail "discard: no summary line of the process's policy"; }

run sized --ust-buffer 256Kx16
[ "$(meta sized subbuf_size)" = 262144 ] && [ "$(meta sized nr_subbufs)" = 16 ] ||
	fail "--ust-buffer 256Kx16: the process ran with $(meta sized nr_subbufs) x $(meta sized subbuf_size)"
grep -q "(ust-demo): discard, 16 x 256 KiB per CPU" "$TV_TMP/sized.log" ||
	{ cat "$TV_TMP/sized.log" >&2; fail "--ust-buffer: no summary line of the process's policy"; }

# the environment is the process's own override, said as such
TRACEVISOR_UST_MODE=blocking run env --ust-mode discard
[ "$(meta env mode)" = blocking ] && [ "$(meta env events_total)" = 200000 ] ||
	fail "TRACEVISOR_UST_MODE=blocking under --ust-mode discard: $(meta env mode), $(meta env events_total) events"
grep -q "(ust-demo): blocking, .* (its own setting, not the --ust-mode/--ust-buffer asked)$" "$TV_TMP/env.log" ||
	{ cat "$TV_TMP/env.log" >&2; fail "env override: the summary does not say it"; }

# bad values: one line naming it, non-zero, no session
for bad in "--ust-mode block" "--ust-buffer 3Kx8" "--ust-buffer 64Kx3" "--ust-buffer 4Kx"; do
	# shellcheck disable=SC2086 # the option and its value
	"$TV" record -o "$TV_TMP/bad" --ust $bad -- true 2>"$TV_TMP/bad.log" && fail "record $bad succeeded"
	[ "$(wc -l <"$TV_TMP/bad.log")" = 1 ] || { cat "$TV_TMP/bad.log" >&2; fail "record $bad: not one line"; }
	[ ! -e "$TV_TMP/bad" ] || fail "record $bad left a session"
done
"$TV" record -o "$TV_TMP/bad" --ust-mode blocking -- true 2>/dev/null && fail "--ust-mode without --ust succeeded"
"$TV" record -o "$TV_TMP/bad" --ust --flight-recorder 1M --ust-mode blocking -- true 2>/dev/null &&
	fail "--ust-mode with --flight-recorder succeeded"
echo "ok: blocking 200000/200000, discard $ev + $lost lost, 16 x 256 KiB, the environment's override said"
