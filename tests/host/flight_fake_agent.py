#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A fake tracevisor-agent for tests/host/record-flight-guest.sh, on the
guest end PTY of a pty relay (doc/agent-protocol.md).  MODE:
  old   describes itself as agent version 3 (no flight recorder);
  liar  version 4, but after READY floods TRIGGER frames for rule 0 and
        answers each SNAP with 4 x the flight_bytes START asked for;
  slow  version 4, a slow channel: its first SNAP answered with 3 MB in
        64 KB frames over about 12 s, pausing 3 s and 1 s in turn (as vsock
        under nested TCG), then SNAP_END; its second with 1 MB and then
        nothing (a guest frozen midway); its third with one page every 3 s
        for 18 s (a guest that drips), then SNAP_END.
The formats it sends are this kernel's, so the domain checks pass."""
import os, select, struct, sys, time

MAGIC = 0x47415654
pty, mode = sys.argv[1], sys.argv[2]
# raw already (the relay's); setting it again would flush a START already there
fd = os.open(pty, os.O_RDWR | os.O_NOCTTY)
TR = "/sys/kernel/tracing"


def send(ftype, payload=b"", arg=0):
    data = struct.pack("<IHHII", MAGIC, ftype, 0, arg, len(payload)) + payload
    while data:
        n = os.write(fd, data)
        data = data[n:]


def read_exact(n, timeout):
    buf = b""
    end = time.time() + timeout
    while len(buf) < n:
        left = end - time.time()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv(timeout):
    hdr = read_exact(16, timeout)
    if hdr is None:
        return None
    magic, ftype, flags, arg, ln = struct.unpack("<IHHII", hdr)
    payload = read_exact(ln, 5) if ln else b""
    return ftype, arg, payload


def send_file(path, name):
    with open(path, "rb") as f:
        content = f.read()
    nb = name.encode()
    send(0x11, struct.pack("<H", len(nb)) + nb + content)


start = recv(30)
if not start or start[0] != 0x01:
    sys.exit("no START")
keys = dict(l.split("=", 1) for l in start[2].decode().splitlines() if "=" in l)
send(0x1c, struct.pack("<Q", int(keys["nonce"], 16)))
version = "3" if mode == "old" else "4"
meta = ("kernel_release=fake\nhostname=fake\nmachine=x86_64\nclock=%s\nncpus=1\nsubbuf_size=4096\n"
        "long_size=8\nendian=little\nbuffer_kb=64\nevents=sched:sched_switch\nfilters=0\n"
        "agent_version=%s\n" % (keys.get("clock", "local"), version))
send(0x10, meta.encode())
send_file(TR + "/events/header_page", "header_page")
send_file(TR + "/events/header_event", "header_event")
send_file(TR + "/events/sched/sched_switch/format", "events/sched/sched_switch/format")
send(0x15)
flight = int(keys.get("flight_bytes", "0"))
flooded = False
ready_at = time.time()
while True:
    wait = 0.1 if mode == "liar" and not flooded else 10
    f = recv(wait)
    if f is None:
        if mode == "liar" and not flooded and time.time() - ready_at > 1.5:
            for _ in range(500):
                send(0x21, b"time=123\ncpu=0\n", 0)
            flooded = True
            print("flooded", file=sys.stderr)
        elif mode != "liar" or flooded:
            if f is None and wait == 10:
                break
        continue
    ftype, arg, payload = f
    if ftype == 0x03:		# PING -> PONG
        send(0x13, payload)
    elif ftype == 0x05 and mode == "slow":
        snaps = globals().setdefault("snaps", [0])
        snaps[0] += 1
        frame = bytes(4096) * 16
        if snaps[0] == 1:
            for i in range(48):
                send(0x1e, frame, (arg & 0xffff) << 16)
                if i % 8 == 7 and i < 47:
                    time.sleep(3.0 if (i // 8) % 2 == 0 else 1.0)
            send(0x20, b"gap_ns=1\n", arg)
        elif snaps[0] == 2:
            for i in range(16):
                send(0x1e, frame, (arg & 0xffff) << 16)
        else:
            for i in range(6):
                send(0x1e, bytes(4096), (arg & 0xffff) << 16)
                time.sleep(3.0)
            send(0x20, b"gap_ns=1\n", arg)
        print("answered SNAP %d (%d)" % (arg, snaps[0]), file=sys.stderr)
    elif ftype == 0x05:		# SNAP: 4 x SIZE of empty pages
        page = bytes(4096)
        for _ in range(4 * flight // (64 * 4096)):
            send(0x1e, page * 64, (arg & 0xffff) << 16)
        send(0x20, b"gap_ns=1\n", arg)
        print("answered SNAP %d" % arg, file=sys.stderr)
    elif ftype == 0x02:		# STOP
        send(0x1d, b"cpu0.lost=0\nlost_total=0\n")
        send(0x16, b"cpu0.lost=0\ncpu0.events=0\nlost_total=0\nevents_total=0\n")
        break
