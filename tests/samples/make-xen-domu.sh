#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make-xen-domu.sh LAB_SESSION: (re)make tests/samples/xen-domu from a lab
# recording of Xen, dom0 and a running PVH domU with its agent (the 3 s
# session tests/e2e/xen-domu-view.sh records and keeps as OUTDIR/small),
# and its expected output in tests/samples/xen-domu.expected/:
#   - Xen's CPU files cut to their first XEN_RECORDS (12000) records each
#     (tests/samples/trim_xen_session.py), dom0's and the domU's streams whole;
#   - the stream files compressed (`tracevisor compress`);
#   - the format files of Xen events that never occur removed (148 files,
#     ~100 KB: the reader needs only the formats of the events it meets);
#   - then the output of this build, which tests/unit/xen-domu-sample.sh
#     compares with on every machine: stat (text, JSON), report counts per
#     domain and event, and digests of report (text, JSON), Perfetto's JSON
#     and babeltrace2's text of the CTF export (its UUIDs are random).
# Review the expected files before committing them: they are the contract.
set -eu
cd "$(dirname "$0")/../.."
SRC=$1
TV=${TV:-build/tracevisor}
S=tests/samples/xen-domu
E=tests/samples/xen-domu.expected
rm -rf "$S" "$E"
python3 tests/samples/trim_xen_session.py "$SRC" "$S" "${XEN_RECORDS:-12000}"
"$TV" compress "$S"
"$TV" report --json "$S" | python3 -c '
import json, sys
for n in sorted({json.loads(l)["event"][4:] for l in sys.stdin if json.loads(l)["domain"] == "xen"}):
    print(n)' >"$S.used"
for f in "$S"/xen/events/xen/*; do
	grep -qx "$(basename "$f")" "$S.used" || rm -r "$f"
done
rm "$S.used"
mkdir -p "$E"
tests/samples/xen-domu-outputs.sh "$TV" "$S" "$E"
du -sb --apparent-size "$S" "$E"
