#!/usr/bin/env python3
"""Writes the Xen sample buffers of tests/unit/test_xen.c (committed output).

xen-two-cpus.xentrace  a xentrace file: CPU change windows of 2 CPUs, with
                       sched, HVM (a handler record without TSC), PV
                       hypercall V2 (32- and 64-bit arguments), lost records,
                       a guest record, a time scale record (our patch)
                       and an unknown record.
xen-ring.bin           one CPU's ring as the hypervisor leaves it: struct
                       t_buf (cons, prod) + 2 pages of data; the window
                       cons..prod wraps around the ring end (a WRAP_BUFFER
                       record pads the end, as Xen writes it) and one record
                       straddles the page boundary at data offset 4088.
Usage: gen-xen-samples.py OUTDIR
"""
import struct
import sys

def rec(event, extra=(), tsc=None):
    hdr = event | (len(extra) << 28) | ((1 << 31) if tsc is not None else 0)
    b = struct.pack('<I', hdr)
    if tsc is not None:
        b += struct.pack('<Q', tsc)
    return b + b''.join(struct.pack('<I', x) for x in extra)

RUNSTATE = 0x00021001
def runstate(old, new, dom, vcpu, tsc):
    return rec(RUNSTATE | (old << 8) | (new << 4), [(dom << 16) | vcpu], tsc)

def cpu_window(cpu, data):
    return struct.pack('<III', 0x2001f003, cpu, len(data)) + data

def two_cpus():
    c0 = b''.join([
        runstate(2, 1, 0, 0, 1000),                       # d0v0 blocked -> runnable
        rec(0x00028004, [0, 0], 1100),                    # wake d0v0
        rec(0x0002800a, [0x7fff, 0, 0, 0], 1200),         # switch idle -> d0v0
        runstate(1, 0, 0, 0, 1300),                       # d0v0 runnable -> running
        # hypercall V2: sched_op (29), arg0 32-bit = 1
        rec(0x0020100d, [29 | (1 << 20), 1], 1400),
        # hypercall V2: mmu_update (1), arg1 64-bit = 0x100000002
        rec(0x0020100d, [1 | (2 << 22), 2, 1], 1500),
        rec(0x00081102, [0x1e, 0xdeadbeef, 0xffff], 1600),  # VMEXIT64 reason 0x1e
        rec(0x00082106, [0x70, 1]),                        # IO_READ, no TSC: inherits 1600
        rec(0x00081001, [], 1700),                         # VMENTRY
        rec(0x00028003, [0, 0], 1800),                     # sleep d0v0
        runstate(0, 2, 0, 0, 1900),                        # d0v0 running -> blocked
    ])
    c1 = b''.join([
        runstate(0, 1, 1, 0, 1050),                        # d1v0 running -> runnable
        rec(0x0001f001, [7, (3 << 16) | 1, 900, 0], 1250), # lost 7 (d1v3), first tsc 900
        # TRC_TRACE_TSCALE (patched Xen): stamp tsc 1300, stime 2e9, mul 2^31
        rec(0x0001f004, [1300, 0, 2000000000, 0, 1 << 31, 0], 1300),
        rec(0x0800f123, [0xabc, 42], 1350),                # guest record
        rec(0x00123456, [5], 1450),                        # unknown record
    ])
    # two windows for CPU 0, as xentrace writes them across drains
    half = len(c0) // 2
    half -= half % 4
    # cut on a record boundary: the first 4 records
    cut = len(b''.join([runstate(2, 1, 0, 0, 1000), rec(0x00028004, [0, 0], 1100),
                        rec(0x0002800a, [0x7fff, 0, 0, 0], 1200),
                        runstate(1, 0, 0, 0, 1300)]))
    return cpu_window(0, c0[:cut]) + cpu_window(1, c1) + cpu_window(0, c0[cut:])

def ring():
    pages = 2
    data_size = pages * 4096 - 8
    data = bytearray(data_size)
    # Fill so the window starts 40 bytes before the ring end: old space first.
    start = data_size - 40
    pos = start
    recs = []
    # 20 bytes: a hypercall record (tsc 5000), then the end needs padding.
    r1 = rec(0x0020100d, [29 | (1 << 20), 3], 5000)    # 4+8+8 = 20
    data[pos:pos + len(r1)] = r1; pos += len(r1)
    # the next record (28 bytes) does not fit in the 20 left: WRAP pads them.
    wrap = rec(0x0001f002, [0] * 4)                    # 4 + 16 = 20 bytes
    data[pos:pos + len(wrap)] = wrap; pos += len(wrap)
    assert pos == data_size
    pos = 0
    # after the wrap, records from the ring start; one straddles page 0/1
    # (data offset 4088 = page offset 4096 of the buffer incl. t_buf).
    r = rec(0x00028004, [0, 1], 5100)                  # wake d0v1, 20 bytes
    while pos + len(r) <= 4088 - 28:
        data[pos:pos + len(r)] = r; pos += len(r)
    filler = 4088 - 12 - pos                            # bytes before the straddler
    n = filler // 4 - 1
    assert 0 <= n <= 7
    f = rec(0x00123456, [n] * n)                       # no TSC, pads exactly
    assert len(f) == filler, (len(f), filler)
    data[pos:pos + len(f)] = f; pos += len(f)
    s = rec(0x0002800a, [0, 1, 0, 0], 5200)            # 28 bytes across 4088
    data[pos:pos + len(s)] = s; pos += len(s)
    end = pos
    cons = start
    prod = data_size + end                             # prod went round: +data_size
    return struct.pack('<II', cons, prod) + bytes(data)

def main():
    out = sys.argv[1]
    with open(out + '/xen-two-cpus.xentrace', 'wb') as f:
        f.write(two_cpus())
    with open(out + '/xen-ring.bin', 'wb') as f:
        f.write(ring())

main()
