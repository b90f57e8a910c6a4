# SPDX-License-Identifier: GPL-2.0
# Shared helpers for root-tier tests (sourced).  Tests exit 0 pass, 77 skip.
set -u
: "${TV:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/tracevisor}"
: "${TV_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${TV_TMP:=$(mktemp -d)}"
VMM="$TV_ROOT/build/tests/tv-testvmm"
TRACEFS=/sys/kernel/tracing

skip() { echo "$*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

require_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
require_tracefs() {
	[ -d $TRACEFS/events ] || mount -t tracefs nodev $TRACEFS 2>/dev/null
	[ -d $TRACEFS/events ] || skip "no tracefs at $TRACEFS"
}
require_kvm() {
	[ -c /dev/kvm ] || skip "no /dev/kvm"
	[ -d $TRACEFS/events/kvm ] || skip "no kvm events in tracefs (kvm module not loaded)"
}
our_instances() { ls $TRACEFS/instances 2>/dev/null | grep '^tracevisor-' || true; }

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

# stat_field FILE REASON KEY: KEY of the stat --json row with REASON (summed count).
stat_field() {
	python3 -c '
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["reason"] == sys.argv[2]]
print(sum(r[sys.argv[3]] or 0 for r in rows) if rows else "none")' "$1" "$2" "$3"
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
