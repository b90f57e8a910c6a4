#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# tv-lab: own-machine: kills and panics its machine; checks the statuses of a machine of its own
# lab reports a failing script's status as its own, keeps what a crashing
# script wrote to /out, and fails clearly (125) when no status comes back.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

# The three machines boot at once, each scenario in a subshell of its own
# (a failure names it): 29 -> 16 s back to back (2 cores, load 9-10).
(
run_lab guest 'echo before > /out/before.txt; echo failing; exit 7' fail
expect_rc 7 "failing script"
grep -q "status 7" "$STDERR" || fail "status 7 not reported on stderr"
[ -f "$OUT/before.txt" ] || fail "file written before failing is lost"
) & p_fail=$!
(
# the script kills itself with a signal: status 128+9, files survive
run_lab guest 'echo partial > /out/partial.txt; kill -9 $$' crash
expect_rc 137 "script killed by SIGKILL"
[ "$(cat "$OUT/partial.txt")" = partial ] || fail "file of a crashed script lost"
) & p_crash=$!
# the whole guest dies (kernel panic): no status → lab says so, status 125
run_lab guest 'echo c > /proc/sysrq-trigger' panic
expect_rc 125 "guest kernel crash"
grep -q "without writing /out/.lab-status" "$STDERR" || fail "no clear message for a missing status"
[ -s "$OUT/console.log" ] || fail "console.log not kept after a crash"
wait "$p_fail" || fail "failing script (above)"
wait "$p_crash" || fail "script killed by SIGKILL (above)"
echo "PASS: failing, crashing and panicking scripts are reported as such" >&2
