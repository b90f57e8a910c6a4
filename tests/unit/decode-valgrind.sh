# SPDX-License-Identifier: GPL-2.0
# The committed decoder samples (tests/samples) under valgrind: report,
# report --json and stat --json on each, corrupt ones included, with no
# memory error and no definite leak; the same on the Xen samples imported
# (every record layout, and a session lacking formats the reader adds);
# report --date on the corrupt ones (the wall-clock scan ends at the
# corruption: its reader leaked there).
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
# A uprobe that someone else's recorder put on a library (`tracevisor record
# -e uprobe:NAME=.../libc.so.6:syscall`) is an int3 in that file's pages,
# which valgrind runs as a SIGTRAP: the runs load private copies of
# tracevisor's libraries (a uprobe belongs to one file).
mkdir -p "$TV_TMP/lib"
for l in $(ldd "$TV" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
	cp "$l" "$TV_TMP/lib/" || { echo "FAIL: cannot copy $l"; exit 1; }
done
# vg N ARGS SESSION: one run under valgrind; its status in vg.N.rc, its
# report in vg.N, what it ran in vg.N.what
vg() {
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$TV_TMP/lib valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
		"$TV" $2 "$3" >/dev/null 2>"$TV_TMP/vg.$1"
	echo $? >"$TV_TMP/vg.$1.rc"
}
# The runs are independent: as many at once as there are CPUs (161 s one
# after another on 2 loaded cores).
par=$(nproc 2>/dev/null || echo 1)
for s in tests/samples/*/ $xen; do
	s=${s%/}
	[ -f "$s/expected.json" ] || [ -f "$s/xen/meta" ] || continue
	cmds=(report "report --json" "stat --json")
	# A session the reader refuses whole (fuzz-*, not-a-session: a corrupt
	# format, no session.meta: not one event) is refused by the open all
	# three commands share: one run under valgrind is enough (56 runs, not 66)
	"$TV" report --json "$s" 2>/dev/null | grep -q . || cmds=(report)
	for args in "${cmds[@]}"; do
		while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n; done
		runs=$((runs + 1))
		echo "tracevisor $args $s" >"$TV_TMP/vg.$runs.what"
		vg $runs "$args" "$s" &
	done
done
for s in tests/samples/corrupt-*/; do
	while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n; done
	runs=$((runs + 1))
	echo "tracevisor report --date ${s%/}" >"$TV_TMP/vg.$runs.what"
	vg $runs "report --date" "${s%/}" &
done
wait
for n in $(seq $runs); do
	rc=$(cat "$TV_TMP/vg.$n.rc" 2>/dev/null)
	if [ "${rc:-99}" = 9 ] || [ "${rc:-99}" -gt 2 ]; then
		echo "FAIL: $(cat "$TV_TMP/vg.$n.what"): status ${rc:-unknown}"
		head -n 40 "$TV_TMP/vg.$n"
		fail=1
	fi
done
echo "$runs runs under valgrind"
exit $fail
