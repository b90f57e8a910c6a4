#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# export --format html (issue 27) in a real browser: each page is loaded
# from file:// by headless Debian chromium (tests/html_check.py, DevTools
# protocol over a pipe): no console error, the .stat-row elements equal
# `stat --json` row for row, the layers' lanes are there, a wheel zoom and
# a drag pan on the canvas move the view as they must, a click on an exit
# shows it and the guest task it interrupted; screenshots in
# build/html-check/.  Samples: svm-exits (one VM, two vCPUs), synced-multi
# (host, guests with sched_switch, sync result), xen-domu (Xen pCPUs, domain
# vCPUs, hypercall rows), and svm-exits whose VM name is hostile markup (it
# must be shown, never run), and a synthetic session of 600,000 events,
# more than a page holds (level of detail).  Also: the file holds no reference to the
# network, and a bad output path fails with the path said.  Needs no root.
. "$(dirname "$0")/../host/lib.bash"
command -v python3 >/dev/null || skip "needs python3"
command -v chromium >/dev/null || skip "needs chromium (make deps)"
[ -r /usr/share/javascript/chart.js/chart.min.js ] || skip "needs libjs-chart.js (make deps)"
CHECK="python3 $TV_ROOT/tests/html_check.py"
SHOTS=$TV_ROOT/build/html-check
T=$TV_TMP
mkdir -p "$SHOTS"

page_ok() {	# SESSION NAME LANE_KINDS
	"$TV" export --format html -o "$T/$2.html" "$1" 2> "$T/export.err" ||
		{ cat "$T/export.err"; fail "export --format html $1"; }
	grep -q "^$T/$2.html: [0-9]* events, [0-9]* lanes, [0-9]* items drawn one by one$" "$T/export.err" ||
		{ cat "$T/export.err"; fail "export's summary line"; }
	"$TV" stat --json "$1" > "$T/$2.stat.json" || fail "stat --json $1"
	# self-contained: nothing fetched at view time
	grep -Eiq '<(script|link|img|iframe)[^>]+(src|href)="(https?:)?//' "$T/$2.html" &&
		fail "$2.html refers to the network"
	grep -q 'Released under the MIT License' "$T/$2.html" || fail "$2.html: Chart.js's license not inlined"
	$CHECK "$T/$2.html" "$T/$2.stat.json" "$SHOTS" --expect-lanes "$3" || fail "browser check of $2"
}

page_ok "$TV_ROOT/tests/samples/svm-exits" svm-exits vcpu
cp -r "$TV_ROOT/tests/samples/synced-multi" "$T/synced-multi"
"$TV" sync "$T/synced-multi" > "$T/sync.out" 2>&1 || { cat "$T/sync.out"; fail "sync synced-multi"; }
page_ok "$T/synced-multi" synced-multi vcpu,gcpu,cpu
# the sync panel: every domain sync/transforms has, guest-jump's clock in pieces
grep -q '"sync":{"reference":"host","domains":\[' "$T/synced-multi.html" || fail "synced-multi: no sync panel data"
grep -Eq '\{"domain":"guest-jump","via":"host","method":"hull","quality":"[a-z]+","bound_ns":[0-9]+,"pieces":[1-9]' \
	"$T/synced-multi.html" || fail "synced-multi: guest-jump's pieces not in the sync panel"
page_ok "$TV_ROOT/tests/samples/xen-domu" xen-domu pcpu,xvcpu,xexit,gcpu

# A guest names its VM: markup in the name is text in the page, in the rows' attributes
# and in the JSON (a dialog or a console error fails html_check.py).
cp -r "$TV_ROOT/tests/samples/svm-exits" "$T/hostile"
evil='</script><img/src=x/onerror=alert(1)>"&amp;'"'"
printf '# tid vm_pid vcpu vm_name\n1001 1000 0 %s\n1002 1000 1 %s\n' "$evil" "$evil" > "$T/hostile/host/vcpus"
grep -qF "$evil" "$T/hostile/host/vcpus" || fail "hostile name not written"
page_ok "$T/hostile" hostile vcpu
grep -qF '</script><img' "$T/hostile.html" && fail "hostile name inlined unescaped"
grep -qF 'data-vm="&#60;/script&#62;&#60;img/src=x/onerror=alert(1)&#62;&#34;&#38;amp;&#39;[1000]"' "$T/hostile.html" ||
	fail "hostile name not escaped as an attribute"

# More items than a page holds (600,000 events: 300,000 exits and the guest
# runs between them, and a kvm_pio instant in each io exit): the long
# intervals one by one within the budget, the instants of the sparsest
# buckets in the room left, every other item in an aggregate, none lost;
# the browser check as above.
python3 "$TV_ROOT/bench/gen-kvm-session.py" "$T/big" 600000 4 1 --pio > /dev/null || fail "gen-kvm-session"
page_ok "$T/big" big vcpu
n_pio=$("$TV" report "$T/big" | grep -c 'kvm:kvm_pio')
python3 - "$T/big.html" "$n_pio" <<'PY' || fail "level of detail of the big page"
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script type="application/json" id="tv-data">(.*?)</script>', page, re.S).group(1))
kept = sum(len(x["t"]) for x in d["items"])
agg = d["lod"]["agg"]
aggregated = sum(agg[i + 3] for i in range(0, len(agg), 5))
lanes_kept = sum(l["items"] for l in d["lanes"])
lanes_agg = sum(l["aggregated"] for l in d["lanes"])
thr = d["lod"]["threshold_ns"]
assert thr > 0 and kept <= d["lod"]["budget"], (thr, kept)
assert kept == lanes_kept and aggregated == lanes_agg, (kept, lanes_kept, aggregated, lanes_agg)
assert kept + aggregated >= 599990, (kept, aggregated)	# every exit and guest run, one way or the other
durs = [v for x in d["items"] for v in x["d"] if v >= 0]
assert min(durs) >= thr, (min(durs), thr)
instants = sum(1 for x in d["items"] for v in x["d"] if v < 0)
pio = d["strs"].index("kvm:kvm_pio")
agg_instants = sum(agg[i + 3] for i in range(0, len(agg), 5) if agg[i + 2] == pio)
n_pio = int(sys.argv[2])
assert instants + agg_instants == n_pio, (instants, agg_instants, n_pio)
lod = d["lod"]
assert not lod["instants_kept"] and instants <= d["lod"]["budget"] - len(durs), lod
# the instants kept are those of buckets of at most instant_bucket_max of them
per = {}
for i in range(0, len(agg), 5):
    if agg[i + 2] == pio:
        per[(agg[i], agg[i + 1])] = agg[i + 3]
assert all(c > lod["instant_bucket_max"] for c in per.values()), lod["instant_bucket_max"]
print("export-html: big page: %d items one by one (intervals >= %d ns, %d instants of buckets of <= %d), "
      "%d aggregated in %d buckets" % (kept, thr, instants, lod["instant_bucket_max"], aggregated, len(agg) // 5))
PY

# A bad output path: non-zero, the path said.
out=$("$TV" export --format html -o "$T/no/such/dir/x.html" "$TV_ROOT/tests/samples/svm-exits" 2>&1) &&
	fail "export to a missing directory succeeded"
echo "$out" | grep -q "Cannot create output file: path=\"$T/no/such/dir/x.html\", errno=2" ||
	fail "bad path message: $out"
echo "export-html: 5 pages checked in chromium; screenshots in $SHOTS"
