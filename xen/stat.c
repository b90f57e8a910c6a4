// SPDX-License-Identifier: LGPL-2.1
/*
 * Xen analysis of a session, what `xenalyze --summary` gives: per domain and
 * vCPU the time spent in each runstate (every runstate change closes an
 * interval of the old state), HVM exits by reason timed from VMEXIT to the
 * next VMENTRY on the same physical CPU, and hypercalls and HVM handler
 * records counted.  Rows use the KVM stat's keys (vm, vcpu, reason).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "xen_trace.h"

#define MAX_VCPU_SLOTS 4096
#define MAX_PCPUS 1024

struct xrow {
	struct tv_kvm_stat_row row;
	uint64_t *lat;
	size_t nr_lat, cap;
};

struct vcpu_slot {
	uint32_t key;		/* dom << 16 | vcpu, + 1 so 0 is free */
	uint64_t since;
};

struct pcpu_exit {
	int pending;
	uint64_t ts;
	struct xrow *row;
};

struct xstat {
	struct xrow *rows;
	size_t nr, cap;
	struct vcpu_slot slots[MAX_VCPU_SLOTS];
	struct pcpu_exit pcpu[MAX_PCPUS];
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

static struct xrow *xrow_get(struct xstat *x, unsigned int dom, unsigned int vcpu,
			     const char *reason)
{
	char vm[80], vc[24];

	dom_label(dom, vm, sizeof(vm));
	snprintf(vc, sizeof(vc), vcpu == 0xffff ? "-" : "%u", vcpu);
	for (size_t i = x->nr; i-- > 0;)
		if (!strcmp(x->rows[i].row.reason, reason) && !strcmp(x->rows[i].row.vcpu, vc) &&
		    !strcmp(x->rows[i].row.vm, vm))
			return &x->rows[i];
	if (x->nr == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct xrow *r = realloc(x->rows, cap * sizeof(*r));

		if (!r)
			return NULL;
		x->rows = r;
		x->cap = cap;
	}
	memset(&x->rows[x->nr], 0, sizeof(x->rows[0]));
	snprintf(x->rows[x->nr].row.vm, sizeof(vm), "%s", vm);
	snprintf(x->rows[x->nr].row.vcpu, sizeof(vc), "%s", vc);
	snprintf(x->rows[x->nr].row.reason, sizeof(x->rows[0].row.reason), "%s", reason);
	return &x->rows[x->nr++];
}

static int xrow_add(struct xrow *r, uint64_t ns)
{
	int bucket = ns ? 64 - __builtin_clzll(ns) : 0;

	if (r->nr_lat == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		uint64_t *l = realloc(r->lat, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		r->lat = l;
		r->cap = cap;
	}
	r->lat[r->nr_lat++] = ns;
	r->row.has_latency = true;
	r->row.total_ns += ns;
	r->row.hist[bucket > 63 ? 63 : bucket]++;
	return 0;
}

static uint64_t field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

static struct vcpu_slot *slot_of(struct xstat *x, uint32_t dom, uint32_t vcpu)
{
	uint32_t key = (dom << 16 | vcpu) + 1;
	size_t i = key % MAX_VCPU_SLOTS;

	for (size_t n = 0; n < MAX_VCPU_SLOTS; n++, i = (i + 1) % MAX_VCPU_SLOTS) {
		if (x->slots[i].key == key)
			return &x->slots[i];
		if (!x->slots[i].key) {
			x->slots[i].key = key;
			x->slots[i].since = UINT64_MAX;
			return &x->slots[i];
		}
	}
	return NULL;
}

/* A runstate change closes the interval the vCPU spent in the old state. */
static int stat_runstate(struct xstat *x, const struct tv_event *ev)
{
	uint32_t dom = (uint32_t)field(ev, "domid"), vcpu = (uint32_t)field(ev, "vcpuid");
	struct vcpu_slot *s = slot_of(x, dom, vcpu);
	char reason[48];
	struct xrow *r;
	int ret = 0;

	if (!s)
		return 0;
	if (s->since != UINT64_MAX && ev->ts >= s->since) {
		snprintf(reason, sizeof(reason), "runstate:%s",
			 tv_xen_runstate_name((unsigned int)field(ev, "old_state")));
		r = xrow_get(x, dom, vcpu, reason);
		if (!r)
			return -ENOMEM;
		r->row.count++;
		ret = xrow_add(r, ev->ts - s->since);
	}
	s->since = ev->ts;
	return ret;
}

static int stat_vmexit(struct xstat *x, const struct tv_event *ev, bool entry)
{
	struct pcpu_exit *p = &x->pcpu[ev->cpu % MAX_PCPUS];
	uint64_t code = field(ev, "exit_reason");
	const char *name;
	char reason[48];

	if (entry) {
		if (p->pending && ev->ts >= p->ts && xrow_add(p->row, ev->ts - p->ts))
			return -ENOMEM;
		p->pending = 0;
		return 0;
	}
	if (p->pending)
		x->out->unmatched_exits++;
	name = tv_kvm_exit_reason_name(x->isa, code);
	if (name)
		snprintf(reason, sizeof(reason), "vmexit:%s", name);
	else
		snprintf(reason, sizeof(reason), "vmexit:0x%llx", (unsigned long long)code);
	p->row = xrow_get(x, (unsigned int)field(ev, "cur_dom"), (unsigned int)field(ev, "cur_vcpu"),
			  reason);
	if (!p->row)
		return -ENOMEM;
	p->row->row.count++;
	p->pending = 1;
	p->ts = ev->ts;
	return 0;
}

/* Counted only: hypercalls, HVM handlers, wake/sleep. */
static int stat_count(struct xstat *x, const struct tv_event *ev, const char *reason)
{
	struct xrow *r = xrow_get(x, (unsigned int)field(ev, "cur_dom"),
				  (unsigned int)field(ev, "cur_vcpu"), reason);

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

	switch (id) {
	case TV_XEN_EV_RUNSTATE:
		return stat_runstate(x, ev);
	case TV_XEN_EV_VMEXIT:
	case TV_XEN_EV_VMENTRY:
		return stat_vmexit(x, ev, id == TV_XEN_EV_VMENTRY);
	case TV_XEN_EV_HYPERCALL:
		n = tv_xen_hypercall_name((unsigned int)field(ev, "op"));
		if (n)
			snprintf(reason, sizeof(reason), "hypercall:%s", n);
		else
			snprintf(reason, sizeof(reason), "hypercall:%llu",
				 (unsigned long long)field(ev, "op"));
		return stat_count(x, ev, reason);
	case TV_XEN_EV_HVM_HANDLER:
		n = tv_xen_hvm_handler_name((uint32_t)field(ev, "xen_event"));
		snprintf(reason, sizeof(reason), "hvm:%s", n ? n : "other");
		return stat_count(x, ev, reason);
	case TV_XEN_EV_LOST:
		x->out->lost += field(ev, "lost");
		return 0;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
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

static uint64_t pct(const uint64_t *v, size_t n, unsigned int p)
{
	size_t rank = (n * p + 99) / 100;

	return v[rank ? rank - 1 : 0];
}

static int stat_finish(struct xstat *x)
{
	struct tv_kvm_stat *out = x->out;

	out->rows = calloc(x->nr ? x->nr : 1, sizeof(*out->rows));
	if (!out->rows)
		return -ENOMEM;
	for (size_t i = 0; i < x->nr; i++) {
		struct xrow *r = &x->rows[i];

		if (r->nr_lat) {
			qsort(r->lat, r->nr_lat, sizeof(*r->lat), cmp_u64);
			r->row.min_ns = r->lat[0];
			r->row.max_ns = r->lat[r->nr_lat - 1];
			r->row.p50_ns = pct(r->lat, r->nr_lat, 50);
			r->row.p99_ns = pct(r->lat, r->nr_lat, 99);
		}
		out->rows[i] = r->row;
	}
	out->nr_rows = x->nr;
	qsort(out->rows, out->nr_rows, sizeof(*out->rows), cmp_rows);
	return 0;
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

int tv_xen_stat_compute(const char *dir, struct tv_kvm_stat *out)
{
	struct xstat *x = calloc(1, sizeof(*x));
	struct tv_reader *rd = NULL;
	struct tv_event ev;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!x)
		return -ENOMEM;
	x->out = out;
	snprintf(out->mode, sizeof(out->mode), "xen");
	ret = tv_reader_open(dir, &rd);
	if (!ret)
		ret = find_xen_domain(rd, x);
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		ret = 0;
		if (!ev.format || strcmp(ev.format->system, "xen"))
			continue;
		out->events++;
		ret = stat_xen_event(x, &ev);
	}
	if (!ret)
		ret = stat_finish(x);
	for (size_t i = 0; i < x->nr; i++)
		free(x->rows[i].lat);
	free(x->rows);
	free(x);
	tv_reader_close(rd);
	return ret;
}
