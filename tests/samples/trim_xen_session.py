#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""trim_xen_session.py SRC DST N: copy the session SRC to DST with each
Xen CPU file (xen/cpuN.xen) cut to its first N records, so that a real lab
recording fits in tests/samples (then `tracevisor compress DST`).  The
other domains are copied whole.  xen/meta's per-CPU byte, event and lost
counts are recomputed for what is kept (lost: from the TRC_LOST_RECORDS
records kept); wraps are dropped.  Used once to make tests/samples/xen-domu
(see tests/samples/README-xen-domu.md)."""
import os
import shutil
import struct
import sys

src, dst, keep_n = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copytree(src, dst)
meta_path = os.path.join(dst, "xen", "meta")
meta = [l.rstrip("\n").split("=", 1) for l in open(meta_path) if "=" in l]
counts = {}
for cpu in range(4096):
    p = os.path.join(dst, "xen", "cpu%d.xen" % cpu)
    if not os.path.exists(p):
        continue
    data, i, n, lost = open(p, "rb").read(), 0, 0, 0
    while i + 4 <= len(data) and n < keep_n:
        h = struct.unpack_from("<I", data, i)[0]
        has_tsc, extra = h >> 31, (h >> 28) & 7
        if (h & 0x0fffffff) == 0x0001f001 and extra:   # TRC_LOST_RECORDS
            lost += struct.unpack_from("<I", data, i + 4 + 8 * has_tsc)[0]
        i += 4 + 8 * has_tsc + 4 * extra
        n += 1
    open(p, "wb").write(data[:i])
    counts[cpu] = (i, n, lost)
out = []
for k, v in meta:
    if k.startswith("cpu") and k.split(".")[-1] in ("bytes", "events", "lost", "wraps"):
        continue
    if k in ("events_total", "lost_total", "bytes_total"):
        continue
    out.append((k, v))
for cpu, (b, n, lost) in sorted(counts.items()):
    out += [("cpu%d.bytes" % cpu, str(b)), ("cpu%d.events" % cpu, str(n)),
            ("cpu%d.lost" % cpu, str(lost))]
out += [("events_total", str(sum(c[1] for c in counts.values()))),
        ("lost_total", str(sum(c[2] for c in counts.values()))),
        ("bytes_total", str(sum(c[0] for c in counts.values())))]
open(meta_path, "w").write("".join("%s=%s\n" % kv for kv in out))
print("xen: kept %s (bytes, records, lost) per CPU" % counts)
