#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libFuzzer on one guest's session on the host as a state machine
# (tests/fuzz/fuzz_guest_session.c: host/guest_session.c over the stream
# parser, on a fake clock) for a bounded time (FUZZ_SECONDS, default 20),
# from the seeds below and no kept corpus.  Every step checks the
# invariants (answers <= requests, host markers as the probe rule allows,
# nothing accepted after END, the stop's deadline, printable status,
# nothing written outside the guest's directory).  Needs no root; it is in
# this tier because it is slower than the unit tests.  Skips without clang.
. "$(dirname "$0")/../host/lib.bash"
command -v clang >/dev/null || skip "clang not installed (libFuzzer)"
cd "$TV_ROOT" || exit 1
make -s build/fuzz/fuzz_guest_session >"$TV_TMP/build.log" 2>&1 ||
	{ cat "$TV_TMP/build.log" >&2; fail "make build/fuzz/fuzz_guest_session failed"; }
F=build/fuzz/fuzz_guest_session
# the target's scratch directories: on tmpfs (an input writes files: ~14x faster than on disk), gone at the end
TV_FUZZ_TMP=$(mktemp -d /dev/shm/tv-fuzz-guest-session.XXXXXX 2>/dev/null || mktemp -d "$TV_TMP/scratch.XXXXXX")
export TV_FUZZ_TMP
trap 'rm -rf "$TV_FUZZ_TMP"' EXIT
mkdir -p "$TV_TMP/corpus" "$TV_TMP/seeds"
# Seeds: steps of the target's input (opcode byte, operands; see the
# target's step()): an honest session to its END, and the guests that
# misbehave in each way the session must survive.
python3 - "$TV_TMP/seeds" <<'PY'
import struct, sys
START = lambda ust=0: b"\x00" + struct.pack("<Q", 0x1234567890abcdef) + bytes([ust])
HELLO, READY, META = b"\x01", b"\x03", b"\x02\x08"	# META: 4 CPUs, 4 KiB sub-buffers
PONG, HDONE = b"\x04\x00", b"\x05\x00"			# the right answers
STOP, END, ABORT, CLOSE = b"\x0a", b"\x86", b"\x0b", b"\x0c"
def file(i, body): return b"\x0e" + bytes([i, len(body)]) + body
def time(polls): return b"\x09" + bytes([polls])	# 50 ms each
def data(cpu, body): return b"\x0f" + bytes([cpu, len(body)]) + body
def frame(t, arg, p): return b"\x08" + bytes([t, arg, len(p)]) + p
answer = (PONG + HDONE) * 3
seeds = {
    "honest": START() + HELLO + META + file(0, b"hp") + file(1, b"name: s\nID: 1\n") + READY
              + answer * 6 + time(10) + answer * 2 + data(1, b"\0" * 24) + STOP + answer * 6
              + time(2) + END + time(4),
    "silent": START() + time(200),
    "no-hello": START() + b"\x07\x40" + b"\xaa" * 64 + STOP + time(255) + time(255),
    "flood": START() + HELLO + META + READY + b"\x04\x01\x05" + b"\x04\x02\x07" * 40
             + b"\x05\x80\x02\x01" * 40,
    "never-answers": START() + HELLO + META + READY + time(255) * 4 + STOP + time(200),
    "send-fails": START() + HELLO + META + READY + b"\x0d" + time(60),
    "ends-early": START() + HELLO + META + READY + END + time(5),
    "closes": START() + HELLO + META + READY + answer + CLOSE,
    "abort": START() + HELLO + META + READY + STOP + answer + ABORT,
    "frames": START(1) + HELLO + META + frame(0x18, 0, b"pid=7\ncomm=demo\n")
              + frame(0x1d, 0, b"lost_total=1\n") + frame(0x17, 0, b"gave \x1b[2J up"),
}
for name, data in seeds.items():
    open(sys.argv[1] + "/" + name, "wb").write(data)
PY
fuzz_run "$F" "${FUZZ_SECONDS:-20}" 4096 1024 "inputs, every step's invariants held"
