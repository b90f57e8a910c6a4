#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A synthetic KVM session of N events for the html export's bench.

usage: bench/gen-kvm-session.py DIR N [NCPUS] [NVMS] [--pio]

Writes DIR (a session: host/ with the committed kvm formats of
tests/samples/formats, cpuN.raw sub-buffers in the kernel's layout, meta,
vcpus, saved_cmdlines/tgids, session.meta) holding N events: on each of
NCPUS CPUs (default 8) one vCPU thread of one of NVMS VMs (default 2)
alternates kvm_exit and kvm_entry, with exits of five SVM reasons (io,
cpuid, npf, hlt, intr) and latencies from 0.6 us to 500 us; a fixed seed,
so two runs write the same bytes.  Every exit is a slice of the timeline:
the worst case of `export --format html` (instants aggregate more cheaply).
--pio: each io exit also has a kvm_pio event (an instant of the timeline),
400 ns after it; N counts exits and entries only.
"""
import os
import random
import shutil
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "samples"))
import gen_samples as gs  # noqa: E402

# (reason code, name weight, min ns, max ns)
REASONS = [(0x7b, 30, 3000, 15000), (0x72, 20, 600, 1200), (0x400, 30, 1500, 6000),
           (0x78, 10, 20000, 500000), (0x60, 10, 800, 3000)]


def cpu_pages(fmts, cpu, tid, n, t0, rnd, pio=False):
    """n events of vCPU thread tid on cpu, as sub-buffers."""
    exits = {r: fmts["kvm_exit"].payload(tid, dict(exit_reason=r, guest_rip=gs.RIP_SVM + r, isa=2,
                                                   info1=0, info2=0, vcpu_id=cpu))
             for r, _, _, _ in REASONS}
    entry = fmts["kvm_entry"].payload(tid, dict(vcpu_id=cpu, rip=gs.RIP_SVM))
    pio_rec = fmts["kvm_pio"].payload(tid, dict(rw=1, port=0x3f8, size=1, count=1, val=0x41))
    weights = [w for _, w, _, _ in REASONS]
    plan = rnd.choices(REASONS, weights=weights, k=n // 2 + 1)
    pages, data, page_ts, cur = [], bytearray(), t0, t0
    t = t0
    recs = []
    for i in range(n):
        if i % 2 == 0:
            r, _, lo, hi = plan[i // 2]
            t += rnd.randint(300, 20000)	# in the guest
            recs = [(t, exits[r])] + ([(t + 400, pio_rec)] if pio and r == 0x7b else [])
        else:
            t += rnd.randint(max(lo, 500), hi)	# the exit's latency (after its pio)
            recs = [(t, entry)]
        for ts, payload in recs:
            rec = struct.pack("<I", (len(payload) // 4) | ((ts - cur) << 5)) + payload
            if len(data) + len(rec) > gs.DATA_MAX:
                pages.append(struct.pack("<QQ", page_ts, len(data)) + bytes(data) +
                             bytes(gs.DATA_MAX - len(data)))
                data, page_ts, cur = bytearray(), ts, ts
                rec = struct.pack("<I", len(payload) // 4) + payload
            data += rec
            cur = ts
    if data:
        pages.append(struct.pack("<QQ", page_ts, len(data)) + bytes(data) + bytes(gs.DATA_MAX - len(data)))
    return pages


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    pio = "--pio" in sys.argv
    args = [a for a in sys.argv if a != "--pio"]
    out, n = args[1], int(args[2])
    ncpus = int(args[3]) if len(args) > 3 else 8
    nvms = int(args[4]) if len(args) > 4 else 2
    fmts = gs.load_formats()
    rnd = random.Random(27)
    h = os.path.join(out, "host")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(h)
    for f in ("header_page", "header_event"):
        shutil.copyfile(os.path.join(gs.FORMATS, f), os.path.join(h, f))
    for ev in gs.EVENTS:
        os.makedirs(os.path.join(h, "events", "kvm", ev))
        shutil.copyfile(os.path.join(gs.FORMATS, "kvm", ev, "format"), os.path.join(h, "events", "kvm", ev, "format"))
    meta = [("domain", "host"), ("kind", "linux-ftrace"), ("clock", "local"), ("ncpus", ncpus),
            ("hostname", "synthetic"), ("machine", "x86_64"), ("long_size", gs.LONG),
            ("endian", "little"), ("subbuf_size", gs.SUBBUF), ("buffer_kb", 4096)]
    cmdlines, tgids, vcpus, total = {}, {}, [], 0
    for c in range(ncpus):
        vm = c % nvms
        vm_pid, tid = 1000 + 100 * vm, 1001 + 100 * vm + c
        cmdlines[vm_pid], cmdlines[tid], tgids[tid] = "qemu-system-x86", "CPU %d/KVM" % c, vm_pid
        vcpus.append("%d %d %d vm%d\n" % (tid, vm_pid, c // nvms, vm + 1))
        k = n // ncpus + (1 if c < n % ncpus else 0)
        pages = cpu_pages(fmts, c, tid, k, 1234 * gs.SEC + c * 100, rnd, pio)
        with open(os.path.join(h, "cpu%d.raw" % c), "wb") as f:
            f.write(b"".join(pages))
        meta += [("cpu%d.events" % c, k), ("cpu%d.lost" % c, 0)]
        total += k
    meta += [("events_total", total), ("lost_total", 0), ("events", "kvm:kvm_exit,kvm:kvm_entry")]
    with open(os.path.join(h, "meta"), "w") as f:
        f.writelines("%s=%s\n" % kv for kv in meta)
    with open(os.path.join(h, "saved_cmdlines"), "w") as f:
        f.writelines("%d %s\n" % kv for kv in sorted(cmdlines.items()))
    with open(os.path.join(h, "saved_tgids"), "w") as f:
        f.writelines("%d %d\n" % kv for kv in sorted(tgids.items()))
    with open(os.path.join(h, "vcpus"), "w") as f:
        f.write("# tid vm_pid vcpu vm_name\n" + "".join(vcpus))
    with open(os.path.join(out, "session.meta"), "w") as f:
        f.write("format=tracevisor-session\nversion=1\ndomains=host\nreference_domain=host\n")
    print("%s: %d events on %d CPUs, %d VMs" % (out, total, ncpus, nvms))


if __name__ == "__main__":
    main()
