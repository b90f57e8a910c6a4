#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The CTF export against the rules of Trace Compass's CTF reader
# (tests/ctf_tc_check.py, doc/ctf-export.md), on sessions built from the
# committed samples: every clean single-domain sample; three domains (a
# host, a guest, an imported Xen trace); a stream long enough for several
# packets; a CPU stream whose time goes back; fields named like TSDL
# keywords, type names and a sequence's length field.  Each export is also
# read by babeltrace2 (when installed): no error, and no warning but the
# discarded-events ones of a sample that lost events.  Then the checker must
# fail on broken copies, one rule each, so that it can fail.  Needs no root.
. "$(dirname "$0")/../host/lib.bash"
command -v python3 >/dev/null || skip "needs python3"
CHECK="python3 $TV_ROOT/tests/ctf_tc_check.py"
SAMPLES=$TV_ROOT/tests/samples
T=$TV_TMP
have_bt=0
command -v babeltrace2 >/dev/null && have_bt=1

bt_reads() {	# CTF_DIR EVENTS: babeltrace2 reads EVENTS events, says nothing else
	[ $have_bt = 1 ] || return 0
	babeltrace2 "$1" > "$T/bt.out" 2> "$T/bt.err" || { cat "$T/bt.err"; fail "babeltrace2 $1"; }
	grep -v 'Tracer may have discarded events' "$T/bt.err" | grep -q . &&
		{ cat "$T/bt.err"; fail "babeltrace2 $1: stderr"; }
	expect_eq "babeltrace2 events of $(basename "$1")" "$(wc -l < "$T/bt.out")" "$2"
}

export_ok() {	# SESSION CTF_DIR: export, check, babeltrace2; prints the checker's summary
	local n
	"$TV" export -q --format ctf -o "$2" "$1" 2> "$T/export.err" ||
		{ cat "$T/export.err"; fail "export $1"; }
	$CHECK -v "$2" > "$T/check.out" 2> "$T/check.err" ||
		{ cat "$T/check.out" "$T/check.err"; fail "Trace Compass rules broken by $2"; }
	cat "$T/check.err"
	n=$("$TV" report --json "$1" 2>/dev/null | wc -l)
	grep -q " $n events, 0 rules broken" "$T/check.err" ||
		fail "$2: checker did not see report's $n events"
	bt_reads "$2" "$n"
}

# 1. Every sample that decodes without error.
for s in abs-ts missed padding svm-exits time-extend vmx-exits; do
	export_ok "$SAMPLES/$s" "$T/$s.ctf"
done

# 2. Three domains: host, guest:a (another sample), xen (imported xentrace).
"$TV" import xentrace "$SAMPLES/xen-two-cpus.xentrace" -o "$T/x" --cpu-khz 2400000 2>/dev/null ||
	fail "import xentrace"
mkdir "$T/multi"
cp -r "$SAMPLES/vmx-exits/host" "$T/multi/host"
cp -r "$SAMPLES/svm-exits/host" "$T/multi/guest-a"
sed -i 's/^domain=host$/domain=guest:a/' "$T/multi/guest-a/meta"
cp -r "$T/x/xen" "$T/multi/xen"
printf 'format=tracevisor-session\nversion=1\ncreated=2026-11-22T12:00:00Z\n%s\n%s\n' \
	"domains=host,guest-a,xen" "reference_domain=host" > "$T/multi/session.meta"
export_ok "$T/multi" "$T/multi.ctf"
[ "$(ls "$T/multi.ctf" | grep -c _cpu)" = 6 ] || fail "multi: want 6 stream files, one per domain and CPU"

# 3. One CPU's sub-buffer repeated 1000 times, 2 ms apart: 16000 events,
# several 256 KiB packets in one stream file.
cp -r "$SAMPLES/vmx-exits" "$T/big"
python3 - "$T/big/host" <<'PY'
import struct, sys
d = sys.argv[1]
sub = open(d + "/cpu0.raw", "rb").read()
ts, = struct.unpack_from("<Q", sub, 0)
out = bytearray()
for k in range(1000):
	b = bytearray(sub)
	struct.pack_into("<Q", b, 0, ts + k * 2000000)
	out += b
open(d + "/cpu0.raw", "wb").write(out)
m = open(d + "/meta").read().replace("cpu0.bytes=4096", "cpu0.bytes=%d" % len(out))
open(d + "/meta", "w").write(m)
PY
export_ok "$T/big" "$T/big.ctf"
packets=$(sed -E 's/.* ([0-9]+) packets.*/\1/' "$T/check.err")
[ "$packets" -ge 4 ] || fail "big: $packets packets, want several"

# 4. Time goes back on CPU 0 (a second sub-buffer 1 ms before the first):
# the stream goes on in host_cpu0.1, each file in order, every event kept.
cp -r "$SAMPLES/vmx-exits" "$T/back"
python3 - "$T/back/host" <<'PY'
import struct, sys
d = sys.argv[1]
sub = open(d + "/cpu0.raw", "rb").read()
ts, = struct.unpack_from("<Q", sub, 0)
b = bytearray(sub)
struct.pack_into("<Q", b, 0, ts - 1000000)
open(d + "/cpu0.raw", "wb").write(sub + bytes(b))
m = open(d + "/meta").read().replace("cpu0.bytes=4096", "cpu0.bytes=8192")
open(d + "/meta", "w").write(m)
PY
export_ok "$T/back" "$T/back.ctf"
[ -s "$T/back.ctf/host_cpu0.1" ] || fail "back: no host_cpu0.1"
grep -q 'Time goes back in a CPU stream' "$T/export.err" || fail "back: no warning"

# 5. Field names: TSDL keywords (event, NaN), a type alias name (uint32_t),
# a sequence x whose length field would clash with a field x_len, a
# zero-byte field.
cp -r "$SAMPLES/vmx-exits" "$T/names"
sed -i -e 's/unsigned int rw;/unsigned int NaN;/' -e 's/unsigned int port;/unsigned int uint32_t;/' \
	-e 's/unsigned int size;/unsigned int event;/' -e 's/unsigned int count;/__data_loc u8[] x;/' \
	-e 's/unsigned int val;\(\toffset:24;\tsize:4;\tsigned:0;\)/unsigned int x_len;\1\n\tfield:struct nothing z;\toffset:28;\tsize:0;\tsigned:0;/' \
	-e 's/^print fmt.*/print fmt: "%u", REC->NaN/' "$T/names/host/events/kvm/kvm_pio/format"
export_ok "$T/names" "$T/names.ctf"
grep -q '} _NaN;' "$T/names.ctf/metadata" && grep -q '} _event;' "$T/names.ctf/metadata" &&
	grep -q '} _uint32_t;' "$T/names.ctf/metadata" && grep -q '} x_len_2;' "$T/names.ctf/metadata" ||
	fail "names: fields not protected/renamed"
if [ $have_bt = 1 ]; then
	grep -q 'kvm:kvm_pio: .*NaN = 0, uint32_t = 1021, event = 1, x_len = 0, x = \[ \], x_len_2 = ' \
		"$T/bt.out" || fail "names: babeltrace2 does not read the names back"
fi

# 6. An existing OUT: an earlier export is replaced (its host_cpu0.1 too),
# anything else is refused.
"$TV" export -q --format ctf -o "$T/back.ctf" "$T/multi" || fail "re-export over an export"
[ ! -e "$T/back.ctf/host_cpu0.1" ] || fail "stale host_cpu0.1 left behind"
$CHECK "$T/back.ctf" || fail "re-export"
mkdir "$T/other" && echo notes > "$T/other/notes.txt"
"$TV" export -q --format ctf -o "$T/other" "$T/multi" 2> "$T/err" && fail "export into a foreign directory"
grep -q 'not from a tracevisor CTF export.*notes.txt' "$T/err" || fail "foreign directory: $(cat "$T/err")"
echo "ok: exports follow Trace Compass's rules"

# 7. The checker fails on broken copies, naming the rule.
broken() {	# NAME EXPECTED_MESSAGE: $T/bad must break the rule
	if $CHECK "$T/bad" > "$T/bad.out" 2>&1; then
		fail "checker passed a copy with $1"
	fi
	grep -q -- "$2" "$T/bad.out" || { cat "$T/bad.out"; fail "checker missed $1"; }
	echo "ok: checker rejects $1"
}
fresh() { rm -rf "$T/bad"; cp -r "$1" "$T/bad"; }
patch_u32() {	# FILE OFFSET VALUE
	python3 -c 'import struct,sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); f.write(struct.pack("<I",int(sys.argv[3],0)))' "$@" || fail "patch $*"
}

fresh "$T/multi.ctf"; sed -i '1s|^/\* CTF 1.8 \*/|/* TSDL */|' "$T/bad/metadata"
broken "no /* CTF header" 'does not start with "/\* CTF"'
fresh "$T/multi.ctf"; sed -i 's/ exit_reason;/ event;/' "$T/bad/metadata"
broken "a keyword field" "field 'event' is a TSDL keyword"
fresh "$T/multi.ctf"; sed -i 's/ exit_reason;/ uint64_t;/' "$T/bad/metadata"
broken "a type-name field" "field 'uint64_t' is a type name"
fresh "$T/multi.ctf"; sed -i 's/ guest_rip;/ exit_reason;/' "$T/bad/metadata"
broken "a duplicate field" "duplicate field 'exit_reason'"
fresh "$T/multi.ctf"; sed -i 's/^\ttracer_name = "tracevisor";/\tdomain = "kernel";\n&/' "$T/bad/metadata"
broken "env domain kernel" 'domain = "kernel": Trace Compass claims'
fresh "$T/multi.ctf"; sed -i 's/^\ttracer_major = 0;/\ttracer_major = 1;\n\ttracer_major = 0;/' "$T/bad/metadata"
broken "a duplicate env key" 'key tracer_major defined twice'
fresh "$T/multi.ctf"; sed -i 's/^\toffset = 0;/\toffset = 0x10;/' "$T/bad/metadata"
broken "a hex clock offset" 'offset is not a non-negative decimal'
fresh "$T/multi.ctf"; sed -i '0,/\t\tuint32_t cpu_id;/s//\t\tuint32_t cpu_idx;/' "$T/bad/metadata"
broken "no cpu_id" 'packet.context has no integer cpu_id'
fresh "$T/multi.ctf"; sed -i 's/\t\tuint64_clock_t timestamp;/\t\tuint64_t timestamp;/' "$T/bad/metadata"
broken "an unmapped event timestamp" 'event.header timestamp is not a 64-bit clock'
fresh "$T/multi.ctf"; patch_u32 "$T/bad/guest-a_cpu0" 20 7
broken "an undeclared stream_id" 'stream_id 7 not declared'
fresh "$T/multi.ctf"; patch_u32 "$T/bad/host_cpu1" 0 0xdeadbeef
broken "a bad magic" 'magic 0xdeadbeef'
fresh "$T/multi.ctf"; patch_u32 "$T/bad/host_cpu1" 56 999992
broken "packet_size past the file" 'packet_size runs past the end of the file'
fresh "$T/multi.ctf"; seq 100 > "$T/bad/notes.txt"
broken "a foreign file" 'notes.txt packet 0 (byte 0): magic'
# Packets swapped: the second begins before the first ends, then goes back.
fresh "$T/big.ctf"
python3 - "$T/bad/host_cpu0" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
p1 = struct.unpack_from("<Q", d, 56)[0] // 8
p2 = struct.unpack_from("<Q", d, p1 + 56)[0] // 8
open(sys.argv[1], "wb").write(d[p1:p1 + p2] + d[:p1] + d[p1 + p2:])
PY
broken "packets out of order" "timestamp_begin [0-9]* before the previous packet's"
# An event's timestamp before its predecessor's, inside one packet.
fresh "$T/multi.ctf"
python3 - "$T/bad/host_cpu0" <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b")
d = f.read()
first = 88 + 2
ts = struct.unpack_from("<Q", d, first)[0]
# The second event's timestamp: the first's + 5.2 us in this sample.
i = d.find(struct.pack("<Q", ts + 5200), first + 8)
assert i > 0
f.seek(i)
f.write(struct.pack("<Q", ts - 1))
PY
broken "an event going back" "before the previous event's"
echo "ok: the checker fails on each broken rule"
