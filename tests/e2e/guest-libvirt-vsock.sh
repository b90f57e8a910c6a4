#!/bin/bash
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 4: `tracevisor record --guest NAME` with a real libvirt KVM domain
# that has a vsock device.  In the lab's nested SVM L1, libvirtd (this
# host's Debian binaries, brought in with LAB_EXTRA) creates a transient
# domain with <vsock><cid address='3'/></vsock> booting lab-guest's L2
# kernel and initramfs, whose script runs tracevisor-agent under a
# workload.  record gets everything from libvirt (no vsock/pid hints): the
# CID from the domain XML, the QEMU pid and vCPU threads from QMP
# query-cpus-fast.  Checked here: the guest stream (complete, transport
# vsock, decoded, message and hypercall probes), host kvm_exit events
# attributed to the vCPU threads QMP names (which /proc in L1 calls
# "CPU N/KVM"), and sync giving the guest exact/accurate quality.
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
  <cpu mode="host-passthrough"/>
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
tracevisor record -o /out/s --guest $DOM --sync-interval 0.25 --duration 10 >/out/record.log 2>&1
echo $? >/out/record.status
touch /tmp/l2/done
n=0
while [ ! -e /tmp/l2/.lab-status ] && [ $n -lt 120 ]; do sleep 1; n=$((n + 1)); done
cp /tmp/l2/.lab-status /out/l2.status 2>/dev/null
cp /tmp/l2/agent.log /out/l2-agent.log 2>/dev/null
cp /tmp/l2/console.log /out/l2-console.log 2>/dev/null
cp /var/log/libvirt/qemu/$DOM.log /out/qemu.log 2>/dev/null
virsh -q -c qemu:///system destroy $DOM >/dev/null 2>&1
kill $LVPID
exit 0' guest-libvirt-vsock LAB_TIMEOUT=900 LAB_MEM=2048 LAB_EXTRA="$LIBVIRT_FILES"
expect_rc 0 "L1 script"
cat "$OUT/record.log" >&2
[ "$(cat "$OUT/record.status")" = 0 ] || fail "record --guest $DOM exited $(cat "$OUT/record.status")"
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
"$TV" sync "$S" >&2 || fail "tracevisor sync"
tr=$S/sync/transforms
q=$(sed -n "s/^guest-$DOM\.quality=//p" "$tr")
bound=$(sed -n "s/^guest-$DOM\.bound_ns=//p" "$tr")
case $q in exact|accurate) ;; *) fail "guest quality ${q:-none}: $(sed -n "s/^guest-$DOM\.message=//p" "$tr")" ;; esac
[ "${bound:--1}" -ge 0 ] || fail "no sync bound for guest-$DOM"
viol=$(sed -n "s/^guest-$DOM\.causality_violations=//p" "$tr")
vviol=$(sed -n "s/^guest-$DOM\.vcpu_violations=//p" "$tr")
vchecked=$(sed -n "s/^guest-$DOM\.vcpu_events_checked=//p" "$tr")
# As in sync-kvm.sh: probe pairs never invert; guest events outside their
# vCPU's guest-mode intervals stay under 1% (nested TCG kvm-clock).
[ "$((viol - vviol))" = 0 ] || fail "$((viol - vviol)) probe causality violations"
[ "${vchecked:-0}" -gt 1000 ] || fail "only ${vchecked:-0} guest events checked against vCPU residency"
[ "$((vviol * 100))" -le "$vchecked" ] || fail "$vviol of $vchecked guest events outside their vCPU's guest-mode intervals"
echo "PASS: record --guest $DOM (libvirt KVM domain in L1, vsock CID 3 from its XML, qemu pid $QPID, vCPU thread ${TIDS[*]#* }): guest $q, bound $bound ns, $vviol/$vchecked vCPU-residency outliers" >&2
