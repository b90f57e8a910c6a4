#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a `tracevisor export --format perfetto` trace against the session.

usage: perfetto_check.py DECODED.txt REPORT.jsonl STAT.json

DECODED.txt is `protoc --decode=perfetto.protos.Trace doc/perfetto/trace.proto`
of the export; REPORT.jsonl `tracevisor report --json`; STAT.json `tracevisor
stat --json` of the same session.  Replays the trace as trace_processor would
(incremental clock 64 from its ClockSnapshot, absolute BOOTTIME timestamps,
interned names, track descriptors) and checks:
  - every packet's timestamp decodes (no packet before the clock snapshot);
  - per domain, the events (instants, exit slice begins = kvm_exit, ends =
    kvm_entry) are report's: the same count per event name and the same
    timestamps; per CPU track, report's count for that domain and CPU;
  - per VM and exit reason, the exit slices (and instants "exit REASON (no
    entry)") are stat's count (KVM, and the HVM exits of Xen domains' vCPUs);
  - each domain's group (a traced process's too) carries one "sync" instant,
    and its clock (65 + domain) monotonic ClockSnapshots with the reference;
    every flow starts at an exit slice on a vCPU track and ends at the same
    time on a guest CPU track (the exit's mark there, not an event);
  - slices are balanced per track (an END never without its BEGIN).
Prints one summary line per domain, and per exit name and guest task the
flows from exits to the guest task slice they end in ("flow: exit cpuid ->
guest:l2 task tv-cpuid 123: 5000"); exits 1 naming each difference.
"""
import collections
import json
import re
import sys

TOKEN = re.compile(r'\s*(?:(\})|([A-Za-z_0-9]+)\s*(\{|:\s*("(?:[^"\\]|\\.)*"|[^\s]+)))')


def parse(text):
    """Protobuf text format into nested lists of (key, value) pairs."""
    stack = [[]]
    pos = 0
    while True:
        m = TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise SystemExit("cannot parse decoded trace at: %r" % text[pos:pos + 60])
            break
        pos = m.end()
        if m.group(1):
            done = stack.pop()
            stack[-1][-1] = (stack[-1][-1][0], done)
        elif m.group(3) == '{':
            stack[-1].append((m.group(2), None))
            stack.append([])
        else:
            v = m.group(4)
            if v.startswith('"'):
                v = bytes(v[1:-1], 'utf-8').decode('unicode_escape').encode('latin-1').decode('utf-8')
            stack[-1].append((m.group(2), v))
    return stack[0]


def get(msg, key, default=None):
    for k, v in msg:
        if k == key:
            return v
    return default


def get_all(msg, key):
    return [v for k, v in msg if k == key]


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    packets = get_all(parse(open(sys.argv[1]).read()), 'packet')
    bad = []
    names, tracks = {}, {}
    proc_of_pid, thread_pid = {}, {}
    domain_clocks = collections.defaultdict(list)
    last, clock_ready = 0, False
    events = []     # (uuid, ts, type, name, flows, flow_ends)
    for p in packets:
        for n in get_all(get(p, 'interned_data', []), 'event_names'):
            names[int(get(n, 'iid'))] = get(n, 'name')
        cs = get(p, 'clock_snapshot')
        if cs is not None:
            pair = {}
            for c in get_all(cs, 'clocks'):
                pair[int(get(c, 'clock_id'))] = int(get(c, 'timestamp'))
                if get(c, 'clock_id') == '64':
                    last, clock_ready = int(get(c, 'timestamp')), get(c, 'is_incremental') == 'true'
            for cid in pair:
                if 65 <= cid <= 127:
                    if 6 not in pair:
                        bad.append("a snapshot of domain clock %d without the reference" % cid)
                    domain_clocks[cid].append((pair[cid], pair.get(6, 0)))
        td = get(p, 'track_descriptor')
        if td is not None:
            proc, thr = get(td, 'process'), get(td, 'thread')
            name = get(td, 'name') or (proc and get(proc, 'process_name')) or (thr and get(thr, 'thread_name'))
            pid = int(get(proc or thr, 'pid')) if (proc or thr) else None
            tracks[int(get(td, 'uuid'))] = (name, int(get(td, 'parent_uuid', 0)), proc is not None)
            if proc is not None:
                proc_of_pid[pid] = int(get(td, 'uuid'))
            elif thr is not None:   # a thread track joins its process by pid
                if get(td, 'parent_uuid') is not None:
                    bad.append("thread track %r has a parent_uuid" % name)
                thread_pid[int(get(td, 'uuid'))] = pid
        te = get(p, 'track_event')
        if te is None:
            continue
        if get(p, 'timestamp_clock_id') == '6':
            ts = int(get(p, 'timestamp'))
        elif clock_ready:
            last += int(get(p, 'timestamp'))
            ts = last
        else:
            bad.append("a track event before the incremental clock's snapshot")
            continue
        name = get(te, 'name') or names.get(int(get(te, 'name_iid', 0)))
        events.append((int(get(te, 'track_uuid')), ts, get(te, 'type'), name,
                       get_all(te, 'flow_ids'), get_all(te, 'terminating_flow_ids')))

    def group(uuid):
        if uuid in thread_pid:
            return proc_of_pid[thread_pid[uuid]]
        while tracks[uuid][1]:
            uuid = tracks[uuid][1]
        return uuid

    def domain_of(uuid):
        g = tracks[group(uuid)][0]
        if g.startswith('VM '):
            return 'host'
        return re.sub(r'( p?CPUs|: .*)$', '', g)

    rep_names, rep_ts, rep_cpu = (collections.Counter(), collections.defaultdict(list),
                                  collections.Counter())
    for line in open(sys.argv[2]):
        e = json.loads(line)
        rep_names[(e['domain'], e['event'])] += 1
        rep_ts[e['domain']].append(e['ts'])
        rep_cpu[(e['domain'], e['cpu'])] += 1
    got_names, got_ts, got_cpu = (collections.Counter(), collections.defaultdict(list),
                                  collections.Counter())
    slices, syncs, open_depth = collections.Counter(), collections.Counter(), collections.Counter()
    flow_start, flow_end = {}, {}
    task_or_run = set()
    stack = collections.defaultdict(list)     # per track: the open slices' names
    # in time order (an exit's begin and its guest mark are written at its
    # entry, with absolute timestamps), the file's order among equal times
    events.sort(key=lambda e: e[1])
    for uuid, ts, typ, name, flows, ends in events:
        d = domain_of(uuid)
        tname = tracks[uuid][0]
        gname = tracks[group(uuid)][0]
        vcpu = gname.startswith('VM ')
        m = re.match(r'Xen (d\d+)', gname)
        if m:   # a Xen domain's vCPU: its HVM exits (their records are instants on the pCPUs)
            open_depth[uuid] += {'TYPE_SLICE_BEGIN': 1, 'TYPE_SLICE_END': -1}.get(typ, 0)
            if typ == 'TYPE_SLICE_BEGIN':
                slices[(m.group(1), 'vmexit:' + name[5:])] += 1
            continue
        if typ == 'TYPE_SLICE_END':
            if stack[uuid]:
                stack[uuid].pop()
            open_depth[uuid] -= 1
            if open_depth[uuid] < 0:
                bad.append("track %r: a slice end without its begin" % tname)
            if vcpu:
                got_names[(d, 'kvm:kvm_entry')] += 1
                got_ts[d].append(ts)
            continue
        if typ == 'TYPE_SLICE_BEGIN':
            stack[uuid].append(name)
            open_depth[uuid] += 1
            if vcpu:
                got_names[(d, 'kvm:kvm_exit')] += 1
                got_ts[d].append(ts)
                vm = tracks[group(uuid)][0]
                slices[(re.sub(r'^VM (.*) \(pid (\d+)\)$', r'\1[\2]', vm), name[5:])] += 1
            else:
                task_or_run.add(name)
            for f in flows:
                flow_start[f] = (ts, vcpu, name)
            continue
        if name in ('sync', 'sync: none') and uuid == group(uuid):
            syncs[uuid] += 1
            continue
        m = re.match(r'exit (.*) \(no entry\)$', name) if vcpu else None
        if m:       # an exit whose entry was lost: an event, and an exit stat counts
            got_names[(d, 'kvm:kvm_exit')] += 1
            got_ts[d].append(ts)
            slices[(re.sub(r'^VM (.*) \(pid (\d+)\)$', r'\1[\2]', gname), m.group(1))] += 1
            continue
        if ends:    # an exit's mark on the guest: in the task slice it interrupted
            for f in ends:
                flow_end[f] = (ts, d, stack[uuid][-1] if stack[uuid] else '?')
            continue
        got_names[(d, name)] += 1
        got_ts[d].append(ts)
        if not vcpu:
            m = re.search(r' p?CPU (\d+)$', tname)
            if m:
                got_cpu[(d, int(m.group(1)))] += 1
    for d in sorted(set(k[0] for k in rep_names) | set(k[0] for k in got_names)):
        want = {k[1]: n for k, n in rep_names.items() if k[0] == d}
        got = {k[1]: n for k, n in got_names.items() if k[0] == d}
        if want != got:
            bad.append("%s: events by name %s, report %s" % (d, got, want))
        if sorted(got_ts[d]) != sorted(rep_ts[d]):
            diff = set(got_ts[d]) ^ set(rep_ts[d])
            bad.append("%s: timestamps differ from report's (%d events, e.g. %s)"
                       % (d, len(got_ts[d]), sorted(diff)[:3]))
        print("%s: %d events as report" % (d, len(got_ts[d])))
    for (d, cpu), n in got_cpu.items():
        # the host's vCPU threads' KVM events are on their vCPU tracks instead
        if d != 'host' and n != rep_cpu[(d, cpu)]:
            bad.append("%s CPU %d: %d events, report %d" % (d, cpu, n, rep_cpu[(d, cpu)]))
    # a group per session domain (a traced process's too, named after its parent)
    groups = [u for u in tracks if tracks[u][2] and not tracks[u][0].startswith(('VM ', 'Xen d'))]
    for u in groups:
        if syncs[u] != 1:
            bad.append("%s: %d sync instants, want 1" % (tracks[u][0], syncs[u]))
    if len(domain_clocks) != len(groups):
        bad.append("%d domain clocks in snapshots for %d domains" % (len(domain_clocks), len(groups)))
    for cid, pairs in domain_clocks.items():
        if pairs != sorted(pairs) or [r for _, r in pairs] != sorted(r for _, r in pairs):
            bad.append("clock %d: snapshots not monotonic: %s" % (cid, pairs[:4]))
    want_slices = collections.Counter()
    for row in json.load(open(sys.argv[3])):
        if row.get('mode', 'exits') == 'exits' and 'vm' in row:
            want_slices[(row['vm'], row['reason'])] += row['count']
        elif row.get('mode') == 'xen' and row['reason'].startswith('vmexit:'):
            want_slices[(row['vm'], row['reason'])] += row['count']
    if slices != want_slices:
        bad.append("exit slices per VM and reason %s, stat %s" % (dict(slices), dict(want_slices)))
    interrupted = collections.Counter()
    for f, (ts, d, task) in flow_end.items():
        if f not in flow_start:
            bad.append("flow %s ends on %s but never starts" % (f, d))
        elif not flow_start[f][1] or flow_start[f][0] != ts or d == 'host':
            bad.append("flow %s: from %s to %s at %d" % (f, flow_start[f], d, ts))
        else:
            interrupted[(flow_start[f][2], d, task)] += 1
    for (exit_name, d, task), n in sorted(interrupted.items()):
        print("flow: %s -> %s task %s: %d" % (exit_name, d, task, n))
    print("exit slices: %d in %d (VM, reason) rows as stat; flows ended on the guest: %d; "
          "task/running slice names: %d" % (sum(slices.values()), len(slices), len(flow_end),
                                            len(task_or_run)))
    for b in bad:
        print("FAIL: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
