#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor top's Xen view on the committed lab recording
# tests/samples/xen-domu (tests/samples/README-xen-domu.md): `top --replay`
# of a Xen session shows it (instead of refusing) with exactly the batch
# and JSON output of tests/samples/xen-domu-top.expected/ (the CPU share of
# top itself masked); summed over its intervals (the whole session, 50 ms,
# 100 us) every (domain, vcpu, reason) count and total equals `stat` of
# the sample (tests/top_check.py, by domid); --vm by name and by domid;
# the runstate shares of a vCPU never exceed its interval; and one-line
# errors for what top --xen cannot do.  Regenerate the expected files
# (after reviewing the change) with: tests/unit/xen-top-replay.sh --update
set -u
cd "${TV_ROOT:-$(dirname "$0")/../..}" || exit 1
TV=${TV:-build/tracevisor}
[ -x "$TV" ] || { echo "no $TV: run make first" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
S=tests/samples/xen-domu
E=tests/samples/xen-domu-top.expected
bad=0
mask() { sed -E 's/top [0-9.]+% CPU/top -% CPU/'; }
"$TV" top --replay $S --speed 0 --interval 1 --batch 2>&1 | mask >"$tmp/top-1s.txt"
"$TV" top --replay $S --speed 0 --interval 0.05 --json >"$tmp/top-50ms.jsonl" 2>&1
if [ "${1:-}" = --update ]; then
	cp "$tmp/top-1s.txt" "$tmp/top-50ms.jsonl" "$E/"
	echo "updated $E"
fi
for f in top-1s.txt top-50ms.jsonl; do
	if ! diff -u "$E/$f" "$tmp/$f" >"$tmp/$f.diff"; then
		echo "FAIL: $f differs from $E/$f:"
		head -n 30 "$tmp/$f.diff"
		bad=1
	fi
done
"$TV" stat --json $S >"$tmp/stat.json" || { echo "FAIL: stat of $S"; exit 1; }
for iv in 1000 0.05 0.0001; do
	"$TV" top --replay $S --speed 0 --interval $iv --json >"$tmp/top.jsonl" 2>"$tmp/err" ||
		{ echo "FAIL: top --replay --interval $iv: $(cat "$tmp/err")"; bad=1; continue; }
	echo -n "xen-domu, interval $iv s: "
	python3 tests/top_check.py "$tmp/top.jsonl" "$tmp/stat.json" || bad=1
done
"$TV" top --replay $S --speed 0 --interval 0.05 --json --vm d1 >"$tmp/vm-name.jsonl" &&
	"$TV" top --replay $S --speed 0 --interval 0.05 --json --vm 1 >"$tmp/vm-id.jsonl" || bad=1
python3 - "$tmp/top-50ms.jsonl" "$tmp/vm-name.jsonl" "$tmp/vm-id.jsonl" <<'PY' || bad=1
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for iv in ivs for r in iv["rows"]]
assert all(iv["mode"] == "xen" and iv["source"] == "replay" for iv in ivs)
kinds = {r["kind"] for r in rows}
assert kinds >= {"exit", "runstate", "hypercall", "pv", "hvm"}, kinds
vms = {r["vm"] for r in rows}
assert {"Domain-0[0]", "d1[1]", "xen"} <= vms, vms    # d1: the session's guest domain
for iv in ivs:
    per = {}
    for r in iv["rows"]:
        if r["kind"] == "runstate":
            per[(r["vm"], r["vcpu"])] = per.get((r["vm"], r["vcpu"]), 0) + r["share"]
    assert per and all(v <= 1.0001 for v in per.values()), per
for f in sys.argv[2:]:
    got = {r["vm"] for l in open(f) for r in json.loads(l)["rows"]}
    assert got == {"d1[1]"}, (f, got)
assert sum(iv["records"] for iv in ivs) == 24000, "records: every one of the sample's Xen records in one interval"
exits = sum(r["count"] for r in rows if r["kind"] == "exit")
print("xen-domu: %d intervals of 50 ms, %d rows, %d exits, kinds %s, --vm d1 and --vm 1: d1 only" %
      (len(ivs), len(rows), exits, sorted(kinds)))
PY
# Bad input: one line each, a non-zero exit.
one_line() {	# WHAT EXPECTED-TEXT COMMAND...
	local what=$1 want=$2
	shift 2
	if "$@" >/dev/null 2>"$tmp/err"; then
		echo "FAIL: $what succeeded"; bad=1
	elif [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q "$want" "$tmp/err"; then
		echo "FAIL: $what: $(cat "$tmp/err")"; bad=1
	fi
}
one_line "--xen --replay of a KVM session" "not a Xen session" "$TV" top --xen --replay tests/samples/svm-exits --speed 0
one_line "--xen --bpf" "not with --guest, --bpf" "$TV" top --xen --bpf
one_line "--xen --guest" "not with --guest, --bpf" "$TV" top --xen --guest vsock:3
if [ "$(cat /sys/hypervisor/type 2>/dev/null)" != xen ]; then
	one_line "--xen off Xen" "Not running on Xen" "$TV" top --xen --count 1 --json
fi
[ $bad = 0 ] && echo "xen-top-replay: ok"
exit $bad
