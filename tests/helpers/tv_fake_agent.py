# SPDX-License-Identifier: GPL-2.0
"""A fake tracevisor-agent for the hostile-guest tests (issue #22).

It speaks the agent protocol (doc/agent-protocol.md) on the guest end of
`record --guest serial:PATH`: it listens on the UNIX socket PATH (the host
connects to it as it would to QEMU's `-chardev socket,server=on`), reads
START and answers as an agent would, or as a hostile guest would: every
frame it sends is built here by hand, so a test can send exactly the bytes
it wants.  Formats come from this host's own tracefs (the tests run as
root), and data pages are built record by record in the ring buffer's
page layout, so an honest fake guest decodes like a real one.

Use from a test:

    import sys; sys.path.insert(0, TV_ROOT + "/tests/helpers")
    from tv_fake_agent import *
    a = Agent(sock_path)          # listening; record --guest serial:sock_path
    start = a.accept()            # dict of START's keys; HELLO already sent
    a.describe(ncpus=1)           # META + header_page/header_event + formats
    a.ready()
    a.data(0, [a.page(ts, [(1000, a.sched_switch(...))])])
    a.serve_until_stop()          # PING->PONG, HCALL->HCALL_DONE, STOP->LOSS+END
"""
import os
import socket
import struct
import time

MAGIC = 0x47415654
START, STOP, PING, HCALL = 0x01, 0x02, 0x03, 0x04
META, FILE, DATA, PONG, HCALL_DONE, READY, END, ERROR = range(0x10, 0x18)
UST_PROC, UST_META, UST_DATA, UST_END, HELLO, LOSS = range(0x18, 0x1e)
SYNC_MAGIC = 0x59535654
PING_RECV, PONG_SEND, HCALL_BEFORE, HCALL_AFTER = 2, 3, 5, 6
TRACEFS = "/sys/kernel/tracing"


def frame(ftype, arg, payload=b""):
    return struct.pack("<IHHII", MAGIC, ftype, 0, arg, len(payload)) + payload


def kv(d):
    return "".join("%s=%s\n" % (k, v) for k, v in d.items()).encode()


def event_id(system, event):
    with open("%s/events/%s/%s/format" % (TRACEFS, system, event)) as f:
        for line in f:
            if line.startswith("ID:"):
                return int(line.split()[1])
    raise ValueError("no ID in %s:%s" % (system, event))


def record(type_id, fields=b"", pid=0):
    """An event's payload: the common header (type, flags, preempt, pid), then fields."""
    return struct.pack("<HBBi", type_id, 0, 0, pid) + fields


class Agent:
    """One fake agent on one UNIX socket; one session (accept) at a time."""

    def __init__(self, path, subbuf_size=4096, long_size=8):
        self.path = path
        self.subbuf_size = subbuf_size
        self.long_size = long_size
        if os.path.exists(path):
            os.unlink(path)
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        self.lsock.listen(1)
        self.conn = None
        self.rbuf = b""
        self.start = {}
        self.stopped = False
        self.pings = []

    # ------------------------------------------------------------ channel
    def accept(self, timeout=30, hello=True):
        """Wait for the host, read START, answer HELLO (unless hello=False)."""
        self.lsock.settimeout(timeout)
        self.conn, _ = self.lsock.accept()
        self.conn.settimeout(timeout)
        ftype, _, payload = self.recv()
        if ftype != START:
            raise RuntimeError("first host frame is %#x, not START" % ftype)
        self.start = dict(line.split("=", 1) for line in payload.decode().splitlines() if "=" in line)
        if hello and "nonce" in self.start:
            self.send(HELLO, 0, struct.pack("<Q", int(self.start["nonce"], 16)))
        return self.start

    def send_raw(self, data):
        self.conn.sendall(data)

    def send(self, ftype, arg=0, payload=b""):
        self.send_raw(frame(ftype, arg, payload))

    def recv(self, timeout=None):
        """One host frame (type, arg, payload); None at EOF, reset or timeout."""
        if timeout is not None:
            self.conn.settimeout(timeout)
        try:
            while True:
                if len(self.rbuf) >= 16:
                    magic, ftype, _, arg, ln = struct.unpack_from("<IHHII", self.rbuf)
                    if magic != MAGIC:
                        raise RuntimeError("bad frame from the host")
                    if len(self.rbuf) >= 16 + ln:
                        payload = self.rbuf[16:16 + ln]
                        self.rbuf = self.rbuf[16 + ln:]
                        return ftype, arg, payload
                chunk = self.conn.recv(65536)
                if not chunk:
                    return None
                self.rbuf += chunk
        except (socket.timeout, ConnectionResetError, BrokenPipeError):
            return None

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    # ------------------------------------------------------- description
    def meta(self, **over):
        m = {"kernel_release": os.uname().release, "hostname": "fake", "machine": "x86_64",
             "clock": self.start.get("clock", "local"), "ncpus": 1,
             "subbuf_size": self.subbuf_size, "long_size": self.long_size, "endian": "little",
             "buffer_kb": 1024, "events": self.start.get("events", ""), "agent_version": 3}
        if "filter.0" in self.start:
            m["filters"] = sum(1 for k in self.start if k.startswith("filter."))
        m.update(over)
        self.ncpus = int(m["ncpus"])
        self.send(META, 0, kv(m))

    def file(self, rel, content):
        p = rel.encode()
        self.send(FILE, 0, struct.pack("<H", len(p)) + p + content)

    def tracefs_file(self, rel, as_path=None):
        """Send tracefs's events/@rel as @as_path (header_* at the top, formats under events/)."""
        with open("%s/events/%s" % (TRACEFS, rel), "rb") as f:
            self.file(as_path or (rel if rel.startswith("header_") else "events/" + rel), f.read())

    def describe(self, events=("sched/sched_switch", "ftrace/raw_data"), **meta):
        """META, the header files and the formats of @events, from this host's tracefs."""
        self.meta(**meta)
        self.tracefs_file("header_page")
        self.tracefs_file("header_event")
        for e in events:
            self.tracefs_file(e + "/format")

    def ready(self):
        self.send(READY)

    # -------------------------------------------------------------- data
    def page(self, ts, events, commit=None):
        """One sub-buffer: time stamp @ts, then @events as (delta_ns, payload)."""
        body = b""
        for delta, payload in events:
            payload += b"\0" * (-len(payload) % 4)
            words = len(payload) // 4
            if not 1 <= words <= 28 or delta >= 1 << 27:
                raise ValueError("event too long or delta too large for this builder")
            body += struct.pack("<I", words | delta << 5) + payload
        hdr = struct.pack("<Q", ts) + struct.pack("<q" if self.long_size == 8 else "<i",
                                                  len(body) if commit is None else commit)
        page = hdr + body
        if len(page) > self.subbuf_size:
            raise ValueError("page overflows the sub-buffer")
        return page + b"\0" * (self.subbuf_size - len(page))

    def data(self, cpu, pages):
        self.send(DATA, cpu, b"".join(pages))

    def marker(self, mtype, guest, seq, aux=0, pid=0):
        """An ftrace:raw_data sync marker record (doc/sync-probes.md)."""
        return record(event_id("ftrace", "raw_data"),
                      struct.pack("<IHHQQ", SYNC_MAGIC, mtype, guest, seq, aux), pid)

    def sched_switch(self, prev_comm=b"a", prev_pid=1, next_comm=b"b", next_pid=2, pid=0):
        return record(event_id("sched", "sched_switch"),
                      prev_comm.ljust(16, b"\0")[:16] + struct.pack("<iiq", prev_pid, 120, 0)
                      + next_comm.ljust(16, b"\0")[:16] + struct.pack("<ii", next_pid, 120), pid)

    def now_ns(self):
        """A time stamp in the host's trace clock when that is `local`/`mono`-like."""
        return time.clock_gettime_ns(time.CLOCK_MONOTONIC)

    # ------------------------------------------------------------- serve
    def answer(self, ftype, arg, payload):
        """The honest answer to one host frame; returns False at STOP."""
        if ftype == PING:
            self.pings.append(struct.unpack("<Q", payload)[0])
            self.send(PONG, 0, payload)
        elif ftype == HCALL:
            first, count = struct.unpack("<QI", payload)
            self.send(HCALL_DONE, 0, struct.pack("<QII", first, count, 0))
        elif ftype == STOP:
            self.stopped = True
            return False
        return True

    def end(self, lost=0, events=0):
        counts = {"cpu%d.lost" % c: 0 for c in range(self.ncpus)}
        counts["cpu0.lost"] = lost
        counts["lost_total"] = lost
        self.send(LOSS, 0, kv(counts))
        counts.update({"cpu%d.events" % c: 0 for c in range(self.ncpus)})
        counts["cpu0.events"] = events
        counts["events_total"] = events
        self.send(END, 0, kv(counts))

    def serve_until_stop(self, timeout=120, on_frame=None, end=True):
        """Answer the host until STOP (then LOSS + END unless end=False)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            f = self.recv(timeout=max(0.1, deadline - time.time()))
            if f is None:
                return False
            if on_frame and on_frame(self, *f):
                continue
            if not self.answer(*f):
                if end:
                    self.end()
                return True
        return False
