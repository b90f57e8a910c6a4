#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# tv-lab: own-machine: tests the shared machines themselves, in a directory of its own
# Shared lab machines (LAB_SHARED=DIR, tests/lab/shared): scenarios run one
# after another on one booted `guest` machine, each with the status, /out
# files, console slice and stdout of a machine of its own, and a fresh /tmp;
# a scenario that leaves a tracefs instance or a process behind fails with
# 123 naming them, and the next one gets a new machine, clean; a scenario
# past its LAB_TIMEOUT gets 124 and the machine is replaced; `shared stop`
# powers every machine off and tallies boots and reboots.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

D=$T/shared
SH=$REPO/tests/lab/shared
"$SH" start "$D" || fail "shared start"
LAB_SHARE=("LAB_SHARED=$D")
stop_all() { "$SH" stop "$D" >/dev/null 2>&1; }
trap 'stop_all; cleanup' EXIT
eval "lib_$(declare -f fail)"	# e2e-lib's fail, after the machines are stopped
fail() { stop_all; lib_fail "$@"; }

t0=$SECONDS
run_lab guest 'echo "hello from A"; echo a > /out/a.txt; mkdir /out/sub; echo n > /out/sub/f; echo t > /tmp/a; exit 3' a
expect_rc 3 "scenario A"
grep -qx "hello from A" "$STDOUT" || fail "A's output is not on lab's stdout"
if [ "$(cat "$OUT/a.txt")" != a ] || [ "$(cat "$OUT/sub/f")" != n ]; then fail "A's /out files are not in its OUTDIR"; fi
grep -q "script end (status 3)" "$OUT/console.log" || fail "A's console.log has no end line"
ta=$((SECONDS - t0))

t0=$SECONDS
run_lab guest 'ls -A /out > /tmp/ls; cp /tmp/ls /out/ls.txt; test -e /tmp/a && echo "tmp of A seen"; echo "hello from B"; exit 0' b
expect_rc 0 "scenario B"
grep -q "hello from A" "$OUT/console.log" && fail "B's console.log has A's output"
grep -q "tmp of A seen" "$STDOUT" && fail "B saw A's /tmp"
[ -s "$OUT/ls.txt" ] && fail "B's /out was not empty: $(cat "$OUT/ls.txt")"
[ "$(wc -l <"$D/boots.log")" = 1 ] || fail "B did not run on A's machine: $(cat "$D/boots.log")"
tb=$((SECONDS - t0))

# a scenario that leaves a tracefs instance and a process: 123, named
run_lab guest 'mkdir /sys/kernel/tracing/instances/leak; sleep 1000 & exit 0' dirty
expect_rc 123 "scenario leaving an instance and a process"
grep -q "tracefs instance: leak" "$STDERR" || fail "the instance left is not named: $(cat "$STDERR")"
grep -q "process [0-9]*: sleep 1000" "$STDERR" || fail "the process left is not named: $(cat "$STDERR")"
grep -q "lab-shared/dirty.*unclean" "$STDERR" || fail "the scenario is not named: $(cat "$STDERR")"
[ "$(wc -l <"$D/reboots.log")" = 1 ] || fail "no reboot noted: $(cat "$D/reboots.log")"

# the next scenario gets a new machine, without them
run_lab guest 'ls /sys/kernel/tracing/instances > /out/inst; pgrep -f "sleep 1000" > /out/sleep; exit 0' after
expect_rc 0 "scenario after the unclean one"
[ -s "$OUT/inst" ] && fail "the instance outlived its scenario: $(cat "$OUT/inst")"
[ -s "$OUT/sleep" ] && fail "the process outlived its scenario"
[ "$(wc -l <"$D/boots.log")" = 2 ] || fail "no second boot: $(cat "$D/boots.log")"

# past LAB_TIMEOUT: 124, the machine killed and replaced
start=$SECONDS
run_lab guest 'echo hanging; sleep 100000' hang LAB_TIMEOUT=15
expect_rc 124 "hanging scenario"
[ $((SECONDS - start)) -lt 60 ] || fail "a 15 s LAB_TIMEOUT took $((SECONDS - start)) s"
grep -q "timed out after 15s" "$STDERR" || fail "no timeout message"
grep -q "hanging" "$OUT/console.log" || fail "the hung scenario's console not kept"
[ "$(wc -l <"$D/reboots.log")" = 2 ] || fail "the timeout is not noted as a reboot: $(cat "$D/reboots.log")"

"$SH" stop "$D" >"$T/stop.out" 2>&1
rc=$?
cat "$T/stop.out" >&2
[ $rc = 1 ] || fail "shared stop exited $rc after 2 reboots, expected 1"
grep -q "lab shared: 2 boot(s), 2 reboot(s), 5 scenario(s)" "$T/stop.out" || fail "tally wrong"
pgrep -f "qemu-system.*$D" >/dev/null && fail "a shared machine still runs after stop"
echo "PASS: scenarios share a machine (A ${ta}s with the boot, B ${tb}s), unclean and hung ones are named and their machine replaced" >&2
