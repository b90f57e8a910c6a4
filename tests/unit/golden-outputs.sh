#!/bin/bash
# Committed expected output of every exporter and of a merged, synchronised
# multi-domain report (issue #11, item 10): a change in any layer (decoder,
# merge, clock estimation, exporters) shows as a diff here.  Needs no root.
#   svm-exits      (tests/samples, gen_samples.py): one host, two vCPUs
#   synced-multi   (test_sync_session --write-golden): host, guest-good,
#                  guest-jump (clock in two pieces), guest-nested (through
#                  guest-good) and xen, with probes: sync, then every output
# Expected files: tests/golden/SAMPLE/.  After a change that is meant,
# GOLDEN_UPDATE=1 bash tests/unit/golden-outputs.sh rewrites them (review
# the diff before committing).
#   sync.txt, transforms  tracevisor sync's table and sync/transforms
#   report.txt, report.json, stat.txt
#   perfetto.json         export --format perfetto-json
#   perfetto.txt          export --format perfetto (protobuf) decoded by protoc
#                         against doc/perfetto/trace.proto (skipped without protoc)
#   html.data             export --format html: stat's rows and the page's
#                         data (lanes, items, aggregates, sync, losses)
#   ctf.metadata          export --format ctf's TSDL, uuid masked
#   ctf.txt               babeltrace2 --clock-gmt on the CTF export (the
#                         stream files decoded; skipped without babeltrace2),
#                         also of an export under `ulimit -n 16`, whose
#                         stream files are closed and reopened as written
. "$(dirname "$0")/../host/lib.bash"
cd "$TV_ROOT" || exit 1
G=tests/golden
bad=0

check() {	# sample name file-with-output
	local want=$G/$1/$2
	if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
		mkdir -p "$G/$1"; cp "$3" "$want"; return
	fi
	[ -f "$want" ] || { echo "FAIL: no $want" >&2; bad=1; return; }
	if ! diff -u "$want" "$3" >"$TV_TMP/diff"; then
		echo "FAIL: $1 $2 differs from $want:" >&2
		head -n 30 "$TV_TMP/diff" >&2
		bad=1
	fi
}

run() {	# sample
	local s=$TV_TMP/$1 o=$TV_TMP/out-$1
	rm -rf "$s" "$o"; cp -r "tests/samples/$1" "$s"; mkdir -p "$o"
	if [ -d "$s/guest-good" ]; then
		rm -rf "$s/sync"
		"$TV" sync "$s" | sed "s|$TV_TMP/||" >"$o/sync.txt" || fail "$1: sync failed"
		check "$1" sync.txt "$o/sync.txt"
		check "$1" transforms "$s/sync/transforms"
	fi
	"$TV" report "$s" >"$o/report.txt" 2>"$o/report.err" || fail "$1: report failed: $(cat "$o/report.err")"
	[ -s "$o/report.err" ] && fail "$1: report said: $(cat "$o/report.err")"
	check "$1" report.txt "$o/report.txt"
	"$TV" report --json "$s" >"$o/report.json" || fail "$1: report --json failed"
	check "$1" report.json "$o/report.json"
	"$TV" stat "$s" 2>/dev/null | sed "s|$TV_TMP/||" >"$o/stat.txt"
	check "$1" stat.txt "$o/stat.txt"
	"$TV" export --format perfetto-json -o "$o/perfetto.json" "$s" >/dev/null || fail "$1: perfetto-json export failed"
	check "$1" perfetto.json "$o/perfetto.json"
	# the HTML page's own parts: its data (the session's path masked) and stat's rows
	"$TV" export --format html -o "$o/page.html" "$s" 2>/dev/null || fail "$1: html export failed"
	python3 - "$o/page.html" >"$o/html.data" <<'PY' || fail "$1: no data in the html page"
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script type="application/json" id="tv-data">(.*?)</script>', page, re.S).group(1))
d["title"] = "SESSION"
print("\n".join(re.findall(r'^<tr class="stat-row".*$', page, re.M)))
print(json.dumps(d, indent=0))
PY
	check "$1" html.data "$o/html.data"
	if command -v protoc >/dev/null; then
		"$TV" export -q --format perfetto -o "$o/perfetto.pftrace" "$s" || fail "$1: perfetto export failed"
		protoc --decode=perfetto.protos.Trace doc/perfetto/trace.proto <"$o/perfetto.pftrace" \
			>"$o/perfetto.txt" || fail "$1: protoc cannot decode the perfetto export"
		check "$1" perfetto.txt "$o/perfetto.txt"
	else
		echo "note: protoc not installed: the perfetto (protobuf) export is not compared" >&2
	fi
	"$TV" export --format ctf -o "$o/ctf" "$s" >/dev/null || fail "$1: CTF export failed"
	sed -E 's/uuid = "[0-9a-f-]+"/uuid = "UUID"/' "$o/ctf/metadata" >"$o/ctf.metadata"
	check "$1" ctf.metadata "$o/ctf.metadata"
	if command -v babeltrace2 >/dev/null; then
		babeltrace2 --clock-gmt "$o/ctf" >"$o/ctf.txt" 2>"$o/bt.err" || fail "$1: babeltrace2 failed: $(cat "$o/bt.err")"
		check "$1" ctf.txt "$o/ctf.txt"
	else
		echo "note: babeltrace2 not installed: the CTF streams are not compared" >&2
	fi
}

run svm-exits
run synced-multi

# Stream files closed and reopened as written (export keeps at most a
# quarter of RLIMIT_NOFILE open, here 4 for 5 streams): the same events.
if command -v babeltrace2 >/dev/null; then
	o=$TV_TMP/out-synced-multi
	rm -rf "$o/ctf4"
	( ulimit -n 16 && exec "$TV" export --format ctf -o "$o/ctf4" "$TV_TMP/synced-multi" ) >/dev/null 2>"$o/ctf4.err" ||
		fail "synced-multi: CTF export under ulimit -n 16 failed: $(cat "$o/ctf4.err")"
	grep -q "More than 4 CTF stream files written at once: [0-9]* closed" "$o/ctf4.err" ||
		fail "synced-multi: no stream file closed under ulimit -n 16: $(cat "$o/ctf4.err")"
	babeltrace2 --clock-gmt "$o/ctf4" >"$o/ctf4.txt" 2>"$o/bt.err" || fail "synced-multi: babeltrace2 failed: $(cat "$o/bt.err")"
	check synced-multi ctf.txt "$o/ctf4.txt"
	python3 tests/ctf_tc_check.py "$o/ctf4" >/dev/null || fail "synced-multi: the export under ulimit -n 16 breaks Trace Compass's rules"
fi
[ $bad = 0 ] || fail "outputs differ from tests/golden (GOLDEN_UPDATE=1 rewrites them after a meant change)"
echo "every exporter and the synced multi-domain report match tests/golden" >&2
