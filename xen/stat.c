// SPDX-License-Identifier: LGPL-2.1
/*
 * Xen analysis of a session, what `xenalyze --summary` gives: per domain and
 * vCPU the time spent in each runstate (every runstate change closes an
 * interval of the old state), HVM exits by reason timed from VMEXIT to the
 * next VMENTRY on the same physical CPU, and hypercalls and HVM handler
 * records counted.  Rows use the KVM stat's keys (vm, vcpu, reason).
 * Hypercalls are also counted per domain, in rows whose vcpu is "all"; a
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

struct xstat {
	struct tv_latency_table rows;	/* by (vm, vcpu, reason) */
	/* Per domain and vCPU (key dom << 16 | vcpu): the current runstate's start. */
	struct tv_exit_tracker runstate;
	/* Per physical CPU: the VMEXIT awaiting its VMENTRY, its row in ptr. */
	struct tv_exit_tracker pcpu;
	enum tv_kvm_isa isa;
	struct tv_kvm_stat *out;
};

static void dom_label(unsigned int dom, char *buf, size_t size)
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

	dom_label(dom, vm, sizeof(vm));
	/* 0xfffe: the domain's row over all its vCPUs */
	snprintf(vc, sizeof(vc), vcpu == 0xffff ? "-" : vcpu == 0xfffe ? "all" : "%u", vcpu);
	return tv_latency_row(&x->rows, vm, vc, reason);
}

static uint64_t field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

/* A runstate change closes the interval the vCPU spent in the old state. */
static int stat_runstate(struct xstat *x, const struct tv_event *ev)
{
	uint32_t dom = (uint32_t)field(ev, "domid"), vcpu = (uint32_t)field(ev, "vcpuid");
	uint64_t key = (uint64_t)(dom & 0xffff) << 16 | (vcpu & 0xffff);
	struct tv_exit_slot *s = tv_exit_tracker_slot(&x->runstate, key);
	struct tv_latency_acc *r;
	char reason[48];
	uint64_t ns;

	if (!s)
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
	tv_exit_tracker_exit(&x->runstate, key, ev->ts);
	return 0;
}

static int stat_vmexit(struct xstat *x, const struct tv_event *ev, bool entry)
{
	struct tv_exit_slot *p = tv_exit_tracker_slot(&x->pcpu, (uint64_t)(unsigned int)ev->cpu);
	uint64_t code = field(ev, "exit_reason"), ns;
	struct tv_latency_acc *row;
	const char *name;
	char reason[48];

	if (!p)
		return -ENOMEM;
	if (entry) {
		if (tv_exit_tracker_close(&x->pcpu, p, ev->ts, &ns) && tv_latency_add(p->ptr, ns))
			return -ENOMEM;
		return 0;
	}
	name = tv_kvm_exit_reason_name(x->isa, code);
	if (name)
		snprintf(reason, sizeof(reason), "vmexit:%s", name);
	else
		snprintf(reason, sizeof(reason), "vmexit:0x%llx", (unsigned long long)code);
	row = xrow_get(x, (unsigned int)field(ev, "cur_dom"), (unsigned int)field(ev, "cur_vcpu"),
		       reason);
	if (!row)
		return -ENOMEM;
	row->row.count++;
	/* an exit with no entry before the next exit is counted here */
	p = tv_exit_tracker_exit(&x->pcpu, (uint64_t)(unsigned int)ev->cpu, ev->ts);
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
static int stat_hypercall(struct xstat *x, const struct tv_event *ev, const char *kind)
{
	unsigned int op = (unsigned int)field(ev, "op"), dom = (unsigned int)field(ev, "cur_dom");
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
		return stat_count(x, ev, reason);
	}
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct tv_kvm_stat_row *x = a, *y = b;
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
};

int tv_xen_stat_pass_new(struct tv_reader *rd, struct tv_kvm_stat *out,
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
	p->x.out->unmatched_exits = p->x.pcpu.unmatched + p->x.pcpu.backwards;
	return tv_latency_table_finish(&p->x.rows, p->x.out, cmp_rows);
}

void tv_xen_stat_pass_free(struct tv_xen_stat_pass *p)
{
	if (!p)
		return;
	tv_latency_table_free(&p->x.rows);
	tv_exit_tracker_free(&p->x.runstate);
	tv_exit_tracker_free(&p->x.pcpu);
	free(p);
}

int tv_xen_stat_compute(const char *dir, struct tv_kvm_stat *out)
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
