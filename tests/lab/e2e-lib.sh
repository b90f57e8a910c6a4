# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared by tests/e2e/lab-*.sh: exit 0 = pass, 77 = skip, else fail.
# Run from anywhere; the lab finds the repo from its own path.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAB=$REPO/tests/lab/lab
T=$(mktemp -d "${TV_TMP:-${TMPDIR:-/tmp}}/lab-e2e.XXXXXX")

# Under CI=true (.ci/run) a skip is a failure: CI must run every test.
skip() {
	[ "${CI:-}" = true ] && { echo "FAIL: $* (a skip, and CI=true allows none)" >&2; exit 1; }
	echo "SKIP: $*" >&2
	exit 77
}

# Keep the evidence of a failure: T is left behind and named.
fail() {
	echo "FAIL: $*" >&2
	echo "FAIL: files kept in $T" >&2
	trap - EXIT
	exit 1
}

cleanup() { rm -rf "$T"; }
trap cleanup EXIT

# The lab needs root only to apt-get missing host tools and to be sure
# guest files written over 9p are readable; TCG needs no /dev/kvm.
lab_preflight() {
	[ "$(id -u)" = 0 ] || skip "not root"
	if command -v qemu-system-x86_64 >/dev/null; then
		qemu-system-x86_64 -accel help 2>/dev/null | grep -qx tcg ||
			skip "this qemu-system-x86_64 has no TCG"
	fi
}

# patched_xen: the patched Xen (xen/build-patched-xen.sh, built once from
# `apt-get source xen` and cached) in XEN_BIN; a skip where it cannot be
# built here (a failure under CI=true), a failure where its build fails.
patched_xen() {
	local rc
	XEN_BIN=$("$REPO/xen/build-patched-xen.sh" 2>"$T/build.err") && return 0
	rc=$?
	[ $rc = 77 ] && skip "cannot build the patched Xen here: $(tail -n 1 "$T/build.err")"
	cat "$T/build.err" >&2
	fail "building the patched Xen failed"
}

# Shared machines (tests/lab/README.md): when the runner exported
# TV_LAB_SHARED=DIR (tests/lab/shared start DIR), each run_lab is a
# scenario on the running machine of its topology and boot configuration
# in DIR, not a boot of its own, unless the test file has a line
#   # tv-lab: own-machine: WHY
# (it needs a fresh machine: it crashes or stops it, or depends on a state
# only a fresh boot has).  `TV_LAB_SHARED= bash tests/e2e/NAME.sh` boots its own.
TV_SCENARIO=$(basename "$0" .sh)
LAB_SHARE=()
if [ -n "${TV_LAB_SHARED:-}" ] && ! grep -q '^# tv-lab: own-machine' "$0" 2>/dev/null; then
	LAB_SHARE=("LAB_SHARED=$TV_LAB_SHARED")
fi

# run_lab TOPO SCRIPT-TEXT NAME [ENV=VAL...]: run the lab, set RC, OUT (the
# OUTDIR), STDOUT and STDERR (files).
run_lab() {
	local topo=$1 text=$2 name=$3
	shift 3
	OUT=$T/$name
	printf '%s\n' "$text" >"$T/$name.sh"
	STDOUT=$T/$name.stdout STDERR=$T/$name.stderr
	RC=0
	set -- "${LAB_SHARE[@]}" "LAB_SCENARIO=$TV_SCENARIO/$name" "$@"
	env "$@" "$LAB" "$topo" "$T/$name.sh" "$OUT" >"$STDOUT" 2>"$STDERR" || RC=$?
	echo "lab $topo ($name): status $RC" >&2
	# QEMU 7.2's nested SVM emulation sometimes takes L1 down with no kernel
	# message, and a machine now and then freezes with no timer firing
	# (tests/lab/README.md): those, and only those, get one more boot.
	# The first run's files stay, as OUT.crashed.
	if [ "$RC" = 125 ] && [ "${LAB_CRASH_RETRY:-1}" != 0 ] &&
		{ { [ "$topo" = kvm ] && grep -q "stopped without writing /out/.lab-status" "$STDERR"; } ||
			grep -q "machine froze: its QEMU used no CPU" "$STDERR"; } &&
		! grep -qE "BUG:|Oops|Kernel panic|tracevisor.*(segfault|general protection)" "$OUT/console.log" 2>/dev/null; then
		echo "lab $topo ($name): the machine stopped without a status or a kernel message, or froze; booting it once more" >&2
		rm -rf "$OUT.crashed" && mv "$OUT" "$OUT.crashed"
		cp "$STDERR" "$T/$name.stderr.crashed"
		RC=0
		env "$@" "$LAB" "$topo" "$T/$name.sh" "$OUT" >"$STDOUT" 2>"$STDERR" || RC=$?
		echo "lab $topo ($name): status $RC (second boot)" >&2
	fi
	[ "$topo" = xen ] && run_lab_xen_crashed "$@"
	return 0
}

# A PVH domU under QEMU's emulated SVM triple-faults now and then, with a
# Xen address in its RIP (tests/lab/README.md; seen while booting and when
# tracing starts, in ~1 of 6 runs): that, and only that, runs the xen lab
# again, up to LAB_XEN_CRASH_RUNS (3) more times.  Each crashed run's files
# stay, as OUT.crashed.N.  Called by run_lab with its environment.
run_lab_xen_crashed() {
	local try tf
	for try in $(seq 1 "${LAB_XEN_CRASH_RUNS:-3}"); do
		[ "${LAB_CRASH_RETRY:-1}" != 0 ] || return 0
		# restarted in place by xen_domus_restart, the scenario went on
		if [ "$RC" = 0 ] && [ -s "$OUT/domu-restarts" ]; then
			sed "s/^/lab xen ($name): a domU died in the emulator; running again (in place): /" \
				"$OUT/domu-restarts" >&2
			return 0
		fi
		tf=$(grep -o "d[0-9]*v[0-9]* Triple fault" "$OUT/console.log" 2>/dev/null | head -n 1)
		[ -n "$tf" ] || return 0
		echo "lab xen ($name): a domU died in the emulator ((XEN) $tf); running again ($try)" >&2
		rm -rf "$OUT.crashed.$try" && mv "$OUT" "$OUT.crashed.$try"
		cp "$STDERR" "$T/$name.stderr.crashed.$try"
		RC=0
		env "$@" "$LAB" xen "$T/$name.sh" "$OUT" >"$STDOUT" 2>"$STDERR" || RC=$?
		echo "lab xen ($name): status $RC (run $((try + 1)))" >&2
	done
}

expect_rc() {
	[ "$RC" = "$1" ] && return 0
	tail -n 20 "$STDERR" >&2
	[ -f "$OUT/console.log" ] && tail -n 30 "$OUT/console.log" >&2
	fail "$2: lab exited $RC, expected $1"
}

# L2 side of the guest tests: start the agent, say "started" once it is
# listening (it prints "Ready:"), run a syscall/IRQ workload until L1
# touches /out/done, then stop the agent.  Once L1 touches /out/bump-tsc
# (before an x86-tsc recording), every 20 rounds (2-4 s) the workload moves
# L2's TSC 2^31 cycles forward (wrmsr IA32_TSC through /dev/cpu/0/msr):
# L1's KVM then writes a new TSC offset (kvm_write_tsc_offset), which an
# x86-tsc sync must follow to stay exact.  (L1's KVM also rewrites the
# offset when a vCPU moves between L1 CPUs; the one-vCPU L1 has none.)
# The read-to-write delay under nested TCG is far below 2^31 cycles, so the
# TSC only ever moves forward; /out/tsc-bumps counts the writes.  Not
# while a local clock is recorded: L2's kvm-clock jumps with its TSC and
# back when KVM next updates it, so that clock would be no line at all.
# shellcheck disable=SC2016 # expanded in L2
L2_AGENT_SCRIPT='
bump_tsc() {
	t=$(dd if=/dev/cpu/0/msr bs=8 skip=2 count=1 2>/dev/null | od -An -tu8 | tr -d " ")
	[ -n "$t" ] || return 0
	v=$((t + 2147483648)) b="" k=0
	while [ $k -lt 8 ]; do b="$b\\$(printf %03o $(((v >> (8 * k)) & 255)))"; k=$((k + 1)); done
	printf "$b" | dd of=/dev/cpu/0/msr bs=8 seek=2 count=1 conv=notrunc 2>/dev/null &&
		echo $((${bumps:-0} + 1)) >/out/tsc-bumps && bumps=$(cat /out/tsc-bumps)
}
tracevisor-agent -v >/out/agent.log 2>&1 &
echo $! >/out/agent.pid
w=0
while ! grep -q "Ready:" /out/agent.log 2>/dev/null && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
touch /out/agent.started
i=0
while [ ! -e /out/done ] && [ $i -lt 3000 ]; do
	dd if=/dev/zero of=/dev/null bs=4k count=200 2>/dev/null
	sleep 0.05
	i=$((i + 1))
	[ $((i % 20)) = 0 ] && [ -e /out/bump-tsc ] && bump_tsc
done
kill $(cat /out/agent.pid)
exit 0'

# The start of an L2 script of one's own (before its workload): the agent
# started in the background (pid in AG) and /out/agent.started once it
# listens; l2_wait FILE [TENTHS] waits (3000 tenths of a second by default)
# for L1 to touch FILE; l2_session_ended waits (up to 10 s) for the agent to
# say that the session ended (it sends END first, then cleans up);
# l2_finish waits for /out/done and the session's end, counts the agent's
# dynamic probes left in /out/dyn-left, and stops the agent.
# shellcheck disable=SC2016 # expanded in L2
L2_AGENT_START='
l2_wait() {
	w=0
	while [ ! -e "$1" ] && [ $w -lt "${2:-3000}" ]; do sleep 0.1; w=$((w + 1)); done
}
l2_session_ended() {
	w=0
	while ! grep -q "Session ended" /out/agent.log && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
}
l2_finish() {
	l2_wait /out/done
	l2_session_ended
	grep -c tvprobe_ /sys/kernel/tracing/dynamic_events >/out/dyn-left
	kill $AG
}
tracevisor-agent -v >/out/agent.log 2>&1 &
AG=$!
w=0
while ! grep -q "Ready:" /out/agent.log 2>/dev/null && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
touch /out/agent.started'

# l1_start_l2 L2-SCRIPT [TIMEOUT [SMP]]: the start of an L1 script (run_lab kvm):
# PATH with the lab's tracevisor, one L2 (vsock CID 3, files in /tmp/l2,
# killed after TIMEOUT s, 400 by default; SMP vCPUs, 1 by default) running L2-SCRIPT, its qemu pid
# in QPID, and its agent listening (/tmp/l2/agent.started, within 180 s);
# exits 20 if L2 does not boot, 21 if its agent does not start.
l1_start_l2() {
	printf '%s\n' 'PATH=/opt/tracevisor:$PATH' 'cat >/tmp/l2.sh <<"TV_L2_SCRIPT_END"' "$1" 'TV_L2_SCRIPT_END' \
		"QPID=\$(lab-guest --background --cid 3 --smp ${3:-1} --timeout ${2:-400} /tmp/l2.sh /tmp/l2) || exit 20" \
		'n=0' \
		'while [ ! -e /tmp/l2/agent.started ] && [ $n -lt 180 ]; do sleep 1; n=$((n + 1)); done' \
		'[ -e /tmp/l2/agent.started ] || { echo "L2 agent did not start"; exit 21; }'
}

# dom0 side of the Xen domU tests (run_lab xen): XEN_DOMUS_START defines
# xen_domus_start [MARK], which starts a PV domU d1 and a PVH domU d2 with
# `lab-domu --background` (files in /out/d1, /out/d2), each running
# tracevisor-agent on its org.tracevisor.0 channel (/dev/hvc1, one session)
# under a fork/exec workload until the agent exits (and a shell spinning
# without a pause once the domU's /out/busy exists: dom0's /out/dN/busy,
# a vCPU that a pause stops while it runs, not in hlt); MARK=1: d1 also writes
# a record into Xen's trace every second (`tracevisor xen-mark`); AUTO=1
# (xen_domus_start MARK AUTO): d1's agent has no channel option at all
# (`-s auto` finds org.tracevisor.0 in the domU's xenstore).  It waits
# for both agents (/out/dN/agent-up), writes /out/domus-up-seconds and
# /out/xl-list.txt, and exits the dom0 script with 20-22 when a domU does
# not start.  A domU that triple-faulted in the emulator while booting
# (before its agent is up: tests/lab/README.md) is started again in place,
# up to 3 times in a run, each said in /out/domu-restarts (the e2e side
# reports it as a reboot); past that the script exits 25.  TV is the lab's
# tracevisor; xen_domu_crashed is defined too, and xen_domu1_start, which
# starts the PVH d1 alone.
# shellcheck disable=SC2016 # expanded in dom0 and the domUs
XEN_DOMUS_START='
TV=/opt/tracevisor/tracevisor
# a domU that triple-faulted in the emulator (tests/lab/README.md) never
# comes up: say so at once (exit 25), and the e2e side runs the lab again
xen_domu_crashed() { xl dmesg 2>/dev/null | grep -q "Triple fault"; }
# NAME TYPE SCRIPT: start domU NAME (its domid kept for xen_domus_restart)
xen_domu_start() {
	lab-domu --name "$1" --type "$2" --timeout 600 --background "$3" "/out/$1" >/dev/null || return 1
	xl domid "$1" >"/tmp/$1.domid" 2>/dev/null
	echo "$2 $3" >"/tmp/$1.how"
}
# The domUs named, not up yet, that triple-faulted: started again (false
# when past 3 restarts in this run, or when one does not start).
xen_domus_restart() {
	crashed=$(xl dmesg 2>/dev/null | sed -n "s/.*(XEN) d\([0-9]*\)v[0-9]* Triple fault.*/\1/p")
	# the lab'"'"'s own check of this path (LAB_PASS_ENV=LAB_TEST_DOMU_CRASH):
	# that domU destroyed once before its agent is up, as if it crashed
	if [ -n "${LAB_TEST_DOMU_CRASH:-}" ] && [ ! -e /tmp/test-crash.done ]; then
		touch /tmp/test-crash.done
		xl destroy "$LAB_TEST_DOMU_CRASH" 2>/dev/null
		crashed=$(cat "/tmp/$LAB_TEST_DOMU_CRASH.domid")
	fi
	[ -n "$crashed" ] || return 0
	xl dmesg -c >/dev/null 2>&1
	for d in "$@"; do
		[ ! -e "/out/$d/agent-up" ] && echo "$crashed" | grep -qx "$(cat "/tmp/$d.domid" 2>/dev/null)" || continue
		[ "$(wc -l 2>/dev/null </out/domu-restarts || echo 0)" -lt 3 ] || return 1
		echo "$d: (XEN) d$(cat "/tmp/$d.domid")v0 Triple fault while booting: started again" >>/out/domu-restarts
		xl destroy "$d" 2>/dev/null; lab-domu --wait "$d" >/dev/null 2>&1
		read -r d_type d_script <"/tmp/$d.how"
		xen_domu_start "$d" "$d_type" "$d_script" || return 1
	done
}
printf "%s\n" "tracevisor-agent \${AGENT_OPTS--p 0 -s /dev/hvc1} -1 -v 2>/out/agent.err & A=\$!" \
	"sleep 1; echo up > /out/agent-up" \
	"( while :; do /bin/true; ls /proc >/dev/null; sleep 0.05; done ) & W=\$!" \
	"( while [ ! -e /out/busy ]; do sleep 0.2; done; while :; do :; done ) & B=\$!" \
	"M=; [ \"\$MARK\" = 1 ] && { ( while :; do tracevisor xen-mark --event 7 29814 >/dev/null 2>>/out/xen-mark.err; sleep 1; done ) & M=\$!; }" \
	"wait \$A; rc=\$?; kill \$W \$M \$B; echo \$rc > /out/agent-rc; exit \$rc" >/tmp/domu.sh
xen_domus_start() {
	t0=$(date +%s)
	{ echo "MARK=${1:-0}"; [ "${2:-0}" = 1 ] && echo "AGENT_OPTS="; cat /tmp/domu.sh; } >/tmp/domu-d1.sh
	xen_domu_start d1 pv /tmp/domu-d1.sh || exit 20
	xen_domu_start d2 pvh /tmp/domu.sh || exit 21
	n=0
	until [ -e /out/d1/agent-up ] && [ -e /out/d2/agent-up ]; do
		n=$((n+1)); [ $n -gt 600 ] && exit 22; sleep 0.5
		xen_domus_restart d1 d2 || exit 25
	done
	echo "$(( $(date +%s) - t0 ))" > /out/domus-up-seconds
	xl list > /out/xl-list.txt
}
# xen_domu1_start: the PVH domU d1 alone (/out/d1), its agent up; exits as xen_domus_start
xen_domu1_start() {
	xen_domu_start d1 pvh /tmp/domu.sh || exit 20
	n=0
	until [ -e /out/d1/agent-up ]; do
		n=$((n+1)); [ $n -gt 600 ] && exit 22; sleep 0.5
		xen_domus_restart d1 || exit 25
	done
	xl list > /out/xl-list.txt
}'
