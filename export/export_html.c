// SPDX-License-Identifier: LGPL-2.1
/*
 * A session as one self-contained HTML page (export --format html): this
 * half reads the session once into lanes of items - intervals (a task on
 * a CPU between two sched_switch, a VM exit from kvm_exit to kvm_entry and
 * the guest run between them, a Xen vCPU's runstates and the domain vCPU
 * running on each physical CPU) and instants (every other event) - and
 * export/export_html_page.c writes them with the page.  Items are kept in
 * memory (16 bytes each) because what fits the page is only known at the
 * end: see hx_page_write() for the level of detail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exporters.h"
#include "xen_trace.h"
#include "export_html.h"

enum hx_dom_kind { HX_DOM_HOST, HX_DOM_GUEST, HX_DOM_XEN, HX_DOM_UST };

/* What an event format is to the timeline, found once per format. */
enum hx_cls { HX_EV_OTHER, HX_EV_SWITCH, HX_EV_KVM_EXIT, HX_EV_KVM_ENTRY, HX_EV_KVM_RUN };

struct hx_fmt {
	const struct tep_event *fmt;
	enum hx_cls cls;
	uint16_t str;		/* "system:name" */
};

struct hx_pass {
	struct hx_session *s;
	enum hx_dom_kind *dom_kind;
	struct hx_fmt *fmts;
	size_t nr_fmts, cap_fmts;
};

static uint64_t hx_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hx_str_hash(const char *p)
{
	uint64_t h = 1469598103934665603ULL;

	while (*p)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return h;
}

/* Rehash @tab (indexes + 1) to twice its size; @key_of gives an entry's hash. */
static int hx_rehash(uint32_t **tab, size_t *cap, size_t nr, uint64_t (*key_of)(void *, uint32_t),
		     void *ctx)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint32_t *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		size_t h = hx_hash(key_of(ctx, i)) & (ncap - 1);

		while (n[h])
			h = (h + 1) & (ncap - 1);
		n[h] = i + 1;
	}
	free(*tab);
	*tab = n;
	*cap = ncap;
	return 0;
}

static uint64_t str_key(void *ctx, uint32_t i)
{
	return hx_str_hash(((struct hx_session *)ctx)->strs[i]);
}

static uint64_t lane_key(void *ctx, uint32_t i)
{
	return ((struct hx_session *)ctx)->lanes[i].key;
}

/*
 * Whether domain @d may introduce one more label: the session's limit for
 * all, and for an untrusted domain its own share and the untrusted half.
 */
static bool hx_str_allowed(const struct hx_session *s, int d)
{
	if (s->nr_strs >= HX_MAX_STRS)
		return false;
	if (d < 0 || !s->loss[d].untrusted)
		return true;
	return s->loss[d].strs_new < HX_MAX_STRS_DOMAIN &&
	       s->strs_untrusted < HX_MAX_STRS_UNTRUSTED;
}

/* Count a label of domain @d (-1: the page's own) shown as "(other)". */
static uint16_t hx_str_fold(struct hx_session *s, int d)
{
	s->strs_folded++;
	if (d >= 0)
		s->loss[d].strs_folded++;
	return 0;
}

/*
 * The id of label @str, interned; a new label is charged to the domain of
 * @ev (NULL: the page's own), and past its limits (hx_str_allowed) it is
 * id 0 "(other)", counted for that domain.
 */
static uint16_t hx_intern(struct hx_session *s, const struct tv_event *ev, const char *str)
{
	int d = ev ? ev->domain_index : -1;
	size_t h;

	if (s->nr_strs * 2 >= s->str_hash_cap &&
	    hx_rehash(&s->str_hash, &s->str_hash_cap, s->nr_strs, str_key, s))
		return 0;
	h = hx_hash(hx_str_hash(str)) & (s->str_hash_cap - 1);
	for (; s->str_hash[h]; h = (h + 1) & (s->str_hash_cap - 1))
		if (!strcmp(s->strs[s->str_hash[h] - 1], str))
			return (uint16_t)(s->str_hash[h] - 1);
	if (!hx_str_allowed(s, d) ||
	    tv_array_grow(&s->strs, &s->cap_strs, s->nr_strs, sizeof(*s->strs), 256))
		return hx_str_fold(s, d);
	s->strs[s->nr_strs] = strdup(str);
	if (!s->strs[s->nr_strs])
		return hx_str_fold(s, d);
	s->str_hash[h] = (uint32_t)++s->nr_strs;
	if (d >= 0) {
		s->loss[d].strs_new++;
		s->strs_untrusted += s->loss[d].untrusted;
	}
	return (uint16_t)(s->nr_strs - 1);
}

/* The lane of @key, NULL when unknown. */
static struct hx_lane *hx_lane_find(struct hx_session *s, uint64_t key)
{
	if (!s->lane_hash_cap)
		return NULL;
	for (size_t h = hx_hash(key) & (s->lane_hash_cap - 1); s->lane_hash[h];
	     h = (h + 1) & (s->lane_hash_cap - 1))
		if (s->lanes[s->lane_hash[h] - 1].key == key)
			return &s->lanes[s->lane_hash[h] - 1];
	return NULL;
}

/* A new lane for @key (group and name set by the caller); NULL: past the limit. */
static struct hx_lane *hx_lane_add(struct hx_session *s, uint64_t key, enum hx_lane_kind kind,
				   int domain, int id)
{
	struct hx_lane *l;
	size_t h;

	if (s->nr_lanes >= HX_MAX_LANES ||
	    tv_array_grow(&s->lanes, &s->cap_lanes, s->nr_lanes, sizeof(*s->lanes), 64) ||
	    (s->nr_lanes * 2 >= s->lane_hash_cap &&
	     hx_rehash(&s->lane_hash, &s->lane_hash_cap, s->nr_lanes, lane_key, s))) {
		s->lanes_refused++;
		return NULL;
	}
	l = &s->lanes[s->nr_lanes];
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->kind = kind;
	l->domain = domain;
	l->id = id;
	h = hx_hash(key) & (s->lane_hash_cap - 1);
	while (s->lane_hash[h])
		h = (h + 1) & (s->lane_hash_cap - 1);
	s->lane_hash[h] = (uint32_t)++s->nr_lanes;
	return l;
}

static uint64_t hx_key(enum hx_lane_kind kind, int domain, uint64_t id)
{
	return (uint64_t)kind << 56 | (uint64_t)(domain & 0xff) << 48 | (id & 0xffffffffffffULL);
}

static int hx_item_add(struct hx_session *s, const struct hx_lane *l, uint64_t t0, int64_t dur,
		       uint16_t str)
{
	struct hx_item *it;

	if (tv_array_grow(&s->items, &s->cap_items, s->nr_items, sizeof(*s->items), 4096))
		return -ENOMEM;
	it = &s->items[s->nr_items++];
	it->t0 = t0;
	it->lane = (uint16_t)((l - s->lanes) | (dur < 0 ? 0x8000 : 0));
	it->str = str;
	if (dur < 0)
		it->dur = 0;
	else if (dur < (1LL << 31))
		it->dur = (uint32_t)dur;
	else
		it->dur = 0x80000000u | (uint32_t)((uint64_t)dur / 1000 > 0x7fffffff ? 0x7fffffff
						    : (uint64_t)dur / 1000);
	return 0;
}

/* Close @l's open interval at @ts (an item when it lasted >= 0 ns). */
static int hx_lane_close(struct hx_session *s, struct hx_lane *l, uint64_t ts)
{
	int state = l->open_state;

	l->open_state = 0;
	if (!state || ts < l->open_ts)
		return 0;
	return hx_item_add(s, l, l->open_ts, (int64_t)(ts - l->open_ts), l->open_str);
}

static void hx_lane_open(struct hx_lane *l, uint64_t ts, int state, uint16_t str)
{
	l->open_ts = ts;
	l->open_state = state;
	l->open_str = str;
}

/* A CPU's lane of a Linux domain (host or guest). */
static struct hx_lane *hx_cpu_lane(struct hx_pass *p, const struct tv_event *ev)
{
	struct hx_session *s = p->s;
	bool guest = p->dom_kind[ev->domain_index] == HX_DOM_GUEST;
	enum hx_lane_kind kind = guest ? HX_GCPU : HX_CPU;
	uint64_t key = hx_key(kind, ev->domain_index, (uint32_t)ev->cpu);
	struct hx_lane *l = hx_lane_find(s, key);

	if (l || !(l = hx_lane_add(s, key, kind, ev->domain_index, ev->cpu)))
		return l;
	snprintf(l->group, sizeof(l->group), "%s CPUs", ev->domain);
	snprintf(l->name, sizeof(l->name), "CPU %d", ev->cpu);
	if (guest && !strncmp(ev->domain, "guest:", 6))
		snprintf(l->vm, sizeof(l->vm), "%s", ev->domain + 6);
	return l;
}

static void hx_vcpu_name(struct hx_lane *l, int vcpu, int tid)
{
	l->id = vcpu;
	if (vcpu >= 0)
		snprintf(l->name, sizeof(l->name), "vCPU %d (tid %d)", vcpu, tid);
	else
		snprintf(l->name, sizeof(l->name), "vCPU thread %d", tid);
}

/* A vCPU thread's lane, in its VM's group. */
static struct hx_lane *hx_vcpu_lane(struct hx_pass *p, const struct tv_event *ev)
{
	const struct tv_domain_info *dom = ev->domain_info;
	uint64_t key = hx_key(HX_VCPU, ev->domain_index, (uint32_t)ev->pid);
	struct hx_lane *l = hx_lane_find(p->s, key);
	const struct tv_vcpu_thread *t;
	const char *comm;
	int vm_pid;

	if (l)
		return l;
	t = tv_vcpu_map_find(dom->vcpus, ev->pid);
	l = hx_lane_add(p->s, key, HX_VCPU, ev->domain_index, t && t->vcpu >= 0 ? t->vcpu : -1);
	if (!l)
		return NULL;
	vm_pid = dom->tgid_of(dom, ev->pid);
	comm = tep_data_comm_from_pid(dom->tep, vm_pid);
	snprintf(l->vm, sizeof(l->vm), "%s", t && t->vm_name[0] ? t->vm_name : comm ? comm : "?");
	snprintf(l->group, sizeof(l->group), "VM %s (pid %d)", l->vm, vm_pid);
	hx_vcpu_name(l, l->id, ev->pid);
	return l;
}

static struct hx_lane *hx_ust_lane(struct hx_pass *p, const struct tv_event *ev)
{
	const struct tv_domain_info *dom = ev->domain_info;
	uint64_t key = hx_key(HX_UST, ev->domain_index, (uint32_t)ev->pid);
	struct hx_lane *l = hx_lane_find(p->s, key);
	const char *comm;

	if (l || !(l = hx_lane_add(p->s, key, HX_UST, ev->domain_index, ev->pid)))
		return l;
	comm = tep_data_comm_from_pid(dom->tep, ev->pid);
	snprintf(l->group, sizeof(l->group), "%s: %s (pid %s)", ev->domain,
		 tv_meta_get(dom->meta, "comm") ?: "?", tv_meta_get(dom->meta, "pid") ?: "?");
	snprintf(l->name, sizeof(l->name), "%s (tid %d)", comm ? comm : "?", ev->pid);
	return l;
}

/* The classification of @ev's format, cached; NULL: -ENOMEM. */
static const struct hx_fmt *hx_fmt_of(struct hx_pass *p, const struct tv_event *ev)
{
	const struct tep_event *f = ev->format;
	struct hx_fmt *e;
	char name[128];

	for (size_t i = 0; i < p->nr_fmts; i++)
		if (p->fmts[i].fmt == f)
			return &p->fmts[i];
	if (tv_array_grow(&p->fmts, &p->cap_fmts, p->nr_fmts, sizeof(*p->fmts), 64))
		return NULL;
	e = &p->fmts[p->nr_fmts++];
	e->fmt = f;
	snprintf(name, sizeof(name), "%s:%s", f->system, f->name);
	e->str = hx_intern(p->s, ev, name);
	e->cls = HX_EV_OTHER;
	if (!strcmp(name, "sched:sched_switch"))
		e->cls = HX_EV_SWITCH;
	else if (!strcmp(name, "kvm:kvm_exit"))
		e->cls = HX_EV_KVM_EXIT;
	else if (!strcmp(name, "kvm:kvm_entry"))
		e->cls = HX_EV_KVM_ENTRY;
	else if (!strcmp(f->system, "kvm"))
		e->cls = HX_EV_KVM_RUN;
	return e;
}

/* "comm pid" of field @comm / @pid of @ev, interned. */
static uint16_t hx_task_str(struct hx_session *s, const struct tv_event *ev, const char *comm,
			    const char *pid)
{
	struct tep_format_field *f = tep_find_field(ev->format, comm);
	char buf[64] = "?";
	uint64_t v = 0;

	if (f && !(f->flags & TEP_FIELD_IS_DYNAMIC) && f->offset >= 0 && f->size > 0 && f->offset + f->size <= ev->record->size)
		snprintf(buf, sizeof(buf), "%.*s", (int)strnlen((const char *)ev->record->data + f->offset,
			 f->size > 32 ? 32 : f->size), (const char *)ev->record->data + f->offset);
	tv_event_field_u64(ev, pid, &v);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " %lld", (long long)(int32_t)v);
	return hx_intern(s, ev, buf);
}

/* sched_switch: the previous task's interval ends, the next one's begins. */
static int hx_switch(struct hx_pass *p, const struct tv_event *ev, struct hx_lane *l)
{
	int ret = hx_lane_close(p->s, l, ev->ts);

	hx_lane_open(l, ev->ts, 1, hx_task_str(p->s, ev, "next_comm", "next_pid"));
	return ret;
}

/* kvm_exit / kvm_entry: the vCPU's guest run and exit intervals (exit -> next entry). */
static int hx_kvm(struct hx_pass *p, const struct tv_event *ev, enum hx_cls cls)
{
	struct hx_lane *l = hx_vcpu_lane(p, ev);
	uint64_t reason = 0, isa = 0, vcpu = 0;
	char buf[32];
	int ret;

	if (!l)
		return 0;
	if (l->id < 0 && !tv_event_field_u64(ev, "vcpu_id", &vcpu) && vcpu < 4096)
		hx_vcpu_name(l, (int)vcpu, ev->pid);	/* not in the vcpus file: KVM says */
	if (cls == HX_EV_KVM_ENTRY) {
		ret = l->open_state == 2 ? hx_lane_close(p->s, l, ev->ts) : (l->open_state = 0);
		hx_lane_open(l, ev->ts, 1, hx_intern(p->s, ev, "in guest"));
		return ret;
	}
	ret = l->open_state == 1 ? hx_lane_close(p->s, l, ev->ts) : (l->open_state = 0);
	tv_event_field_u64(ev, "exit_reason", &reason);
	tv_event_field_u64(ev, "isa", &isa);
	tv_kvm_exit_reason_label((enum tv_kvm_isa)isa, reason, buf, sizeof(buf));	/* stat's names */
	hx_lane_open(l, ev->ts, 2, hx_intern(p->s, ev, buf));
	return ret;
}

/* A Linux domain's event (host or guest). */
static int hx_linux_event(struct hx_pass *p, const struct tv_event *ev, const struct hx_fmt *fm)
{
	struct hx_lane *l;

	if (fm->cls == HX_EV_KVM_EXIT || fm->cls == HX_EV_KVM_ENTRY)
		return hx_kvm(p, ev, fm->cls);
	if (fm->cls == HX_EV_KVM_RUN && tv_vcpu_map_find(ev->domain_info->vcpus, ev->pid))
		l = hx_vcpu_lane(p, ev);
	else
		l = hx_cpu_lane(p, ev);
	if (!l)
		return 0;
	if (fm->cls == HX_EV_SWITCH)
		return hx_switch(p, ev, l);
	return hx_item_add(p->s, l, ev->ts, -1, fm->str);
}

static uint64_t hx_field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

/*
 * The guest domain recorded for Xen domain @domid (its meta xen_domid,
 * written by record --guest xen:NAME): its NAME, so that the page finds
 * the guest CPU lanes of an exit's vCPU; "dN" when none was recorded.
 */
static void hx_xen_guest(struct hx_session *s, unsigned int domid, char *buf, size_t size)
{
	for (size_t d = 0; domid && d < tv_reader_nr_domains(s->rd); d++) {
		const struct tv_domain_info *di = tv_reader_domain(s->rd, d);
		const char *id = tv_meta_get(di->meta, "xen_domid");

		if (id && strtoul(id, NULL, 10) == domid && !strncmp(di->name, "guest:", 6)) {
			snprintf(buf, size, "%s", di->name + 6);
			return;
		}
	}
	snprintf(buf, size, "d%u", domid);
}

/* A Xen lane: a physical CPU, or a domain vCPU's runstates or HVM exits. */
static struct hx_lane *hx_xen_lane(struct hx_pass *p, const struct tv_event *ev,
				   enum hx_lane_kind kind, unsigned int domid, unsigned int vcpu)
{
	uint64_t id = kind == HX_PCPU ? (uint32_t)ev->cpu : (uint64_t)domid << 16 | vcpu;
	uint64_t key = hx_key(kind, ev->domain_index, id);
	struct hx_lane *l = hx_lane_find(p->s, key);

	if (l || !(l = hx_lane_add(p->s, key, kind, ev->domain_index, (int)vcpu)))
		return l;
	if (kind == HX_PCPU) {
		l->id = ev->cpu;
		snprintf(l->group, sizeof(l->group), "Xen pCPUs");
		snprintf(l->name, sizeof(l->name), "pCPU %d", ev->cpu);
		return l;
	}
	snprintf(l->group, sizeof(l->group), "Xen d%u vCPUs", domid);
	snprintf(l->name, sizeof(l->name), "d%uv%u %s", domid, vcpu,
		 kind == HX_XVCPU ? "runstate" : "exits");
	hx_xen_guest(p->s, domid, l->vm, sizeof(l->vm));
	return l;
}

/*
 * A runstate change: the vCPU's runstate lane changes interval, and the
 * physical CPU's lane shows the vCPU while it runs there (as in
 * xen/xen_stat.c, a preemption ends an open HVM exit).
 */
static int hx_xen_runstate(struct hx_pass *p, const struct tv_event *ev)
{
	unsigned int domid = (unsigned int)hx_field(ev, "domid") & 0xffff;
	unsigned int vcpu = (unsigned int)hx_field(ev, "vcpuid") & 0xffff;
	unsigned int old = (unsigned int)hx_field(ev, "old_state");
	unsigned int new = (unsigned int)hx_field(ev, "new_state");
	struct hx_lane *l, *pc = hx_xen_lane(p, ev, HX_PCPU, 0, 0);
	char buf[32];
	int ret = 0;

	if (domid == XT_DOMID_IDLE)
		return 0;
	snprintf(buf, sizeof(buf), "d%uv%u", domid, vcpu);
	if (pc && old == 0 && pc->open_state && !strcmp(p->s->strs[pc->open_str], buf))
		ret = hx_lane_close(p->s, pc, ev->ts);
	if (pc && new == 0) {
		ret = ret ?: hx_lane_close(p->s, pc, ev->ts);
		hx_lane_open(pc, ev->ts, 1, hx_intern(p->s, ev, buf));
	}
	l = hx_xen_lane(p, ev, HX_XEXIT, domid, vcpu);
	if (l && old == 0 && new != 2 && l->open_state == 2)
		ret = ret ?: hx_lane_close(p->s, l, ev->ts);
	l = hx_xen_lane(p, ev, HX_XVCPU, domid, vcpu);
	if (!l)
		return ret;
	ret = ret ?: hx_lane_close(p->s, l, ev->ts);
	hx_lane_open(l, ev->ts, 1, hx_intern(p->s, ev, tv_xen_runstate_name(new)));
	return ret;
}

/* HVM exits of a Xen vCPU, timed VMEXIT -> VMENTRY; a lost record ends them untimed. */
static int hx_xen_exit(struct hx_pass *p, const struct tv_event *ev)
{
	unsigned int domid = (unsigned int)hx_field(ev, "cur_dom") & 0xffff;
	unsigned int vcpu = (unsigned int)hx_field(ev, "cur_vcpu") & 0xffff;
	struct hx_lane *l = hx_xen_lane(p, ev, HX_XEXIT, domid, vcpu);
	char buf[32];

	if (!l)
		return 0;
	if (ev->format->id == TV_XEN_EV_VMENTRY)
		return l->open_state == 2 ? hx_lane_close(p->s, l, ev->ts) : 0;
	tv_kvm_exit_reason_label(p->s->xen_isa, hx_field(ev, "exit_reason"), buf, sizeof(buf));
	hx_lane_open(l, ev->ts, 2, hx_intern(p->s, ev, buf));
	return 0;
}

static int hx_xen_event(struct hx_pass *p, const struct tv_event *ev, const struct hx_fmt *fm)
{
	struct hx_lane *l;

	switch (ev->format->id) {
	case TV_XEN_EV_RUNSTATE:
		return hx_xen_runstate(p, ev);
	case TV_XEN_EV_VMEXIT:
	case TV_XEN_EV_VMENTRY:
		return hx_xen_exit(p, ev);
	case TV_XEN_EV_LOST:
		for (size_t i = 0; i < p->s->nr_lanes; i++)
			if (p->s->lanes[i].kind == HX_XEXIT)
				p->s->lanes[i].open_state = 0;
		p->s->loss[ev->domain_index].lost_flags++;
		break;
	}
	l = hx_xen_lane(p, ev, HX_PCPU, 0, 0);
	return l ? hx_item_add(p->s, l, ev->ts, -1, fm->str) : 0;
}

static int hx_event(struct hx_pass *p, const struct tv_event *ev)
{
	struct hx_session *s = p->s;
	const struct hx_fmt *fm = hx_fmt_of(p, ev);
	struct hx_lane *l;

	if (!fm)
		return -ENOMEM;
	if (!s->t_first)
		s->t_first = ev->ts;
	s->t_last = ev->ts;
	s->nr_events++;
	s->loss[ev->domain_index].events++;
	if (ev->missed_before > 0)
		s->loss[ev->domain_index].lost += (uint64_t)ev->missed_before;
	else if (ev->missed_before < 0)
		s->loss[ev->domain_index].lost_flags++;
	switch (p->dom_kind[ev->domain_index]) {
	case HX_DOM_UST:
		l = hx_ust_lane(p, ev);
		return l ? hx_item_add(s, l, ev->ts, -1, fm->str) : 0;
	case HX_DOM_XEN:
		return hx_xen_event(p, ev, fm);
	default:
		return hx_linux_event(p, ev, fm);
	}
}

static int hx_domains_classify(struct hx_pass *p)
{
	struct hx_session *s = p->s;
	size_t n = tv_reader_nr_domains(s->rd);

	p->dom_kind = calloc(n ?: 1, sizeof(*p->dom_kind));
	s->loss = calloc(n ?: 1, sizeof(*s->loss));
	if (!p->dom_kind || !s->loss)
		return -ENOMEM;
	for (size_t d = 0; d < n; d++) {
		const struct tv_domain_info *di = tv_reader_domain(s->rd, d);
		const char *kind = tv_meta_get(di->meta, "kind") ?: "";
		const char *isa = tv_meta_get(di->meta, "hvm_isa");
		const char *status = tv_meta_get(di->meta, "status");

		p->dom_kind[d] = !strcmp(kind, "ust") ? HX_DOM_UST
				 : !strcmp(kind, "xen-trace") ? HX_DOM_XEN
				 : !strcmp(di->name, "host") ? HX_DOM_HOST : HX_DOM_GUEST;
		if (p->dom_kind[d] == HX_DOM_XEN && isa)
			s->xen_isa = !strcmp(isa, "vmx") ? TV_KVM_ISA_VMX
				     : !strcmp(isa, "svm") ? TV_KVM_ISA_SVM : TV_KVM_ISA_UNKNOWN;
		s->loss[d].snapshot = status && !strcmp(status, "snapshot");
		/* a guest's or a traced process's labels must not crowd out the host's */
		s->loss[d].untrusted = p->dom_kind[d] == HX_DOM_GUEST || p->dom_kind[d] == HX_DOM_UST;
		/* a snapshot's processes say so; its host kernel ring, by how it froze */
		if (s->loss[d].snapshot || tv_meta_get(di->meta, "flight_freeze"))
			s->is_snapshot = true;
	}
	return 0;
}

/* Read every event of the session into @s's lanes and items. */
static int hx_collect(struct hx_session *s)
{
	struct hx_pass p = { .s = s };
	struct tv_event ev;
	int ret;

	ret = hx_domains_classify(&p);
	if (!ret)
		hx_intern(s, NULL, "(other)");	/* id 0: labels past the limit */
	while (!ret && (ret = tv_reader_next(s->rd, &ev)) > 0)
		ret = ev.format ? hx_event(&p, &ev) : 0;
	/* a snapshot froze every layer at once: the mark is the session's end */
	if (s->is_snapshot)
		s->snapshot_ts = s->t_last;
	free(p.dom_kind);
	free(p.fmts);
	return ret < 0 ? ret : 0;
}

static void hx_session_free(struct hx_session *s)
{
	for (size_t i = 0; i < s->nr_strs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->str_hash);
	free(s->lanes);
	free(s->lane_hash);
	free(s->items);
	free(s->loss);
}

int tv_export_html(struct tv_reader *rd, const char *session_dir, const char *out,
		   struct tv_export_stats *st)
{
	struct hx_session s = { .rd = rd, .dir = session_dir };
	int ret;

	ret = hx_collect(&s);
	if (!ret)
		ret = hx_page_write(&s, out, st);
	hx_session_free(&s);
	return ret;
}
