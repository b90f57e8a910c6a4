# SPDX-License-Identifier: GPL-2.0
# Shared helpers for host-tier tests, and unit-tier scripts (sourced).
# Tests exit 0 pass, 77 skip, else fail (tests/README.md).
set -u
: "${TV:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/tracevisor}"
: "${TV_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${TV_TMP:=$(mktemp -d)}"
VMM="$TV_ROOT/build/tests/tv-testvmm"
# A known number of system calls: events every kernel fires, KVM or not.
# shellcheck disable=SC2034 # for the tests
SYSCALLS="$TV_ROOT/build/tests/tv-syscalls"
TRACEFS=/sys/kernel/tracing

# skip WHY: this machine cannot run the test.  Under CI=true (.ci/run) a
# skip is a failure: CI's machine has every tool (make deps), and a test
# that quietly did not run would hide what it checks.
skip() {
	[ "${CI:-}" = true ] && { echo "FAIL: $* (a skip, and CI=true allows none)" >&2; exit 1; }
	echo "$*" >&2
	exit 77
}
fail() { echo "FAIL: $*" >&2; exit 1; }

require_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
require_tracefs() {
	[ -d $TRACEFS/events ] || mount -t tracefs nodev $TRACEFS 2>/dev/null
	[ -d $TRACEFS/events ] || skip "no tracefs at $TRACEFS"
}

# host_kvm_usable: true when this host's KVM can be traced: the test VMM
# runs on /dev/kvm and its one `out` fires kvm:kvm_pio.  /dev/kvm may be
# there and not work (a kernel that is itself a PVM guest: events/kvm/*
# exist but never fire), hence a real probe.  Only the probe VMM's own
# event counts (by pid): other people's VMMs may run on this host meanwhile,
# and a recorder's command failing does not fail the recorder.
# TV_HOST_KVM=0 answers no without probing, to run the lab path on a host
# that has a KVM.  Why not: in KVM_WHY.
host_kvm_usable() {
	local p=$TV_TMP/.kvm-probe rc n
	KVM_WHY="TV_HOST_KVM=0"
	[ "${TV_HOST_KVM:-}" = 0 ] && return 1
	KVM_WHY="no /dev/kvm"
	[ -c /dev/kvm ] || return 1
	KVM_WHY="no kvm events in tracefs"
	[ -d $TRACEFS/events/kvm/kvm_pio ] || return 1
	rm -rf "$p" "$p.pid"
	# shellcheck disable=SC2016 # the sh -c script's own $$, $0 and $@
	timeout 60 "$TV" record -q -o "$p" -e kvm:kvm_pio -- sh -c 'echo $$ > "$0"; exec "$@"' \
		"$p.pid" "$VMM" --outs 1 --quiet >"$p.log" 2>&1
	rc=$?
	KVM_WHY="the probe: status $rc: $(tail -n 1 "$p.log")"
	[ $rc = 0 ] && [ -s "$p.pid" ] || return 1
	n=$("$TV" report "$p" 2>&1 | grep -c "tv-testvmm-$(head -n 1 "$p.pid") .*pio_write at 0x1234")
	KVM_WHY="the test VMM's out on /dev/kvm fired $n kvm_pio, not 1: $(head -n 1 "$p.log")"
	rm -rf "$p" "$p.log" "$p.pid"
	[ "$n" = 1 ]
}

# kvm_run NAME SCRIPT [VAR=VALUE...]: run the KVM part of a test on a real
# KVM, never skipping for want of one: this host's when host_kvm_usable,
# else the lab's nested L1 (tests/lab/lab kvm: a real SVM KVM under QEMU
# TCG, where kvm_exit/kvm_entry fire too).  SCRIPT is POSIX sh (L1 has
# busybox sh, no bash or python3: check its files here afterwards), run
# under `set -e` with TV (tracevisor), VMM (tv-testvmm), OUT and the VARs
# (plain words: numbers, names) set.  What it writes under $OUT is in
# KVM_OUT ($TV_TMP/NAME) afterwards; KVM_WHERE says where it ran: host or
# l1.  A non-zero status fails the test.
kvm_run() {
	local name=$1 script=$2 rc vars=""
	shift 2
	[ $# = 0 ] || vars=$(printf '%s\n' "$@")
	KVM_OUT=$TV_TMP/$name
	mkdir -p "$KVM_OUT"
	if host_kvm_usable; then
		# shellcheck disable=SC2034 # for the tests
		KVM_WHERE=host
		echo "$name: on this host's KVM"
		TV=$TV VMM=$VMM OUT=$KVM_OUT sh -c "set -e
$vars
$script" || fail "$name on this host's KVM: status $?"
		return 0
	fi
	# shellcheck disable=SC2034
	KVM_WHERE=l1
	echo "$name: no usable KVM on this host ($KVM_WHY): in the lab's nested L1"
	printf 'set -e\nTV=/opt/tracevisor/tracevisor VMM=/opt/tracevisor/tests/tv-testvmm OUT=/out\n%s\n%s\n' \
		"$vars" "$script" > "$TV_TMP/$name.l1.sh"
	lab_kvm "$name" && return 0
	rc=$?
	# QEMU 7.2's nested SVM sometimes takes L1 down with no kernel message
	# (tests/lab/README.md; e2e-lib.sh's run_lab does the same): that, and
	# only that, gets one more boot.
	if [ $rc = 125 ] && grep -q "stopped without writing /out/.lab-status" "$TV_TMP/$name.lab.err" &&
		! grep -qE "BUG:|Oops|Kernel panic|tracevisor.*(segfault|general protection)" "$KVM_OUT/console.log" 2>/dev/null; then
		echo "$name: L1 stopped without a status or a kernel message; booting it once more"
		rm -rf "$KVM_OUT" && mkdir -p "$KVM_OUT"
		lab_kvm "$name" && return 0
		rc=$?
	fi
	cat "$TV_TMP/$name.lab.out" "$TV_TMP/$name.lab.err" >&2
	fail "$name in the lab's L1: lab exited $rc"
}
lab_kvm() {	# NAME: one lab run of $TV_TMP/NAME.l1.sh into KVM_OUT
	LAB_TIMEOUT=${LAB_TIMEOUT:-240} "$TV_ROOT/tests/lab/lab" kvm "$TV_TMP/$1.l1.sh" "$KVM_OUT" \
		> "$TV_TMP/$1.lab.out" 2> "$TV_TMP/$1.lab.err"
}
# instance_left PID: the tracefs instance of the recorder PID is still there
# (by its pid: other people's recorders may run on this host meanwhile).
instance_left() { [ -e "$TRACEFS/instances/tracevisor-$1" ]; }
# probes_left PID...: how many dynamic events the recorders PID... still
# have in tracefs (their groups tvprobe_PID and tvfunc_PID, and libbpf's
# legacy libbpf_PID_* ones), not anyone else's.
probes_left() {
	local pids
	pids=$(IFS='|'; echo "$*")
	# dynamic_events lists kprobes and uprobes alike, where there is one
	if [ -e $TRACEFS/dynamic_events ]; then cat $TRACEFS/dynamic_events
	else cat $TRACEFS/uprobe_events $TRACEFS/kprobe_events 2>/dev/null; fi |
		grep -cE "^.:((tvprobe|tvfunc)_($pids)/|[^ ]*/libbpf_($pids)_)"
}

# json_count FILE PYTHON_EXPR: count JSON lines where EXPR (on e) is true.
json_count() {
	python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if eval(sys.argv[2]): n += 1
print(n)' "$1" "$2"
}

# stat_field FILE REASON KEY [VM]: KEY of the stat --json row with REASON
# (summed over VMs, or of VM only, e.g. "tv-testvmm[PID]").
stat_field() {
	python3 -c '
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["reason"] == sys.argv[2]
        and (len(sys.argv) < 5 or r["vm"] == sys.argv[4])]
print(sum(r[sys.argv[3]] or 0 for r in rows) if rows else "none")' "$@"
}

expect_eq() {	# what got want
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
	echo "ok: $1 = $3"
}

# wait_tracing PID...: until the tracefs instance of each recorder is tracing
# (a fixed sleep was not enough on a loaded machine); fails after 30 s.  A
# new instance says tracing_on=1 before the recorder turns it off to set it
# up: tracing counts only once its events are set too.
wait_tracing() {
	local pid n i
	for pid in "$@"; do
		i=$TRACEFS/instances/tracevisor-$pid
		for ((n = 0; n < 300; n++)); do
			[ -n "$(cat "$i/set_event" 2>/dev/null)" ] && [ "$(cat "$i/tracing_on" 2>/dev/null)" = 1 ] && break
			sleep 0.1
		done
		[ $n -lt 300 ] || fail "recorder $pid did not start tracing within 30 s"
	done
}

# fuzz_run FUZZER SECONDS MAX_LEN RSS_MB WHAT: libFuzzer for SECONDS on
# $TV_TMP/corpus seeded from $TV_TMP/seeds; on a crash, leak, hang or OOM
# its inputs are kept in build/fuzz/artifacts/ and the test fails; else
# prints "PASS: N WHAT".
fuzz_run() {
	local f=$1 secs=$2 max_len=$3 rss=$4 what=$5 rc runs a
	"$f" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb="$rss" \
		-artifact_prefix="$TV_TMP/" "$TV_TMP/corpus" "$TV_TMP/seeds" >"$TV_TMP/fuzz.log" 2>&1
	rc=$?
	tail -n 3 "$TV_TMP/fuzz.log" >&2
	if [ $rc != 0 ]; then
		grep -A20 "ERROR\|==.*==" "$TV_TMP/fuzz.log" | head -40 >&2
		for a in "$TV_TMP"/crash-* "$TV_TMP"/leak-* "$TV_TMP"/timeout-* "$TV_TMP"/oom-*; do
			[ -f "$a" ] && { mkdir -p "$TV_ROOT/build/fuzz/artifacts"; cp "$a" "$TV_ROOT/build/fuzz/artifacts/"; }
		done
		fail "fuzzer found a problem (exit $rc); inputs in build/fuzz/artifacts/"
	fi
	runs=$(grep -o 'Done [0-9]* runs' "$TV_TMP/fuzz.log" | grep -o '[0-9]*')
	echo "PASS: ${runs:-?} $what" >&2
}

# pty_relay: a relayed pty pair (tests/host/ptyrelay.py) standing for a
# guest's serial channel: the agent's end in GPTY, the recorder's in HPTY,
# the relay's pid in RELAY (the caller kills it).
pty_relay() {
	# emptied here, not by the background job's redirection: that may come
	# after the wait below reads a second relay's stale pair
	: >"$TV_TMP/ptys"
	python3 "$TV_ROOT/tests/host/ptyrelay.py" >>"$TV_TMP/ptys" &
	RELAY=$!
	for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$TV_TMP/ptys" ] && break; sleep 0.2; done
	read -r GPTY HPTY <"$TV_TMP/ptys" || fail "pty relay did not start"
}

# syscall_worker: start a process of the test's own ($worker) that makes
# known syscalls on request; ask WHAT N makes it do, and waits until done:
# BULK N: N getppid; MARK N: N getpid; BOTH N: one getpid then N getppid;
# ask QUIT 0 ends it.  Its requests go through the FIFO $TV_TMP/worker.cmd.
syscall_worker() {
	mkfifo "$TV_TMP/worker.cmd"
	python3 - "$TV_TMP/worker.cmd" "$TV_TMP" <<'PY' &
import os, sys
k = 0
while True:
    with open(sys.argv[1]) as f:
        for line in f:
            what, n = line.split()
            if what == "QUIT":
                sys.exit(0)
            if what == "MARK":
                for _ in range(int(n)):
                    os.getpid()
            if what == "BOTH":
                os.getpid()
            if what in ("BULK", "BOTH"):
                for _ in range(int(n)):
                    os.getppid()
            k += 1
            open(os.path.join(sys.argv[2], "worker.done.%d" % k), "w").close()
PY
	worker=$!
	worker_step=0
}
ask() {	# WHAT N
	echo "$1 $2" > "$TV_TMP/worker.cmd"
	[ "$1" = QUIT ] && { wait "$worker"; return; }
	worker_step=$((worker_step + 1))
	for _ in $(seq 300); do [ -e "$TV_TMP/worker.done.$worker_step" ] && return; sleep 0.1; done
	fail "worker did not do $1 $2"
}
# free_port: a TCP port free on 127.0.0.1 now.
# serve_start ARGS...: `tracevisor serve ARGS` on a free loopback port
# (SERVE_PORT), in the background (SERVE_PID, also appended to SERVES for
# the test's trap), stderr in $TV_TMP/serve.err, until it says its
# programs are attached (10 s at most).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
serve_start() {
	SERVE_PORT=$(free_port)
	# emptied first: the wait below must not read a previous serve's lines
	: >"$TV_TMP/serve.err"
	"$TV" serve --listen "127.0.0.1:$SERVE_PORT" "$@" >"$TV_TMP/serve.out" 2>"$TV_TMP/serve.err" &
	SERVE_PID=$!
	SERVES+=("$SERVE_PID")
	for _ in $(seq 100); do
		grep -q "BPF programs attached" "$TV_TMP/serve.err" && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || fail "serve $* did not start: $(cat "$TV_TMP/serve.err")"
		sleep 0.1
	done
	fail "serve $* did not start in 10 s: $(cat "$TV_TMP/serve.err")"
}
# alert_snapshot_check DIR ALERT VMS VMMPID: DIR (a serve --flight-recorder
# snapshot) has alert=ALERT and alert_vm=VMS, serve said so, and report
# reads the 5 port writes of the test VMM VMMPID (run with --outs 5).
alert_snapshot_check() {
	grep -qx "alert=$2" "$1/session.meta" && grep -qx "alert_vm=$3" "$1/session.meta" ||
		fail "the alert's keys: $(cat "$1/session.meta")"
	grep -qF "Snapshot for alert $2, vm $3: $1" "$TV_TMP/serve.err" ||
		fail "serve did not say the snapshot: $(cat "$TV_TMP/serve.err")"
	"$TV" report "$1" >"$TV_TMP/snapshot.report" || fail "report of $1"
	expect_eq "the VMM's port writes in the alert's snapshot" \
		"$(grep -c "tv-testvmm-$4 .*pio_write at 0x1234" "$TV_TMP/snapshot.report")" 5
}
