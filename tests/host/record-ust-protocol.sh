# SPDX-License-Identifier: GPL-2.0
# record --ust against synthetic traced processes (tests/helpers/tv-ust-fake:
# lib/ust/ust_abi.h's protocol, not libtracevisor-ust): exact counts in report,
# stat and the CTF export read by babeltrace2; a process killed with SIGKILL
# mid-run has every committed event recovered; two lying processes (a commit
# counter beyond the buffer, a record length beyond its sub-buffer) are cut
# off with one message each while the others are recorded whole.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
FAKE="$TV_ROOT/build/tests/tv-ust-fake"
export TRACEVISOR_UST_SOCK="$TV_TMP/ust.sock"
S=$TV_TMP/s
# good stays alive to the end (disabled, flushed and copied when record
# stops); die kills itself; the liars are ended once the others are done.
"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid --ust 'demo:*' -- sh -c "
	'$FAKE' good 20000 > '$TV_TMP/good.out' &
	'$FAKE' commit 100 > '$TV_TMP/commit.out' & c=\$!
	'$FAKE' size 100 > '$TV_TMP/size.out' & s=\$!
	'$FAKE' die 7000 > '$TV_TMP/die.out'
	for i in \$(seq 300); do grep -q emitted '$TV_TMP/good.out' && break; sleep 0.1; done
	sleep 0.3; kill \$c \$s; true" 2> "$TV_TMP/rec.err" ||
	fail "record failed: $(cat "$TV_TMP/rec.err")"
pid_of() { sed -n 's/^tv-ust-fake: pid=\([0-9]*\) .*/\1/p' "$TV_TMP/$1.out"; }
good=$(pid_of good); die=$(pid_of die); lie1=$(pid_of commit); lie2=$(pid_of size)
[ -n "$good" ] && [ -n "$die" ] && [ -n "$lie1" ] && [ -n "$lie2" ] || fail "a fake process did not run"
for p in $good $die $lie1 $lie2; do grep -q "ust-host-$p" "$S/session.meta" || fail "ust-host-$p not in session.meta"; done
"$TV" report "$S" > "$TV_TMP/report" || fail "report failed"
n() { grep -c "tv-ust-fake-$1 .*demo:work_$2" "$TV_TMP/report"; }
expect_eq "good begins" "$(n $good begin)" 20000
expect_eq "good ends" "$(n $good end)" 20000
expect_eq "SIGKILLed begins (committed ones)" "$(n $die begin)" 7000
expect_eq "SIGKILLed ends" "$(n $die end)" 7000
grep -q "^status=ended" "$S/ust-host-$die/meta" || fail "killed process not marked ended"
grep -q "^status=complete" "$S/ust-host-$good/meta" || fail "good process not complete"
# the liars: one message each, their valid prefix at most, the others whole
grep -q "Traced process cut off: pid=$lie1, .*commit\[" "$TV_TMP/rec.err" || fail "commit liar not cut off: $(cat "$TV_TMP/rec.err")"
grep -q "Traced process cut off: pid=$lie2, .*size" "$TV_TMP/rec.err" || fail "size liar not cut off: $(cat "$TV_TMP/rec.err")"
expect_eq "size liar's valid prefix (the 3 pairs before its lie)" "$(grep -c "tv-ust-fake-$lie2 " "$TV_TMP/report")" 6
grep -q "^status=truncated: " "$S/ust-host-$lie2/meta" || fail "size liar not marked truncated"
# stat: exact counts and a latency row per pair
"$TV" stat --json "$S" > "$TV_TMP/stat.json" || fail "stat failed"
python3 - "$TV_TMP/stat.json" "$good" "$die" <<'PY' || fail "stat rows"
import json, sys
rows = json.load(open(sys.argv[1]))
def row(pid, reason):
    r = [x for x in rows if x.get("mode") == "ust" and x["vcpu"] == pid and x["reason"] == reason]
    assert len(r) == 1, (pid, reason, r)
    return r[0]
assert row(sys.argv[2], "demo:work_begin")["count"] == 20000
w = row(sys.argv[2], "demo:work")
assert w["count"] == 20000 and w["min_ns"] is not None and w["vm"] == "host", w
assert row(sys.argv[3], "demo:work")["count"] == 7000
PY
# the CTF export has every event report has
"$TV" export --format ctf -q -o "$TV_TMP/ctf" "$S" || fail "export ctf failed"
if command -v babeltrace2 >/dev/null; then
	expect_eq "babeltrace2 demo events = report's" "$(babeltrace2 "$TV_TMP/ctf" | grep -c ' demo:work_')" \
		"$(grep -c ' demo:work_' "$TV_TMP/report")"
fi
echo "record --ust protocol: exact counts, SIGKILL recovered, liars cut off"
