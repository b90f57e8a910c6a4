# Ctrl-C (SIGINT) and SIGTERM leave a valid trace and a clean tracefs; a
# stale instance of a killed run is removed by the next run.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs; require_kvm
on_before=$(cat $TRACEFS/tracing_on)
for sig in INT TERM; do
	S=$TV_TMP/s-$sig
	"$TV" record -q -o "$S" -e kvm:kvm_pio & rec=$!
	wait_tracing $rec
	"$VMM" --outs 300 --quiet || fail "workload failed"
	kill -$sig $rec
	wait $rec || fail "record exited $? on SIG$sig"
	[ -z "$(our_instances)" ] || fail "instance left after SIG$sig"
	n=$("$TV" report "$S" | grep -c 'pio_write at 0x1234')
	expect_eq "events after SIG$sig" "$n" 300
done
# A run killed with SIGKILL leaves its instance; the next run removes it.
"$TV" record -q -o "$TV_TMP/killed" -e kvm:kvm_pio & rec=$!
wait_tracing $rec
kill -KILL $rec; wait $rec 2>/dev/null
[ -d $TRACEFS/instances/tracevisor-$rec ] || fail "expected a stale instance after SIGKILL"
[ -e "$TV_TMP/killed/session.meta" ] && fail "killed run looks complete"
# What reached the disk reads, with one warning that the session is incomplete.
"$TV" report "$TV_TMP/killed" >/dev/null 2>"$TV_TMP/killed.err" || fail "report of the killed run failed: $(cat "$TV_TMP/killed.err")"
grep -q "warning: Incomplete session" "$TV_TMP/killed.err" ||
	fail "report did not flag the killed run as incomplete: $(cat "$TV_TMP/killed.err")"
"$TV" record -q -o "$TV_TMP/next" -e kvm:kvm_pio --duration 0.2 || fail "next run failed"
[ -d $TRACEFS/instances/tracevisor-$rec ] && fail "stale instance tracevisor-$rec not removed"
expect_eq "top-level tracing_on untouched" "$(cat $TRACEFS/tracing_on)" "$on_before"
echo "signals handled"
