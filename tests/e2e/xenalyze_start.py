# SPDX-License-Identifier: GPL-2.0
"""The exits xenalyze 4.17 cannot attribute at the start of a recording, for
the tests that compare stat's exit counts with xenalyze --summary.

Until a physical CPU's first scheduler record that takes a vCPU into or out
of running (a runstate change from or to running, or continue_running),
xenalyze does not know which vCPU runs there: it gives that CPU's records
to the vCPU of its "default domain" (xenalyze.c, sched_default_vcpu_
activate(); vcpu_start() ends it), which --summary prints only with
--show-default-domain-summary ("|-- Default domain --|").  The exit still
open at that record stays open on the default vCPU and is counted nowhere.
tracevisor knows the vCPU from the head of the CPU's records (the previous
vCPU of that first scheduler record, lib/reader/xen_stream.c), so it attributes
and times those exits.  Seen in the lab with three domUs, 0 records lost:
d1's first 30 exits on pCPU 0 (2.7 ms) in xenalyze's default domain, and
the interrupt exit open at d1v0's running -> runnable counted by stat only.

StartOfDay.event(e) takes every Xen event of `report --json` (each CPU's
records in their order); then
  closed[(dom, reason)]: exits paired before the CPU's first such record,
      in xenalyze's default domain;
  open[(dom, reason)]:   the exit open at that record, which stat times
      (closed later by its vCPU's VMENTRY or runnable) and xenalyze never.
stat's timed exits of (dom, reason) = xenalyze's + closed + open, exactly.
"""
import collections


class StartOfDay:
    def __init__(self):
        self.closed = collections.Counter()
        self.open = collections.Counter()
        self.known = set()       # CPUs whose running vCPU xenalyze knows
        self.pending = {}        # CPU -> (dom, vcpu, reason) of its open exit
        self.waiting = {}        # (dom, vcpu) -> reason: open for good in xenalyze

    def event(self, e):
        f, ev, cpu = e["fields"], e["event"], e["cpu"]
        if cpu not in self.known:
            if ev == "xen:xen_vmexit":
                self.pending[cpu] = ("d%d" % f["cur_dom"], f["cur_vcpu"], f["reason"])
                return
            if ev == "xen:xen_vmentry":
                if cpu in self.pending:
                    p = self.pending.pop(cpu)
                    self.closed[(p[0], p[2])] += 1
                return
            if ev == "xen:xen_continue_running" or (
                    ev == "xen:xen_runstate_change" and 0 in (f["old_state"], f["new_state"])):
                self.known.add(cpu)
                if cpu in self.pending:
                    p = self.pending.pop(cpu)
                    self.waiting[(p[0], p[1])] = p[2]
        if self.waiting:
            self.stat_closes(ev, f)

    def stat_closes(self, ev, f):
        """Whether xen/xen_stat.c times a waiting exit: its vCPU's VMENTRY, or the
        vCPU made runnable, before another exit."""
        if ev in ("xen:xen_vmentry", "xen:xen_vmexit"):
            k = ("d%d" % f["cur_dom"], f["cur_vcpu"])
        elif ev == "xen:xen_runstate_change" and f["new_state"] == 1:
            k = ("d%d" % f["domid"], f["vcpuid"])
        else:
            return
        reason = self.waiting.pop(k, None)
        if reason is not None and ev != "xen:xen_vmexit":
            self.open[(k[0], reason)] += 1
