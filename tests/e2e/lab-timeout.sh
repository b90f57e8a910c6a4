#!/bin/bash
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# A hanging guest is killed after LAB_TIMEOUT: lab exits 124 with a one-line
# error on stderr and keeps the console log.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

start=$SECONDS
run_lab guest 'echo about to hang; echo hanging > /out/hang.txt; sleep 100000' hang LAB_TIMEOUT=25
expect_rc 124 "hanging guest"
el=$((SECONDS - start))
[ "$el" -lt 90 ] || fail "timeout of 25 s took ${el}s"
grep -q "timed out after 25s" "$STDERR" || fail "no timeout message on stderr"
grep -q "about to hang" "$OUT/console.log" || fail "console.log of the hung guest not kept"
[ -f "$OUT/hang.txt" ] || fail "/out file of the hung guest lost"
pgrep -f "$T/hang" >/dev/null && fail "qemu still running after the timeout"
echo "PASS: hanging guest killed after ${el}s and reported" >&2
