#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# tv-lab: own-machine: a PVH domU of its own (LAB_EXTRA), named d1 in its checks, destroyed at the end
# Xen in the flight recorder (issue #25): in a real dom0 (lab `xen`, QEMU
# -cpu qemu64,+npt for HAP) with a PVH domU d1 that works and idles in
# turns, `record --xen -e sched:sched_switch --flight-recorder 512K`
# keeps Xen's last records per pCPU (and dom0's kernel) in memory:
#   - nothing on disk before the snapshot (no cpu* stream file at all);
#   - `tracevisor snapshot DIR` writes snapshot-1/ with host and xen, each
#     pCPU's file within its ring (the ring wrapped: older records pushed
#     out), d1's exits in it, read by report, stat, sync and export;
#   - Ctrl-C writes the last rings as the session itself;
# then `--trigger 'exit-latency>5ms,reason=hlt' --max-snapshots 1` fires on
# a real hlt exit of d1 (the idle domU waits in hlt): exactly one snapshot,
# its session.meta naming d1, vCPU 0, hlt and a latency past 5 ms, the
# exit's VMEXIT record in the snapshot at trigger_time.  The domU is
# destroyed and the recorders gone at the end (xl list, ps).
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"
command -v cpio >/dev/null || skip "cpio missing"

debs=$("$TV_ROOT/scripts/cache-dir")/lab/debs
kdeb=$(ls "$debs"/linux-image-*-amd64_*.deb 2>/dev/null | head -n 1)
bdeb=$(ls "$debs"/busybox-static_*.deb 2>/dev/null | head -n 1)
if [ -z "$kdeb" ] || [ -z "$bdeb" ]; then
	run_lab xen 'exit 0' warmup
	expect_rc 0 "lab warm-up"
	kdeb=$(ls "$debs"/linux-image-*-amd64_*.deb | head -n 1)
	bdeb=$(ls "$debs"/busybox-static_*.deb | head -n 1)
fi
D=$T/domu
mkdir -p "$D/x" "$D/root/bin" "$D/root/proc" "$D/root/dev"
dpkg-deb --fsys-tarfile "$kdeb" | tar x -C "$D/x" ./boot || fail "cannot extract $kdeb"
cp "$D"/x/boot/vmlinuz-* "$D/vmlinuz" && rm -rf "$D/x"
dpkg-deb -x "$bdeb" "$D/x" && cp "$D/x/bin/busybox" "$D/root/bin/" && rm -rf "$D/x" ||
	fail "cannot extract $bdeb"
# work (exits of every kind), then idle (hlt), in turns, for at most 5 minutes
printf '%s\n' '#!/bin/busybox sh' '/bin/busybox --install -s /bin' 'mount -t proc p /proc' \
	'echo domU-up' 'n=0; while [ $n -lt 150 ]; do i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done; sleep 1; n=$((n+1)); done' \
	'poweroff -f' >"$D/root/init"
chmod +x "$D/root/init"
(cd "$D/root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$D/initrd.gz") || fail "initrd"

run_lab xen '
TV=/opt/tracevisor/tracevisor
D='"$D"'
mkdir -p /var/log/xen /var/run/xen /var/lib/xen
/usr/lib/xen-4.17/bin/xenconsoled --log=guest --log-dir=/var/log/xen >/out/xenconsoled.log 2>&1 &
printf "%s\n" "name = \"d1\"" "type = \"pvh\"" "kernel = \"$D/vmlinuz\"" \
	"ramdisk = \"$D/initrd.gz\"" "memory = 160" "vcpus = 1" \
	"extra = \"console=hvc0 panic=-1 quiet\"" "on_poweroff = \"destroy\"" \
	"on_crash = \"destroy\"" >/tmp/d1.cfg
xl create /tmp/d1.cfg >/out/xl-create.log 2>&1 || exit 30
n=0
while ! grep -q domU-up /var/log/xen/guest-d1.log 2>/dev/null && [ $n -lt 120 ]; do sleep 1; n=$((n+1)); done
grep -q domU-up /var/log/xen/guest-d1.log || { xl destroy d1; exit 31; }
# on demand: nothing on disk until the snapshot
$TV record --xen -e sched:sched_switch --flight-recorder 512K -o /tmp/fr 2>/out/fr.err & P=$!
sleep 6
find /tmp/fr -type f -name "cpu*" >/out/fr.before
du -sk /tmp/fr >>/out/fr.before.du
$TV snapshot /tmp/fr >/out/fr.snapshot 2>&1; echo $? >/out/fr.snapshot.rc
sleep 2
kill -INT $P; wait $P; echo $? >/out/fr.rc
# a trigger on a real exit: the idle domU waits in hlt
$TV record --xen --flight-recorder 512K --trigger "exit-latency>5ms,reason=hlt" --max-snapshots 1 \
	-o /tmp/tr 2>/out/tr.err & P=$!
n=0
while [ ! -f /tmp/tr/snapshot-1/session.meta ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
sleep 3
kill -INT $P; wait $P; echo $? >/out/tr.rc
xl destroy d1 2>/out/xl-destroy.err
sleep 1
xl list >/out/xl-list.after 2>&1
ps -e -o comm= | grep -c "^tracevisor$" >/out/ps.after
cp /var/log/xen/guest-d1.log /out/ 2>/dev/null
tar -C /tmp -cf /out/s.tar fr tr || exit 32
exit 0' xen LAB_TIMEOUT=900 "LAB_QEMU_ARGS=-cpu qemu64,+npt" "LAB_EXTRA=$D"
expect_rc 0 "dom0 script"
tar -C "$OUT" -xf "$OUT/s.tar" || fail "cannot unpack the dom0 sessions"
FR=$OUT/fr S=$OUT/fr/snapshot-1 TR=$OUT/tr

# nothing on disk before the snapshot; the sizes said
[ -s "$OUT/fr.before" ] && fail "stream files on disk before any snapshot: $(tr '\n' ' ' <"$OUT/fr.before")"
grep -q "flight recorder: Xen .* pCPUs in dom0 memory" "$OUT/fr.err" || fail "record did not show Xen's ring sizes: $(cat "$OUT/fr.err")"
grep -q "flight recorder: host kernel" "$OUT/fr.err" || fail "record did not show the host ring: $(cat "$OUT/fr.err")"
[ "$(cat "$OUT/fr.snapshot.rc")" = 0 ] || fail "tracevisor snapshot failed: $(cat "$OUT/fr.snapshot")"
grep -q "/tmp/fr/snapshot-1" "$OUT/fr.snapshot" || fail "snapshot printed: $(cat "$OUT/fr.snapshot")"
[ "$(cat "$OUT/fr.rc")" = 0 ] || fail "record (on demand) exited $(cat "$OUT/fr.rc"): $(tail -n 3 "$OUT/fr.err")"

# the snapshot: both layers, each pCPU within its ring, the ring wrapped
grep -q "^domains=host,xen$" "$S/session.meta" || fail "snapshot domains: $(grep domains "$S/session.meta")"
meta() { sed -n "s/^$2=//p" "$1/xen/meta"; }
ring=$(meta "$S" flight_ring_bytes)
[ "${ring:-0}" -gt 0 ] || fail "snapshot xen/meta has no flight_ring_bytes"
[ "$(meta "$S" flight_bytes)" = 524288 ] || fail "flight_bytes $(meta "$S" flight_bytes)"
for f in "$S"/xen/cpu*.xen; do
	sz=$(stat -c %s "$f")
	[ "$sz" -le "$ring" ] || fail "$f: $sz bytes over its ring of $ring"
done
[ "$(meta "$S" flight_dropped)" -gt 0 ] || fail "the ring never wrapped: no record pushed out"
nsnap=$(meta "$S" events_total)
[ "$nsnap" -gt 1000 ] || fail "snapshot: only $nsnap Xen records"
[ -s "$S/host/meta" ] || fail "snapshot: no host/ (dom0's kernel)"

"$TV" report --json "$S" >"$T/s.json" || fail "report of the snapshot"
"$TV" stat "$S" >"$T/s.stat" || fail "stat of the snapshot"
"$TV" sync "$S" >"$T/s.sync" 2>&1 || fail "sync of the snapshot: $(tail -n 2 "$T/s.sync")"
[ -s "$S/sync/transforms" ] || fail "sync wrote no transforms"
"$TV" export --format ctf -o "$T/ctf" "$S" 2>"$T/ctf.err" || fail "export of the snapshot: $(cat "$T/ctf.err")"
[ -n "$(ls "$T/ctf")" ] || fail "export wrote nothing"
python3 - "$T/s.json" <<'PY' || fail "snapshot contents (above)"
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"].startswith("xen:"):
        c["xen"] += 1
        if e["event"] == "xen:xen_vmexit" and e["fields"]["cur_dom"] == 1:
            c["d1 exits"] += 1
    elif e["event"] == "sched:sched_switch":
        c["dom0 sched_switch"] += 1
print("snapshot: %s" % dict(c))
sys.exit(0 if c["xen"] > 1000 and c["d1 exits"] > 10 and c["dom0 sched_switch"] > 0 else 1)
PY
grep -Eq "^d1 +0 +vmexit:" "$T/s.stat" || fail "stat of the snapshot: no exit rows for d1: $(head -n 5 "$T/s.stat")"
# Ctrl-C: the last rings are the session itself
grep -q "^domains=host,xen$" "$FR/session.meta" || fail "final session domains: $(grep domains "$FR/session.meta")"
[ "$(meta "$FR" events_total)" -gt 1000 ] || fail "final session: $(meta "$FR" events_total) Xen records"

# the trigger: exactly one snapshot, on a real hlt exit of d1
[ "$(cat "$OUT/tr.rc")" = 0 ] || fail "record (trigger) exited $(cat "$OUT/tr.rc"): $(tail -n 3 "$OUT/tr.err")"
[ -f "$TR/snapshot-1/session.meta" ] || fail "the trigger did not fire: $(tail -n 5 "$OUT/tr.err")"
[ -e "$TR/snapshot-2" ] && fail "more than one snapshot with --max-snapshots 1"
tm() { sed -n "s/^$1=//p" "$TR/snapshot-1/session.meta"; }
[ "$(tm trigger)" = "exit-latency>5ms,reason=hlt" ] || fail "trigger=$(tm trigger)"
[ "$(tm trigger_vm)" = d1 ] && [ "$(tm trigger_vcpu)" = 0 ] || fail "trigger_vm=$(tm trigger_vm) trigger_vcpu=$(tm trigger_vcpu)"
[ "$(tm trigger_reason)" = hlt ] || [ "$(tm trigger_reason)" = HLT ] || fail "trigger_reason=$(tm trigger_reason)"
lat=$(tm trigger_latency_ns)
[ "${lat:-0}" -gt 5000000 ] || fail "trigger_latency_ns=$lat, not past 5 ms"
"$TV" report --json "$TR/snapshot-1" >"$T/t.json" || fail "report of the trigger's snapshot"
"$TV" stat "$TR/snapshot-1" >"$T/t.stat" || fail "stat of the trigger's snapshot"
python3 - "$T/t.json" "$(tm trigger_time)" <<'PY' || fail "the triggering exit is not in the snapshot (above)"
import json, sys
t = int(sys.argv[2])
best = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "xen:xen_vmexit" and e["fields"]["cur_dom"] == 1:
        d = abs(int(e["ts"]) - t)
        best = d if best is None or d < best else best
print("the nearest d1 VMEXIT to trigger_time %d: %s ns away" % (t, best))
sys.exit(0 if best is not None and best < 1000 else 1)
PY
grep -Eq "^d1 +0 +vmexit:hlt" "$T/t.stat" || fail "stat of the trigger's snapshot: no d1 hlt row"

# what the scenario made is gone
grep -q "^d1 " "$OUT/xl-list.after" && fail "d1 still exists: $(cat "$OUT/xl-list.after")"
[ "$(cat "$OUT/ps.after")" = 0 ] || fail "$(cat "$OUT/ps.after") tracevisor processes left in dom0"
echo "PASS: Xen flight recorder: nothing on disk before the snapshot; snapshot-1 $nsnap Xen records (ring $ring bytes per pCPU, $(meta "$S" flight_dropped) pushed out) read by report, stat, sync, export; trigger on d1 hlt exit of $lat ns; d1 destroyed" >&2
