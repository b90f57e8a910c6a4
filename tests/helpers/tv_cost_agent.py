# SPDX-License-Identifier: GPL-2.0
"""Fake guests for tests/host/hostile-cost.sh (issue #22, bounded cost).

    python3 tv_cost_agent.py MODE SOCKET

MODE:
  honest     describe, READY, one sched_switch page per second on CPU 0
  meta-spin  a traced process whose metadata is one ~4 MiB entry that never
             ends, then empty UST_META frames at 6 KB/s until STOP
  meta-mem   $COST_PROCS (256) traced processes, each with ~4 MiB of
             metadata (1 GiB)
  ncpus      META ncpus=1024, a page of data on every CPU, then one a
             second on CPU 1023
  ust-many   60 traced processes of one event and one sub-buffer each
             (a session of many small UST domains, for the readers)
  clock-back 10,000 pages on CPU 0, each starting 1 us before the one
             before it (its clock steps back 10,000 times)
  ust-threads a traced process on 2 CPUs whose records carry 5,000 thread
             ids, each on both CPUs (10,000 thread and CPU pairs)
Each answers PING and STOP (LOSS + END) as an agent does.
"""
import os
import select
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tv_fake_agent import *  # noqa: E402,F401,F403

MAX_FRAME = 1 << 20
UST_THREADS = 5000
HDR = "event 2 evil:spin\nname: spin\nID: 2\nformat:\n"
FIELD = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
# A whole entry first, in a frame of its own: the domain has a format and
# reads (a domain without one is another case of issue #22: quarantine).
TICK = ("event 1 demo:tick\nname: tick\nID: 1\nformat:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned short common_size;\toffset:2;\tsize:2;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\tfield:u64 n;\toffset:8;\tsize:8;\tsigned:0;\n\n"
        "print fmt: \"n=%llu\", REC->n\nend\n").encode()


def ust_proc(a, idx, pid, nr_bufs=1):
    a.send(UST_PROC, idx, kv({"pid": pid, "comm": "evil%d" % idx, "nr_bufs": nr_bufs,
                              "subbuf_size": 4096, "nr_subbufs": 2, "clock": "mono",
                              "mode": "discard", "per_thread": 0}))


def endless_meta(a, idx, total):
    """A whole entry, then one of @total bytes whose "end" line never comes."""
    a.send(UST_META, idx, TICK)
    text = (HDR + FIELD * ((total - len(HDR)) // len(FIELD))).encode()
    for off in range(0, len(text), MAX_FRAME):
        a.send(UST_META, idx, text[off:off + MAX_FRAME])


def pending(a, timeout):
    """Answer what the host sent within @timeout; False once STOP came (answered)."""
    r, _, _ = select.select([a.conn], [], [], timeout)
    if not r:
        return True
    f = a.recv(timeout=1)
    a.conn.settimeout(300)	# a slow host makes sends wait, not fail
    if f is None:
        raise SystemExit(0)
    if not a.answer(*f):
        a.end()
        return False
    return True


def main():
    mode, path = sys.argv[1], sys.argv[2]
    a = Agent(path)
    a.accept(timeout=60)
    a.conn.settimeout(300)
    a.describe(ncpus=1024 if mode == "ncpus" else 1)
    a.ready()
    t0 = a.now_ns()
    if mode == "meta-spin":
        ust_proc(a, 0, 4242)
        endless_meta(a, 0, (4 << 20) - 4096)
        empty = frame(UST_META, 0)
        period = len(empty) / 6000.0	# 6 KB/s of frames
        nxt = time.time()
        while True:
            if time.time() >= nxt:
                a.send_raw(empty)
                nxt += period
            if not pending(a, max(0, nxt - time.time())):
                return
    if mode == "meta-mem":
        for idx in range(int(os.environ.get("COST_PROCS", "256"))):
            ust_proc(a, idx, 5000 + idx)
            endless_meta(a, idx, (4 << 20) - 4096)
    if mode == "ust-many":
        for idx in range(60):
            ust_proc(a, idx, 6000 + idx)
            a.send(UST_META, idx, TICK)
            recs = b"".join(struct.pack("<QHHiQ", t0 + k * 1000, 1, 24, 6000 + idx, k)
                            for k in range(100))
            a.send(UST_DATA, idx << 16, recs + b"\0" * (4096 - len(recs)))
            a.send(UST_END, idx, kv({"status": "complete", "cpu0.lost": 0}))
    if mode == "ust-threads":
        ust_proc(a, 0, 7000, nr_bufs=2)
        a.send(UST_META, 0, TICK)
        per_page = 4096 // 24
        for cpu in range(2):
            recs = [struct.pack("<QHHiQ", t0 + k * 1000 + cpu, 1, 24, 10000 + k, k)
                    for k in range(UST_THREADS)]
            for off in range(0, len(recs), per_page):
                page = b"".join(recs[off:off + per_page])
                a.send(UST_DATA, cpu, page + b"\0" * (4096 - len(page)))
        a.send(UST_END, 0, kv({"status": "complete", "cpu0.lost": 0, "cpu1.lost": 0}))
    if mode == "clock-back":
        pages = [a.page(t0 - k * 1000, [(100, a.sched_switch(next_pid=k % 30000 + 1))])
                 for k in range(10000)]
        for off in range(0, len(pages), 64):
            a.data(0, pages[off:off + 64])
    if mode == "ncpus":
        for cpu in range(1024):
            a.data(cpu, [a.page(t0 + cpu, [(100, a.sched_switch(next_pid=cpu))])])
    k = 0
    while True:
        k += 1
        cpu = 1023 if mode == "ncpus" else 0
        a.data(cpu, [a.page(a.now_ns(), [(100, a.sched_switch(next_pid=k))])])
        deadline = time.time() + 1
        while time.time() < deadline:
            if not pending(a, deadline - time.time()):
                return


if __name__ == "__main__":
    main()
