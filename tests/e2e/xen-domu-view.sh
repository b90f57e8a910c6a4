#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 and domU scripts are single-quoted on purpose
# tv-lab: own-machine: --xen-pages 512 then the default: Xen's trace buffer size is fixed until it reboots
# Issue #12 points 5-6 and the channel tests, in one lab `xen` run with
# three domUs started by `lab-domu --background`:
#   d1  PVH, tracevisor-agent on /dev/hvc1 under a fork/exec loop (real
#       SVM exits, runstates);
#   d2  PV, the same agent, SIGSTOPped 12 s into the recording (a channel
#       that stalls: nobody reads or writes the domU's end any more);
#   d3  PV, no agent: 12 s into the recording it writes a lying frame
#       header (magic right, 2 GB payload) and 64 KB of /dev/urandom to
#       /dev/hvc1 (hostile data from a domU): never parsed, as it comes
#       before any HELLO echoing START's nonce; d3 fails, said in one line.
# dom0 first records a 3 s session of Xen, dom0 and d1 (kept as the
# source of tests/samples/xen-domu), then `record --xen --guest xen:d1
# --guest xen:d2 --guest xen:d3` for about 40 s, ended by SIGINT.
# Then the agents are reused: d2's continued, d1's after a recorder killed
# by SIGKILL, and `record --guest xen:d1 --guest xen:d2` again: both
# complete, the stale bytes of the earlier sessions discarded, counted
# (stale_bytes) and said in one line each, never taken as frames.
# Checks: record ends within 30 s of SIGINT with status 0; d1 complete (or cut by the stop's deadline while draining),
# d2 truncated, d3 failed or truncated, each of d2/d3 with one line on
# record's stderr; Xen, dom0 and d1 recorded to the end; stat's exit
# counts per domain and reason equal xenalyze's (4.17, built from the
# Debian source by xen/build-xenalyze.sh) on the same records, exactly,
# once the exits xenalyze leaves in its "default domain" at each CPU's
# start are added (tests/e2e/xenalyze_start.py), with
# p50/p99/max for d1's exits, runstate times per domU vCPU and hypercalls
# per domain; report, CTF (babeltrace2) and Perfetto have the same event
# counts per domain and show dom0 (host), xen and each guest; Perfetto
# has d1's exit slices and runstate slices on the domU vCPU tracks.
# XEN_VIEW_OUT=DIR reuses the lab output of an earlier run (its OUTDIR).
# tv-timeout: 2400 (tests/run-tests: up to four boots when a PVH domU triple-faults)
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"

DOM0=$XEN_DOMUS_START'
# the agent domUs: serve sessions until /out/end, d2 stops its agent at /out/go
printf "%s\n" "tracevisor-agent -p 0 -s /dev/hvc1 -v 2>/out/agent.err & A=\$!" \
	"sleep 1; echo up > /out/agent-up" \
	"( while :; do /bin/true; ls /proc >/dev/null; sleep 0.05; done ) & W=\$!" \
	"if [ \"\$STALL\" = 1 ]; then until [ -e /out/go ]; do sleep 0.2; done; kill -STOP \$A; date +%s > /out/agent-stopped; fi" \
	"if [ \"\$STALL\" = 1 ]; then until [ -e /out/cont ]; do sleep 0.2; done; kill -CONT \$A; date +%s > /out/agent-continued; fi" \
	"until [ -e /out/end ]; do sleep 0.5; done; kill -CONT \$A; kill \$A \$W; exit 0" >/tmp/agent.sh
{ echo STALL=1; cat /tmp/agent.sh; } >/tmp/agent-stall.sh
# the hostile domU: a frame header that lies about its length, then noise
printf "%s\n" "echo up > /out/agent-up" "until [ -e /out/go ]; do sleep 0.2; done" \
	"printf \"\\124\\126\\101\\107\\001\\000\\000\\000\\000\\000\\000\\000\\377\\377\\377\\177\" > /dev/hvc1" \
	"head -c 65536 /dev/urandom > /dev/hvc1" "date +%s > /out/hostile-sent" \
	"until [ -e /out/end ]; do sleep 0.5; done; exit 0" >/tmp/hostile.sh
t0=$(date +%s)
lab-domu --name d1 --timeout 900 --background /tmp/agent.sh /out/d1 || exit 20
lab-domu --name d2 --type pv --mem 192 --timeout 900 --background /tmp/agent-stall.sh /out/d2 || exit 21
lab-domu --name d3 --type pv --mem 192 --timeout 900 --background /tmp/hostile.sh /out/d3 || exit 22
n=0
until [ -e /out/d1/agent-up ] && [ -e /out/d2/agent-up ] && [ -e /out/d3/agent-up ]; do
	n=$((n+1))
	if [ $n -gt 900 ]; then	# what the domU that did not come up shows
		xl list >/out/xl-list.txt 2>&1; cp /var/log/xen/guest-*.log /out/ 2>/dev/null; exit 23
	fi
	sleep 0.5
	xen_domu_crashed && exit 25
done
echo "$(( $(date +%s) - t0 ))" > /out/domus-up-seconds
xl list > /out/xl-list.txt
# the sample: Xen, dom0 and d1 for 3 s
$TV record --xen --xen-pages 512 --guest xen:d1 --duration 3 -o /tmp/small >/out/small.out 2>/out/small.err
echo $? > /out/small-rc
# a PVH domU that triple-faulted as Xen tracing began: end this run now (run_lab reruns it)
xen_domu_crashed && exit 25
$TV record --xen --guest xen:d1 --guest xen:d2 --guest xen:d3 -o /tmp/tv >/out/record.out 2>/out/record.err & P=$!
# the stall and the noise once d1 and d2 have sent data (their consoles
# are slow under load: once, d2 had sent nothing 12 s in), 12 s at least
sleep 12; n=0
until [ -s /tmp/tv/guest-d1/cpu0.raw ] && [ -s /tmp/tv/guest-d2/cpu0.raw ] || [ $n -ge 120 ]; do sleep 0.5; n=$((n+1)); done
xen_domu_crashed && { kill -INT $P; wait $P; exit 25; }
touch /out/d2/go /out/d3/go; date +%s > /out/go-time
sleep 28
s=$(date +%s); kill -INT $P; wait $P; echo $? > /out/record-rc
echo "$(( $(date +%s) - s ))" > /out/record-end-seconds
# agents reused after a truncated session: d2 continued after its stall
# (it then ends that session: STOP is waiting in its console), d1 after a
# recorder SIGKILLed in mid-session (its agent still streams for nobody);
# then one more recording of both, whose START each agent must find and
# whose replies the host must find after the stale bytes
touch /out/d2/cont
t=$(grep -c Tracing /out/d1/agent.err)
$TV record -e sched:sched_switch --guest xen:d1 -o /tmp/killed >/out/killed.out 2>&1 & K=$!
# killed once the agent of d1 serves its session (record starts slowly under load)
n=0; until [ "$(grep -c Tracing /out/d1/agent.err)" -gt "$t" ] || [ $n -ge 240 ]; do sleep 0.5; n=$((n+1)); done
sleep 3; kill -KILL $K; wait $K; echo $? > /out/killed-rc
n=0; until grep -q "Session ended" /out/d2/agent.err || [ $n -ge 180 ]; do sleep 1; n=$((n+1)); done
echo $n > /out/d2-drain-seconds
# 20 s (and the 7 s of the END wait): QEMU in dom0 keeps what the console
# carried while nobody listened, and hands it to the next reader at the
# speed of an emulated dom0 (once 2.7 MB, more than 8 + 60 s carried)
$TV record -e sched:sched_switch --guest xen:d1 --guest xen:d2 --duration 20 -o /tmp/again >/out/again.out 2>/out/again.err
echo $? > /out/again-rc
tar -C /tmp -cf /out/again.tar again
touch /out/d1/end /out/d2/end /out/d3/end
for d in d1 d2 d3; do lab-domu --wait $d; echo $? > /out/$d-rc; done
# one tar file: a session is ~180 directories of format files, which cp -a
# over 9p takes minutes to write under TCG (xen-record: 207 -> 74 s)
tar -C /tmp -cf /out/tv.tar tv small || exit 24
exit 0'
if [ -n "${XEN_VIEW_OUT:-}" ]; then
	OUT=$XEN_VIEW_OUT
else
	run_lab xen "$DOM0" xen LAB_TIMEOUT=1500
	[ "$RC" = 23 ] && echo "a domU did not come up in 450 s: $(cat "$OUT/xl-list.txt"); consoles: $(ls "$OUT"/guest-*.log)" >&2
	expect_rc 0 "dom0 script"
	tar -C "$OUT" -xf "$OUT/tv.tar" || fail "cannot unpack the dom0 sessions"
	[ -f "$OUT/again.tar" ] && tar -C "$OUT" -xf "$OUT/again.tar"
fi
S=$OUT/tv
gm() { sed -n "s/^$2=//p" "$S/guest-$1/meta"; }
[ "$(cat "$OUT/small-rc")" = 0 ] || fail "the 3 s recording failed: $(tail -n 3 "$OUT/small.err")"
# d2 stalled, d3 hostile: recorded, guests incomplete: 3
[ "$(cat "$OUT/record-rc")" = 3 ] || fail "record exited $(cat "$OUT/record-rc"), want 3: $(tail -n 5 "$OUT/record.err")"
# Ctrl-C ends record within 10 s despite the stalled agent (END 7 s after the stop; +1 s: date +%s)
[ "$(cat "$OUT/record-end-seconds")" -le 11 ] || fail "record took $(cat "$OUT/record-end-seconds") s after SIGINT"
# An honest guest whose Xen PV console (a few KB/s under TCG) is still
# draining at the stop's deadline ends truncated by it, keeping what came
# and its loss counts (LOSS): the stop's 10 s bound wins (issue #22, point 4).
stop_cut() {	# STATUS: the stop's deadline cut an honest guest's drain
	case $1 in "truncated: no END from the agent within 7 s of the stop"*) ;; *) return 1 ;; esac
	echo "KNOWN LIMIT: $2 still draining its PV console at the stop's deadline: $1" >&2
}
st1=$(gm d1 status)
[ "$st1" = complete ] || stop_cut "$st1" d1 || fail "d1: status $st1"
[ -n "$(gm d1 lost_total)" ] || fail "d1: no loss counts (LOSS) in its meta"
case $(gm d2 status) in truncated*) ;; *) fail "d2 (agent stopped) status: $(gm d2 status)" ;; esac
# one line each for the stalled and the hostile guest on record's stderr
[ "$(grep -c "Guest d2: truncated" "$OUT/record.err")" = 1 ] || fail "d2: not one warning line: $(cat "$OUT/record.err")"
# d3 never answered START with its HELLO: its noise and lying header were
# discarded unparsed (doc/agent-protocol.md, resynchronisation)
[ "$(grep -c "guest d3: .*failed: no reply to START from the agent (no HELLO echoing its nonce in [0-9]* bytes received)" "$OUT/record.err")" = 1 ] ||
	fail "d3: not one line: $(cat "$OUT/record.err")"
grep -q "Guest d3:" "$OUT/record.err" && fail "d3: more than its line: $(cat "$OUT/record.err")"
grep -q "^domains=.*guest-d3" "$S/session.meta" && fail "the hostile d3 is listed in the session"
grep -q "^domains=host,guest-d1,guest-d2,xen$" "$S/session.meta" || fail "domains: $(grep ^domains= "$S/session.meta")"
d1=$(gm d1 xen_domid) d2=$(gm d2 xen_domid)

# -- the same agents recorded again after those truncated sessions
[ "$(cat "$OUT/killed-rc")" = 137 ] || fail "the recorder to kill exited $(cat "$OUT/killed-rc")"
# 3 (a guest incomplete) only for d2's backlog outlasting the recording (below)
again_rc=$(cat "$OUT/again-rc") d2_again=$(sed -n 's/^status=//p' "$OUT/again/guest-d2/meta")
case $again_rc:$d2_again in
0:*) ;;
"3:failed: no reply to START from the agent (no HELLO echoing its nonce in "*) ;;
*) fail "record after truncated sessions exited $again_rc: $(tail -n 5 "$OUT/again.err")" ;;
esac
grep -q "bad frame header" "$OUT/again.err" && fail "stale bytes taken as frames: $(cat "$OUT/again.err")"
grep -q "A new session was asked for during one" "$OUT/d1/agent.err" ||
	fail "d1's agent did not end the killed recorder's session on the new START: $(tail -n 5 "$OUT/d1/agent.err")"
for g in d1 d2; do
	st=$(sed -n 's/^status=//p' "$OUT/again/guest-$g/meta")
	stale=$(sed -n 's/^stale_bytes=//p' "$OUT/again/guest-$g/meta")
	ev=$(sed -n 's/^events_total=//p' "$OUT/again/guest-$g/meta")
	# open: the stalled d2's console backlog (kept by QEMU in dom0, 2.7 and
	# 3.2 MB in two of six runs) may take longer than the recording and its
	# END wait to come through: then it fails saying so, nothing parsed
	big=$(echo "$st" | sed -n 's/^failed: no reply to START from the agent (no HELLO echoing its nonce in \([0-9]*\) bytes received)$/\1/p')
	if [ "$g" = d2 ] && [ "${big:-0}" -gt 1500000 ]; then
		echo "KNOWN LIMIT: d2's backlog of $big stale bytes outlasted the recording (doc/agent-protocol.md)" >&2
		continue
	fi
	[ "$st" = complete ] || stop_cut "$st" "$g recorded again" || fail "$g recorded again: status $st: $(cat "$OUT/again.err")"
	[ "${ev:-0}" -gt 0 ] || fail "$g recorded again: no events"
	lines=$(grep -c "Guest $g: [0-9]* stale bytes of an earlier session discarded" "$OUT/again.err")
	if [ "${stale:-x}" = 0 ]; then want=0; else want=1; fi
	[ "$lines" = "$want" ] || fail "$g: stale_bytes=$stale but $lines lines: $(cat "$OUT/again.err")"
	echo "$g recorded again after a truncated session: complete, $ev events, $stale stale bytes discarded" >&2
done
echo "d2's agent drained its stalled session in $(cat "$OUT/d2-drain-seconds") s after SIGCONT" >&2

"$TV" sync "$S" >"$T/sync.txt" 2>&1 || fail "sync failed: $(tail -n 5 "$T/sync.txt")"
t0=$(date +%s%N)
"$TV" stat --json --hist "$S" >"$T/stat.json" 2>"$T/stat.err" || fail "stat --json: $(cat "$T/stat.err")"
"$TV" stat "$S" >"$T/stat.txt" 2>>"$T/stat.err" || fail "stat: $(cat "$T/stat.err")"
t1=$(date +%s%N)
"$TV" report --json "$S" >"$T/r.json" 2>"$T/report.err" || fail "report: $(tail -n 3 "$T/report.err")"
t2=$(date +%s%N)
"$TV" export -f ctf -o "$T/ctf" "$S" 2>"$T/ctf.err" || fail "export ctf: $(cat "$T/ctf.err")"
"$TV" export -f perfetto-json -o "$T/p.json" "$S" 2>"$T/pf.err" || fail "export perfetto-json: $(cat "$T/pf.err")"
t3=$(date +%s%N)
echo "stat (text and JSON) $(( (t1 - t0) / 1000000 )) ms, report --json $(( (t2 - t1) / 1000000 )) ms, both exports $(( (t3 - t2) / 1000000 )) ms" >&2
grep -q "Xen domains: d0 = host (dom0), idle = xen (idle vCPUs), d$d1 = guest:d1, d$d2 = guest:d2" "$T/stat.txt" ||
	fail "stat: no domain legend: $(tail -n 2 "$T/stat.txt")"
command -v babeltrace2 >/dev/null || fail "babeltrace2 missing (apt-get install babeltrace2)"
babeltrace2 "$T/ctf" 2>"$T/bt.err" | grep -o "domain_id = [0-9]*" | sort | uniq -c >"$T/bt.txt"
[ -s "$T/bt.txt" ] || fail "babeltrace2 read nothing: $(tail -n 3 "$T/bt.err")"

# xenalyze on the same records (the session's cpuN.xen as one xentrace
# file): xenalyze 4.17 aborts on TRC_GUEST records ("unexpected number
# bits(0) in evt.main"), which record's dom0/Xen sync probes write: left out.
XA=$("$TV_ROOT/xen/build-xenalyze.sh" 2>"$T/xa-build.err") || {
	cat "$T/xa-build.err" >&2
	fail "building xenalyze failed"
}
python3 "$TV_ROOT/tests/e2e/xen_trace_file.py" "$S/xen" "$T/x.trace" || fail "cannot write the xentrace file"
khz=$(sed -n 's/^tsc_khz=//p' "$S/xen/meta")
"$XA" --summary --show-default-domain-summary --svm-mode --cpu-hz="${khz}000" "$T/x.trace" \
	>"$T/xa.txt" 2>"$T/xa.err" ||
	fail "xenalyze failed: $(tail -n 3 "$T/xa.err")"
python3 "$TV_ROOT/tests/e2e/xen_view_check.py" "$T" "$d1" "$d2" || fail "content (above)"
echo "PASS: stat per domU/vCPU with the same timed exits per reason as xenalyze; report, CTF (babeltrace2) and Perfetto show host, xen, guest:d1, guest:d2 alike; a stalled agent truncated and a hostile domU cut off with one line each, record ended $(cat "$OUT/record-end-seconds") s after SIGINT" >&2
