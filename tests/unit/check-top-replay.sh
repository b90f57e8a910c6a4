#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor top --replay on the committed samples with exits: summed over
# its intervals (one interval for the whole session, and intervals of
# 100 us that cut exits from their entries), every row has the count, total
# and max of `tracevisor stat` on the same session (tests/top_check.py).
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
TV=${TV:-build/tracevisor}
[ -x "$TV" ] || { echo "no $TV: run make first" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for s in svm-exits vmx-exits padding missed time-extend; do
	intervals="1000 0.0001"
	case $s in padding|time-extend) intervals=1000 ;; esac  # long idle gaps: millions of empty intervals
	d=tests/samples/$s
	"$TV" stat --json "$d" >"$tmp/stat.json" || { echo "stat failed on $d"; bad=1; continue; }
	for iv in $intervals; do
		if ! "$TV" top --replay "$d" --speed 0 --interval "$iv" --json >"$tmp/top.jsonl" 2>"$tmp/err"; then
			echo "top --replay $d --interval $iv failed: $(cat "$tmp/err")"
			bad=1
			continue
		fi
		echo -n "$s, interval $iv s: "
		python3 tests/top_check.py "$tmp/top.jsonl" "$tmp/stat.json" || bad=1
	done
done
# The intervals must really cut the session (else the check proves little).
n=$("$TV" top --replay tests/samples/svm-exits --speed 0 --interval 0.0001 --json | wc -l)
[ "$n" -ge 3 ] || { echo "svm-exits in 100 us intervals: $n intervals, expected >= 3"; bad=1; }
# Bad input: a clear one-line error and a non-zero exit.
if "$TV" top --replay tests/samples/not-a-session --speed 0 --json >/dev/null 2>"$tmp/err"; then
	echo "top --replay of not-a-session succeeded"; bad=1
elif [ "$(wc -l <"$tmp/err")" != 1 ]; then
	echo "top --replay of not-a-session: not one line: $(cat "$tmp/err")"; bad=1
fi
exit $bad
