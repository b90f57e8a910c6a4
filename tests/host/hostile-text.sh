#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Terminal-safe text (issue #22, point 5): a hostile guest's task names,
# string fields and saved_cmdlines, and a host process whose comm holds an
# escape sequence, reach report's text escaped: no raw control byte (C0 but
# the line's own newline, DEL, C1 raw or as UTF-8, ESC), no forged line
# starting "host", printable UTF-8 kept; report --json keeps the exact bytes.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
SOCK=$TV_TMP/evil.sock S=$TV_TMP/s
trap 'kill ${APID:-} 2>/dev/null' EXIT

# The fake agent: 3 sched_switch records with hostile comms, hostile cmdlines.
cat >"$TV_TMP/agent.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/tests/helpers")
from tv_fake_agent import *
a = Agent(sys.argv[2])
a.accept()
a.describe(events=("sched/sched_switch", "ftrace/raw_data"))
a.ready()
recs = [a.sched_switch(prev_comm=b"\x1b[2J\x1b[H", prev_pid=100, next_comm=b"\nhost FORGED", next_pid=101, pid=100),
        a.sched_switch(prev_comm=b"\x9b31m\x7fok", prev_pid=101, next_comm=b"\xc2\x9b31m\xe2\x80\xaeX", next_pid=102, pid=101),
        a.sched_switch(prev_comm="café €".encode(), prev_pid=102, next_comm=b"\tx\ry", next_pid=100, pid=102)]
a.data(0, [a.page(a.now_ns(), [(1000, r) for r in recs])])
a.serve_until_stop(end=False)
a.file("saved_cmdlines", b"100 \x1b]0;pwned\x07\n101 \xc2\x85evil\n102 caf\xc3\xa9\n")
a.end(events=3)
PY
python3 "$TV_TMP/agent.py" "$TV_ROOT" "$SOCK" 2>"$TV_TMP/agent.log" &
APID=$!
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
# The host side: a process naming itself "\e[2Jhost\nX" runs while recording.
"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$SOCK,name:evil" --sync-interval 0.5 \
	-- python3 -c 'import ctypes, time
ctypes.CDLL(None).prctl(15, b"\x1b[2Jhost\nX\x9b", 0, 0, 0)
for _ in range(20): time.sleep(0.05)' 2>"$TV_TMP/record.log" ||
	{ cat "$TV_TMP/record.log" "$TV_TMP/agent.log" >&2; fail "record failed"; }
wait $APID || { cat "$TV_TMP/agent.log" >&2; fail "fake agent exited $?"; }

"$TV" report "$S" >"$TV_TMP/report.txt" 2>"$TV_TMP/report.err" || fail "report: $(cat "$TV_TMP/report.err")"
"$TV" report --json "$S" >"$TV_TMP/report.json" || fail "report --json failed"
python3 - "$TV_TMP/report.txt" "$TV_TMP/report.json" <<'PY' || fail "report's text is not terminal-safe"
import json, sys, unicodedata
raw = open(sys.argv[1], "rb").read()
try:
    text = raw.decode("utf-8")	# a raw C1 or invalid byte would not decode
except UnicodeDecodeError as e:
    sys.exit("text report: not UTF-8 (a raw byte): %s" % e)
bad = [(i, hex(ord(c))) for i, c in enumerate(text)
       if c != "\n" and (unicodedata.category(c) == "Cc" or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")]
if bad:
    sys.exit("text report: raw control characters %s" % bad[:10])
lines = text.splitlines()
evil = [l for l in lines if l.startswith("guest:evil ")]
if len(evil) != 3:
    sys.exit("text report: %d guest lines, not 3:\n%s" % (len(evil), "\n".join(evil)))
forged = [l for l in lines if "FORGED" in l and not l.startswith("guest:evil ")]
if forged:
    sys.exit("text report: a forged line: %s" % forged)
for want in ("\\x1b[2J\\x1b[H", "\\nhost FORGED", "\\x9b31m\\x7fok", "\\xc2\\x9b31m\\xe2\\x80\\xaeX",
             "café €", "\\tx\\ry", "\\x1b]0;pwned\\x07-100", "\\xc2\\x85evil-101", "café-102"):
    if not any(want in l for l in evil):
        sys.exit("text report: %r not in the guest's lines:\n%s" % (want, "\n".join(evil)))
host = [l for l in lines if "\\x1b[2Jhost\\nX\\x9b" in l and l.startswith("host ")]
if not host:
    sys.exit("text report: the host process's escaped comm is not there")
# --json: the exact bytes (JSON's \u00XX per byte)
recs = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
ev = [r for r in recs if r["domain"] == "guest:evil" and r["event"] == "sched:sched_switch"]
got = [(r["fields"]["prev_comm"].encode("latin-1"), r["fields"]["next_comm"].encode("latin-1")) for r in ev]
want = [(b"\x1b[2J\x1b[H", b"\nhost FORGED"), (b"\x9b31m\x7fok", b"\xc2\x9b31m\xe2\x80\xaeX"),
        ("café €".encode(), b"\tx\ry")]
if got != want:
    sys.exit("--json fields: %r, not %r" % (got, want))
if [r["comm"].encode("latin-1") for r in ev] != [b"\x1b]0;pwned\x07", b"\xc2\x85evil", "café".encode()]:
    sys.exit("--json comms: %r" % [r["comm"] for r in ev])
if not any(r["fields"].get("prev_comm", "").encode("latin-1") == b"\x1b[2Jhost\nX\x9b"
           for r in recs if r["domain"] == "host"):
    sys.exit("--json: the host process's comm is not exact")
print("text report: %d lines, 0 raw controls; %d guest events exact in --json" % (len(lines), len(ev)))
PY
# record's own lines and the other text commands: no raw control byte either.
"$TV" sync "$S" >"$TV_TMP/sync.txt" 2>&1
"$TV" stat "$S" >"$TV_TMP/stat.txt" 2>&1
for f in record.log sync.txt stat.txt; do
	python3 -c 'import sys, unicodedata
t = open(sys.argv[1], "rb").read().decode("utf-8")
bad = [hex(ord(c)) for c in t if c != "\n" and unicodedata.category(c) == "Cc"]
sys.exit("raw control characters %s" % bad[:10] if bad else 0)' "$TV_TMP/$f" || fail "$f is not terminal-safe"
done
echo "ok: report escapes recorded strings" >&2
