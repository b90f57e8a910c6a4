#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""xen_trace_file.py SESSION/xen OUT: a session's Xen records (cpuN.xen) as
one xentrace file for xenalyze: each CPU's records after a CPU_CHANGE
header, TRC_GUEST records (0x0800fXXX, record's dom0/Xen sync probes) left
out because xenalyze 4.17 aborts on them ("unexpected number bits(0) in
evt.main")."""
import os
import struct
import sys

d, out = sys.argv[1], open(sys.argv[2], "wb")
dropped = 0
for cpu in range(4096):
    p = "%s/cpu%d.xen" % (d, cpu)
    if not os.path.exists(p):
        continue
    data, keep, i = open(p, "rb").read(), [], 0
    while i + 4 <= len(data):
        h = struct.unpack_from("<I", data, i)[0]
        size = 4 + (8 if h >> 31 else 0) + 4 * ((h >> 28) & 7)
        if (h & 0x0ffff000) == 0x0800f000:
            dropped += 1
        else:
            keep.append(data[i:i + size])
        i += size
    body = b"".join(keep)
    out.write(struct.pack("<III", 0x2001f003, cpu, len(body)) + body)
print("xentrace file: %d TRC_GUEST records left out" % dropped)
