#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Two pty pairs joined back to back: a stand-in for a virtio-serial port
in tests without a VM.  Prints "GUEST_PTY HOST_PTY" and relays bytes
between the two masters until killed.  The slaves are kept open (raw) so
that the masters never see EIO before the real ends open them."""
import os, select, sys, tty

ends = []
for _ in range(2):
    m, s = os.openpty()
    tty.setraw(s)
    ends.append((m, s, os.ttyname(s)))
print(ends[0][2], ends[1][2], flush=True)
sys.stdout.close()
a, b = ends[0][0], ends[1][0]
peer = {a: b, b: a}
while True:
    r, _, _ = select.select([a, b], [], [])
    for fd in r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            continue
        view = memoryview(data)
        while view:
            n = os.write(peer[fd], view)
            view = view[n:]
