#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 4: `tracevisor record --guest NAME` with a real libvirt domain on
# this host (qemu:///system).  A transient TCG domain boots the lab's guest
# kernel with a tiny busybox initramfs whose /init starts tracevisor-agent
# on the virtio-serial port org.tracevisor.0 (a libvirt unix <channel>).
# record gets everything from libvirt: the channel path from the domain
# XML, the QEMU pid and vCPU threads from QMP query-cpus-fast.  Checks: the
# guest stream (status complete, transport serial, events decoded, message
# probes), and host/vcpus naming the domain's vCPU threads, which must be
# the QEMU threads called "CPU N/TCG".  Under TCG the guest makes no kvm
# events: this is about discovery and streaming through libvirt.
# libvirt is installed if missing (libvirt-daemon, -driver-qemu, -clients);
# with no service manager, the test runs virtlogd + libvirtd itself (with
# a qemu.conf running QEMU as root when there is none) and undoes it at the
# end.  About 13 s warm.
set -u
: "${TV_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${TV:=$TV_ROOT/build/tracevisor}"
: "${TV_TMP:=$(mktemp -d)}"
T=$TV_TMP
skip() { echo "$*" >&2; exit 77; }
fail() {
	echo "FAIL: $*" >&2
	# Give the agent its 10 s send timeout: a guest that is alive says on
	# its console what it waits for; one that says nothing was stalled.
	if [ -n "${QPID:-}" ] && [ -d "/proc/$QPID" ]; then
		sleep 12
		echo "--- QEMU $QPID threads (tid state CPU-ticks name)" >&2
		local t st
		for t in /proc/"$QPID"/task/*; do
			st=$(cat "$t/stat" 2>/dev/null) || continue
			# shellcheck disable=SC2086	# the fields after "(comm) "
			set -- ${st##*) }
			echo "${t##*/} $1 $((${12} + ${13})) $(cat "$t/comm" 2>/dev/null)"
		done >&2
	fi
	[ -s "$T/console.log" ] && { echo "--- guest console (tail)" >&2; tail -n 20 "$T/console.log" >&2; }
	exit 1
}
[ "$(id -u)" = 0 ] || skip "needs root"
AGENT=$TV_ROOT/build/tracevisor-agent
[ -x "$AGENT" ] || fail "build/tracevisor-agent missing (make)"
DOM=tvlv$$
URI=qemu:///system
STARTED=""
QEMU_CONF=""	# written here, removed at the end

cleanup() {
	virsh -q -c $URI destroy "$DOM" >/dev/null 2>&1
	local p
	for p in $STARTED; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[ -n "$QEMU_CONF" ] && rm -f "$QEMU_CONF"
}
trap cleanup EXIT

# ------------------------------------------------------------ libvirt
pkgs=""
for p in libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 busybox-static cpio; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || pkgs="$pkgs $p"
done
if [ -n "$pkgs" ]; then
	echo "installing$pkgs" >&2
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $pkgs >/dev/null ||
		fail "apt-get install$pkgs failed"
fi
# Debian's libvirt-daemon-system creates this user (the compiled-in QEMU
# user: libvirtd's QEMU driver does not start without it); that package
# would replace this host's systemd, so do what its postinst does.
getent passwd libvirt-qemu >/dev/null ||
	useradd --system --no-create-home --user-group --home-dir /var/lib/libvirt \
		--shell /usr/sbin/nologin libvirt-qemu || fail "cannot create user libvirt-qemu"
if ! virsh -q -c $URI uri >/dev/null 2>&1; then
	# libvirt checks its cached QEMU capabilities (probed with KVM, as root)
	# against /dev/kvm being usable by the QEMU user: libvirt-qemu cannot
	# open this host's /dev/kvm (0600 root), so every lookup re-probed QEMU
	# (about 13 probes, 50 s, per domain start).  QEMU runs as root here.
	if [ ! -e /etc/libvirt/qemu.conf ]; then
		QEMU_CONF=/etc/libvirt/qemu.conf
		printf 'user = "root"\ngroup = "root"\n' >"$QEMU_CONF"
	fi
	# QEMU's output goes through virtlogd (a second one exits at once: pid file lock)
	virtlogd >"$T/virtlogd.log" 2>&1 &
	STARTED="$STARTED $!"
	libvirtd >"$T/libvirtd.log" 2>&1 &
	STARTED=" $!$STARTED"	# libvirtd first at the end
	for _ in $(seq 40); do virsh -q -c $URI uri >/dev/null 2>&1 && break; sleep 0.25; done
	virsh -q -c $URI uri >/dev/null 2>&1 || { tail "$T/libvirtd.log" >&2; fail "libvirtd did not start"; }
	for _ in $(seq 20); do [ -S /run/libvirt/virtlogd-sock ] && break; sleep 0.25; done
	[ -S /run/libvirt/virtlogd-sock ] || { tail "$T/virtlogd.log" >&2; fail "virtlogd did not start"; }
	echo "started libvirtd and virtlogd (pids$STARTED)" >&2
fi

# ------------------------------------------------------------ guest image
# The lab's kernel and busybox (tests/lab/lab-lib.sh, cached in $(scripts/cache-dir)/lab).
LAB_DIR=$TV_ROOT/tests/lab
CACHE=${LAB_CACHE:-$("$TV_ROOT/scripts/cache-dir")/lab}
# shellcheck source-path=SCRIPTDIR source=../lab/lab-lib.sh
. "$LAB_DIR/lab-lib.sh"
KPKG=$(kernel_pkg)
[ -n "$KPKG" ] || fail "apt-cache does not know linux-image-amd64"
KVER=${KPKG#linux-image-}
resolve_versions "$KPKG" busybox-static
KTREE=$(pkg_tree "$KPKG") || fail "no kernel tree"
BB=$(pkg_tree busybox-static)/bin/busybox
KERNEL=$CACHE/libvirt/vmlinux-$KVER
if [ ! -s "$KERNEL" ]; then
	mkdir -p "$CACHE/libvirt"
	# the plain ELF boots faster under TCG (no xz decompression)
	if extract_vmlinux "$KTREE/boot/vmlinuz-$KVER" "$KERNEL.tmp"; then
		mv "$KERNEL.tmp" "$KERNEL"
	else
		cp "$KTREE/boot/vmlinuz-$KVER" "$KERNEL"
	fi
fi
R=$T/root
make_skeleton "$R" "$BB"
install_modules "$R" "$KTREE" "$KVER" virtio_pci virtio_console
cp "$AGENT" "$R/usr/bin/tracevisor-agent"
cat >"$R/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
kver=$(cat /lab/kver)
while read -r ko; do insmod "/lib/modules/$kver/$ko"; done </lab/modules
echo "tv-guest: $(ls /sys/class/virtio-ports/ 2>/dev/null) $(cat /sys/class/virtio-ports/*/name 2>/dev/null)"
# -H: no hypercall probes (TCG: no KVM to answer them)
tracevisor-agent -p 0 -H -v &
echo "tv-guest: agent started"
while :; do ls -R /usr >/dev/null; sleep 0.2; done
EOF
chmod 755 "$R/init"
cpio_of "$R" | gzip -1 >"$T/initrd.gz" || fail "cannot write the initramfs"
rm -rf "$R"

cat >"$T/dom.xml" <<EOF
<domain type='qemu'>
  <name>$DOM</name>
  <memory unit='MiB'>256</memory>
  <vcpu>2</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$KERNEL</kernel>
    <initrd>$T/initrd.gz</initrd>
    <cmdline>console=ttyS0 quiet panic=-1</cmdline>
  </os>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <seclabel type='static' model='dac' relabel='no'><label>+0:+0</label></seclabel>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <serial type='file'><source path='$T/console.log'/><target port='0'/></serial>
    <channel type='unix'><target type='virtio' name='org.tracevisor.0'/></channel>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
t0=$SECONDS
virsh -q -c $URI create "$T/dom.xml" >"$T/create.log" 2>&1 || { cat "$T/create.log" >&2; fail "virsh create failed"; }
for _ in $(seq 120); do grep -q "tv-guest: agent started" "$T/console.log" 2>/dev/null && break; sleep 0.5; done
grep -q "tv-guest: agent started" "$T/console.log" || fail "the guest did not start its agent"
echo "guest $DOM up after $((SECONDS - t0)) s" >&2
QPID=$(cat "/run/libvirt/qemu/$DOM.pid" 2>/dev/null)

# ------------------------------------------------------------ record
S=$T/s
"$TV" record -o "$S" -e sched:sched_switch --guest "$DOM" --duration 5 2>"$T/record.log" ||
	{ cat "$T/record.log" >&2; fail "record --guest $DOM failed"; }
cat "$T/record.log" >&2

# What libvirt says (QMP) and what /proc says about the vCPU threads.
virsh -q -c $URI qemu-monitor-command "$DOM" '{"execute":"query-cpus-fast"}' >"$T/qmp.json" ||
	fail "QMP query-cpus-fast failed"
[ -n "$QPID" ] || fail "no QEMU pid file for $DOM"
mapfile -t TIDS < <(python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["return"]: print(c["cpu-index"], c["thread-id"])' "$T/qmp.json")
[ ${#TIDS[@]} = 2 ] || fail "QMP lists ${#TIDS[@]} vCPUs, want 2"

G=$S/guest-$DOM
[ -d "$G" ] || fail "no $G"
grep -q "^status=complete$" "$G/meta" || fail "guest meta: $(grep status= "$G/meta")"
grep -q "^transport=serial" "$G/meta" || fail "guest meta: $(grep transport= "$G/meta")"
grep -q "^libvirt_domain=$DOM$" "$G/meta" || fail "guest meta has no libvirt_domain=$DOM"
grep -q "^qemu_pid=$QPID$" "$G/meta" || fail "guest meta: $(grep qemu_pid= "$G/meta"), QEMU pid is $QPID"
for l in "${TIDS[@]}"; do
	read -r idx tid <<<"$l"
	comm=$(cat "/proc/$QPID/task/$tid/comm" 2>/dev/null)
	[ "$comm" = "CPU $idx/TCG" ] || fail "QMP vCPU $idx thread $tid is \"$comm\" in /proc/$QPID/task, want \"CPU $idx/TCG\""
	grep -q "^$tid $QPID $idx $DOM$" "$S/host/vcpus" ||
		{ cat "$S/host/vcpus" >&2; fail "host/vcpus does not map thread $tid to $DOM vCPU $idx"; }
done
fig=$(python3 "$TV_ROOT/tests/e2e/guest_check.py" "$TV" "$S" "$DOM" --status complete \
	--min-guest-events 100 --min-pings 3) || fail "session check: $fig"
"$TV" report "$S" >"$T/report" || fail "report failed"
grep -q "^guest:$DOM .*sched:sched_switch" "$T/report" || fail "no decoded guest sched_switch in report"
echo "PASS: record --guest $DOM (libvirt TCG domain, qemu pid $QPID, vCPU threads ${TIDS[*]}): $fig" >&2
