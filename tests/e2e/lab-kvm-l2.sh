#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# lab `kvm` topology: L1 has /dev/kvm (nested SVM under TCG); `lab-guest`
# boots an L2 whose exits show up as kvm_exit in L1's tracefs; L2's /out and
# status come back; --background/--wait and the L2 timeout work.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

run_lab kvm '
set -x
test -c /dev/kvm || exit 11
test -c /dev/vhost-vsock || exit 12
echo "L1 up: $(uname -r)"
T=/sys/kernel/tracing/instances/lab-e2e
mkdir $T || exit 13
echo 1 > $T/events/kvm/kvm_exit/enable
printf "%s\n" "echo hello from L2 \$LAB_ROLE" "echo l2 > /out/l2.txt" \
	"test -c /dev/vsock && ls /dev/vport*p1 >/out/vport" "exit 5" > /tmp/l2.sh
lab-guest --cid 3 --timeout 120 /tmp/l2.sh /tmp/l2
echo $? > /out/l2.status
echo 0 > $T/events/kvm/kvm_exit/enable
grep -c "kvm_exit: " $T/trace > /out/kvm_exit.count
grep -m1 "kvm_exit: " $T/trace > /out/kvm_exit.sample
rmdir $T	# a scenario leaves nothing behind (shared machines check it)
cp -r /tmp/l2 /out/l2

# background: L1 works while L2 runs (here: serves the channels), then
# collects its status. L2 talks over vsock (to CID 2) and virtio-serial.
lab-chan vsock-listen 5000 > /out/vsock.txt &
cat > /tmp/bg.sh <<"L2"
echo bg > /out/bg.txt
echo "vsock from L2" | lab-chan vsock-send 2 5000 || exit 21
for p in /sys/class/virtio-ports/*; do
	[ "$(cat $p/name)" = tracevisor.0 ] && echo "serial from L2" > /dev/${p##*/}
done
exit 0
L2
pid=$(lab-guest --background --cid 4 --timeout 120 /tmp/bg.sh /tmp/bg)
test -d /proc/$pid && echo "L2 qemu $pid running" > /out/bg.running
lab-chan unix-read /run/lab-guest/4/serial.sock > /out/serial.txt &
lab-guest --wait $pid
echo $? > /out/bg.status
cp /tmp/bg/bg.txt /out/ 2>/dev/null

# a hanging L2 is killed by --timeout, status 124
printf "%s\n" "sleep 100000" > /tmp/hang.sh
lab-guest --cid 5 --timeout 30 /tmp/hang.sh /tmp/hang 2>/out/hang.err
echo $? > /out/hang.status
exit 0' kvm
expect_rc 0 "kvm L1 script"
grep -q "L1 up" "$STDOUT" || fail "L1 output missing"
[ "$(cat "$OUT/l2.status")" = 5 ] || fail "L2 status not returned: $(cat "$OUT/l2.status")"
[ "$(cat "$OUT/l2/l2.txt")" = l2 ] || fail "L2 /out not in L2OUTDIR"
grep -q "hello from L2 l2" "$OUT/l2/console.log" || fail "L2 console.log missing"
[ -s "$OUT/l2/vport" ] || fail "L2 has no vsock or virtio-serial port"
n=$(cat "$OUT/kvm_exit.count")
[ "$n" -gt 1000 ] || fail "only $n kvm_exit events in L1 while L2 ran"
[ "$(cat "$OUT/bg.status")" = 0 ] || fail "background L2 status $(cat "$OUT/bg.status")"
[ -s "$OUT/bg.running" ] || fail "background L2 was not running after lab-guest --background returned"
[ "$(cat "$OUT/bg.txt")" = bg ] || fail "background L2 /out missing"
grep -qx "vsock from L2" "$OUT/vsock.txt" || fail "vsock L2→L1 message not received"
grep -qx "serial from L2" "$OUT/serial.txt" || fail "virtio-serial L2→L1 message not received"
[ "$(cat "$OUT/hang.status")" = 124 ] || fail "hanging L2 status $(cat "$OUT/hang.status"), expected 124"
grep -q "timed out" "$OUT/hang.err" || fail "no timeout message for the hanging L2"
echo "PASS: L2 booted under L1 KVM, $n kvm_exit events ($(cut -c1-120 "$OUT/kvm_exit.sample"))" >&2
