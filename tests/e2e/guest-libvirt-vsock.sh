#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# tv-lab: own-machine: the only scenario with its LAB_EXTRA (libvirt): a shared machine would only idle after it
# Issue 4: `tracevisor record --guest NAME` with a real libvirt KVM domain
# that has a vsock device.  In the lab's nested SVM L1, libvirtd (this
# host's Debian binaries, brought in with LAB_EXTRA) creates a transient
# domain with <vsock><cid address='3'/></vsock> booting lab-guest's L2
# kernel and initramfs, whose script runs tracevisor-agent under a
# workload.  record gets everything from libvirt (no vsock/pid hints): the
# CID from the domain XML, the QEMU pid and vCPU threads from QMP
# query-cpus-fast.  Recorded twice (one boot), with the local clock and
# with --clock x86-tsc.  Checked here: the guest stream (complete,
# transport vsock:3, decoded, message and hypercall probes), every host
# kvm_exit on the vCPU thread QMP names (which /proc in L1 calls
# "CPU 0/KVM") and attributed to the domain, sync without probe causality
# violations, and the x86-tsc session exact (method tsc: libvirt's QEMU pid
# found the debugfs TSC offsets).  67-82 s on a quiet host, 3-4 min at
# load 8-10 (libvirt probing QEMU's capabilities under TCG: 11-60 s of it).
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || skip "build/tracevisor-agent not built (make)"
# libvirtd with only its QEMU driver, virsh (and through it libvirt.so.0 and
# libvirt-qemu.so.0, which record dlopen()s), the CPU model map, and QEMU's
# TCG module: libvirt probes QEMU's TCG capabilities too, and Debian builds
# TCG as a module the lab's L1 image does not carry ("could not load module
# for type 'tcg-accel-ops'"); the host's is the lab QEMU's version (both
# Debian 12's qemu-system-x86).
LIBVIRT_FILES="/usr/sbin/libvirtd /usr/bin/virsh /usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so /usr/share/libvirt/cpu_map /usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so"
for f in $LIBVIRT_FILES; do
	[ -e "$f" ] || skip "needs $f (apt-get install libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients)"
done

DOM=tvvsock
L2_SCRIPT=$L2_AGENT_SCRIPT

run_lab kvm '
PATH=/opt/tracevisor:$PATH
DOM='"$DOM"'
say() { echo "l1: $*"; }
# libvirt refuses to start its QEMU driver without its compiled-in QEMU
# user and group (Debian: libvirt-qemu, kvm), even when qemu.conf runs
# QEMU as root.
echo "libvirt-qemu:x:64055:64055::/var/lib/libvirt:/bin/false" >>/etc/passwd
printf "libvirt-qemu:x:64055:\nkvm:x:108:\n" >>/etc/group
mkdir -p /etc/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt /run/libvirt
# virsh connects to /var/run/libvirt/libvirt-sock, libvirtd listens on
# /run/libvirt/libvirt-sock: the same file on Debian, where /var/run -> /run.
[ -e /var/run ] || ln -s /run /var/run
# L1 is an initramfs with no service manager, no cgroup mounts and no
# virtlogd: QEMU as root, no DAC/namespace games (rootfs cannot be
# pivoted), QEMU output straight to a file.
cat >/etc/libvirt/qemu.conf <<"EOF"
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
namespaces = [ ]
stdio_handler = "file"
EOF
# Two lab runs stopped with L1 still running L2 but nothing more written
# to /out: a console line every 20 s says what is blocked (D state).
(while sleep 20; do
	echo "l1-tick: $(date +%T) $(ps -o pid,stat,args | awk '"'"'$2 ~ /D/'"'"' | tr "\n" ";")"
	for p in $(ps -o pid,stat | awk '"'"'$2 ~ /D/ {print $1}'"'"'); do cat /proc/$p/stack; done
done) >/dev/console 2>&1 &
TICK=$!
libvirtd >/out/libvirtd.log 2>&1 &
LVPID=$!
t0=$(date +%s)
n=0
while ! timeout 30 virsh -q -c qemu:///system uri >/out/virsh-uri.log 2>&1 && [ $n -lt 60 ]; do sleep 1; n=$((n + 1)); done
timeout 30 virsh -q -c qemu:///system uri >/dev/null 2>&1 || { say "libvirtd did not answer"; exit 30; }
say "libvirtd up after $(($(date +%s) - t0)) s"

# L2: lab-guest s initrd (base + /opt/tracevisor + /lab/script), booted
# by libvirt instead of lab-guest; its /out is /tmp/l2 over virtio-9p.
cat >/tmp/l2.sh <<"L2EOF"
'"$L2_SCRIPT"'
L2EOF
mkdir -p /tmp/l2w/root/lab /tmp/l2
cp /tmp/l2.sh /tmp/l2w/root/lab/script
[ -f /lab/env ] && cp /lab/env /tmp/l2w/root/lab/env
(cd /tmp/l2w/root && find . | cpio -o -H newc 2>/dev/null) >/tmp/l2w/script.cpio
# L2 gets /opt/tracevisor only (the agent is static): /lab/l2/opt.cpio
# also holds LAB_EXTRA (libvirt and its libraries), too much for a 256 MB
# L2 ("Initramfs unpacking failed: write error").
(cd / && find opt/tracevisor | cpio -o -H newc 2>/dev/null) >/tmp/l2w/opt.cpio
cat /lab/l2/base.cpio /tmp/l2w/opt.cpio /tmp/l2w/script.cpio >/tmp/l2w/initrd
cat >/tmp/dom.xml <<EOF
<domain type="kvm">
  <name>$DOM</name>
  <memory unit="MiB">256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch="x86_64" machine="pc">hvm</type>
    <kernel>/lab/l2/vmlinuz</kernel>
    <initrd>/tmp/l2w/initrd</initrd>
    <cmdline>console=ttyS0 quiet panic=-1 lab.role=l2</cmdline>
  </os>
  <cpu mode="host-passthrough"><feature policy="disable" name="tsc_adjust"/></cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <serial type="file"><source path="/tmp/l2/console.log"/><target port="0"/></serial>
    <filesystem type="mount" accessmode="squash"><source dir="/tmp/l2"/><target dir="out"/></filesystem>
    <vsock model="virtio"><cid auto="no" address="3"/></vsock>
    <controller type="usb" model="none"/>
    <memballoon model="none"/>
  </devices>
</domain>
EOF
t0=$(date +%s)
virsh -q -c qemu:///system create /tmp/dom.xml >/out/create.log 2>&1 || { cat /out/create.log; exit 31; }
say "domain created after $(($(date +%s) - t0)) s"
virsh -q -c qemu:///system dumpxml $DOM >/out/dom-live.xml
n=0
while [ ! -e /tmp/l2/agent.started ] && [ $n -lt 300 ]; do sleep 1; n=$((n + 1)); done
[ -e /tmp/l2/agent.started ] || { say "L2 agent did not start"; cp /tmp/l2/console.log /out/l2-console.log; exit 32; }
say "L2 agent up after $(($(date +%s) - t0)) s"
cat /run/libvirt/qemu/$DOM.pid >/out/qemu.pid
QPID=$(cat /out/qemu.pid)
virsh -q -c qemu:///system qemu-monitor-command $DOM "{\"execute\":\"query-cpus-fast\"}" >/out/qmp.json
for t in /proc/$QPID/task/*; do echo "${t##*/} $(cat $t/comm)"; done >/out/qemu-tasks
tracevisor record -o /out/s --guest $DOM --sync-interval 0.25 --duration 8 >/out/record.log 2>&1
echo $? >/out/record.status
# Once in a CI run, L2 did not answer a vsock connect for 30 s right after
# its agent said Ready (the next recording connected at once): a nested-TCG
# stall like the two this test has logged.  Discovery is what is tested
# here, so that case alone gets one more recording; its evidence stays.
if grep -q "cannot connect to the agent" /out/record.log; then
	say "first recording could not connect to the agent; L2 console tail:"
	tail -n 5 /tmp/l2/console.log
	mv /out/s /out/s.noconnect
	mv /out/record.log /out/record-noconnect.log
	tracevisor record -o /out/s --guest $DOM --sync-interval 0.25 --duration 8 >/out/record.log 2>&1
	echo $? >/out/record.status
fi
touch /tmp/l2/bump-tsc
tracevisor record -o /out/s-tsc --clock x86-tsc --guest $DOM --sync-interval 0.25 --duration 8 >/out/record-tsc.log 2>&1
echo $? >/out/record-tsc.status
touch /tmp/l2/done
n=0
while [ ! -e /tmp/l2/.lab-status ] && [ $n -lt 120 ]; do sleep 1; n=$((n + 1)); done
cp /tmp/l2/.lab-status /out/l2.status 2>/dev/null
cp /tmp/l2/agent.log /out/l2-agent.log 2>/dev/null
cp /tmp/l2/console.log /out/l2-console.log 2>/dev/null
cp /var/log/libvirt/qemu/$DOM.log /out/qemu.log 2>/dev/null
virsh -q -c qemu:///system destroy $DOM >/dev/null 2>&1
kill $LVPID $TICK
exit 0' guest-libvirt-vsock LAB_TIMEOUT=600 LAB_EXTRA="$LIBVIRT_FILES"
expect_rc 0 "L1 script"
cat "$OUT/record.log" "$OUT/record-tsc.log" >&2
for r in record record-tsc; do
	[ "$(cat "$OUT/$r.status")" = 0 ] || fail "$r --guest $DOM exited $(cat "$OUT/$r.status")"
done
[ "$(cat "$OUT/l2.status" 2>/dev/null)" = 0 ] || fail "L2 status $(cat "$OUT/l2.status" 2>/dev/null) (none: it did not finish)"
S=$OUT/s
G=$S/guest-$DOM
QPID=$(cat "$OUT/qemu.pid")
[ -n "$QPID" ] || fail "no QEMU pid file for $DOM in L1"
grep -q "^status=complete$" "$G/meta" || fail "guest meta: $(grep status= "$G/meta")"
grep -q "^transport=vsock:3:" "$G/meta" || fail "guest meta: $(grep transport= "$G/meta"), want vsock:3 from the domain XML"
grep -q "^libvirt_domain=$DOM$" "$G/meta" || fail "guest meta has no libvirt_domain=$DOM"
grep -q "^qemu_pid=$QPID$" "$G/meta" || fail "guest meta: $(grep qemu_pid= "$G/meta"), QEMU pid in L1 is $QPID"
# QMP's vCPU threads (taken in L1 with virsh), named "CPU N/KVM" by /proc
# in L1, must be what record wrote to host/vcpus.
mapfile -t TIDS < <(python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["return"]: print(c["cpu-index"], c["thread-id"])' "$OUT/qmp.json")
[ ${#TIDS[@]} = 1 ] || fail "QMP lists ${#TIDS[@]} vCPUs, want 1"
for l in "${TIDS[@]}"; do
	read -r idx tid <<<"$l"
	comm=$(sed -n "s/^$tid //p" "$OUT/qemu-tasks")
	[ "$comm" = "CPU $idx/KVM" ] || fail "QMP vCPU $idx thread $tid is \"$comm\" in L1's /proc/$QPID/task, want \"CPU $idx/KVM\""
	grep -q "^$tid $QPID $idx $DOM$" "$S/host/vcpus" ||
		{ cat "$S/host/vcpus" >&2; fail "host/vcpus does not map thread $tid to $DOM vCPU $idx"; }
done
# ... and no other thread of that QEMU is taken for a vCPU
nv=$(awk -v d="$DOM" '!/^#/ && $4 == d && $3 >= 0' "$S/host/vcpus" | wc -l)
[ "$nv" = ${#TIDS[@]} ] || { cat "$S/host/vcpus" >&2; fail "host/vcpus has $nv vCPU threads for $DOM, QMP ${#TIDS[@]}"; }
fig=$(python3 "$REPO/tests/e2e/guest_check.py" "$TV" "$S" "$DOM" --status complete \
	--min-guest-events 1000 --min-pings 10 --min-hcalls 5 --min-vcpu-exits 100) ||
	fail "session check: $fig"
echo "ok: $fig" >&2
# Only this domain runs in L1, so every host kvm_exit is its vCPU's: all on
# the thread QMP named, and stat attributes them to $DOM.
read -r _ tid0 <<<"${TIDS[0]}"
exits=$("$TV" report --json "$S" | python3 -c '
import collections, json, sys
n = collections.Counter(e["pid"] for e in map(json.loads, sys.stdin)
                        if e["domain"] == "host" and e["event"] == "kvm:kvm_exit")
print(n[int(sys.argv[1])], sum(n.values()))' "$tid0") || fail "report --json"
read -r on_tid total <<<"$exits"
{ [ "$total" -ge 100 ] && [ "$on_tid" = "$total" ]; } ||
	fail "$on_tid of $total host kvm_exit events on QMP vCPU thread $tid0"
"$TV" stat "$S" >"$T/stat" || fail "stat failed"
grep -q "^$DOM\[" "$T/stat" || { cat "$T/stat" >&2; fail "stat has no row for $DOM"; }
# get SESSION KEY: guest-$DOM.KEY of SESSION's sync/transforms
get() { sed -n "s/^guest-$DOM\.$2=//p" "$1/sync/transforms"; }
# sync_checks SESSION: sync, then probe pairs (message and hypercall) never
# invert and enough guest events are checked against their vCPU's runs.
sync_checks() {
	"$TV" sync "$1" >&2 || fail "tracevisor sync $1"
	q=$(get "$1" quality) bound=$(get "$1" bound_ns) viol=$(get "$1" causality_violations)
	checked=$(get "$1" pairs_checked) vviol=$(get "$1" vcpu_violations)
	vchecked=$(get "$1" vcpu_events_checked)
	[ "${bound:--1}" -ge 0 ] || fail "$1: no sync bound for guest-$DOM"
	[ "${checked:-0}" -gt 0 ] || fail "$1: no probe pairs checked for causality"
	[ "$((viol - vviol))" = 0 ] || fail "$1: $((viol - vviol)) probe causality violations in $checked pairs"
	[ "${vchecked:-0}" -gt 1000 ] || fail "$1: only ${vchecked:-0} guest events checked against vCPU residency"
}
# Local clock: the probe hull.  Its bound here was 26-116 us in six runs
# (accurate is <= 100 us): this pc-machine L2 under nested TCG sits near
# the line, so the quality is reported, not required; a wrong transform
# breaks the causality checks instead.  vCPU-residency outliers (up to
# 0.32% seen) under 1%, as in sync-kvm.sh.
sync_checks "$S"
case $q in exact|accurate|approximate) ;; *) fail "local clock: guest quality ${q:-none}: $(get "$S" message)" ;; esac
[ "$((vviol * 100))" -le "$vchecked" ] || fail "$vviol of $vchecked guest events outside their vCPU's guest-mode intervals"
echo "ok: local clock: guest-$DOM $q, bound $bound ns, 0/$checked probe violations, $vviol/$vchecked vCPU-residency outliers" >&2
lq=$q lbound=$bound
# x86-tsc: the exact TSC relation needs what libvirt told record: the QEMU
# pid (debugfs kvm/PID-*/vcpu*/tsc-offset) and the vCPU threads whose
# kvm_write_tsc_offset events it follows.
ST=$OUT/s-tsc
[ -s "$ST/guest-$DOM/tsc" ] || fail "no guest-$DOM/tsc (debugfs kvm/$QPID-*/vcpu*/tsc-offset) in the TSC session"
sync_checks "$ST"
[ "$q/$(get "$ST" method)" = exact/tsc ] ||
	fail "x86-tsc: guest-$DOM is $q/$(get "$ST" method), not exact/tsc: $(get "$ST" message)"
[ "$vviol" = 0 ] || fail "x86-tsc: $vviol of $vchecked guest events outside their vCPU's kvm_entry..kvm_exit"
segs=$(get "$ST" tsc_segments)
[ "${segs:-0}" -ge 2 ] || fail "x86-tsc: only ${segs:-0} TSC offset segments: kvm_write_tsc_offset not followed?"
echo "ok: x86-tsc: guest-$DOM exact/tsc, $segs TSC offset segments, 0/$checked probe violations, 0/$vchecked vCPU-residency outliers" >&2
echo "PASS: record --guest $DOM (libvirt KVM domain in L1, vsock CID 3 from its XML, qemu pid $QPID, vCPU thread $tid0 with $total kvm_exits): local clock $lq (bound $lbound ns), x86-tsc exact" >&2
