#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fill the kernel rows map of a running `tracevisor serve` (kvm/bpf/
top_exits_prog.h "rows": struct top_key -> struct top_val) with rows for
given VMM pids x reasons, as its programs would after those exits: the
scrape then walks and renders them as it does real ones.  For tests on
hosts whose KVM fires no kvm_exit (tests/host/serve-scale.sh).

usage: serve_rows.py SERVE-PID ISA REASON-CODE[,CODE...] PID...
  ISA: 1 VMX, 2 SVM (struct top_key's isa)
"""
import ctypes
import glob
import struct
import sys

NR_BPF = 321			# x86-64
BPF_MAP_UPDATE_ELEM, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 2, 14, 15
TOP_NBUCKETS = 61 * 16
VAL_SIZE = 16 + 4 * 8 + TOP_NBUCKETS * 8	# struct top_val
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        raise OSError(ctypes.get_errno(), "bpf(%d)" % cmd)
    return r


def rows_fd(serve_pid):
    """The fd (ours) of the map named rows that serve holds."""
    ids = set()
    for fi in glob.glob("/proc/%d/fdinfo/*" % serve_pid):
        try:
            for line in open(fi):
                if line.startswith("map_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    for i in sorted(ids):
        fd = bpf(BPF_MAP_GET_FD_BY_ID, struct.pack("III", i, 0, 0))
        info = ctypes.create_string_buffer(256)
        bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("IIQ", fd, 256, ctypes.addressof(info)))
        _, _, ksz, vsz, _, _, name = struct.unpack_from("6I16s", info.raw)
        if name.rstrip(b"\0") == b"rows" and (ksz, vsz) == (16, VAL_SIZE):
            return fd
    raise SystemExit("serve_rows: no rows map (key 16, value %d bytes) held by pid %d" % (VAL_SIZE, serve_pid))


def value(count):
    """count exits, all timed, spread over the histogram's buckets 0..479
    (1 ns .. ~4 s): every Prometheus bucket has some, 9-digit counts."""
    hist = [0] * TOP_NBUCKETS
    spread = list(range(0, 480, 10))
    for i, b in enumerate(spread):
        hist[b] = count // len(spread) + (i < count % len(spread))
    return struct.pack("16s4Q%dQ" % TOP_NBUCKETS, b"tv-testvmm", count, count, 987654321012, 4000000000, *hist)


def main():
    serve, isa = int(sys.argv[1]), int(sys.argv[2])
    codes = [int(c, 0) for c in sys.argv[3].split(",")]
    fd = rows_fd(serve)
    val = ctypes.create_string_buffer(value(123456789), VAL_SIZE)
    n = 0
    for pid in map(int, sys.argv[4:]):
        for code in codes:
            key = ctypes.create_string_buffer(struct.pack("4I", pid, 0, code, isa), 16)
            bpf(BPF_MAP_UPDATE_ELEM, struct.pack("IIQQQ", fd, 0, ctypes.addressof(key), ctypes.addressof(val), 0))
            n += 1
    print("serve_rows: %d rows into serve %d's map" % (n, serve))


if __name__ == "__main__":
    main()
