#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libFuzzer on the user-space tracer's buffer consumer (lib/ust/ust_consumer.c)
# for a bounded time (FUZZ_SECONDS, default 20), from a valid mapping with
# complete, partial and padded sub-buffers.  Needs no root.  Skips without
# clang (a failure under CI=true).
. "$(dirname "$0")/../host/lib.bash"
command -v clang >/dev/null || skip "clang not installed (libFuzzer)"
cd "$TV_ROOT" || exit 1
make -s build/fuzz/fuzz_ust_buffer >"$TV_TMP/build.log" 2>&1 || { cat "$TV_TMP/build.log" >&2; fail "make fuzz failed"; }
F=build/fuzz/fuzz_ust_buffer
mkdir -p "$TV_TMP/corpus" "$TV_TMP/seeds"
python3 - "$TV_TMP/seeds" <<'PY'
import struct, sys
fmt = (b"name: e\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
       b"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:u64 seq;\toffset:8;\tsize:8;\tsigned:0;\n"
       b"\nprint fmt: \"%llu\", REC->seq\n")
meta = b"event 1 p:e\n" + fmt + b"end\n"
SB, NSB = 4096, 2
data_off = 64
stride = data_off + SB * NSB
size = 8192 + stride
def mapping(nrec, committed_subbufs, reserve_extra):
    m = bytearray(size)
    hdr = struct.pack("<10I7Q16s", 0x53555654, 1, 128, 1, SB, NSB, 0, 0, 1234, 1,
                      4096, 4096, len(meta), 8192, stride, data_off, size, b"seed")
    m[0:len(hdr)] = hdr
    m[4096:4096 + len(meta)] = meta
    recs = b"".join(struct.pack("<QHHiQ", 100 + i, 1, 24, 7, i) for i in range(nrec))
    m[8192 + data_off:8192 + data_off + len(recs)] = recs
    reserve = len(recs) + reserve_extra
    commits = [SB if i < committed_subbufs else (len(recs) % SB) for i in range(NSB)]
    ctl = struct.pack("<QQQiI", reserve, 0, 0, 0, 0) + struct.pack("<%dQ" % NSB, *commits)
    m[8192:8192 + len(ctl)] = ctl
    return bytes(m)
open(sys.argv[1] + "/partial", "wb").write(mapping(20, 0, 0))
open(sys.argv[1] + "/full", "wb").write(mapping(170, 1, 0))
open(sys.argv[1] + "/uncommitted", "wb").write(mapping(20, 0, 24))
PY
# Inputs a fuzzer once found (tests/samples/fuzz-ust-*) seed every run.
cp "$TV_ROOT"/tests/samples/fuzz-ust-* "$TV_TMP/seeds/"
fuzz_run "$F" "${FUZZ_SECONDS:-20}" 32768 1024 "mappings, no crash, leak or hang in the consumer"
