#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fill the kernel rows of a running `tracevisor serve` (kvm/bpf/
top_exits.h: the "rows" hash, struct top_key -> a row id taken from the
"free_ids" queue; the "counters" array, id -> struct top_val) with rows for
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
BPF_MAP_LOOKUP_AND_DELETE_ELEM = 21
TOP_NBUCKETS = 61 * 16
VAL_SIZE = 16 + 16 + 3 * 8 + TOP_NBUCKETS * 8	# struct top_val
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        raise OSError(ctypes.get_errno(), "bpf(%d)" % cmd)
    return r


def map_fds(serve_pid):
    """The fds (ours) of the maps that serve holds, by name, with their key and value sizes."""
    ids, fds = set(), {}
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
        fds[name.rstrip(b"\0").decode()] = (fd, ksz, vsz)
    return fds


def exit_maps(serve_pid):
    """rows, counters and free_ids of serve's exit programs, their layout checked."""
    fds = map_fds(serve_pid)
    want = {"rows": (16, 4), "counters": (4, VAL_SIZE), "free_ids": (0, 4)}
    for name, sizes in want.items():
        if name not in fds or fds[name][1:] != sizes:
            raise SystemExit("serve_rows: no %s map (key, value %s bytes) held by pid %d: %s" %
                             (name, sizes, serve_pid, {k: v[1:] for k, v in fds.items()}))
    return fds["rows"][0], fds["counters"][0], fds["free_ids"][0]


def value(key, count):
    """The row of key (struct top_key's bytes): count exits, all timed,
    spread over the histogram's buckets 0..479 (1 ns .. ~4 s): every
    Prometheus bucket has some, 9-digit counts."""
    hist = [0] * TOP_NBUCKETS
    spread = list(range(0, 480, 10))
    for i, b in enumerate(spread):
        hist[b] = count // len(spread) + (i < count % len(spread))
    return struct.pack("16s16s3Q%dQ" % TOP_NBUCKETS, b"tv-testvmm", key, count, 987654321012, 4000000000, *hist)


def update(fd, key, val):
    bpf(BPF_MAP_UPDATE_ELEM, struct.pack("IIQQQ", fd, 0, ctypes.addressof(key), ctypes.addressof(val), 0))


def main():
    serve, isa = int(sys.argv[1]), int(sys.argv[2])
    codes = [int(c, 0) for c in sys.argv[3].split(",")]
    rows, counters, free_ids = exit_maps(serve)
    row_id = ctypes.create_string_buffer(4)
    n = 0
    for pid in map(int, sys.argv[4:]):
        for code in codes:
            # an id as the exit program takes one: popped from the queue
            bpf(BPF_MAP_LOOKUP_AND_DELETE_ELEM, struct.pack("IIQQQ", free_ids, 0, 0, ctypes.addressof(row_id), 0))
            key = struct.pack("4I", pid, 0, code, isa)
            update(counters, row_id, ctypes.create_string_buffer(value(key, 123456789), VAL_SIZE))
            update(rows, ctypes.create_string_buffer(key, 16), row_id)
            n += 1
    print("serve_rows: %d rows into serve %d's map" % (n, serve))


if __name__ == "__main__":
    main()
