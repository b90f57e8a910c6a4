#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The committed lab recording tests/samples/xen-domu (Xen, dom0 and a
# running PVH domU with its agent; tests/samples/README-xen-domu.md): stat
# (text, JSON), report (text, JSON), the Perfetto export and babeltrace2's
# reading of the CTF export give exactly tests/samples/xen-domu.expected/
# (tests/samples/xen-domu-outputs.sh), and the sample holds at least a
# thousand HVM exits, hypercalls and guest events and a hundred runstate
# changes, so that a regenerated sample keeps covering them.
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
TV=${TV:-build/tracevisor}
[ -x "$TV" ] || { echo "no $TV: run make first" >&2; exit 77; }
command -v babeltrace2 >/dev/null || { echo "FAIL: babeltrace2 missing (make deps installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
E=tests/samples/xen-domu.expected
tests/samples/xen-domu-outputs.sh "$TV" tests/samples/xen-domu "$tmp" || { echo "FAIL: outputs"; exit 1; }
bad=0
for f in stat.txt stat.json report-counts.txt perfetto-counts.txt digests.txt; do
	if ! diff -u "$E/$f" "$tmp/$f" >"$tmp/$f.diff"; then
		echo "FAIL: $f differs from $E/$f:"
		head -n 40 "$tmp/$f.diff"
		bad=1
	fi
done
python3 - "$E/report-counts.txt" <<'PY' || bad=1
import collections, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3:
        c[(f[0], f[1])] = int(f[2])
kinds = {
    "HVM exits": c[("xen", "xen:xen_vmexit")],
    "runstate changes": c[("xen", "xen:xen_runstate_change")],
    "hypercalls": c[("xen", "xen:xen_hypercall")] + c[("xen", "xen:xen_hvm_vmmcall")],
    "guest events": sum(n for (d, e), n in c.items() if d.startswith("guest:")),
    "dom0 events": sum(n for (d, e), n in c.items() if d == "host"),
}
print("xen-domu sample: %s" % kinds)
need = {"HVM exits": 1000, "runstate changes": 100, "hypercalls": 1000, "guest events": 1000,
        "dom0 events": 1000}
sys.exit(0 if all(kinds[k] >= n for k, n in need.items()) else 1)
PY
# Xen's files read the same plain (zstd -d) and compressed again (tracevisor
# compress: cpuN.xen -> cpuN.xen.zst)
if command -v zstd >/dev/null; then
	cp -a tests/samples/xen-domu "$tmp/plain"
	for f in "$tmp"/plain/xen/cpu*.xen.zst; do zstd -q -d --rm "$f" || bad=1; done
	for step in plain compressed; do
		"$TV" report --json "$tmp/plain" >"$tmp/report.json"
		[ "$(cd "$tmp" && sha256sum report.json)" = "$(grep ' report.json$' "$E/digests.txt")" ] ||
			{ echo "FAIL: report of the sample with Xen files $step differs"; bad=1; }
		[ $step = plain ] && { "$TV" compress "$tmp/plain" >/dev/null 2>&1 || bad=1; }
	done
	ls "$tmp"/plain/xen/cpu0.xen.zst >/dev/null || bad=1
	# a compressed Xen file cut short: one line naming it, and a failure
	truncate -s 30000 "$tmp/plain/xen/cpu1.xen.zst"
	if "$TV" report "$tmp/plain" >/dev/null 2>"$tmp/cut.err"; then
		echo "FAIL: report read a cut cpu1.xen.zst without error"; bad=1
	fi
	[ "$(wc -l <"$tmp/cut.err")" = 1 ] && grep -q 'Corrupt stream file: path=".*cpu1.xen.zst"' "$tmp/cut.err" ||
		{ echo "FAIL: a cut cpu1.xen.zst: $(cat "$tmp/cut.err")"; bad=1; }
else
	echo "FAIL: zstd missing (the zstd package)"; bad=1
fi
# top --replay of a Xen session: the Xen view (tests/unit/xen-top-replay.sh checks its rows)
"$TV" top --replay tests/samples/xen-domu --speed 0 --interval 1000 --json >"$tmp/top.out" 2>"$tmp/top.err" &&
	grep -q '"mode":"xen"' "$tmp/top.out" ||
	{ echo "FAIL: top --replay on Xen: $(cat "$tmp/top.err") $(head -c 200 "$tmp/top.out")"; bad=1; }
[ $bad = 0 ] && echo "PASS: xen-domu sample: stat, report, Perfetto and CTF (babeltrace2) as expected"
exit $bad
