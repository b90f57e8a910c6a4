// SPDX-License-Identifier: LGPL-2.1
/*
 * Xen analysis of a session, what `xenalyze --summary` gives: per domain and
 * vCPU the time spent in each runstate (every runstate change closes an
 * interval of the old state), HVM exits by reason timed from VMEXIT to the
 * next VMENTRY of the same vCPU, or to the vCPU becoming runnable before it
 * (the time waiting for a CPU is not the exit's, as xenalyze counts it),
 * and hypercalls and HVM handler records counted.  Rows use the KVM stat's
 * keys (vm, vcpu, reason).
 * Hypercalls (PV: TRC_PV_HYPERCALL; HVM and PVH: TRC_HVM_VMMCALL, by rax)
 * are also counted per domain, in rows whose vcpu is "all"; a
 * multicall's entries (TRC_PV_HYPERCALL_SUBCALL) are "subcall:NAME" rows,
 * and a PV guest's other entries into Xen "pv:NAME" rows (page_fault...).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "xen_trace.h"
#include "exit_tracker.h"
#include "latency_table.h"
#include "xen_stat.h"
#include "tv_internal.h"

struct xstat {
	struct tv_latency_table rows;	/* by (vm, vcpu, reason) */
	/* Per domain and vCPU (key dom << 16 | vcpu): the current runstate's
	 * start, the state in label. */
	struct tv_exit_tracker runstate;
	/* Per vCPU (key dom << 16 | vcpu): the VMEXIT awaiting its VMENTRY,
	 * its row in ptr. */
	struct tv_exit_tracker vexit;
	enum tv_kvm_isa isa;
	struct tv_exit_stat *out;
	tv_exit_guest_fn guest_of;	/* stat --by guest-task, or NULL */
	void *guest_arg;
};

void tv_xen_stat_dom_label(unsigned int dom, char *buf, size_t size)
{
	if (dom == XT_DOMID_IDLE)
		snprintf(buf, size, "idle");
	else if (dom == 0xffff)
		snprintf(buf, size, "unknown");
	else
		snprintf(buf, size, "d%u", dom);
}

static struct tv_latency_acc *xrow_get(struct xstat *x, unsigned int dom, unsigned int vcpu,
				       const char *reason)
{
	char vm[80], vc[24];

	tv_xen_stat_dom_label(dom, vm, sizeof(vm));
	/* 0xfffe: the domain's row over all its vCPUs */
	snprintf(vc, sizeof(vc), vcpu == 0xffff ? "-" : vcpu == 0xfffe ? "all" : "%u", vcpu);
	return tv_latency_row(&x->rows, vm, vc, reason);
}

/* An exit's row: by the guest task its vCPU ran too, when asked. */
static struct tv_latency_acc *xrow_exit(struct xstat *x, const struct tv_event *ev, unsigned int dom,
					unsigned int vcpu, const char *reason)
{
	struct tv_exit_stat_row guest = { .guest_pid = -1 };
	char vm[80], vc[24];

	if (!x->guest_of)
		return xrow_get(x, dom, vcpu, reason);
	if (x->guest_of(x->guest_arg, ev, (int)vcpu, &guest))
		snprintf(guest.guest_task, sizeof(guest.guest_task), "?");
	tv_xen_stat_dom_label(dom, vm, sizeof(vm));
	snprintf(vc, sizeof(vc), "%u", vcpu);
	return tv_latency_row_guest(&x->rows, vm, vc, reason, &guest);
}

static uint64_t field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

/* The vCPU's open exit ends at @ts: timed into its row. */
static int close_exit(struct xstat *x, uint64_t key, uint64_t ts)
{
	struct tv_exit_slot *p = tv_exit_tracker_find(&x->vexit, key);
	uint64_t ns;

	if (tv_exit_tracker_close(&x->vexit, p, ts, &ns) && tv_latency_add(p->ptr, ns))
		return -ENOMEM;
	return 0;
}

static uint64_t vcpu_key(uint64_t dom, uint64_t vcpu)
{
	return (dom & 0xffff) << 16 | (vcpu & 0xffff);
}

/* A runstate change closes the interval the vCPU spent in the old state. */
static int stat_runstate(struct xstat *x, const struct tv_event *ev)
{
	uint32_t dom = (uint32_t)field(ev, "domid"), vcpu = (uint32_t)field(ev, "vcpuid");
	uint64_t key = vcpu_key(dom, vcpu);
	struct tv_exit_slot *s = tv_exit_tracker_slot(&x->runstate, key);
	struct tv_latency_acc *r;
	char reason[48];
	uint64_t ns;

	if (!s)
		return -ENOMEM;
	/*
	 * A vCPU made runnable in an exit (preempted, or woken from the HLT it
	 * blocked in): the exit ends there, the time waiting for a CPU is not
	 * its handling.  Exactly xenalyze's rule (sched_runstate_process():
	 * any change to runnable closes the open exit); going offline does not
	 * end it: an exit the vCPU never returns from (a domain shut down in
	 * it) is not timed.
	 */
	if (field(ev, "new_state") == 1 && close_exit(x, key, ev->ts))
		return -ENOMEM;
	if (tv_exit_tracker_close(&x->runstate, s, ev->ts, &ns)) {
		snprintf(reason, sizeof(reason), "runstate:%s",
			 tv_xen_runstate_name((unsigned int)field(ev, "old_state")));
		r = xrow_get(x, dom, vcpu, reason);
		if (!r)
			return -ENOMEM;
		r->row.count++;
		if (tv_latency_add(r, ns))
			return -ENOMEM;
	}
	s = tv_exit_tracker_exit(&x->runstate, key, ev->ts);
	if (!s)
		return -ENOMEM;
	s->label = (int)field(ev, "new_state");	/* for the lost records' rule */
	return 0;
}

/* Exits are kept per vCPU (the record's running vCPU): one that blocks in
 * an exit may enter again on another physical CPU. */
static int stat_vmexit(struct xstat *x, const struct tv_event *ev, bool entry)
{
	uint64_t code = field(ev, "exit_reason");
	uint64_t key = vcpu_key(field(ev, "cur_dom"), field(ev, "cur_vcpu"));
	struct tv_latency_acc *row;
	struct tv_exit_slot *p;
	const char *name;
	char reason[48];

	if (entry)
		return close_exit(x, key, ev->ts);
	name = tv_kvm_exit_reason_name(x->isa, code);
	if (name)
		snprintf(reason, sizeof(reason), "vmexit:%s", name);
	else
		snprintf(reason, sizeof(reason), "vmexit:0x%llx", (unsigned long long)code);
	row = xrow_exit(x, ev, (unsigned int)field(ev, "cur_dom"), (unsigned int)field(ev, "cur_vcpu"),
			reason);
	if (!row)
		return -ENOMEM;
	row->row.count++;
	/* an exit with no entry before the next exit is counted here */
	p = tv_exit_tracker_exit(&x->vexit, key, ev->ts);
	if (!p)
		return -ENOMEM;
	p->ptr = row;
	return 0;
}

/* Counted only: hypercalls, HVM handlers, wake/sleep. */
static int stat_count(struct xstat *x, const struct tv_event *ev, const char *reason)
{
	struct tv_latency_acc *r = xrow_get(x, (unsigned int)field(ev, "cur_dom"),
					    (unsigned int)field(ev, "cur_vcpu"), reason);

	if (!r)
		return -ENOMEM;
	r->row.count++;
	return 0;
}

/* One hypercall: its vCPU's row, and its domain's "all" row. */
static int stat_hypercall_op(struct xstat *x, const struct tv_event *ev, const char *kind,
			     unsigned int op)
{
	unsigned int dom = (unsigned int)field(ev, "cur_dom");
	const char *n = tv_xen_hypercall_name(op);
	struct tv_latency_acc *r;
	char reason[48];

	if (n)
		snprintf(reason, sizeof(reason), "%s:%s", kind, n);
	else
		snprintf(reason, sizeof(reason), "%s:%u", kind, op);
	if (stat_count(x, ev, reason))
		return -ENOMEM;
	if (strcmp(kind, "hypercall"))
		return 0;
	r = xrow_get(x, dom, 0xfffe, reason);
	if (!r)
		return -ENOMEM;
	r->row.count++;
	return 0;
}

static int stat_hypercall(struct xstat *x, const struct tv_event *ev, const char *kind)
{
	return stat_hypercall_op(x, ev, kind, (unsigned int)field(ev, "op"));
}

static int stat_xen_event(struct xstat *x, const struct tv_event *ev)
{
	int id = ev->format->id;
	char reason[48];
	const char *n;
	uint32_t xe;

	switch (id) {
	case TV_XEN_EV_RUNSTATE:
		return stat_runstate(x, ev);
	case TV_XEN_EV_VMEXIT:
	case TV_XEN_EV_VMENTRY:
		return stat_vmexit(x, ev, id == TV_XEN_EV_VMENTRY);
	case TV_XEN_EV_HYPERCALL:
		return stat_hypercall(x, ev, "hypercall");
	case TV_XEN_EV_SUBCALL:
		return stat_hypercall(x, ev, "subcall");
	case TV_XEN_EV_LOST:
		x->out->lost += field(ev, "lost");
		/*
		 * What was lost may hold the end of the exit open on the vCPU this
		 * CPU ran, and of those of vCPUs not running (a wake-up and its
		 * VMENTRY): they are dropped, untimed, as xenalyze drops the exits
		 * of vCPUs it puts in its "lost" state (measured: the same counts
		 * on a lab recording with 76k records lost, but for one exit).
		 */
		tv_exit_tracker_drop(&x->vexit, tv_exit_tracker_find(&x->vexit,
				     vcpu_key(field(ev, "domid"), field(ev, "vcpuid"))));
		for (size_t i = 0; i < x->vexit.cap; i++) {
			struct tv_exit_slot *r;

			if (!x->vexit.slots[i].key)
				continue;
			r = tv_exit_tracker_find(&x->runstate, x->vexit.slots[i].key - 1);
			if (r && r->label != 0)
				tv_exit_tracker_drop(&x->vexit, &x->vexit.slots[i]);
		}
		return 0;
	}
	/* the rest: table events and unnamed HVM handlers, by Xen event id */
	if (id != TV_XEN_EV_HVM_HANDLER && id < TV_XEN_EV_GEN_BASE)
		return 0;
	xe = (uint32_t)field(ev, "xen_event");
	if ((xe & ~XT_64_FLAG) == XT_PV_HYPERCALL_V1)
		return stat_hypercall(x, ev, "hypercall");
	/* PV guests' entries into Xen: page faults, traps, emulation, ptwr */
	if ((xe & 0x0ffff000u) == XT_PV_ENTRY) {
		snprintf(reason, sizeof(reason), "pv:%s", ev->format->name + 7);
		return stat_count(x, ev, reason);
	}
	/* every HVM handler record, named or not */
	if ((xe & 0x0ffff000u) == XT_HVM_HANDLER) {
		n = tv_xen_hvm_handler_name(xe);
		snprintf(reason, sizeof(reason), "hvm:%s", n ? n : "other");
		if (stat_count(x, ev, reason))
			return -ENOMEM;
		/* an HVM or PVH guest's hypercall: TRC_HVM_VMMCALL holds its rax */
		if (n && !strcmp(n, "vmmcall"))
			return stat_hypercall_op(x, ev, "hypercall", (unsigned int)field(ev, "rax"));
		return 0;
	}
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct tv_exit_stat_row *x = a, *y = b;
	int c = strcmp(x->vm, y->vm);

	if (c)
		return c;
	c = strcmp(x->vcpu, y->vcpu);
	if (c)
		return c;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->reason, y->reason);
}

static int find_xen_domain(struct tv_reader *rd, struct xstat *x)
{
	for (size_t d = 0; d < tv_reader_nr_domains(rd); d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);
		const char *kind = tv_meta_get(di->meta, "kind");
		const char *isa = tv_meta_get(di->meta, "hvm_isa");

		if (!kind || strcmp(kind, "xen-trace"))
			continue;
		x->isa = !isa ? TV_KVM_ISA_UNKNOWN : !strcmp(isa, "vmx") ? TV_KVM_ISA_VMX
					: !strcmp(isa, "svm") ? TV_KVM_ISA_SVM : TV_KVM_ISA_UNKNOWN;
		return 0;
	}
	return -ENOENT;
}

struct tv_xen_stat_pass {
	struct xstat x;
	uint64_t interval_events;	/* out->events when the interval began */
	uint64_t interval_lost;		/* out->lost then */
	uint64_t interval_unmatched;	/* unmatched + backwards then */
};

int tv_xen_stat_pass_new(struct tv_reader *rd, struct tv_exit_stat *out,
			 struct tv_xen_stat_pass **pass)
{
	struct tv_xen_stat_pass *p = calloc(1, sizeof(*p));
	int ret;

	memset(out, 0, sizeof(*out));
	if (!p)
		return -ENOMEM;
	p->x.out = out;
	snprintf(out->mode, sizeof(out->mode), "xen");
	ret = find_xen_domain(rd, &p->x);
	if (ret) {
		free(p);
		return ret;
	}
	*pass = p;
	return 0;
}

void tv_xen_stat_pass_set_guest(struct tv_xen_stat_pass *p, tv_exit_guest_fn fn, void *arg)
{
	p->x.guest_of = fn;
	p->x.guest_arg = arg;
}

int tv_xen_stat_pass_event(struct tv_xen_stat_pass *p, const struct tv_event *ev)
{
	if (!ev->format || strcmp(ev->format->system, "xen"))
		return 0;
	p->x.out->events++;
	return stat_xen_event(&p->x, ev);
}

int tv_xen_stat_pass_finish(struct tv_xen_stat_pass *p)
{
	/* Exits followed by another exit on their CPU before any entry; entries
	 * timestamped before their exit. */
	p->x.out->unmatched_exits = p->x.vexit.unmatched + p->x.vexit.backwards;
	return tv_latency_table_finish(&p->x.rows, p->x.out, cmp_rows);
}

/*
 * A new, empty table, into which the exits still open (their VMENTRY comes
 * in a later interval) move as empty rows of the same name, so that their
 * time is added where their entry falls, as kvm/kvm_stat.c's intervals do.
 */
static int xstat_new_interval(struct xstat *x)
{
	struct tv_latency_table fresh = { 0 };

	for (size_t i = 0; i < x->vexit.cap; i++) {
		struct tv_exit_slot *t = &x->vexit.slots[i];
		struct tv_latency_acc *old = t->ptr;

		if (!t->key)
			continue;
		if (!t->open || !old) {
			t->ptr = NULL;	/* its row goes with the old table */
			continue;
		}
		t->ptr = tv_latency_row(&fresh, old->row.vm, old->row.vcpu, old->row.reason);
		if (!t->ptr) {
			tv_latency_table_free(&fresh);
			return -ENOMEM;
		}
	}
	tv_latency_table_free(&x->rows);
	x->rows = fresh;
	return 0;
}

int tv_xen_stat_pass_interval(struct tv_xen_stat_pass *p, struct tv_exit_stat *out)
{
	struct tv_exit_stat *all = p->x.out;
	uint64_t unmatched = p->x.vexit.unmatched + p->x.vexit.backwards;
	int ret;

	memset(out, 0, sizeof(*out));
	snprintf(out->mode, sizeof(out->mode), "%s", all->mode);
	out->events = all->events - p->interval_events;
	out->lost = all->lost - p->interval_lost;
	out->unmatched_exits = unmatched - p->interval_unmatched;
	ret = tv_latency_table_finish(&p->x.rows, out, cmp_rows);
	if (!ret)
		ret = xstat_new_interval(&p->x);
	p->interval_events = all->events;
	p->interval_lost = all->lost;
	p->interval_unmatched = unmatched;
	if (ret) {	/* tv_exit_stat_free() is kvm/'s: the rows are all there is */
		free(out->rows);
		out->rows = NULL;
		out->nr_rows = 0;
	}
	return ret;
}

void tv_xen_stat_pass_free(struct tv_xen_stat_pass *p)
{
	if (!p)
		return;
	tv_latency_table_free(&p->x.rows);
	tv_exit_tracker_free(&p->x.runstate);
	tv_exit_tracker_free(&p->x.vexit);
	free(p);
}

int tv_xen_stat_compute(const char *dir, struct tv_exit_stat *out)
{
	struct tv_xen_stat_pass *p = NULL;
	struct tv_reader *rd = NULL;
	struct tv_event ev;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = tv_reader_open(dir, &rd);
	if (!ret)
		ret = tv_xen_stat_pass_new(rd, out, &p);
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0)
		ret = tv_xen_stat_pass_event(p, &ev);
	if (!ret)
		ret = tv_xen_stat_pass_finish(p);
	tv_xen_stat_pass_free(p);
	tv_reader_close(rd);
	return ret;
}
