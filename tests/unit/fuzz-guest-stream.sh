#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libFuzzer on the host's guest-stream parser (host/guest_stream.c) for a
# bounded time (FUZZ_SECONDS, default 20).  Needs no root.  Skips without
# clang (a failure under CI=true).
. "$(dirname "$0")/../host/lib.bash"
command -v clang >/dev/null || skip "clang not installed (libFuzzer)"
cd "$TV_ROOT" || exit 1
make -s fuzz >"$TV_TMP/build.log" 2>&1 || { cat "$TV_TMP/build.log" >&2; fail "make fuzz failed"; }
F=build/fuzz/fuzz_guest_stream
mkdir -p "$TV_TMP/corpus" "$TV_TMP/seeds"
# Seeds: a valid stream (byte 0 = 0x01: META prepended, whole frames), and
# FILE / DATA / END frames, so the fuzzer starts deep in the parser.
python3 - "$TV_TMP/seeds" <<'PY'
import struct, sys
def frame(t, arg, p): return struct.pack("<IHHII", 0x47415654, t, 0, arg, len(p)) + p
def file(path, body): return frame(0x11, 0, struct.pack("<H", len(path)) + path + body)
page = b"\x00" * 4096
seeds = {
    "valid": b"\x01" + file(b"header_page", b"hp") + file(b"events/sched/s/format", b"f")
             + frame(0x15, 0, b"") + frame(0x12, 1, page) + frame(0x13, 0, b"\x2a" + b"\0" * 7)
             + frame(0x14, 0, b"\0" * 16) + frame(0x16, 0, b"cpu0.lost=1\nlost_total=1\n"),
    "meta": b"\x00" + frame(0x10, 0, b"ncpus=1\nsubbuf_size=4096\nlong_size=4\n"),
    "escape": b"\x01" + file(b"events/../x/format", b"x"),
    "error": b"\x01" + frame(0x17, 0, b"cannot start"),
    # a guest's traced process: settings, metadata, one sub-buffer, its end
    "ust": b"\x01" + frame(0x18, 0, b"pid=7\ncomm=demo\nnr_bufs=1\nsubbuf_size=4096\nnr_subbufs=2\nclock=mono\nmode=blocking\nper_thread=0\n")
           + frame(0x19, 0, b"event 1 p:e\nname: e\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                   b"\tfield:u64 seq;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \"%llu\", REC->seq\nend\n")
           + frame(0x1a, 0, (struct.pack("<QHHiQ", 5, 1, 24, 7, 1) * 2).ljust(4096, b"\0"))
           + frame(0x1b, 0, b"status=complete\ncpu0.lost=0\n"),
}
for name, data in seeds.items():
    open(sys.argv[1] + "/" + name, "wb").write(data)
PY
fuzz_run "$F" "${FUZZ_SECONDS:-20}" 65536 1024 "inputs, no crash, leak or write outside the guest directory"
