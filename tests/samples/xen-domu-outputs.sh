#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xen-domu-outputs.sh TV SESSION OUTDIR: the outputs of tracevisor TV on the
# sample SESSION that tests/samples/xen-domu.expected holds (made by
# make-xen-domu.sh, compared by tests/unit/xen-domu-sample.sh).  Needs
# babeltrace2 (the CTF export is checked through it).
set -eu
TV=$1 S=$2 O=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$TV" stat "$S" 2>"$tmp/stat.err" | sed "s|$S|SAMPLE|" >"$O/stat.txt"
"$TV" stat --json --hist "$S" >"$O/stat.json"
"$TV" report "$S" >"$tmp/report.txt"
"$TV" report --json "$S" >"$tmp/report.json"
python3 - "$tmp/report.json" >"$O/report-counts.txt" <<'PY'
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    c[(e["domain"], e["event"])] += 1
for (d, e), n in sorted(c.items()):
    print("%-10s %-40s %8d" % (d, e, n))
print("%-10s %-40s %8d" % ("total", "", sum(c.values())))
PY
"$TV" export -q -f perfetto-json -o "$tmp/p.json" "$S"
"$TV" export -q -f ctf -o "$tmp/ctf" "$S"
command -v babeltrace2 >/dev/null || { echo "xen-domu-outputs: babeltrace2 missing" >&2; exit 1; }
babeltrace2 "$tmp/ctf" >"$tmp/bt.txt"
python3 - "$tmp/p.json" >"$O/perfetto-counts.txt" <<'PY'
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    line = line.rstrip(",\n")
    if line.startswith("{\"ph\""):
        e = json.loads(line)
        key = e["ph"], e.get("cat", ""), e["name"] if e["ph"] in "XM" else ""
        if e["ph"] == "M":
            key = "M", e["name"], e["args"]["name"]
        c[key] += 1
for k, n in sorted(c.items()):
    print("%-2s %-10s %-40s %8d" % (k[0], k[1], k[2], n))
PY
(cd "$tmp" && sha256sum report.txt report.json p.json bt.txt) >"$O/digests.txt"
wc -l <"$tmp/bt.txt" | sed 's/^/babeltrace2 lines: /' >>"$O/digests.txt"
