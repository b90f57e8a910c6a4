// SPDX-License-Identifier: LGPL-2.1
/*
 * Xen t_rec parsing and the synthesized "xen" event system.  Each Xen record
 * becomes one libtraceevent record whose layout is one of the structures
 * below; their format files are generated from the same descriptor table, so
 * the layout and the format can never disagree.  Every event carries the Xen
 * event id and the domain/vCPU running on the physical CPU at that moment
 * (Xen's HVM and PV records do not name it: it is learnt from the
 * scheduler's records, as xenalyze does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_trace.h"

struct xe_common {
	uint16_t common_type;
	uint8_t common_flags;
	uint8_t common_preempt_count;
	int32_t common_pid;
	uint32_t xen_event;
	uint16_t cur_dom;
	uint16_t cur_vcpu;
};

struct xe_runstate {
	struct xe_common c;
	uint16_t domid, vcpuid;
	uint8_t old_state, new_state;
};

struct xe_dom_vcpu {		/* continue_running, wake, sleep */
	struct xe_common c;
	uint32_t domid, vcpuid;
};

struct xe_switch {
	struct xe_common c;
	uint32_t prev_dom, prev_vcpu, next_dom, next_vcpu;
};

struct xe_vmexit {
	struct xe_common c;
	uint32_t exit_reason, nested;
	uint64_t rip;
	char reason[24];	/* VMX or SVM name, "" when the ISA is unknown */
};

struct xe_vmentry {
	struct xe_common c;
	uint32_t nested;
};

struct xe_hypercall {
	struct xe_common c;
	uint32_t op, args_present;	/* bit i: argument i was traced */
	uint64_t args[6];
};

struct xe_lost {
	struct xe_common c;
	uint32_t lost;
	uint16_t domid, vcpuid;
	uint64_t first_tsc;
};

struct xe_wrap {
	struct xe_common c;
	uint32_t bytes;
};

struct xe_data {		/* hvm handlers, guest records, anything else */
	struct xe_common c;
	uint32_t nr_data;
	uint32_t data[XT_EXTRA_MAX];
};

struct xe_guest {		/* HVMOP_xentrace records */
	struct xe_common c;
	uint32_t nr_data;
	uint32_t has_tsc;	/* 1 with our patch: placed on Xen's time line */
	uint32_t data[XT_EXTRA_MAX];
};

struct xe_tscale {		/* TRC_TRACE_TSCALE of the patched hypervisor */
	struct xe_common c;
	uint64_t stamp_tsc, stamp_system_time;
	uint32_t tsc_to_system_mul;
	int32_t tsc_shift;
};

struct xe_gen {			/* the table-driven events of xen_events.c */
	struct xe_common c;
	uint64_t v[TV_XEN_GEN_MAX_FIELDS];
};

struct field_desc {
	int id;
	const char *type;
	const char *name;
	unsigned int offset, size, count;
	const char *fmt;	/* printf conversion of one element */
};

#define F(id, st, type, name, fmt) \
	{ id, type, #name, offsetof(st, name), sizeof(((st *)0)->name), 1, fmt }
#define A(id, st, type, name, fmt) \
	{ id, type, #name, offsetof(st, name), sizeof(((st *)0)->name), \
	  sizeof(((st *)0)->name) / sizeof(((st *)0)->name[0]), fmt }

static const struct field_desc fields[] = {
	F(TV_XEN_EV_RUNSTATE, struct xe_runstate, "u16", domid, "%u"),
	F(TV_XEN_EV_RUNSTATE, struct xe_runstate, "u16", vcpuid, "%u"),
	F(TV_XEN_EV_RUNSTATE, struct xe_runstate, "u8", old_state, "%u"),
	F(TV_XEN_EV_RUNSTATE, struct xe_runstate, "u8", new_state, "%u"),
	F(TV_XEN_EV_CONTINUE, struct xe_dom_vcpu, "u32", domid, "%u"),
	F(TV_XEN_EV_CONTINUE, struct xe_dom_vcpu, "u32", vcpuid, "%u"),
	F(TV_XEN_EV_SWITCH, struct xe_switch, "u32", prev_dom, "%u"),
	F(TV_XEN_EV_SWITCH, struct xe_switch, "u32", prev_vcpu, "%u"),
	F(TV_XEN_EV_SWITCH, struct xe_switch, "u32", next_dom, "%u"),
	F(TV_XEN_EV_SWITCH, struct xe_switch, "u32", next_vcpu, "%u"),
	F(TV_XEN_EV_WAKE, struct xe_dom_vcpu, "u32", domid, "%u"),
	F(TV_XEN_EV_WAKE, struct xe_dom_vcpu, "u32", vcpuid, "%u"),
	F(TV_XEN_EV_SLEEP, struct xe_dom_vcpu, "u32", domid, "%u"),
	F(TV_XEN_EV_SLEEP, struct xe_dom_vcpu, "u32", vcpuid, "%u"),
	F(TV_XEN_EV_VMEXIT, struct xe_vmexit, "u32", exit_reason, "0x%x"),
	F(TV_XEN_EV_VMEXIT, struct xe_vmexit, "u32", nested, "%u"),
	F(TV_XEN_EV_VMEXIT, struct xe_vmexit, "u64", rip, "0x%llx"),
	A(TV_XEN_EV_VMEXIT, struct xe_vmexit, "char", reason, "%s"),
	F(TV_XEN_EV_VMENTRY, struct xe_vmentry, "u32", nested, "%u"),
	F(TV_XEN_EV_HVM_HANDLER, struct xe_data, "u32", nr_data, "%u"),
	A(TV_XEN_EV_HVM_HANDLER, struct xe_data, "u32", data, NULL),
	F(TV_XEN_EV_HYPERCALL, struct xe_hypercall, "u32", op, "%u"),
	F(TV_XEN_EV_HYPERCALL, struct xe_hypercall, "u32", args_present, "0x%x"),
	A(TV_XEN_EV_HYPERCALL, struct xe_hypercall, "u64", args, NULL),
	F(TV_XEN_EV_LOST, struct xe_lost, "u32", lost, "%u"),
	F(TV_XEN_EV_LOST, struct xe_lost, "u16", domid, "%u"),
	F(TV_XEN_EV_LOST, struct xe_lost, "u16", vcpuid, "%u"),
	F(TV_XEN_EV_LOST, struct xe_lost, "u64", first_tsc, "%llu"),
	F(TV_XEN_EV_WRAP, struct xe_wrap, "u32", bytes, "%u"),
	F(TV_XEN_EV_GUEST, struct xe_guest, "u32", nr_data, "%u"),
	F(TV_XEN_EV_GUEST, struct xe_guest, "u32", has_tsc, "%u"),
	A(TV_XEN_EV_GUEST, struct xe_guest, "u32", data, NULL),
	F(TV_XEN_EV_OTHER, struct xe_data, "u32", nr_data, "%u"),
	A(TV_XEN_EV_OTHER, struct xe_data, "u32", data, NULL),
	F(TV_XEN_EV_TSCALE, struct xe_tscale, "u64", stamp_tsc, "%llu"),
	F(TV_XEN_EV_TSCALE, struct xe_tscale, "u64", stamp_system_time, "%llu"),
	F(TV_XEN_EV_TSCALE, struct xe_tscale, "u32", tsc_to_system_mul, "%u"),
	F(TV_XEN_EV_TSCALE, struct xe_tscale, "s32", tsc_shift, "%d"),
	F(TV_XEN_EV_SUBCALL, struct xe_hypercall, "u32", op, "%u"),
	F(TV_XEN_EV_SUBCALL, struct xe_hypercall, "u32", args_present, "0x%x"),
	A(TV_XEN_EV_SUBCALL, struct xe_hypercall, "u64", args, NULL),
};

static const struct {
	const char *name;
	unsigned int size;
} events[TV_XEN_EV_FIXED_COUNT] = {
	[TV_XEN_EV_RUNSTATE] = { "xen_runstate_change", sizeof(struct xe_runstate) },
	[TV_XEN_EV_CONTINUE] = { "xen_continue_running", sizeof(struct xe_dom_vcpu) },
	[TV_XEN_EV_SWITCH] = { "xen_sched_switch", sizeof(struct xe_switch) },
	[TV_XEN_EV_WAKE] = { "xen_sched_wake", sizeof(struct xe_dom_vcpu) },
	[TV_XEN_EV_SLEEP] = { "xen_sched_sleep", sizeof(struct xe_dom_vcpu) },
	[TV_XEN_EV_VMEXIT] = { "xen_vmexit", sizeof(struct xe_vmexit) },
	[TV_XEN_EV_VMENTRY] = { "xen_vmentry", sizeof(struct xe_vmentry) },
	[TV_XEN_EV_HVM_HANDLER] = { "xen_hvm_handler", sizeof(struct xe_data) },
	[TV_XEN_EV_HYPERCALL] = { "xen_hypercall", sizeof(struct xe_hypercall) },
	[TV_XEN_EV_LOST] = { "xen_lost_records", sizeof(struct xe_lost) },
	[TV_XEN_EV_WRAP] = { "xen_trace_wrap", sizeof(struct xe_wrap) },
	[TV_XEN_EV_GUEST] = { "xen_guest", sizeof(struct xe_guest) },
	[TV_XEN_EV_OTHER] = { "xen_other", sizeof(struct xe_data) },
	[TV_XEN_EV_TSCALE] = { "xen_tscale", sizeof(struct xe_tscale) },
	[TV_XEN_EV_SUBCALL] = { "xen_hypercall_subcall", sizeof(struct xe_hypercall) },
};

_Static_assert(sizeof(struct xe_hypercall) <= TV_XEN_EVENT_MAX, "event buffer too small");
_Static_assert(sizeof(struct xe_gen) <= TV_XEN_EVENT_MAX, "event buffer too small");
_Static_assert(sizeof(struct xe_vmexit) <= TV_XEN_EVENT_MAX, "event buffer too small");

int tv_xen_event_count(void)
{
	return TV_XEN_EV_GEN_BASE + tv_xen_gen_count();
}

const char *tv_xen_event_name(int id)
{
	const struct tv_xen_gen_event *g = tv_xen_gen_event(id);

	if (g)
		return g->name;
	return id > 0 && id < TV_XEN_EV_FIXED_COUNT ? events[id].name : NULL;
}

/* Bytes of the synthesized record of @id: a table event only has its fields. */
static unsigned int event_size(int id)
{
	const struct tv_xen_gen_event *g = tv_xen_gen_event(id);
	unsigned int n = 0;

	if (!g)
		return events[id].size;
	while (n < TV_XEN_GEN_MAX_FIELDS && g->fields[n])
		n++;
	return (unsigned int)offsetof(struct xe_gen, v) + 8 * n;
}

unsigned int tv_xen_rec_parse(const unsigned char *p, size_t avail, struct tv_xen_rec *rec)
{
	uint32_t hdr;
	unsigned int size, off = 4;

	if (avail < 4)
		return 0;
	memcpy(&hdr, p, 4);
	rec->event = hdr & 0x0fffffffu;
	rec->nr_extra = (hdr >> 28) & 7;
	rec->has_tsc = hdr >> 31;
	size = 4 + (rec->has_tsc ? 8 : 0) + 4 * rec->nr_extra;
	if (avail < size)
		return 0;
	rec->tsc = 0;
	if (rec->has_tsc) {
		uint32_t lo, hi;

		memcpy(&lo, p + 4, 4);
		memcpy(&hi, p + 8, 4);
		rec->tsc = (uint64_t)hi << 32 | lo;
		off = 12;
	}
	memset(rec->extra, 0, sizeof(rec->extra));
	memcpy(rec->extra, p + off, 4 * rec->nr_extra);
	rec->size = size;
	return size;
}

int tv_xen_event_of(uint32_t ev)
{
	int id;

	/* Runstate changes carry the old and new states in bits 4-11. */
	if ((ev & ~0xff0u) == XT_SCHED_RUNSTATE)
		return TV_XEN_EV_RUNSTATE;
	switch (ev) {
	case XT_SCHED_CONTINUE:
		return TV_XEN_EV_CONTINUE;
	case XT_SCHED_SWITCH:
		return TV_XEN_EV_SWITCH;
	case XT_SCHED_WAKE:
		return TV_XEN_EV_WAKE;
	case XT_SCHED_SLEEP:
		return TV_XEN_EV_SLEEP;
	case XT_PV_HYPERCALL_V2:
		return TV_XEN_EV_HYPERCALL;
	case XT_LOST_RECORDS:
		return TV_XEN_EV_LOST;
	case XT_WRAP_BUFFER:
		return TV_XEN_EV_WRAP;
	case XT_TSCALE:
		return TV_XEN_EV_TSCALE;
	case XT_PV_HYPERCALL_SUBCALL:
		return TV_XEN_EV_SUBCALL;
	}
	switch (ev & ~XT_HVM_NESTEDFLAG) {
	case XT_HVM_VMEXIT:
	case XT_HVM_VMEXIT64:
		return TV_XEN_EV_VMEXIT;
	case XT_HVM_VMENTRY:
		return TV_XEN_EV_VMENTRY;
	}
	id = tv_xen_gen_event_of(ev);
	if (id > 0)
		return id;
	/* a handler this table does not know: still named by its class */
	if ((ev & 0x0ffff000u) == XT_HVM_HANDLER)
		return TV_XEN_EV_HVM_HANDLER;
	if ((ev & 0x0fff0000u) == (XT_GUEST & 0x0fff0000u))
		return TV_XEN_EV_GUEST;
	return TV_XEN_EV_OTHER;
}

void tv_xen_cpu_state_init(struct tv_xen_cpu_state *cs)
{
	memset(cs, 0, sizeof(*cs));
	cs->cur_dom = 0xffff;
	cs->cur_vcpu = 0xffff;
}

/* TRC_PV_HYPERCALL_V2: op in bits 0-19, 2 bits per argument above. */
static void fill_hypercall(struct xe_hypercall *h, const struct tv_xen_rec *rec)
{
	uint32_t word = rec->extra[0];
	unsigned int next = 1;

	h->op = word & ~XT_HYPERCALL_ARG_MASK;
	for (unsigned int i = 0; i < 6; i++) {
		unsigned int kind = (word >> (20 + 2 * i)) & 3;

		if (kind == 1 && next < rec->nr_extra) {
			h->args[i] = rec->extra[next++];
			h->args_present |= 1u << i;
		} else if (kind == 2 && next + 1 < rec->nr_extra) {
			h->args[i] = rec->extra[next] | (uint64_t)rec->extra[next + 1] << 32;
			next += 2;
			h->args_present |= 1u << i;
		}
	}
}

static void fill_data(struct xe_data *d, const struct tv_xen_rec *rec)
{
	d->nr_data = rec->nr_extra;
	memcpy(d->data, rec->extra, sizeof(d->data));
}

/* Update the running vCPU of this physical CPU from scheduler records. */
static void track_running(struct tv_xen_cpu_state *cs, int id, const struct tv_xen_rec *rec)
{
	switch (id) {
	case TV_XEN_EV_RUNSTATE:
		if (((rec->event >> 4) & 0xf) != 0)
			break;
		/* X -> running names the vCPU now running here */
		__attribute__((fallthrough));
	case TV_XEN_EV_CONTINUE:
		cs->cur_dom = (uint16_t)(rec->extra[0] >> 16);
		cs->cur_vcpu = (uint16_t)rec->extra[0];
		break;
	case TV_XEN_EV_SWITCH:
		cs->cur_dom = (uint16_t)rec->extra[2];
		cs->cur_vcpu = (uint16_t)rec->extra[3];
		break;
	case TV_XEN_EV_LOST:
		/* Xen writes it as the current vCPU's first record after the
		 * loss: whatever switches were lost, this one runs now. */
		cs->cur_dom = (uint16_t)rec->extra[1];
		cs->cur_vcpu = (uint16_t)(rec->extra[1] >> 16);
		break;
	}
}

int tv_xen_rec_prev_running(const struct tv_xen_rec *rec, uint16_t *dom, uint16_t *vcpu)
{
	uint32_t ev = rec->event;

	if ((ev & ~0xff0u) == XT_SCHED_RUNSTATE && ((ev >> 8) & 0xf) == 0 &&
	    ((ev >> 4) & 0xf) != 0 && rec->nr_extra >= 1) {
		/* running -> X is written on the CPU the vCPU ran on */
		*dom = (uint16_t)(rec->extra[0] >> 16);
		*vcpu = (uint16_t)rec->extra[0];
		return 1;
	}
	if (ev == XT_SCHED_CONTINUE && rec->nr_extra >= 1) {
		*dom = (uint16_t)(rec->extra[0] >> 16);
		*vcpu = (uint16_t)rec->extra[0];
		return 1;
	}
	if ((ev == XT_SCHED_SWITCH || ev == XT_SCHED_SWITCH_INFPREV) && rec->nr_extra >= 2) {
		*dom = (uint16_t)rec->extra[0];
		*vcpu = (uint16_t)rec->extra[1];
		return 1;
	}
	return ev == XT_LOST_RECORDS ? -1 : 0;
}

static void exit_reason_name(struct xe_vmexit *v, unsigned int isa)
{
	const char *name = isa ? tv_kvm_exit_reason_name((enum tv_kvm_isa)isa, v->exit_reason) : NULL;

	if (name)
		snprintf(v->reason, sizeof(v->reason), "%s", name);
}

static void fill_specific(unsigned char *out, int id, const struct tv_xen_rec *rec,
			  unsigned int isa)
{
	const uint32_t *x = rec->extra;

	switch (id) {
	case TV_XEN_EV_RUNSTATE: {
		struct xe_runstate *r = (struct xe_runstate *)out;

		r->domid = (uint16_t)(x[0] >> 16);
		r->vcpuid = (uint16_t)x[0];
		r->old_state = (rec->event >> 8) & 0xf;
		r->new_state = (rec->event >> 4) & 0xf;
		break;
	}
	case TV_XEN_EV_CONTINUE:
		((struct xe_dom_vcpu *)out)->domid = x[0] >> 16;
		((struct xe_dom_vcpu *)out)->vcpuid = x[0] & 0xffff;
		break;
	case TV_XEN_EV_WAKE:
	case TV_XEN_EV_SLEEP:
		((struct xe_dom_vcpu *)out)->domid = x[0];
		((struct xe_dom_vcpu *)out)->vcpuid = x[1];
		break;
	case TV_XEN_EV_SWITCH:
		memcpy(&((struct xe_switch *)out)->prev_dom, x, 16);
		break;
	case TV_XEN_EV_VMEXIT: {
		struct xe_vmexit *v = (struct xe_vmexit *)out;

		v->exit_reason = x[0];
		v->nested = !!(rec->event & XT_HVM_NESTEDFLAG);
		v->rip = x[1] | ((rec->event & XT_64_FLAG) ? (uint64_t)x[2] << 32 : 0);
		exit_reason_name(v, isa);
		break;
	}
	case TV_XEN_EV_VMENTRY:
		((struct xe_vmentry *)out)->nested = !!(rec->event & XT_HVM_NESTEDFLAG);
		break;
	case TV_XEN_EV_HYPERCALL:
	case TV_XEN_EV_SUBCALL:
		fill_hypercall((struct xe_hypercall *)out, rec);
		break;
	case TV_XEN_EV_LOST: {
		struct xe_lost *l = (struct xe_lost *)out;

		l->lost = x[0];
		l->domid = (uint16_t)x[1];
		l->vcpuid = (uint16_t)(x[1] >> 16);
		l->first_tsc = x[2] | (uint64_t)x[3] << 32;
		break;
	}
	case TV_XEN_EV_WRAP:
		((struct xe_wrap *)out)->bytes = rec->size;
		break;
	case TV_XEN_EV_GUEST: {
		struct xe_guest *g = (struct xe_guest *)out;

		g->nr_data = rec->nr_extra;
		g->has_tsc = rec->has_tsc;
		memcpy(g->data, rec->extra, sizeof(g->data));
		break;
	}
	case TV_XEN_EV_TSCALE: {
		struct xe_tscale *t = (struct xe_tscale *)out;

		t->stamp_tsc = x[0] | (uint64_t)x[1] << 32;
		t->stamp_system_time = x[2] | (uint64_t)x[3] << 32;
		t->tsc_to_system_mul = x[4];
		t->tsc_shift = (int32_t)x[5];
		break;
	}
	default:
		if (id >= TV_XEN_EV_GEN_BASE)
			tv_xen_gen_fill(((struct xe_gen *)out)->v, rec);
		else
			fill_data((struct xe_data *)out, rec);
	}
}

unsigned int tv_xen_rec_to_event(struct tv_xen_cpu_state *cs, const struct tv_xen_rec *rec,
				 unsigned char *out, uint64_t *tsc)
{
	struct xe_common *c = (struct xe_common *)out;
	unsigned int size;
	int id;

	if (rec->event == XT_CPU_CHANGE)
		return 0;
	/* Records without a TSC (HVM handlers) happened at the previous one's. */
	if (rec->has_tsc) {
		cs->last_tsc = rec->tsc;
		cs->have_tsc = true;
	}
	*tsc = cs->last_tsc;
	id = tv_xen_event_of(rec->event);
	size = event_size(id);
	memset(out, 0, size);
	c->common_type = (uint16_t)id;
	c->xen_event = rec->event;
	fill_specific(out, id, rec, cs->isa);
	track_running(cs, id, rec);
	/* The switch record's vCPU is the one now running: report it. */
	c->cur_dom = cs->cur_dom;
	c->cur_vcpu = cs->cur_vcpu;
	return size;
}

uint64_t tv_xen_tsc_to_ns(uint64_t tsc, uint64_t khz)
{
	if (!khz)
		return tsc;
	return (uint64_t)((unsigned __int128)tsc * 1000000u / khz);
}

uint64_t tv_xen_tsc_to_stime(uint64_t tsc, uint64_t tsc0, uint64_t stime0,
			     uint32_t mul, int8_t shift)
{
	/* Xen's scale_delta(): shift, then a 32.32 fixed-point multiply. */
	uint64_t delta = tsc - tsc0;

	if (tsc < tsc0)
		return stime0 - tv_xen_tsc_to_stime(tsc0, tsc, 0, mul, shift);
	if (shift < 0)
		delta >>= -shift;
	else
		delta <<= shift;
	return stime0 + (uint64_t)(((unsigned __int128)delta * mul) >> 32);
}

int tv_xen_ring_window(uint32_t cons, uint32_t prod, const unsigned char *data,
		       uint32_t data_size, struct tv_xen_piece piece[2], uint32_t *new_cons)
{
	uint32_t start, end;

	/* cons and prod run modulo 2 * data_size (public/trace.h). */
	if (data_size == 0 || cons >= 2 * data_size || prod >= 2 * data_size ||
	    (cons & 3) || (prod & 3))
		return -EBADMSG;
	*new_cons = prod;
	if (cons == prod)
		return 0;
	start = cons % data_size;
	end = prod % data_size;
	piece[0].data = data + start;
	if (end > start) {
		piece[0].len = end - start;
		return 1;
	}
	/* Wrapped, or exactly full (start == end with cons != prod). */
	piece[0].len = data_size - start;
	piece[1].data = data;
	piece[1].len = end;
	return end ? 2 : 1;
}

long tv_xen_ring_copy(uint32_t cons, uint32_t prod, const unsigned char *data,
		      uint32_t data_size, unsigned char *out, uint32_t *new_cons)
{
	struct tv_xen_piece piece[2];
	int n = tv_xen_ring_window(cons, prod, data, data_size, piece, new_cons);
	long len = 0;

	for (int i = 0; i < n; i++) {
		memcpy(out + len, piece[i].data, piece[i].len);
		len += piece[i].len;
	}
	return n < 0 ? n : len;
}

int tv_xen_tinfo_cpu(const void *tinfo, size_t size, int cpu, const uint32_t **mfns)
{
	const uint16_t *t = tinfo;
	size_t off;

	if (size < 4 || (size_t)(cpu + 2) * 2 > size)
		return -EBADMSG;
	off = t[1 + cpu];	/* in u32 words from the start of t_info */
	if (!off)
		return 0;
	if (!t[0] || (off + t[0]) * 4 > size)
		return -EBADMSG;
	*mfns = (const uint32_t *)tinfo + off;
	return t[0];
}

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

static void format_print_fmt(FILE *f, int id)
{
	size_t i;

	fprintf(f, "print fmt: \"d%%u v%%u");
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i].id == id)
			fprintf(f, " %s=%s", fields[i].name, fields[i].fmt ? fields[i].fmt : "%s");
	fprintf(f, " event=0x%%x\", REC->cur_dom, REC->cur_vcpu");
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (fields[i].id != id)
			continue;
		if (!strcmp(fields[i].type, "char"))
			fprintf(f, ", REC->%s", fields[i].name);
		else if (fields[i].count > 1)
			fprintf(f, ", __print_array(REC->%s, %u, %u)", fields[i].name,
				fields[i].count, fields[i].size / fields[i].count);
		else
			fprintf(f, ", REC->%s", fields[i].name);
	}
	fprintf(f, ", REC->xen_event\n");
}

/* A table event's field @spec ("rip:x"): its bare name, whether it is
 * signed (":d"), and its print conversion. */
static const char *gen_field(const char *spec, char *name, size_t size, int *is_signed)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);

	snprintf(name, size, "%.*s", (int)len, spec);
	*is_signed = colon && colon[1] == 'd';
	if (!colon)
		return "%llu";
	return colon[1] == 'x' ? "0x%llx" : "%lld";
}

static void gen_format_fields(FILE *f, const struct tv_xen_gen_event *g)
{
	char name[64];
	int sgn;

	for (unsigned int i = 0; i < TV_XEN_GEN_MAX_FIELDS && g->fields[i]; i++) {
		gen_field(g->fields[i], name, sizeof(name), &sgn);
		fprintf(f, "\tfield:%s %s;\toffset:%u;\tsize:8;\tsigned:%d;\n", sgn ? "s64" : "u64",
			name, (unsigned int)(offsetof(struct xe_gen, v) + 8 * i), sgn);
	}
	fputc('\n', f);
	fprintf(f, "print fmt: \"d%%u v%%u");
	for (unsigned int i = 0; i < TV_XEN_GEN_MAX_FIELDS && g->fields[i]; i++) {
		const char *fmt = gen_field(g->fields[i], name, sizeof(name), &sgn);

		fprintf(f, " %s=%s", name, fmt);
	}
	fprintf(f, " event=0x%%x\", REC->cur_dom, REC->cur_vcpu");
	for (unsigned int i = 0; i < TV_XEN_GEN_MAX_FIELDS && g->fields[i]; i++) {
		gen_field(g->fields[i], name, sizeof(name), &sgn);
		fprintf(f, ", REC->%s", name);
	}
	fprintf(f, ", REC->xen_event\n");
}

static void fixed_format_fields(FILE *f, int id)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field_desc *fd = &fields[i];

		if (fd->id != id)
			continue;
		if (fd->count > 1)
			fprintf(f, "\tfield:%s %s[%u];\toffset:%u;\tsize:%u;\tsigned:0;\n", fd->type,
				fd->name, fd->count, fd->offset, fd->size);
		else
			fprintf(f, "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n", fd->type,
				fd->name, fd->offset, fd->size, fd->type[0] == 's');
	}
	fputc('\n', f);
	format_print_fmt(f, id);
}

static void format_text(FILE *f, int id)
{
	const struct tv_xen_gen_event *g = tv_xen_gen_event(id);

	fprintf(f, "name: %s\nID: %d\nformat:\n", tv_xen_event_name(id), id);
	fprintf(f, "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		   "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		   "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		   "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		   "\tfield:u32 xen_event;\toffset:8;\tsize:4;\tsigned:0;\n"
		   "\tfield:u16 cur_dom;\toffset:12;\tsize:2;\tsigned:0;\n"
		   "\tfield:u16 cur_vcpu;\toffset:14;\tsize:2;\tsigned:0;\n");
	if (g)
		gen_format_fields(f, g);
	else
		fixed_format_fields(f, id);
}

char *tv_xen_format_text(int id, size_t *len)
{
	char *buf = NULL;
	FILE *f;

	if (!tv_xen_event_name(id))
		return NULL;
	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	format_text(f, id);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* events/xen/NAME/format under the directory @dfd (events/xen). */
static int write_format(int dfd, const char *dir, int id)
{
	const char *name = tv_xen_event_name(id);
	char path[4300];
	size_t len = 0, off = 0;
	char *text = tv_xen_format_text(id, &len);
	int fd = -1, err = 0;

	if (!text)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/format", name);
	if (mkdirat(dfd, name, 0755) && errno != EEXIST)
		err = errno;
	if (!err) {
		char shown[8600];

		snprintf(shown, sizeof(shown), "%s/%s", dir, path);
		fd = tv_file_create_at(dfd, path, shown, 0, "event format");
		if (fd < 0) {
			free(text);
			return fd;	/* said */
		}
	}
	while (!err && off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n <= 0)
			err = n < 0 ? errno : EIO;
		else
			off += (size_t)n;
	}
	if (fd >= 0 && close(fd) && !err)
		err = errno;
	free(text);
	if (err)
		tv_err("Cannot write event format: path=\"%s/%s\", errno=%d (%s)", dir, path, err,
		       strerror(err));
	return -err;
}

/*
 * Every format file, written relative to events/xen (tracevisor import).
 * The recorder writes header_page only: in the icount lab's PV dom0 these
 * 174 files took 11.4 M instructions, 40% of `record --xen`'s fixed cost
 * (each path walk and file creation a round trip through the hypervisor).
 */
int tv_xen_write_formats(const char *domain_dir)
{
	char path[4200];
	int dfd, ret = 0;

	snprintf(path, sizeof(path), "%s/events", domain_dir);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	strcat(path, "/xen");
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	for (int id = 1; id < tv_xen_event_count() && !ret; id++)
		if (tv_xen_event_name(id))
			ret = write_format(dfd, path, id);
	close(dfd);
	return ret ? ret : tv_xen_write_header_page(domain_dir);
}

int tv_xen_write_header_page(const char *domain_dir)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/header_page", domain_dir);
	f = tv_file_fcreate(path, "header page");
	if (!f)
		return -errno;
	fputs(header_page, f);
	return fclose(f) ? -EIO : 0;
}
