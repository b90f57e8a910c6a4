# SPDX-License-Identifier: GPL-2.0
"""The two fake guests of tests/host/hostile-isolation.sh (issue #22, point 1).

python3 hostile_isolation.py CASE EVIL_SOCK GOOD_SOCK

GOOD is an honest guest: formats of sched_switch and raw_data, GOOD_PAGES
sub-buffers of GOOD_PER_PAGE sched_switch events each, every probe answered.
EVIL spoils its own domain the way CASE says:
  fmt        a format file of random bytes
  hp         a header_page of random bytes
  data       a sub-buffer of random bytes between two valid ones
  ust        a UST_PROC frame (no metadata) although START had no ust=
  ust-meta   with ust=: a traced process that sends no metadata
  long4      META long_size=4 with this host's 8-byte header_page and formats
  many-ust   with ust=: MANY_UST traced processes, each with valid metadata
Prints nothing; exits 0 when both agents saw the host to the end.
"""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from tv_fake_agent import (Agent, UST_PROC, UST_META, UST_END, kv)  # noqa: E402

GOOD_PAGES, GOOD_PER_PAGE, EVIL_PER_PAGE, MANY_UST = 3, 20, 10, 256
UST_DEMO = ("event 1 demo:work_begin\nname: work_begin\nID: 1\nformat:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:unsigned short common_size;\toffset:2;\tsize:2;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
            "\tfield:u32 thread;\toffset:8;\tsize:4;\tsigned:0;\n"
            "\tfield:u64 seq;\toffset:16;\tsize:8;\tsigned:0;\n\n"
            "print fmt: \"thread=%u seq=%llu\", REC->thread, REC->seq\nend\n").encode()


def pages(a, n, per, pid0):
    t = a.now_ns()
    return [a.page(t + i * 1000000, [(1000, a.sched_switch(prev_pid=pid0 + j, next_pid=pid0 + j + 1,
                                                           pid=pid0 + j)) for j in range(per)])
            for i in range(n)]


def ust_proc(a, idx, pid):
    a.send(UST_PROC, idx, kv({"pid": pid, "comm": "evil%d" % idx, "nr_bufs": 1,
                              "subbuf_size": 4096, "nr_subbufs": 2, "clock": "mono",
                              "mode": "discard", "per_thread": 0}))


def good(path, results):
    a = Agent(path)
    a.accept()
    a.describe()
    a.ready()
    a.data(0, pages(a, GOOD_PAGES, GOOD_PER_PAGE, 1000))
    results["good"] = a.serve_until_stop(timeout=60)
    a.close()


def evil(case, path, results):
    a = Agent(path)
    start = a.accept()
    if case == "long4":
        a.describe(long_size=4)
    else:
        a.describe()
    if case == "fmt":
        a.file("events/sched/evil/format", os.urandom(300))
    elif case == "hp":
        a.file("header_page", os.urandom(300))
    a.ready()
    if case == "data":
        good_pages = pages(a, 2, EVIL_PER_PAGE, 5000)
        a.data(0, [good_pages[0], os.urandom(a.subbuf_size), good_pages[1]])
    elif case in ("fmt", "hp", "long4"):
        a.data(0, pages(a, 1, EVIL_PER_PAGE, 5000))
    elif case == "ust":
        ust_proc(a, 0, 4242)
    elif case == "ust-meta":
        assert "ust" in start, "record passed no ust= to the guest"
        ust_proc(a, 0, 4242)
        a.send(UST_END, 0, kv({"status": "complete"}))
    elif case == "many-ust":
        for i in range(MANY_UST):
            ust_proc(a, i, 10000 + i)
            a.send(UST_META, i, UST_DEMO)
            a.send(UST_END, i, kv({"status": "complete"}))
    try:
        results["evil"] = a.serve_until_stop(timeout=60)
    except OSError:
        results["evil"] = False	# the host closed a channel it gave up on
    a.close()


def main():
    case, evil_sock, good_sock = sys.argv[1:4]
    results = {}
    threads = [threading.Thread(target=evil, args=(case, evil_sock, results)),
               threading.Thread(target=good, args=(good_sock, results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not results.get("good"):
        print("the honest fake guest did not see the host to STOP", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
