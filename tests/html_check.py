#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Load an `export --format html` page in headless Chromium and check it.

usage: html_check.py PAGE.html STAT.json SHOTDIR [--expect-lanes KIND,...]
                     [--max-load-ms N] [--no-interact]

Drives Debian's chromium through the DevTools protocol over a pipe
(--remote-debugging-pipe: no port, no websocket library), from file://:
  - no console error, no uncaught exception, no dialog (an escaped name
    that was not escaped would run script);
  - the .stat-row elements (data-vm, data-vcpu, data-reason, data-count,
    data-p99-ns) equal the rows of `tracevisor stat --json`, one for one;
  - lanes of the kinds given exist (vcpu, gcpu, cpu, pcpu, xvcpu, ust);
  - a wheel zoom at an exit's place shrinks the view by the page's factor
    around that time, a drag pans it by the dragged pixels, and a click on
    the exit shows its details (reason, and for KVM the guest task line);
  - screenshots SHOTDIR/NAME-whole.png (the page), NAME-screen.png (its
    first 900 pixels), NAME-zoomed.png and NAME-zoomed-screen.png (after
    the zoom and the click).
Prints `html-check: ...` lines with the figures (load time) and exits 1
on the first failed check.
"""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print("html-check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Chromium:
    """A headless chromium driven over --remote-debugging-pipe (fds 3 and 4)."""

    def __init__(self):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            print("html-check: chromium is not installed (make deps)", file=sys.stderr)
            sys.exit(77)
        self.profile = tempfile.mkdtemp(prefix="tv-chromium-")
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # above 4, so that bash's dups to 3 and 4 cannot clobber them
        to_r, from_w = [self._high(fd) for fd in (to_r, from_w)]
        os.set_inheritable(to_r, True)
        os.set_inheritable(from_w, True)
        # the child sees our to_r as fd 3 (its input) and from_w as fd 4 (its output)
        cmd = [exe, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
               "--disable-gpu", "--no-first-run", "--no-default-browser-check",
               "--disable-extensions", "--disable-background-networking",
               "--allow-file-access-from-files", "--hide-scrollbars",
               "--user-data-dir=" + self.profile, "about:blank"]
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", 'exec 3<&"$0" 4>&"$1"; shift; exec "$@"', str(to_r), str(from_w)] + cmd,
            pass_fds=(to_r, from_w), stdout=subprocess.DEVNULL, stderr=None if os.environ.get("TV_HTML_DEBUG") else subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.w = os.fdopen(to_w, "wb", buffering=0)
        self.r = os.fdopen(from_r, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    @staticmethod
    def _high(fd):
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def _read_msg(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                fail("chromium did not answer in time")
            chunk = self.r.read(1 << 16)
            if not chunk:
                fail("chromium closed its pipe (crashed?)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        self.w.write(json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read_msg(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    fail("%s: %s" % (method, m["error"]))
                return m["result"]
            if "method" in m:
                self.events.append(m)

    def wait_event(self, name, timeout=60):
        deadline = time.time() + timeout
        for i, m in enumerate(self.events):
            if m["method"] == name:
                return self.events.pop(i)
        while True:
            m = self._read_msg(deadline)
            if m.get("method") == name:
                return m
            if "method" in m:
                self.events.append(m)

    def open_page(self, width, height):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(m)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            fail("evaluating %s: %s" % (expr[:60], r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def screenshot(self, path, height=6000):
        size = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        r = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                      "clip": {"x": 0, "y": 0, "width": size[0], "height": min(size[1], height),
                               "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def errors(self):
        out = []
        for m in self.events:
            p = m.get("params", {})
            if m["method"] == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
            elif m["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append("console.%s: %s" % (p["type"], json.dumps(p.get("args"))[:300]))
            elif m["method"] == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append("log %s: %s" % (p["entry"]["level"], p["entry"].get("text", "")[:300]))
            elif m["method"] == "Page.javascriptDialogOpening":
                out.append("dialog opened: " + p.get("message", ""))
        return out

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=10)
        except SystemExit:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def check_rows(cr, stat):
    rows = cr.eval("""[...document.querySelectorAll('.stat-row')].map(e => [e.dataset.vm, e.dataset.vcpu,
        e.dataset.reason, Number(e.dataset.count), e.dataset.p99Ns === undefined ? null : Number(e.dataset.p99Ns)])""")
    want = [[r["vm"], r["vcpu"], r["reason"], r["count"], r["p99_ns"]] for r in stat]
    if rows != want:
        for a, b in zip(rows, want):
            if a != b:
                fail("stat row differs: page %s, stat --json %s" % (a, b))
        fail("stat rows: page has %d, stat --json %d" % (len(rows), len(want)))
    print("html-check: %d stat rows equal stat --json (%d exits counted)" %
          (len(rows), sum(r[3] for r in rows)))


def lane_y(cr, lane):
    """The page y (CSS px) of a lane's middle and the canvas' left x."""
    return cr.eval("""(() => { const c = document.getElementById('timeline').getBoundingClientRect();
        return [c.left + window.scrollX, c.top + window.scrollY]; })()""")


def mouse(cr, typ, x, y, **kw):
    p = {"type": typ, "x": x, "y": y}
    p.update(kw)
    cr.call("Input.dispatchMouseEvent", p)


def interact(cr, name, shots):
    """Zoom with the wheel at an exit, pan by dragging, click the exit."""
    ex = cr.eval("""(() => { const tv = window.tracevisor;
        for (let i = 0; i < tv.lanes.length; i++) { const l = tv.lanes[i];
          if (l.kind !== 'vcpu' && l.kind !== 'xexit') continue;
          for (let k = 0; k < l.T.length; k++) { const s = tv.data.strs[l.St[k]];
            if (l.Du[k] > 0 && s !== 'in guest') return { lane: i, k, t: l.T[k], d: l.Du[k], label: s, kind: l.kind }; } }
        return null; })()""")
    if not ex:
        fail("no timed exit among the lanes")
    # A view of 8 exit durations around it, set through the page's own API,
    # then the real input events on the canvas.
    w = max(ex["d"] * 8, 2000)
    st = cr.eval("window.tracevisor.setView(%r, %r)" % (ex["t"] - w / 2, ex["t"] + w / 2))
    geo = cr.eval("""(() => { const c = document.getElementById('timeline'), r = c.getBoundingClientRect();
        let y = 22; const tv = window.tracevisor; let g = null;
        for (let i = 0; i < tv.lanes.length; i++) { if (tv.lanes[i].group !== g) { g = tv.lanes[i].group; y += 16; }
          if (i === %d) break; y += 18; }
        window.scrollTo(0, Math.max(0, r.top + window.scrollY + y - 200));
        const r2 = c.getBoundingClientRect();
        return { left: r2.left, top: r2.top, width: r2.width, laneY: r2.top + y + 9 }; })()""" % ex["lane"])
    label_w = 210
    px = (geo["width"] - label_w) / (st["t1"] - st["t0"])
    x = geo["left"] + label_w + (ex["t"] + ex["d"] / 2 - st["t0"]) * px
    y = geo["laneY"]
    before = cr.eval("window.tracevisor.state()")
    mouse(cr, "mouseMoved", x, y)
    mouse(cr, "mouseWheel", x, y, deltaX=0, deltaY=-100)
    after = cr.eval("window.tracevisor.state()")
    wb, wa = before["t1"] - before["t0"], after["t1"] - after["t0"]
    if not (abs(wa * 1.25 - wb) < wb * 0.01 or (before["t0"] == 0 and wa < wb)):
        fail("wheel zoom: view %.0f ns -> %.0f ns, expected / 1.25" % (wb, wa))
    c_before = ex["t"] + ex["d"] / 2
    # the time under the pointer stays under it
    px_a = (geo["width"] - label_w) / wa
    t_under = after["t0"] + (x - geo["left"] - label_w) / px_a
    if abs(t_under - c_before) > 2 / px_a + 1:
        fail("wheel zoom moved the time under the pointer: %.0f -> %.0f" % (c_before, t_under))
    print("html-check: wheel zoom %s: view %.0f -> %.0f ns around %s at %.0f ns" %
          (name, wb, wa, ex["label"], c_before))
    # drag 100 px to the left: the view moves later by 100 px worth of time
    mouse(cr, "mousePressed", x, y, button="left", clickCount=1)
    mouse(cr, "mouseMoved", x - 100, y, button="left", buttons=1)
    mouse(cr, "mouseReleased", x - 100, y, button="left", clickCount=1)
    panned = cr.eval("window.tracevisor.state()")
    shift = panned["t0"] - after["t0"]
    if abs(shift - 100 / px_a) > 1 / px_a + 1:
        fail("drag pan of 100 px moved the view by %.0f ns, expected %.0f" % (shift, 100 / px_a))
    print("html-check: drag pan of 100 px moved the view by %.0f ns" % shift)
    # back, and a click on the exit shows its details
    mouse(cr, "mousePressed", x - 100, y, button="left", clickCount=1)
    mouse(cr, "mouseMoved", x, y, button="left", buttons=1)
    mouse(cr, "mouseReleased", x, y, button="left", clickCount=1)
    mouse(cr, "mousePressed", x, y, button="left", clickCount=1)
    mouse(cr, "mouseReleased", x, y, button="left", clickCount=1)
    details = cr.eval("document.getElementById('details').textContent")
    if ex["label"] not in details or "around it" not in details:
        fail("click on the %s exit: details say %r" % (ex["label"], details[:200]))
    if ex["kind"] == "vcpu" and "guest task interrupted" not in details:
        fail("click on a KVM exit: no guest task line in %r" % details[:300])
    print("html-check: click on the exit: " + "; ".join(
        [details.split("\n")[1]] + [l for l in details.split("\n") if l.startswith("guest task")]))
    cr.eval("window.scrollTo(0, 0)")
    cr.screenshot(os.path.join(shots, name + "-zoomed.png"))
    cr.screenshot(os.path.join(shots, name + "-zoomed-screen.png"), height=900)


def main():
    args = sys.argv[1:]
    opts = {"--expect-lanes": "", "--max-load-ms": "0"}
    flags = set()
    pos = []
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        elif a == "--no-interact":
            flags.add(a)
        else:
            pos.append(a)
    if len(pos) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    page, stat_path, shots = pos
    with open(stat_path) as f:
        stat = json.load(f)
    os.makedirs(shots, exist_ok=True)
    name = os.path.splitext(os.path.basename(page))[0]
    cr = Chromium()
    try:
        cr.open_page(1400, 900)
        t0 = time.time()
        cr.call("Page.navigate", {"url": "file://" + os.path.abspath(page)})
        cr.wait_event("Page.loadEventFired", timeout=120)
        load_ms = (time.time() - t0) * 1000
        ready = cr.eval("typeof window.tracevisor === 'object' && document.getElementById('timeline').dataset.viewT1 !== undefined")
        if not ready:
            fail("the page did not draw its timeline")
        nav = cr.eval("(() => { const n = performance.getEntriesByType('navigation')[0]; return n ? n.loadEventEnd : -1; })()")
        print("html-check: %s loaded and drawn in %.0f ms (navigation to load event end: %.0f ms), %d bytes"
              % (name, load_ms, nav, os.path.getsize(page)))
        if int(opts["--max-load-ms"]) and load_ms > int(opts["--max-load-ms"]):
            fail("load took %.0f ms > %s ms" % (load_ms, opts["--max-load-ms"]))
        check_rows(cr, stat)
        kinds = cr.eval("window.tracevisor.lanes.map(l => l.kind)")
        for k in filter(None, opts["--expect-lanes"].split(",")):
            if k not in kinds:
                fail("no lane of kind %s (lanes: %s)" % (k, sorted(set(kinds))))
        print("html-check: lanes %s" % ", ".join("%s x%d" % (k, kinds.count(k)) for k in sorted(set(kinds))))
        cr.screenshot(os.path.join(shots, name + "-whole.png"))
        cr.screenshot(os.path.join(shots, name + "-screen.png"), height=900)	# the first screen
        if "--no-interact" not in flags:
            interact(cr, name, shots)
        errs = cr.errors()
        if errs:
            fail("console: " + "; ".join(errs))
        print("html-check: no console error; screenshots in " + shots)
    finally:
        cr.close()


if __name__ == "__main__":
    main()
