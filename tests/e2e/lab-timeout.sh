#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# tv-lab: own-machine: hangs, locks up and freezes its machine; checks that lab stops a machine of its own
# A hanging guest is killed after LAB_TIMEOUT: lab exits 124 with a one-line
# error on stderr and keeps the console log.  A kernel in a long soft lockup
# is stopped after LAB_LOCKUP_S, and a machine that uses no CPU (its QEMU
# stopped here with SIGSTOP, as a frozen machine) after LAB_FROZEN_S: lab
# exits 125 and says so.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

# The three machines run at once (each one's waits are its own: a sleeping
# guest, a stopped QEMU), the longest first: 93 s one after another, 36 s
# at once (2 cores, load 1.5-2, 2026-11-27).  Each scenario runs in a subshell of its own,
# its elapsed time in $T/NAME.el; the hang, the shortest, last.
(
# A machine whose QEMU takes no CPU for LAB_FROZEN_S: stopped then, and run_lab
# would boot it once more (not here: LAB_CRASH_RETRY=0).
( for _ in $(seq 300); do
	[ -e "$T/frozen/stop-me" ] && break; sleep 0.5
  done
  q=$(pgrep -f "^qemu-system.*file:$T/frozen/console.log" | head -n 1)
  [ -n "$q" ] && kill -STOP "$q" && echo "$q" >"$T/frozen-qemu" ) & stopper=$!
start=$SECONDS
LAB_CRASH_RETRY=0 run_lab guest 'echo stopped > /out/stop-me; sleep 100000' frozen LAB_TIMEOUT=300 LAB_FROZEN_S=10
wait "$stopper"
expect_rc 125 "frozen machine"
el3=$((SECONDS - start))
[ -s "$T/frozen-qemu" ] || fail "the frozen machine's QEMU was never stopped"
[ "$el3" -lt 110 ] || fail "a machine frozen (limit 10 s) stopped after ${el3}s"
grep -q "machine froze: its QEMU used no CPU for [0-9]* s (LAB_FROZEN_S)" "$STDERR" || fail "no freeze message on stderr: $(tail -n 2 "$STDERR")"
grep -q "frozen: " "$OUT/machine-state.txt" || fail "no machine-state.txt for the frozen machine"
pgrep -f "^qemu-system.*$T/frozen/" >/dev/null && fail "the frozen qemu still runs"
echo "$el3" >"$T/frozen.el"
) & p_frozen=$!
(
# A kernel stuck in a soft lockup for LAB_LOCKUP_S is stopped then, not at
# LAB_TIMEOUT.  The kernel's watchdog line is written to its log here, after
# the watcher has seen a console without one a few times.
start=$SECONDS
run_lab guest 'sleep 6; echo "<0>watchdog: BUG: soft lockup - CPU#0 stuck for 30s! [qemu-system-x86:281]" >/dev/kmsg; sleep 100000' lockup LAB_TIMEOUT=300 LAB_LOCKUP_S=20
expect_rc 125 "locked-up guest"
el2=$((SECONDS - start))
[ "$el2" -lt 90 ] || fail "soft lockup of 30 s (limit 20 s) stopped after ${el2}s"
grep -q "stuck in a soft lockup for 30 s" "$STDERR" || fail "no soft lockup message on stderr: $(tail -n 2 "$STDERR")"
echo "$el2" >"$T/lockup.el"
) & p_lockup=$!
start=$SECONDS
run_lab guest 'echo about to hang; echo hanging > /out/hang.txt; sleep 100000' hang LAB_TIMEOUT=25
expect_rc 124 "hanging guest"
el=$((SECONDS - start))
[ "$el" -lt 90 ] || fail "timeout of 25 s took ${el}s"
grep -q "timed out after 25s" "$STDERR" || fail "no timeout message on stderr"
grep -q "about to hang" "$OUT/console.log" || fail "console.log of the hung guest not kept"
[ -f "$OUT/hang.txt" ] || fail "/out file of the hung guest lost"
pgrep -f "$T/hang" >/dev/null && fail "qemu still running after the timeout"

wait "$p_frozen" || fail "frozen machine (above)"
wait "$p_lockup" || fail "soft lockup (above)"
el2=$(cat "$T/lockup.el") el3=$(cat "$T/frozen.el")
echo "PASS: hanging guest killed after ${el}s and reported; soft lockup stopped after ${el2}s; frozen machine stopped after ${el3}s" >&2
