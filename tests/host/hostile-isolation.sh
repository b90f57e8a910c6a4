#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A guest can only ever spoil its own domain (issue #22, point 1): two fake
# agents (tests/host/hostile_isolation.py over tests/helpers/tv_fake_agent.py),
# an honest guest "good" and a guest "evil" that sends, one case each, a
# format file of random bytes, a header_page of random bytes, a random
# sub-buffer among valid ones, a UST_PROC frame without ust= in START, a
# traced process without metadata, META long_size=4 with 8-byte formats,
# and 256 traced processes (the most a guest may have).  Each case asserts: record names the guest and
# why (its meta's status), the host's events are all read (report's host
# lines = the events record counted = report --domain host), the honest
# guest's 60 events are all read, report/stat/sync/export --format ctf exit
# 0 with at most one warning naming evil, and --domain reads subsets.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
DRIVER=$TV_ROOT/tests/host/hostile_isolation.py
GOOD_EVENTS=60
trap 'kill ${DPID:-} 2>/dev/null' EXIT

# HOSTILE_CASES="fmt data ...": only these cases (default: all)
want() { [ -z "${HOSTILE_CASES:-}" ] || [[ " $HOSTILE_CASES " == *" $1 "* ]]; }

# run_case CASE [RECORD OPTIONS]: record host + evil + good into $S.
run_case() {
	local case=$1
	shift
	S=$TV_TMP/$case
	rm -rf "$S" "$TV_TMP/evil.sock" "$TV_TMP/good.sock"
	python3 "$DRIVER" "$case" "$TV_TMP/evil.sock" "$TV_TMP/good.sock" 2>"$TV_TMP/driver.log" &
	DPID=$!
	for _ in $(seq 50); do [ -S "$TV_TMP/evil.sock" ] && [ -S "$TV_TMP/good.sock" ] && break; sleep 0.1; done
	local t0=$SECONDS
	timeout 60 "$TV" record -o "$S" -e sched:sched_switch --duration 2 "$@" \
		--guest "serial:$TV_TMP/evil.sock,name:evil" --guest "serial:$TV_TMP/good.sock,name:good" \
		2>"$TV_TMP/record.log"
	REC_RC=$?
	[ $REC_RC = 124 ] && fail "$case: record did not stop within 60 s"
	wait $DPID || fail "$case: fake guests: $(cat "$TV_TMP/driver.log")"
	[ -f "$S/session.meta" ] || fail "$case: no session.meta (record exit $REC_RC): $(cat "$TV_TMP/record.log")"
	HOST_RECORDED=$(sed -n 's/^tracevisor record: \([0-9]*\) events, .* -> .*/\1/p' "$TV_TMP/record.log")
	[ -n "$HOST_RECORDED" ] || fail "$case: no host event count in: $(cat "$TV_TMP/record.log")"
	echo "$case: recorded in $((SECONDS - t0)) s, record exit $REC_RC, $HOST_RECORDED host events"
}

# expect_record PATTERN STATUS: record's stderr names evil and matches
# PATTERN; evil's meta says status=STATUS (a grep -E pattern).
expect_record() {
	grep -E "evil.*$1|$1.*evil" "$TV_TMP/record.log" >/dev/null ||
		fail "$CASE: record does not say evil's problem (/$1/): $(cat "$TV_TMP/record.log")"
	grep -qE "^status=$2" "$S/guest-evil/meta" ||
		fail "$CASE: evil's status: $(grep status= "$S/guest-evil/meta"), want /$2/"
	grep -q "^status=complete$" "$S/guest-good/meta" || fail "$CASE: good's status: $(grep status= "$S/guest-good/meta")"
}

# expect_rejected WHY: evil was rejected at READY: record said it in one
# line at once, its summary line gives its status once, and record exits 3
# (a guest incomplete) naming it; nothing else of record's names evil.
expect_rejected() {
	local log=$TV_TMP/record.log
	expect_eq "$CASE: record's lines at READY naming evil rejected" \
		"$(grep -cE "^tracevisor record: guest evil rejected, its domain will not be read: .*$1.*; recording the rest$" "$log")" 1
	expect_eq "$CASE: evil's summary lines with its status" \
		"$(grep -cE "^tracevisor record: guest evil: .*: rejected: .*$1" "$log")" 1
	grep -q "^tracevisor record: 1 of 2 guests incomplete: evil (rejected); exit status 3$" "$log" ||
		fail "$CASE: no line explaining the exit status: $(cat "$log")"
	expect_eq "$CASE: record's lines naming evil" "$(grep -c evil "$log")" 3
	expect_eq "$CASE: record's exit status" "$REC_RC" 3
}

# count_lines FILE DOMAIN: report text lines of DOMAIN
count_lines() { awk -v d="$2" '$1 == d' "$1" | grep -c .; }

# read_all QUARANTINED: every command exits 0; each says at most one line
# naming evil, exactly one when QUARANTINED=1; host and good read whole.
read_all() {
	local q=$1 cmd n err
	for cmd in "report" "report --json" "stat" "stat --json" "export --format ctf -o $TV_TMP/ctf" "sync"; do
		rm -rf "$TV_TMP/ctf"
		# shellcheck disable=SC2086 # cmd is words
		timeout 60 "$TV" $cmd "$S" >"$TV_TMP/out" 2>"$TV_TMP/err" ||
			fail "$CASE: tracevisor $cmd exit $?: $(cat "$TV_TMP/err")"
		n=$(grep -c 'guest:evil\|guest-evil' "$TV_TMP/err")
		[ "$n" -le 1 ] || fail "$CASE: tracevisor $cmd says evil $n times: $(cat "$TV_TMP/err")"
		if [ "$q" = 1 ]; then
			[ "$n" = 1 ] && grep -q 'warning: Domain quarantined, not read: domain="guest:evil"' "$TV_TMP/err" ||
				fail "$CASE: tracevisor $cmd does not say evil is quarantined: $(cat "$TV_TMP/err")"
		fi
		err=$(grep -v 'guest:evil\|guest-evil\|ust-guest-evil' "$TV_TMP/err" | grep -v "^$TV_TMP/ctf: " |
			grep -v "More than 64 domains to synchronise: the traced processes' domains")
		[ -z "$err" ] || fail "$CASE: tracevisor $cmd says more: $err"
	done
	"$TV" report "$S" >"$TV_TMP/report" 2>/dev/null
	expect_eq "$CASE: host events read" "$(count_lines "$TV_TMP/report" host)" "$HOST_RECORDED"
	expect_eq "$CASE: good's events read" "$(count_lines "$TV_TMP/report" guest:good)" $GOOD_EVENTS
	# --domain: subsets, the same lines as in the whole report
	"$TV" report --domain host "$S" 2>/dev/null | grep -c . >"$TV_TMP/n"
	expect_eq "$CASE: report --domain host" "$(cat "$TV_TMP/n")" "$HOST_RECORDED"
	"$TV" report --domain guest:good --domain host "$S" >"$TV_TMP/sub" 2>/dev/null
	expect_eq "$CASE: report --domain guest:good --domain host, good's" \
		"$(count_lines "$TV_TMP/sub" guest:good)" $GOOD_EVENTS
	expect_eq "$CASE: report --domain guest:good --domain host, all" \
		"$(grep -c . "$TV_TMP/sub")" $((HOST_RECORDED + GOOD_EVENTS))
	"$TV" stat --json --domain guest-good "$S" >/dev/null 2>"$TV_TMP/err" ||
		fail "$CASE: stat --domain guest-good: $(cat "$TV_TMP/err")"
	grep -q evil "$TV_TMP/err" && fail "$CASE: stat --domain guest-good says: $(cat "$TV_TMP/err")"
	true
}

if want fmt; then
	CASE=fmt
	run_case fmt
	expect_record "rejected.*Corrupt event format.*events/sched/evil/format" "rejected: Corrupt event format: .*events/sched/evil/format"
	expect_rejected "Corrupt event format: path=\".*/guest-evil/events/sched/evil/format\""
	read_all 1
fi

if want hp; then
	CASE=hp
	run_case hp
	expect_record "rejected.*header page" "rejected: .*header page"
	expect_rejected "header page"
	read_all 1
fi

if want long4; then
	CASE=long4
	run_case long4
	expect_record "rejected.*header page.*commit 8\+8" "rejected: Corrupt header page format: .*commit 8\+8"
	expect_rejected "Corrupt header page format: .*commit 8\+8"
	read_all 1
fi

if want data; then
	CASE=data
	run_case data
	expect_record "" "complete"	# DATA is not decoded while recording: the readers skip it
	read_all 0
	expect_eq "data: evil's valid events read" "$(count_lines "$TV_TMP/report" guest:evil)" 20
	"$TV" report "$S" 2>&1 >/dev/null | grep -q 'warning: Corrupt sub-buffers skipped: domain="guest:evil", count=1, the first: path=".*/guest-evil/cpu0.raw", offset=4096' ||
		fail "data: the skipped sub-buffer is not said: $("$TV" report "$S" 2>&1 >/dev/null)"
fi

if want ust; then
	CASE=ust
	run_case ust
	expect_record "protocol error: UST_PROC, but START asked for no traced processes" \
		"truncated: protocol error: UST_PROC, but START asked"
	read_all 0
	ls -d "$S"/ust-guest-evil-* 2>/dev/null && fail "ust: a traced process's domain made without ust="
	echo "ok: ust: no domain made"
fi

if want ust-meta; then
	CASE=ust-meta
	run_case ust-meta --ust --ust-socket "$TV_TMP/ust.sock"
	grep -q '^status=rejected: No event formats in session' "$S/ust-guest-evil-4242/meta" ||
		fail "ust-meta: the traced process's status: $(grep status= "$S/ust-guest-evil-4242/meta")"
	grep -q 'evil.*4242.*rejected\|rejected.*evil.*4242' "$TV_TMP/record.log" ||
		fail "ust-meta: record does not say the process was rejected: $(cat "$TV_TMP/record.log")"
	grep -q '^tracevisor record: guest evil: ust: 1 processes (1 rejected), ' "$TV_TMP/record.log" ||
		fail "ust-meta: the summary does not count the rejected process: $(grep 'guest evil: ust' "$TV_TMP/record.log")"
	read_all 0
	"$TV" report "$S" 2>&1 >/dev/null | grep -q 'warning: Domain quarantined, not read: domain="ust-guest-evil-4242"' ||
		fail "ust-meta: report does not say the process's domain is quarantined"
fi

if want many-ust; then
	CASE=many-ust
	run_case many-ust --ust --ust-socket "$TV_TMP/ust.sock"
	n=$(ls -d "$S"/ust-guest-evil-* | wc -l)
	expect_eq "many-ust: traced processes recorded" "$n" 256
	read_all 0
	"$TV" report --domain guest:evil "$S" >/dev/null 2>"$TV_TMP/err" || fail "many-ust: report --domain guest:evil: $(cat "$TV_TMP/err")"
fi

# A name that is not in the session is an error naming it.
"$TV" report --domain guest:nosuch "$S" >/dev/null 2>"$TV_TMP/err" && fail "report --domain guest:nosuch: exit 0"
grep -q 'No such domain in session: path=".*", domain="guest-nosuch"' "$TV_TMP/err" ||
	fail "report --domain guest:nosuch says: $(cat "$TV_TMP/err")"
echo "hostile guests spoiled only their own domains"
