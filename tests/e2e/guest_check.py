#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a host + guest session with this host's tracevisor (report --json).

usage: guest_check.py TV SESSION GUEST [--status complete|truncated]
                      [--min-guest-events N] [--min-pings N] [--min-hcalls N]
                      [--min-vcpu-exits N] [--max-bytes-per-event N]
                      [--hostname NAME] [--qemu-pid PID]

Prints one JSON line of figures, and exits 1 with the reasons when a
requirement fails.  Sync markers are decoded from ftrace:raw_data payloads
(doc/sync-probes.md); hypercall probes are matched by sequence number
between the guest's HCALL_BEFORE/AFTER markers and the host's
kvm:kvm_hypercall (nr 0x7476, a0 = seq).

With several guests in one session, every guest numbers its probes from 0,
so a probe belongs to GUEST only by its guest index (meta sync_index): the
marker's `guest` field, and a1 = 0xabc00 | index of the host's
kvm_hypercall, which must also come from one of GUEST's vCPU threads
(host/vcpus).  A hypercall probe with GUEST's index from another thread, or
from GUEST's threads with another index, means the streams were mixed up.
"""
import argparse, collections, json, os, struct, subprocess, sys

SYNC_MAGIC = 0x59535654
HCALL_NR, HCALL_TAG = 0x7476, 0xabc00
NAMES = {1: "PING_SEND", 2: "PING_RECV", 3: "PONG_SEND", 4: "PONG_RECV",
         5: "HCALL_BEFORE", 6: "HCALL_AFTER"}


def marker(ev):
    f = ev["fields"]
    if f.get("id") != SYNC_MAGIC or len(f.get("buf", [])) < 20:
        return None
    typ, guest, seq, aux = struct.unpack("<HHQQ", bytes(f["buf"][:20]))
    return NAMES.get(typ), guest, seq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tv")
    ap.add_argument("session")
    ap.add_argument("guest")
    ap.add_argument("--status", default="complete")
    ap.add_argument("--min-guest-events", type=int, default=1)
    ap.add_argument("--min-pings", type=int, default=0)
    ap.add_argument("--min-hcalls", type=int, default=0)
    ap.add_argument("--min-vcpu-exits", type=int, default=0)
    ap.add_argument("--max-bytes-per-event", type=float, default=0)
    ap.add_argument("--hostname", help="the guest's meta hostname must be this")
    ap.add_argument("--qemu-pid", type=int,
                    help="GUEST's vCPU threads must belong to this process (host/vcpus, saved_tgids)")
    a = ap.parse_args()
    gdom = "guest:" + a.guest
    errors = []

    meta = dict(l.rstrip("\n").split("=", 1) for l in
                open(os.path.join(a.session, "guest-" + a.guest, "meta")) if "=" in l)
    smeta = dict(l.rstrip("\n").split("=", 1) for l in
                 open(os.path.join(a.session, "session.meta")) if "=" in l)
    if not meta.get("status", "").startswith(a.status):
        errors.append("guest status %r, want %s" % (meta.get("status"), a.status))
    if "guest-" + a.guest not in smeta.get("domains", "").split(","):
        errors.append("guest-%s not in session.meta domains" % a.guest)
    if a.hostname and meta.get("hostname") != a.hostname:
        errors.append("guest hostname %r, want %s" % (meta.get("hostname"), a.hostname))
    index = int(meta.get("sync_index", 0))

    vcpu_tids = set()
    for line in open(os.path.join(a.session, "host", "vcpus")):
        w = line.split()
        if len(w) == 4 and not line.startswith("#") and w[3] == a.guest:
            vcpu_tids.add(int(w[0]))
            if a.qemu_pid is not None and int(w[1]) != a.qemu_pid:
                errors.append("host/vcpus: thread %s of %s has vm_pid %s, want %d" %
                              (w[0], a.guest, w[1], a.qemu_pid))
    if a.qemu_pid is not None:
        # The kernel's own tid -> tgid map, independent of how record
        # found the threads.
        for line in open(os.path.join(a.session, "host", "saved_tgids")):
            w = line.split()
            if len(w) == 2 and int(w[0]) in vcpu_tids and int(w[1]) != a.qemu_pid:
                errors.append("vCPU thread %s of %s belongs to process %s, not %d" %
                              (w[0], a.guest, w[1], a.qemu_pid))

    out = subprocess.run([a.tv, "report", "--json", a.session], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    if out.returncode != 0:
        errors.append("report failed: %s" % out.stderr.strip()[-300:])
    counts = collections.Counter()
    marks = collections.defaultdict(set)   # (domain, type) -> seqs
    host_hcalls = set()
    mixed_hcalls = 0
    vcpu_exits = 0
    last = collections.defaultdict(int)    # what -> last timestamp
    for line in out.stdout.splitlines():
        ev = json.loads(line)
        dom, name = ev["domain"], ev["event"]
        counts[dom] += 1
        if name == "ftrace:raw_data":
            m = marker(ev)
            if m and m[0] and m[1] == index:
                marks[(dom, m[0])].add(m[2])
            continue
        if dom == "host" and name == "kvm:kvm_hypercall" and ev["fields"].get("nr") == HCALL_NR:
            ours_tag = ev["fields"].get("a1") == HCALL_TAG | index
            ours_tid = ev["pid"] in vcpu_tids
            if ours_tag and ours_tid:
                host_hcalls.add(ev["fields"].get("a0"))
            elif ours_tag or ours_tid:
                mixed_hcalls += 1
        if dom == "host" and name == "kvm:kvm_exit" and ev["pid"] in vcpu_tids:
            vcpu_exits += 1
            last["vcpu_exit"] = ev["ts"]
        if dom == gdom:
            counts["guest_non_marker"] += 1
            last["guest"] = ev["ts"]

    pings = (marks[("host", "PING_SEND")] & marks[(gdom, "PING_RECV")] &
             marks[(gdom, "PONG_SEND")] & marks[("host", "PONG_RECV")])
    hcalls = marks[(gdom, "HCALL_BEFORE")] & marks[(gdom, "HCALL_AFTER")] & host_hcalls
    fig = {
        "host_events": counts["host"], "guest_events": counts[gdom],
        "guest_trace_events": counts["guest_non_marker"],
        "pings_sent": len(marks[("host", "PING_SEND")]), "pings_matched": len(pings),
        "hcalls_guest": len(marks[(gdom, "HCALL_BEFORE")]),
        "hcalls_host": len(host_hcalls), "hcalls_matched": len(hcalls),
        "hcalls_mixed": mixed_hcalls, "sync_index": index,
        "vcpu_tids": sorted(vcpu_tids), "vcpu_kvm_exits": vcpu_exits,
        "guest_status": meta.get("status"), "guest_lost": meta.get("lost_total"),
        "guest_bytes": int(meta.get("bytes_total", 0)),
        "hostname": meta.get("hostname"),
        "last_guest_ts": last["guest"], "last_vcpu_exit_ts": last["vcpu_exit"],
    }
    print(json.dumps(fig))
    if fig["guest_trace_events"] < a.min_guest_events:
        errors.append("only %d guest trace events" % fig["guest_trace_events"])
    if len(pings) < a.min_pings:
        errors.append("only %d message probes matched on both sides" % len(pings))
    if len(hcalls) < a.min_hcalls:
        errors.append("only %d hypercall probes matched by seq (guest %d, host %d)" %
                      (len(hcalls), fig["hcalls_guest"], fig["hcalls_host"]))
    if mixed_hcalls:
        errors.append("%d host hypercall probes with %s's index from other threads, "
                      "or from its threads with another index" % (mixed_hcalls, a.guest))
    if vcpu_exits < a.min_vcpu_exits:
        errors.append("only %d host kvm_exit events on the guest's vCPU threads %s" %
                      (vcpu_exits, sorted(vcpu_tids)))
    if a.max_bytes_per_event and counts[gdom] and \
            fig["guest_bytes"] / counts[gdom] > a.max_bytes_per_event:
        errors.append("%.0f bytes per guest event: the agent sends nearly empty pages" %
                      (fig["guest_bytes"] / counts[gdom]))
    for e in errors:
        print("guest_check: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
