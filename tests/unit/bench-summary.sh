#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench/summarize's closing table (issue 28 point 7): from a make-bench log
# directory of made-up RESULT lines, build/bench/summary.txt (here: beside
# the log directory) holds every figure against its target, the rows where
# we lose first, then those won by less than 10%, then the rest; a line's
# own target<=X applies when stricter; a bench without RESULT line is
# listed with its status; the README is written where -o says.
. "$(dirname "$0")/../host/lib.bash"
L=$TV_TMP/bench/logs
mkdir -p "$L"
cp "$TV_ROOT/bench/README.md" "$TV_TMP/README.md"
echo 'RESULT record_syscalls cpu_ns_per_event_tv=60 cpu_ns_per_event_trace_cmd=280 cpu_ratio=0.21 lost_tv=0 lost_trace_cmd=0 target<=0.5' >"$L/run-bench.log"
echo 0 >"$L/run-bench.status"
printf '%s\n' 'RESULT xen_consumer ns_per_record_tv=119 ns_per_record_xentrace=53 ratio=2.25 lost_tv=0 lost_xt=0' \
	'RESULT xen_consumer_split drain_ratio=0.5 life_ratio=0.78' >"$L/xen-bench.log"
echo 0 >"$L/xen-bench.status"
# the line's own target (0.3) is stricter than the table's (0.35): 0.32 misses
echo 'RESULT top_cost_ratio=0.32 tracefs_cost_ratio=0.80 target<=0.3' >"$L/top-bench.log"
echo 77 >"$L/guest-bench.status"
"$TV_ROOT/bench/summarize" -o "$TV_TMP/README.md" "$L" >"$TV_TMP/out" || fail "summarize failed: $(cat "$TV_TMP/out")"
S=$TV_TMP/bench/summary.txt
[ -s "$S" ] || fail "no summary.txt beside the log directory"
tail -n "$(wc -l <"$S")" "$TV_TMP/out" | cmp -s - "$S" || fail "the table is not the last thing printed"
# data rows: after the header line that starts with "bench"
rows() { sed -n '/^bench  /,/^$/p' "$S" | sed '1d;/^$/d'; }
verdicts=$(rows | awk '{ print $3 ":" $7 }' | tr '\n' ' ')
case $verdicts in
"ratio:MISSED top_cost_ratio:MISSED life_ratio:barely cpu_ratio:met lost_tv:met lost_tv:met lost_xt:met drain_ratio:met "*) ;;
*) cat "$S" >&2; fail "rows out of order or wrong verdicts: $verdicts" ;;
esac
grep -q "^top-bench .*top_cost_ratio .*0.32 .*<= 0.3 .*MISSED" "$S" || fail "the line's stricter target not applied"
grep -q "^guest-bench .*no RESULT line (status 77)" "$S" || fail "guest-bench (status 77) not listed"
grep -q "^xen-bench .*ns_per_record_tv .*119 .*no target" "$S" || fail "a figure with no target is missing"
grep -q "^2 target(s) missed, 1 barely met, 5 met$" "$S" || fail "counts: $(tail -n 1 "$S")"
grep -q "^RESULT top_cost_ratio=0.32" "$TV_TMP/README.md" || fail "README section not written"
echo "ok: $(tail -n 1 "$S")"
