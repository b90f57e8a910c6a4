# SPDX-License-Identifier: GPL-2.0
# The committed decoder samples (tests/samples) under valgrind: report,
# report --json and stat --json on each, corrupt ones included, with no
# memory error and no definite leak.  Needs no root; skips without valgrind.
set -u
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 77; }
cd "$TV_ROOT" || exit 1
fail=0 runs=0
for s in tests/samples/*/; do
	s=${s%/}
	[ -f "$s/expected.json" ] || continue
	for args in report "report --json" "stat --json"; do
		# shellcheck disable=SC2086
		valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
			"$TV" $args "$s" >/dev/null 2>"$TV_TMP/vg"
		rc=$?
		runs=$((runs + 1))
		if [ $rc = 9 ] || [ $rc -gt 2 ]; then
			echo "FAIL: tracevisor $args $s: status $rc"
			head -n 40 "$TV_TMP/vg"
			fail=1
		fi
	done
done
echo "$runs runs under valgrind"
exit $fail
