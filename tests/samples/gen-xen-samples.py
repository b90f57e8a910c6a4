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
xen-classes.xentrace   one record of every Xen 4.17 record layout the decoder
                       names (lib/xen/xen_events.c), 32- and 64-bit variants,
                       packed here from Xen's own structures (the
                       __trace_var()/TRACE_nD() call sites and
                       public/trace.h), with values that tell the fields
                       apart; HVM handler records without TSC as Xen writes
                       them.  Two CPUs: CPU 1 starts in d2v1 (its first
                       switch says so) to check the start state; CPU 2 has
                       no scheduler record at all (its start state can only
                       come from the session's cpu2.running snapshot).
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

def u64(x):
    return [x & 0xffffffff, x >> 32]

def uv(dom, unit):
    """struct { unsigned unit:16, dom:16; } (credit2, rtds, null, ratelimit)"""
    return (dom << 16) | unit

def h16(lo, hi):
    return (hi << 16) | lo

def s32(x):
    return x & 0xffffffff

def classes_cpu0():
    """(event, words, has_tsc) for every layout, d1v0 running (switch first)."""
    PV, PV64 = 0x00201000, 0x00201100
    V, CS, CS2 = 0x00028000, 0x00022000, 0x00022200
    RT, NU = 0x00022800, 0x00022a00
    H, EM, MEM, SH, SH64 = 0x00082000, 0x00084000, 0x0010f000, 0x0040f000, 0x0040f100
    r = [
        (0x0002800a, [0x7fff, 0, 1, 0], True),           # switch idle -> d1v0
        # PV: trap (eip, trapnr:15 use_error_code:1 error_code:16)
        (PV + 1, [0xc0101000, 26], True),                # hypercall v1 32: eip, eax
        (PV64 + 1, u64(0xffffffff81001000) + [24], True),
        (PV + 3, [0xc0102000, h16(14 | (1 << 15), 0x0002)], True),
        (PV64 + 3, u64(0xffffffff81002000) + [h16(13, 0)], True),
        (PV + 4, [0xc0103000, 0xb7f00010, 0x6], True),   # page fault 32
        (PV64 + 4, u64(0x7f0000401000) + u64(0x7f0000a00008) + [0x7], True),
        (PV + 5, [0xc0104000], True), (PV64 + 5, u64(0xffffffff81005000), True),
        (PV + 6, [0xc0106000], True), (PV64 + 6, u64(0xffffffff81006000), True),
        (PV + 7, [0xc0107000], True), (PV64 + 7, u64(0xffffffff81007000), True),
        (PV + 8, [], True), (PV64 + 8, [], True),
        (PV + 9, [0xc0109000, 0xb0009000], True),
        (PV64 + 9, u64(0xffffffff81009000) + u64(0x7f0000009000), True),
        (PV + 10, [0xc010a000, 0x38], True),
        (PV64 + 10, u64(0xffffffff8100a000) + u64(0x40), True),
        (PV + 12, u64(0x8000000012345067) + [0xc0f00010, 0xc010c000], True),  # PAE ptwr
        (PV64 + 11, u64(0x8000000071e18965) + u64(0xffff888006998f10)
         + u64(0xffffffff812d12c5), True),
        (0x0020200e, [13 | (1 << 20) | (2 << 22), 3, 0x1000, 0x1], True),    # subcall
        # sched verbose
        (V + 1, [5], True), (V + 2, [5], True), (V + 5, [1, 0], True),
        (V + 6, [1, 0], True), (V + 7, [5, 1, 3], True), (V + 8, [], True),
        (V + 9, [5], True), (V + 11, [], True), (V + 12, [], True), (V + 13, [], True),
        (V + 14, [1, 0, 274094], True),
        (V + 15, [0x7fff, 0, 256528, s32(-1)], True),
        (V + 16, [5, 1, 4], True),
        (V + 17, [1, 0, 1127103, 9765822], True),
        # credit
        (CS + 1, [], True), (CS + 2, [3, 1, 2], True), (CS + 3, [3, 1, 1], True),
        (CS + 4, [1, 3, 2], True), (CS + 5, [3, 2, 1], True), (CS + 6, [1], True),
        (CS + 7, [3, 1], True), (CS + 8, [3, 1], True),
        (CS + 9, [1 | (1 << 16) | (0 << 24)], True),     # cpu:16 tasklet:8 idle:8
        (CS + 10, [uv(3, 1), 999], True), (CS + 11, [1, 1], True),
        # credit2
        (CS2 + 1, [], True), (CS2 + 2, [uv(1, 0), 2], True),
        (CS2 + 3, [uv(1, 0), 9880281, s32(-2147483648), 274094], True),
        (CS2 + 4, [], True), (CS2 + 5, [uv(1, 0), s32(-5), 42], True),
        (CS2 + 6, [h16(1, 0)], True),
        (CS2 + 7, [uv(1, 0), s32(-3388673), 6611327], True),
        (CS2 + 8, [], True), (CS2 + 9, [], True),
        (CS2 + 10, [uv(1, 0), h16(2, 0)], True),
        (CS2 + 11, u64(156839) + [uv(1, 0), 18], True),
        (CS2 + 12, u64(401122) + u64(300000) + [2 | (3 << 16) | (18 << 24)], True),
        (CS2 + 13, [uv(1, 0), 1, 10154375], True),
        (CS2 + 14, [h16(2, 256)], True),
        (CS2 + 15, [uv(1, 0), h16(0, 1)], True),
        (CS2 + 16, [h16(0, 1), 12345], True),
        (CS2 + 17, u64(1000) + u64(2000) + [h16(0, 1)], True),
        (CS2 + 19, u64(4000) + [uv(1, 0), h16(1, 3)], True),
        (CS2 + 20, [uv(1, 0), s32(-1), s32(-10000001)], True),
        (CS2 + 21, [h16(1, 2), 0 | (1 << 8) | (1 << 16) | (0 << 24)], True),
        (CS2 + 22, [uv(1, 0), 500], True), (CS2 + 23, [uv(1, 0)], True),
        # RTDS (packed: unit/dom word, then u64s)
        (RT + 1, [h16(1, 0)], True),
        (RT + 2, [uv(1, 0)] + u64(30000000) + u64(4000000), True),
        (RT + 3, [uv(1, 0)] + u64(3500000) + [s32(-500)], True),
        (RT + 4, [uv(1, 0)] + u64(40000000) + u64(4000000), True),
        (RT + 5, [], True), (RT + 6, [1 | (1 << 16) | (1 << 24) | (1 << 28)], True),
        # null
        (NU + 1, [h16(0, 1), 1], True), (NU + 2, [h16(0, 1), 1], True),
        (NU + 3, [h16(0, 1), 1], True), (NU + 4, [h16(0, 1), h16(1, 0)], True),
        (NU + 5, [h16(0, 1), h16(0xffff, 0xffff)], True), (NU + 6, [], True),
        # dom0 ops
        (0x00041001, [5], True), (0x00041002, [5], True),
        # HVM handlers: no TSC, as Xen writes them after a VMEXIT
        (0x00081102, [0x7b] + u64(0xffffffff81000100), True),       # VMEXIT64 (SVM IOIO)
        (H + 0x01, [0x2, 0xb7f00000], False), (H + 0x101, [0x6] + u64(0x7f0000402000), False),
        (H + 0x02, [0x4, 0xb7f00004], False), (H + 0x102, [0x5] + u64(0x7f0000403000), False),
        (H + 0x03, [14, 0x2], False), (H + 0x04, [0xec, 0], False), (H + 0x05, [0xed], False),
        (H + 0x06, [0x3f8, 1], False), (H + 0x07, [0x3f9, 2], False),
        (H + 0x08, [3, 0x1000], False), (H + 0x108, [4] + u64(0x3506f0), False),
        (H + 0x09, [0, 0x80050033], False), (H + 0x109, [3] + u64(0x12345000), False),
        (H + 0x0a, [], False), (H + 0x0b, [], False),
        (H + 0x0c, [0xc0000080] + u64(0xd01), False),
        (H + 0x0d, [0x6e0] + u64(0x123456789a), False),
        (H + 0x0e, [0xd, 1, 0x340, 0x440, 0x0, 0x0], False),
        (H + 0x0f, [0xef], False), (H + 0x10, [], False), (H + 0x11, [], False),
        (H + 0x12, [0x7476], False), (H + 0x13, [1], False),
        (H + 0x14, [0, 0xb7f01000], False), (H + 0x114, [1] + u64(0x7f0000404000), False),
        (H + 0x15, [], False),
        (H + 0x16, [0x70, 0x12], False), (H + 0x116, u64(0x100000070) + u64(0x34), False),
        (H + 0x17, [0xfee00300], False), (H + 0x117, u64(0xfed000f0) + u64(0xabcdef), False),
        (H + 0x18, [], False), (H + 0x19, [0x33], False), (H + 0x119, u64(0x80050033), False),
        (H + 0x1a, u64(0x123456789abc), False),
        (H + 0x20, [0x30, 1, s32(-1)], False),
        (H + 0x21, u64(0xfee00000) + u64(0x7fee0) + [0x181, 6], False),
        (H + 0x22, [], False), (H + 0x23, [17], False), (H + 0x24, [0x4000], False),
        (H + 0x25, [], False),
        (H + 0x126, [0] + u64(0x7), False), (H + 0x127, [0] + u64(0x207), False),
        (H + 0x100, [], False),
        (H + 0x216, [0x80, 0x55], False), (H + 0x316, u64(0x100000080) + u64(0x56), False),
        (H + 0x217, [0xfee000b0, 0], False), (H + 0x317, u64(0x1fee000b0) + u64(0x1), False),
        (0x00081001, [], True),                           # VMENTRY
        # HVM emulated devices
        (EM + 1, [2, 8] + u64(1000000) + u64(2000000), True),
        (EM + 2, [1193, 1193], True), (EM + 3, [976562, 976562], True),
        (EM + 4, u64(4000000) + u64(0) + [0xec], True),
        (EM + 5, [2], True), (EM + 6, [], True), (EM + 7, [], True), (EM + 8, [], True),
        (EM + 9, [], True), (EM + 10, [], True), (EM + 11, [1, 1, 0], True),
        (EM + 12, [4], True), (EM + 13, [1, 4], True), (EM + 14, [4], True),
        (EM + 15, [4], True), (EM + 16, [1, 1], True), (EM + 17, [1, 1], True),
        # memory: grant (domid), p2m {u64 gfn, mfn; u32 p2mt; u16 d, order}
        (MEM + 1, [2], True), (MEM + 2, [2], True), (MEM + 3, [2], True),
        (MEM + 4, u64(0x1000) + u64(0x7f000) + [1, h16(2, 9)], True),
        (MEM + 5, u64(0x2000) + [h16(2, 0)], True),
        (MEM + 16, u64(0x3000) + u64(0x7e000) + [h16(2, 9)], True),
        (MEM + 17, u64(0x4000) + u64(0x7d000) + [h16(2, 0)], True),
        (MEM + 18, u64(0x5000) + [h16(2, 0)], True),
        # PM and IRQ
        (0x00801001, [2400, 1200], True), (0x00801002, [1, 100, 50, 60], True),
        (0x00801003, [1, 200, 9, 0, 0, 0], True),
        (0x00802001, [25, 0x31, 1], True), (0x00802002, [25, 0x31, 1], True),
        (0x00802003, [25, 0x31, 3, 0, 0, 0], True), (0x00802004, [25, 0x31, 1, 0, 0, 0], True),
        (0x00802005, [25, 0x29, 0], True), (0x00802006, [25, 0x31, 2, 0, 0, 0], True),
        (0x00802007, [0x99], True), (0x00802008, [25, 2514557816, 2514680548], True),
    ]
    # shadow, 32-bit then 64-bit guests (TRC_SHADOW; Debian's Xen has no
    # shadow paging: layouts from xentrace's formats file)
    r += [
        (SH + 1, u64(0x1067) + [0xb7f00000, 1], True), (SH + 2, [0xb7f01000], True),
        (SH + 3, [0xb7f02000], True), (SH + 4, [0xb7f03000], True), (SH + 5, [0xb7f04000], True),
        (SH + 6, [0x2067, 0xb7f05000, 2], True), (SH + 7, [0xb7f06000], True),
        (SH + 8, [0x3067, 0x4067, 0xb7f07000, 3], True), (SH + 9, [0xb7f08000, 0x8], True),
        (SH + 10, [0xb7f09000, 0x9], True), (SH + 11, [0xb7f0a000, 0xa], True),
        (SH + 12, [0xb], True), (SH + 13, [0xc], True), (SH + 14, [0xd], True), (SH + 15, [0xe], True),
        (SH64 + 1, u64(0x1067) + u64(0x7f0000000000) + [1], True),
        (SH64 + 2, u64(0x7f0000001000), True), (SH64 + 3, u64(0x7f0000002000), True),
        (SH64 + 4, u64(0x7f0000003000), True), (SH64 + 5, u64(0x7f0000004000), True),
        (SH64 + 6, u64(0x2067) + u64(0x7f0000005000) + [2], True),
        (SH64 + 7, u64(0x7f0000006000), True),
        (SH64 + 8, u64(0x3067) + u64(0x4067) + u64(0x7f0000007000) + [3], True),
        (SH64 + 9, u64(0x7f0000008000) + u64(0x8), True),
        (SH64 + 10, u64(0x7f0000009000) + u64(0x9), True),
        (SH64 + 11, u64(0x7f000000a000) + u64(0xa), True),
        (SH64 + 12, u64(0xb), True), (SH64 + 13, u64(0xc), True),
        (SH64 + 14, u64(0xd), True), (SH64 + 15, u64(0xe), True),
    ]
    return r

def classes():
    c0, tsc = b'', 10000
    for ev, words, has_tsc in classes_cpu0():
        tsc += 10
        c0 += rec(ev, words, tsc if has_tsc else None)
    # CPU 1: records before any scheduler record, then a switch whose prev
    # (d2v1) is what ran from the start
    c1 = b''.join([
        rec(0x00201104, u64(0x7f0000500000) + u64(0x7f0000600000) + [0x4], 10005),
        rec(0x0020100d, [29 | (1 << 20), 1], 10015),
        rec(0x0002800a, [2, 1, 0x7fff, 1], 10025),
        rec(0x00201104, u64(0x7f0000500004) + u64(0x7f0000600004) + [0x4], 10035),
    ])
    c2 = b''.join([
        rec(0x00201104, u64(0x7f0000700000) + u64(0x7f0000800000) + [0x6], 10007),
        rec(0x0020100d, [23], 10017),                    # iret, no argument
    ])
    return cpu_window(0, c0) + cpu_window(1, c1) + cpu_window(2, c2)

def main():
    out = sys.argv[1]
    with open(out + '/xen-classes.xentrace', 'wb') as f:
        f.write(classes())
    with open(out + '/xen-two-cpus.xentrace', 'wb') as f:
        f.write(two_cpus())
    with open(out + '/xen-ring.bin', 'wb') as f:
        f.write(ring())

main()
