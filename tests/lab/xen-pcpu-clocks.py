#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Offline analysis of a Xen lab session with free vCPUs (doc/sync-probes.md,
# "Xen domUs in the lab"): the prototype of the common time line the tool
# now builds (lib/reader/xen_line.c, sync/xen_offset.c), kept as a cross-check.
# Every probe marker of dom0, d1 and d2 is moved
# from the system time of the pCPU its vCPU ran on (pvclock) to one line of
# the raw TSC (pCPU 0's first scale), that pCPU found by walking the vCPU's
# runs (Xen's runstate records, paired per pCPU, in raw TSC order) in the
# marker stream's order; Xen's probe records go through the same line by
# their TSC.  Every probe pair is then checked in both spaces.  Each
# domain's constant (its sched_clock offset) is the median of its
# hypercall brackets against Xen's records on the same pCPU.
# usage: xen-pcpu-clocks.py SESSION   (recorded with the gen class; 1 vCPU per domain)
import json, struct, sys, collections, subprocess, os, shutil, tempfile
S = sys.argv[1]
TV = os.environ.get('TV', os.path.join(os.path.dirname(__file__), '../../build/tracevisor'))
HELD_NS = 200	# as sync's TV_SYNC_HELD_NS
meta = dict(l.strip().split('=', 1) for l in open(S + '/xen/meta') if '=' in l)
ncpu = int(meta['ncpus'])
def ap(sc, tsc):
    d = tsc - sc[0]; neg = d < 0; d = abs(d)
    d = d << sc[3] if sc[3] >= 0 else d >> -sc[3]
    v = (d * sc[2]) >> 32
    return sc[1] - v if neg else sc[1] + v
scales = {}; runs = collections.defaultdict(list); opened = {}; xp = {}
first0 = None
for cpu in range(ncpu):
    sc = (int(meta['cpu%d.tsc_timestamp' % cpu]), int(meta['cpu%d.system_time' % cpu]),
          int(meta['cpu%d.tsc_to_system_mul' % cpu]), int(meta['cpu%d.tsc_shift' % cpu]))
    if cpu == 0: first0 = sc
    scales[cpu] = [(0, sc)]
    b = open('%s/xen/cpu%d.xen' % (S, cpu), 'rb').read(); p = 0; tsc = 0
    while p + 4 <= len(b):
        h, = struct.unpack_from('<I', b, p); ev = h & 0x0fffffff; n = (h >> 28) & 7; cy = h >> 31; q = p + 4
        if cy: lo, hi = struct.unpack_from('<II', b, q); tsc = hi << 32 | lo; q += 8
        ex = struct.unpack_from('<%dI' % n, b, q); p = q + 4 * n
        if ev == 0x0001f004:
            sc = (ex[0] | ex[1] << 32, ex[2] | ex[3] << 32, ex[4], struct.unpack('<i', struct.pack('<I', ex[5]))[0])
            scales[cpu].append((tsc, sc))
        st = ap(sc, tsc)
        if (ev & ~0xff0) == 0x00021001 and n >= 1:
            k = (ex[0] >> 16, ex[0] & 0xffff, cpu); old = (ev >> 8) & 0xf; new = (ev >> 4) & 0xf
            if new == 0: opened[k] = (st, tsc)
            elif old == 0 and k in opened:
                runs[k[:2]].append((opened[k][0], st, cpu, opened[k][1], tsc)); del opened[k]
        if ev in (0x0800f476, 0x0800f477) and ex and ex[0] == 0x59535654:
            key = ('dom0', ex[1] | ex[2] << 32) if ev == 0x0800f476 else (ex[1], ex[2] | ex[3] << 32)
            xp[key] = (st, ap(first0, tsc), cpu)
def stime_inv(cpu, s):
    # the TSC at which pCPU cpu's system time reaches s (piecewise; scale in force)
    best = None
    for t0, sc in scales[cpu]:
        lo = max(t0, 0); st0 = ap(sc, lo)
        if st0 <= s or best is None:
            # invert linearly within this piece
            mul = sc[2] / 2**32 * (2 ** sc[3])
            best = sc[0] + int((s - sc[1]) / mul)
    return best
for k in runs: runs[k].sort()
starts = {k: [r[0] for r in v] for k, v in runs.items()}
for k, (st, tsc) in opened.items():   # runs still open when the recording ended
    runs[k[:2]].append((st, float('inf'), k[2], tsc, None))
# runs of each vCPU in raw TSC order (one clock): a stream walks them in order
truns = {k: sorted(v, key=lambda r: r[3]) for k, v in runs.items()}
cursor = {}
def pcpu_at(dom, s):
    """Sticky walk: stay in the current run while s is inside it (in that
    pCPU's time), else move forward (TSC order) to the first run that
    holds s, or, between runs, to the last run that started before s."""
    r = truns.get((dom, 0), [])
    if not r: return 0
    i = cursor.get(dom, 0)
    if r[i][0] <= s <= r[i][1]: return r[i][2]
    j = i
    while j + 1 < len(r) and not (r[j][0] <= s <= r[j][1]) and r[j + 1][0] <= s:
        j += 1
    cursor[dom] = j
    return r[j][2]
marks = collections.defaultdict(dict)
# the markers in each domain's own clock: report of a copy without sync/
tmp = tempfile.mkdtemp()
shutil.copytree(S, tmp + '/s', ignore=shutil.ignore_patterns('sync', 'cpu*.xen*'))
rep = subprocess.run([TV, 'report', '--json', tmp + '/s'], capture_output=True, text=True).stdout
shutil.rmtree(tmp)
for l in rep.splitlines():
    if '"ftrace:raw_data"' not in l:
        continue
    e = json.loads(l)
    if e['event'] != 'ftrace:raw_data' or e['fields'].get('id') != 1498633812: continue
    typ, gi, seq, aux = struct.unpack_from('<HHQQ', bytes(e['fields']['buf']), 0)
    marks[(e['domain'], typ, gi, seq)] = e['ts']
dom = {'host': 0}
for name in os.listdir(S):
    m = os.path.join(S, name, 'meta')
    if name.startswith('guest-') and os.path.exists(m):
        kv = dict(l.strip().split('=', 1) for l in open(m) if '=' in l)
        dom['guest:' + name[6:]] = int(kv['xen_domid'])
gindex = {}	# guest index of the probes (d1 = 0, ...): the order of session.meta's domains
sm = dict(l.strip().split('=', 1) for l in open(S + '/session.meta') if '=' in l)
for i, name in enumerate(n for n in sm['domains'].split(',') if n.startswith('guest-')):
    gindex['guest:' + name[6:]] = i
def median_offset(d):
    offs = []
    for (dd, typ, gi, seq), ts in marks.items():
        if dd != d or typ not in (5, 7):
            continue
        a = marks.get((d, typ + 1, gi, seq))
        x = xp.get(('dom0', seq) if d == 'host' else (gindex[d], seq))
        if a is not None and x is not None and a - ts >= HELD_NS:
            offs.append(x[0] - (a + ts) / 2)
    offs.sort()
    return offs[len(offs) // 2]
C = {d: median_offset(d) for d in dom}
print('constants (system time minus domain clock, ns):', {d: int(c) for d, c in C.items()})
def sp(d, ts): return ts + C[d]      # in the writer's pCPU system time
pc = {}
for (d, typ, gi, seq), ts in sorted(marks.items(), key=lambda kv: (kv[0][0], kv[1])):
    pc[(d, ts)] = pcpu_at(dom[d], sp(d, ts))
def tt(d, ts):
    s = sp(d, ts); cpu = pc[(d, ts)]
    return ap(first0, stime_inv(cpu, s))
def check(label, f, fx):
    out = collections.Counter(); tot = collections.Counter(); worst = collections.defaultdict(float)
    for (d, typ, gi, seq), ts in marks.items():
        if d == 'host' and typ == 1:   # ping send -> guest recv
            g = [k for k, v in gindex.items() if v == gi]
            r = marks.get((g[0], 2, 0, seq)) if g else None
            if r is None: continue
            g = g[0]
            back = marks.get(('host', 4, gi, seq)); gs = marks.get((g, 3, 0, seq))
            if (back is not None and abs(back - ts) < HELD_NS) or (gs is not None and abs(gs - r) < HELD_NS):
                continue	# held: not a reading
            tot['ping'] += 1; dv = f('host', ts) - f(g, r)
            if dv > 0: out['ping'] += 1; worst['ping'] = max(worst['ping'], dv)
        if d.startswith('guest') and typ == 3:   # pong send -> host recv
            r = marks.get(('host', 4, gindex[d], seq))
            if r is None: continue
            rv = marks.get((d, 2, 0, seq)); hs = marks.get(('host', 1, gindex[d], seq))
            if (rv is not None and abs(ts - rv) < HELD_NS) or (hs is not None and abs(r - hs) < HELD_NS):
                continue
            tot['pong'] += 1; dv = f(d, ts) - f('host', r)
            if dv > 0: out['pong'] += 1; worst['pong'] = max(worst['pong'], dv)
        if d.startswith('guest') and typ == 5:
            a = marks.get((d, 6, 0, seq)); x = xp.get((gindex[d], seq))
            if a is None or x is None or a - ts < HELD_NS: continue
            tot['hcall'] += 2; v1 = f(d, ts) - fx(x); v2 = fx(x) - f(d, a)
            for v in (v1, v2):
                if v > 0: out['hcall'] += 1; worst['hcall'] = max(worst['hcall'], v)
        if d == 'host' and typ == 7:
            a = marks.get(('host', 8, 0, seq)); x = xp.get(('dom0', seq))
            if a is None or x is None or a - ts < HELD_NS: continue
            tot['dom0/xen'] += 2; v1 = f('host', ts) - fx(x); v2 = fx(x) - f('host', a)
            for v in (v1, v2):
                if v > 0: out['dom0/xen'] += 1; worst['dom0/xen'] = max(worst['dom0/xen'], v)
    print(label, {k: '%d/%d (worst %.0f us)' % (out[k], tot[k], worst[k] / 1e3) for k in tot})
check('per-pCPU system time (today):', sp, lambda x: x[0])
check('one TSC line, markers through their pCPU:', tt, lambda x: x[1])
