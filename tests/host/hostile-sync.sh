#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sync integrity against a hostile guest agent (issue 22, point 2 and the
# host-trace markers of point 3), with the fake agent of
# tests/helpers/tv_fake_agent.py and no VM.  An honest fake guest answers
# every probe and writes its PING_RECV/PONG_SEND markers on a clock 3 s
# ahead of the host's (--clock mono: CLOCK_MONOTONIC on both sides), so
# sync must find the offset -3 s within its bound.  Run 1: that guest
# alone.  Run 2: beside an evil guest that
#   (a) writes into its own trace the host's PING_SEND/PONG_RECV markers and
#       the honest guest's PING_RECV/PONG_SEND, naming the honest guest's
#       index, 2 s off, and dom0/Xen markers;
#   (b) floods unsolicited PONGs and HCALL_DONEs with random seqs;
#   (c) answers each ping with a forged seq first (and repeats the true
#       answer), each HCALL with a forged first seq and a done > count;
#   and ends with LOSS key cpu4294967296.lost, which sscanf took for CPU 0.
# Asserts: the honest guest's sync line is unmoved (offset within its
# bound of the truth and of run 1's, 0 causality violations); the evil
# guest's dropped answers are in its meta and record's summary, and no
# summary shows more answers than requests; the host's markers for the
# evil guest are one PING_SEND per ping sent and at most one PONG_RECV per
# ping; the host lost nothing with -b 64 (the flood's markers made it lose
# hundreds of thousands); sync counts the evil guest's forged records.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
PIDS=""
trap 'kill $PIDS 2>/dev/null' EXIT
OFF_HONEST=3000000000	# honest guest clock minus host clock, ns
FLOOD_PONGS=60000 FLOOD_HCALLS=6000

cat >"$TV_TMP/agents.py" <<'PY'
"""agents.py ROOT SOCK NAME ROLE [OUT]: one fake agent, honest or evil."""
import os, random, struct, sys, time
sys.path.insert(0, sys.argv[1] + "/tests/helpers")
from tv_fake_agent import *

sock, name, role = sys.argv[2], sys.argv[3], sys.argv[4]
PING_SEND, PONG_RECV, XEN_BEFORE = 1, 4, 7
off = 3000000000 if role == "honest" else 7000000000
a = Agent(sock)
start = a.accept()
me = int(start["guest"])
a.describe(ncpus=2)
a.ready()
now = lambda: a.now_ns() + off
forged = 0

if role == "evil":		# (b): a flood before anything was asked
	rnd = random.Random(22)
	a.send_raw(b"".join(frame(PONG, 0, struct.pack("<Q", rnd.getrandbits(64)))
			    for _ in range(int(sys.argv[6]))))
	a.send_raw(b"".join(frame(HCALL_DONE, 0, struct.pack("<QII", rnd.getrandbits(64),
							 rnd.getrandbits(32), 0xffffffff))
			    for _ in range(int(sys.argv[7]))))

def on_frame(ag, ftype, arg, payload):
	global forged
	if ftype == PING:
		seq = struct.unpack("<Q", payload)[0]
		t0 = now()
		recv = ag.marker(PING_RECV, me, seq)
		t1 = now()
		if role == "evil":	# (c) a forged seq first, the true one, then again
			ag.send(PONG, 0, struct.pack("<Q", seq + 1000))
		ag.send(PONG, 0, payload)
		if role == "evil":
			ag.send(PONG, 0, payload)
		ag.data(0, [ag.page(t0, [(0, recv), (t1 - t0, ag.marker(PONG_SEND, me, seq))])])
		if role == "evil":	# (a) guest 0's probe of this seq as evil wants it: 2 s off
			h = t0 + 2000000000
			evs = [(0, ag.marker(PING_SEND, 0, seq)), (100, ag.marker(PING_RECV, 0, seq)),
			       (100, ag.marker(PONG_SEND, 0, seq)), (100, ag.marker(PONG_RECV, 0, seq)),
			       (100, ag.marker(XEN_BEFORE, 0, seq))]
			ag.data(1, [ag.page(h, evs)])
			forged += len(evs)
		return True
	if ftype == HCALL and role == "evil":
		first, count = struct.unpack("<QI", payload)
		ag.send(HCALL_DONE, 0, struct.pack("<QII", first + 7, count, count))
		ag.send(HCALL_DONE, 0, struct.pack("<QII", first, count, 0xffffff9c))
		return True
	return False

a.serve_until_stop(timeout=60, on_frame=on_frame, end=False)
if role == "evil":
	with open(sys.argv[5], "w") as f:
		f.write("%d\n" % forged)
	a.send(LOSS, 0, kv({"cpu4294967296.lost": 7, "lost_total": 7}))
try:
	a.end()		# the evil guest's: the host may have closed the channel
	time.sleep(0.5)
except OSError:
	pass
PY

start_agent() {	# name role [forged-file flood-pongs flood-hcalls]
	python3 "$TV_TMP/agents.py" "$TV_ROOT" "$TV_TMP/$1.sock" "$@" 2>"$TV_TMP/agent-$1.log" &
	PIDS="$PIDS $!"
	for _ in $(seq 50); do [ -S "$TV_TMP/$1.sock" ] && return; sleep 0.1; done
	fail "fake agent $1 did not listen"
}

# sync --json field of DOMAIN: python expression on d
sync_field() {	# session domain expr
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1] + "/sync.json"))
d = [x for x in r["domains"] if x["domain"] == sys.argv[2]][0]
print(eval(sys.argv[3]))' "$@"
}
meta() { sed -n "s/^$2=//p" "$1"; }

record() {	# session guests...
	local s=$1 t0; shift
	t0=$(date +%s%N)
	"$TV" record -o "$s" -b 64 --clock mono -e sched:sched_process_exec -e sched:sched_process_exit \
		--sync-interval 0.5 --duration 4 "$@" 2>"$s.log"
	echo "record exit $? in $((($(date +%s%N) - t0) / 1000000)) ms" >&2
	cat "$s.log" >&2
	"$TV" sync --json "$s" >"$s/sync.json" || fail "sync of $s failed"
	"$TV" sync "$s" >&2
}

# 1. The honest guest alone.
start_agent honest honest
record "$TV_TMP/s1" --guest "serial:$TV_TMP/honest.sock,name:honest"
wait
PIDS=""
# 2. The same beside the evil guest.
start_agent honest honest
start_agent evil evil "$TV_TMP/forged" $FLOOD_PONGS $FLOOD_HCALLS
record "$TV_TMP/s2" --guest "serial:$TV_TMP/honest.sock,name:honest" \
	--guest "serial:$TV_TMP/evil.sock,name:evil"
wait
PIDS=""
S1=$TV_TMP/s1 S2=$TV_TMP/s2

# The honest guest's line: the truth within its bound, as without the evil guest.
for s in "$S1" "$S2"; do
	off=$(sync_field "$s" guest-honest 'd["offset_ns"]')
	bound=$(sync_field "$s" guest-honest 'd["bound_ns"]')
	viol=$(sync_field "$s" guest-honest '"%d/%d" % (d["causality_violations"], d["pairs_checked"])')
	via=$(sync_field "$s" guest-honest 'd["via"]')
	echo "honest guest in $(basename "$s"): via $via, offset $off ns, bound $bound ns, causality $viol" >&2
	[ "$via" = host ] || fail "$(basename "$s"): the honest guest is synchronised via $via"
	[ "$bound" != None ] || fail "$(basename "$s"): the honest guest has no bound"
	err=$((off + OFF_HONEST)); err=${err#-}
	[ "$err" -le "$bound" ] || fail "$(basename "$s"): honest offset $off ns is $err ns from the truth -$OFF_HONEST, bound $bound"
	case $viol in 0/0) fail "$(basename "$s"): no probe pairs checked";; 0/*) ;; *) fail "$(basename "$s"): honest causality $viol";; esac
done
o1=$(sync_field "$S1" guest-honest 'd["offset_ns"]') b1=$(sync_field "$S1" guest-honest 'd["bound_ns"]')
o2=$(sync_field "$S2" guest-honest 'd["offset_ns"]') b2=$(sync_field "$S2" guest-honest 'd["bound_ns"]')
d=$((o2 - o1)); d=${d#-}
[ "$d" -le $((b1 + b2)) ] || fail "the honest guest moved by $d ns beside the evil one (bounds $b1, $b2)"
echo "ok: the honest guest's offset differs by $d ns between the runs (bounds $b1 + $b2 ns)" >&2

# The evil guest: its dropped answers counted, no summary above its requests.
M=$S2/guest-evil/meta
pings=$(meta "$M" sync_pings) pongs=$(meta "$M" sync_pongs)
asked=$(meta "$M" sync_hcalls_asked) done_=$(meta "$M" sync_hcalls_done)
pdrop=$(meta "$M" sync_pongs_dropped) hdrop=$(meta "$M" sync_hcalls_dropped)
echo "evil guest meta: $pongs/$pings pings, $done_/$asked hypercall probes, dropped $pdrop PONGs and $hdrop HCALL_DONEs" >&2
[ "$pings" -gt 0 ] && [ "$pongs" -le "$pings" ] && [ "$done_" -le "$asked" ] ||
	fail "evil guest meta: $pongs/$pings pings, $done_/$asked hypercall probes"
# the flood, one forged and one repeated PONG a ping, one forged HCALL_DONE a request
[ "$pdrop" -ge $((FLOOD_PONGS + 2 * pongs)) ] || fail "evil: $pdrop PONGs dropped, want >= $FLOOD_PONGS + 2 x $pongs"
[ "$hdrop" -ge "$FLOOD_HCALLS" ] || fail "evil: $hdrop HCALL_DONEs dropped, want >= $FLOOD_HCALLS"
grep -q "^tracevisor record: guest evil: warning: $pdrop PONGs and $hdrop HCALL_DONEs dropped: they answered no outstanding request$" "$S2.log" ||
	fail "record's summary does not say what was dropped"
n=0
while read -r p _ h _; do
	n=$((n + 1))
	[ "${p%/*}" -le "${p#*/}" ] && [ "${h%/*}" -le "${h#*/}" ] ||
		fail "a summary shows more answers than requests: $p pings, $h hypercall probes"
done < <(grep -ho "[0-9]*/[0-9]* pings, [0-9]*/[0-9]* hypercall probes" "$S1.log" "$S2.log")
[ $n = 3 ] || fail "$n guest summary lines in the two runs, want 3"
grep -q "^cpu4294967296" "$M" && fail "evil guest meta kept cpu4294967296.lost"
grep -q "^status=truncated: protocol error: malformed LOSS text" "$M" || fail "evil guest: $(grep ^status "$M")"
grep -q "^status=complete" "$S2/guest-honest/meta" || fail "honest guest: $(grep ^status "$S2/guest-honest/meta")"

# The host's markers for the evil guest: one PING_SEND a ping, a PONG_RECV at most.
idx=$(meta "$M" sync_index)
"$TV" report --json "$S2" >"$TV_TMP/r2.json" || fail "report --json of the session failed"
read -r sends recvs < <(python3 - "$TV_TMP/r2.json" "$idx" <<'PY'
import json, struct, sys
n = {1: 0, 4: 0}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["domain"] != "host" or e["event"] != "ftrace:raw_data" or e["fields"].get("id") != 0x59535654:
        continue
    typ, guest = struct.unpack("<HH", bytes(e["fields"]["buf"][:4]))
    if guest == int(sys.argv[2]) and typ in n:
        n[typ] += 1
print(n[1], n[4])
PY
)
echo "host markers for the evil guest: $sends PING_SEND, $recvs PONG_RECV, for $pings pings" >&2
[ "$sends" = "$pings" ] && [ "$recvs" -le "$pings" ] ||
	fail "host markers for the evil guest: $sends PING_SEND, $recvs PONG_RECV, for $pings pings"
for s in "$S1" "$S2"; do
	lost=$(meta "$s/host/meta" lost_total)
	[ "${lost:-0}" = 0 ] || fail "$(basename "$s"): the host lost $lost events"
done
echo "ok: the host lost 0 events in both runs (-b 64)" >&2

# Each guest's probe seqs from a random 48-bit base (the host's PING_SEND
# markers): the honest guest's are not the small ones every guest had
# before, which a guest without known vCPU threads could name in a forged
# hypercall probe (tests/unit/test_probe_seq.c shows what that did).
hidx=$(meta "$S2/guest-honest/meta" sync_index)
python3 - "$TV_TMP/r2.json" "$hidx" "$idx" <<'PY' || fail "the guests' probe seqs are guessable"
import json, struct, sys
seqs = {int(sys.argv[2]): [], int(sys.argv[3]): []}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["domain"] != "host" or e["event"] != "ftrace:raw_data" or e["fields"].get("id") != 0x59535654:
        continue
    typ, guest, seq = struct.unpack("<HHQ", bytes(e["fields"]["buf"][:12]))
    if typ == 1 and guest in seqs:
        seqs[guest].append(seq)
h, v = seqs[int(sys.argv[2])], seqs[int(sys.argv[3])]
print("probe seqs: honest %#x..%#x (%d pings), evil %#x..%#x (%d pings)"
      % (min(h), max(h), len(h), min(v), max(v), len(v)), file=sys.stderr)
assert all(1 << 47 <= x < 1 << 48 for x in h + v), "a seq outside [2^47, 2^48)"
assert max(h) < min(v) or max(v) < min(h), "the two guests' seqs overlap"
PY

# sync ignored and counted the evil guest's forged records.
forged=$(cat "$TV_TMP/forged")
fp=$(sync_field "$S2" guest-evil 'd["foreign_probes"]')
hp=$(sync_field "$S2" guest-honest 'd["foreign_probes"]')
[ "$fp" = "$forged" ] && [ "$hp" = 0 ] || fail "foreign probes: evil $fp (forged $forged), honest $hp"
"$TV" sync "$S2" | grep -q "^guest-evil: $forged sync probe records in its trace ignored" ||
	fail "sync does not say the evil guest's forged records were ignored"
echo "PASS: the honest guest unmoved by $forged forged records, $pdrop PONGs and $hdrop HCALL_DONEs dropped, host markers $sends + $recvs for $pings pings, host lost 0" >&2
