#!/usr/bin/env python3
"""Check a host + guest session with this host's tracevisor (report --json).

usage: guest_check.py TV SESSION GUEST [--status complete|truncated]
                      [--min-guest-events N] [--min-pings N] [--min-hcalls N]
                      [--min-vcpu-exits N]

Prints one JSON line of figures, and exits 1 with the reasons when a
requirement fails.  Sync markers are decoded from ftrace:raw_data payloads
(doc/sync-probes.md); hypercall probes are matched by sequence number
between the guest's HCALL_BEFORE/AFTER markers and the host's
kvm:kvm_hypercall (nr 0x7476, a0 = seq).
"""
import argparse, collections, json, os, struct, subprocess, sys

SYNC_MAGIC = 0x59535654
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

    vcpu_tids = set()
    for line in open(os.path.join(a.session, "host", "vcpus")):
        w = line.split()
        if len(w) == 4 and not line.startswith("#") and w[3] == a.guest:
            vcpu_tids.add(int(w[0]))

    out = subprocess.run([a.tv, "report", "--json", a.session], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    if out.returncode != 0:
        errors.append("report failed: %s" % out.stderr.strip()[-300:])
    counts = collections.Counter()
    marks = collections.defaultdict(set)   # (domain, type) -> seqs
    host_hcalls = set()
    vcpu_exits = 0
    for line in out.stdout.splitlines():
        ev = json.loads(line)
        dom, name = ev["domain"], ev["event"]
        counts[dom] += 1
        if name == "ftrace:raw_data":
            m = marker(ev)
            if m and m[0]:
                marks[(dom, m[0])].add(m[2])
            continue
        if dom == "host" and name == "kvm:kvm_hypercall" and ev["fields"].get("nr") == 0x7476:
            host_hcalls.add(ev["fields"].get("a0"))
        if dom == "host" and name == "kvm:kvm_exit" and ev["pid"] in vcpu_tids:
            vcpu_exits += 1
        if dom == gdom:
            counts["guest_non_marker"] += 1

    pings = (marks[("host", "PING_SEND")] & marks[(gdom, "PING_RECV")] &
             marks[(gdom, "PONG_SEND")] & marks[("host", "PONG_RECV")])
    hcalls = marks[(gdom, "HCALL_BEFORE")] & marks[(gdom, "HCALL_AFTER")] & host_hcalls
    fig = {
        "host_events": counts["host"], "guest_events": counts[gdom],
        "guest_trace_events": counts["guest_non_marker"],
        "pings_sent": len(marks[("host", "PING_SEND")]), "pings_matched": len(pings),
        "hcalls_guest": len(marks[(gdom, "HCALL_BEFORE")]),
        "hcalls_host": len(host_hcalls), "hcalls_matched": len(hcalls),
        "vcpu_tids": sorted(vcpu_tids), "vcpu_kvm_exits": vcpu_exits,
        "guest_status": meta.get("status"), "guest_lost": meta.get("lost_total"),
        "guest_bytes": int(meta.get("bytes_total", 0)),
    }
    print(json.dumps(fig))
    if fig["guest_trace_events"] < a.min_guest_events:
        errors.append("only %d guest trace events" % fig["guest_trace_events"])
    if len(pings) < a.min_pings:
        errors.append("only %d message probes matched on both sides" % len(pings))
    if len(hcalls) < a.min_hcalls:
        errors.append("only %d hypercall probes matched by seq (guest %d, host %d)" %
                      (len(hcalls), fig["hcalls_guest"], fig["hcalls_host"]))
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
