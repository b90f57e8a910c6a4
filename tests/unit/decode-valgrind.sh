# SPDX-License-Identifier: GPL-2.0
# The committed decoder samples (tests/samples) under valgrind: report,
# report --json and stat --json on each, corrupt ones included, with no
# memory error and no definite leak; the same on the Xen samples imported
# (every record layout, and a session lacking formats the reader adds).
# Needs no root; skips without valgrind (a failure under CI=true).
. "$(dirname "$0")/../host/lib.bash"
command -v valgrind >/dev/null || skip "valgrind is not installed (make deps)"
cd "$TV_ROOT" || exit 1
fail=0 runs=0
xen=
for x in xen-classes xen-two-cpus; do
	"$TV" import xentrace --cpu-khz 1000 "tests/samples/$x.xentrace" -o "$TV_TMP/$x" >/dev/null 2>&1 ||
		{ echo "FAIL: import tests/samples/$x.xentrace"; exit 1; }
	xen="$xen $TV_TMP/$x"
done
# as written by a tracevisor that did not know these events yet
rm -rf "$TV_TMP"/xen-classes/xen/events/xen/xen_pv_* "$TV_TMP"/xen-classes/xen/events/xen/xen_csched2_*
for s in tests/samples/*/ $xen; do
	s=${s%/}
	[ -f "$s/expected.json" ] || [ -f "$s/xen/meta" ] || continue
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
