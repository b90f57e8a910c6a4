// SPDX-License-Identifier: LGPL-2.1
/*
 * VM exit analysis.  With kvm_exit/kvm_entry (VMX or SVM hosts) every exit
 * is paired with the next entry of the same host thread: exit->entry is the
 * time the exit took to handle, in KVM or in the user-space VMM.  Hosts
 * whose KVM fires neither (PVM) get the events that do fire instead:
 * user-space exits (timed to the thread's next KVM event, i.e. the round
 * trip through the VMM), port I/O by port and direction, MMIO, CPUID leaves
 * and emulated instructions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exit_tracker.h"
#include "latency_table.h"
#include "kvm_stat.h"

/* One analysis mode over the session: kvm_exit->kvm_entry, or PVM's events. */
struct stat_ctx {
	struct tv_reader *rd;
	bool exits;			/* kvm_exit/kvm_entry mode, else PVM mode */
	struct tv_latency_table rows;	/* by (vm, vcpu, reason) */
	/*
	 * Per host thread (key: the tid, or 10^9 - tid when tid <= 0): the exit
	 * (or user-space exit) awaiting its entry, its row in ptr, the vCPU
	 * learned from vcpu_id fields in label (-1 unknown).
	 */
	struct tv_exit_tracker threads;
	uint64_t unmatched_exits;
	tv_exit_guest_fn guest_of;	/* stat --by guest-task, or NULL */
	void *guest_arg;
	uint64_t interval_unmatched;	/* unmatched + backwards when the interval began */
};

struct tv_kvm_stat_pass {
	struct tv_exit_stat *out;
	struct stat_ctx exits;		/* when kvm_exit/kvm_entry were recorded */
	struct stat_ctx pvm;		/* until a kvm_exit fires */
	/*
	 * --time-function's probes (system "func": NAME__entry, NAME__return),
	 * key: thread and function; a recursive call times its innermost pair
	 * (an entry before the return counts the outer one unmatched).
	 */
	struct stat_ctx funcs;
	bool have_pvm;
	uint64_t nr_exits;
	uint64_t interval_events;	/* out->events when the interval began */
};

static struct tv_exit_slot *thread_get(struct stat_ctx *c, int pid)
{
	/* idle (0) still needs a non-zero key; a corrupt pid must not overflow */
	long long tid = pid > 0 ? pid : 1000000000LL - pid;

	return tv_exit_tracker_slot(&c->threads, (uint64_t)tid);
}

static void event_labels(struct stat_ctx *c, const struct tv_event *ev,
			 struct tv_exit_slot *t, char *vm, size_t vm_size,
			 char *vcpu, size_t vcpu_size)
{
	const struct tv_domain_info *dom = tv_reader_event_domain(c->rd, ev);
	const struct tv_vcpu_thread *known = tv_vcpu_map_find(dom->vcpus, ev->pid);
	pid_t tgid = dom->tgid_of(dom, ev->pid);
	const char *comm = known ? known->vm_name : tep_data_comm_from_pid(ev->tep, tgid);
	uint64_t id;

	if (!tv_event_field_u64(ev, "vcpu_id", &id))
		t->label = (int)id;
	else if (t->label < 0 && known && known->vcpu >= 0)
		t->label = known->vcpu;
	if (comm && strcmp(comm, "<...>"))
		snprintf(vm, vm_size, "%s[%d]", comm, (int)tgid);
	else
		snprintf(vm, vm_size, "pid%d", (int)tgid);
	if (t->label >= 0)
		snprintf(vcpu, vcpu_size, "%d", t->label);
	else
		snprintf(vcpu, vcpu_size, "tid%d", ev->pid);
}

/* Close the thread's pending exit at @ts (its entry, or its next event). */
static int thread_resolve(struct stat_ctx *c, struct tv_exit_slot *t, uint64_t ts)
{
	uint64_t ns;

	if (!tv_exit_tracker_close(&c->threads, t, ts, &ns))
		return 0;
	return tv_latency_add(t->ptr, ns);
}

static void reason_of_exit(const struct tv_event *ev, char *buf, size_t size)
{
	uint64_t code = 0, isa = 0;

	tv_event_field_u64(ev, "exit_reason", &code);
	tv_event_field_u64(ev, "isa", &isa);
	tv_kvm_exit_reason_label((enum tv_kvm_isa)isa, code, buf, size);
}

/* PVM-mode reasons; returns 1 when the event starts a timed round trip. */
static int reason_of_other(const struct tv_event *ev, char *buf, size_t size)
{
	const char *name = ev->format->name;
	uint64_t a = 0, b = 0;

	if (!strcmp(name, "kvm_userspace_exit")) {
		uint64_t err = 0;
		const char *r;

		tv_event_field_u64(ev, "reason", &a);
		tv_event_field_u64(ev, "errno", &err);
		r = (int32_t)err < 0 ? ((int32_t)err == -4 ? "restart" : "error")
				     : tv_kvm_userspace_exit_name(a);
		if (r)
			snprintf(buf, size, "userspace:%s", r);
		else
			snprintf(buf, size, "userspace:%llu", (unsigned long long)a);
		return 1;
	}
	if (!strcmp(name, "kvm_pio")) {
		tv_event_field_u64(ev, "rw", &a);
		tv_event_field_u64(ev, "port", &b);
		snprintf(buf, size, "pio:%s:0x%llx", a ? "write" : "read", (unsigned long long)b);
	} else if (!strcmp(name, "kvm_mmio")) {
		tv_event_field_u64(ev, "type", &a);
		tv_event_field_u64(ev, "gpa", &b);
		snprintf(buf, size, "mmio:%s:0x%llx", a == 0 ? "unsatisfied-read" : a == 1 ? "read" : "write",
			 (unsigned long long)b);
	} else if (!strcmp(name, "kvm_cpuid")) {
		tv_event_field_u64(ev, "function", &a);
		snprintf(buf, size, "cpuid:0x%llx", (unsigned long long)a);
	} else if (!strcmp(name, "kvm_emulate_insn")) {
		snprintf(buf, size, "emulate_insn");
	} else if (!strcmp(name, "kvm_hypercall")) {
		tv_event_field_u64(ev, "nr", &a);
		snprintf(buf, size, "hypercall:0x%llx", (unsigned long long)a);
	} else {
		buf[0] = '\0';
	}
	return 0;
}

/* The row of an exit: by guest task too when asked (timed exits only). */
static struct tv_latency_acc *stat_row(struct stat_ctx *c, const struct tv_event *ev,
				       const struct tv_exit_slot *t, const char *vm,
				       const char *vcpu, const char *reason, int timed)
{
	struct tv_exit_stat_row guest = { .guest_pid = -1 };

	if (!c->guest_of || !timed)
		return tv_latency_row(&c->rows, vm, vcpu, reason);
	if (c->guest_of(c->guest_arg, ev, t->label, &guest))
		snprintf(guest.guest_task, sizeof(guest.guest_task), "?");
	return tv_latency_row_guest(&c->rows, vm, vcpu, reason, &guest);
}

static int stat_event(struct stat_ctx *c, const struct tv_event *ev)
{
	char vm[80], vcpu[24], reason[48];
	struct tv_exit_slot *t;
	struct tv_latency_acc *a;
	int timed;
	bool is_exit, is_entry;

	is_exit = !strcmp(ev->format->name, "kvm_exit");
	is_entry = !strcmp(ev->format->name, "kvm_entry");
	t = thread_get(c, ev->pid);
	if (!t)
		return -ENOMEM;
	event_labels(c, ev, t, vm, sizeof(vm), vcpu, sizeof(vcpu));
	if (c->exits) {
		if (is_entry)
			return thread_resolve(c, t, ev->ts);
		if (!is_exit)
			return 0;
		reason_of_exit(ev, reason, sizeof(reason));
		timed = 1;
	} else {
		int ret = thread_resolve(c, t, ev->ts);

		if (ret)
			return ret;
		timed = reason_of_other(ev, reason, sizeof(reason));
		if (!reason[0])
			return 0;
	}
	a = stat_row(c, ev, t, vm, vcpu, reason, timed);
	if (!a)
		return -ENOMEM;
	a->row.count++;
	if (timed) {
		/* an exit with no entry before the next exit is counted here */
		t = tv_exit_tracker_exit(&c->threads, t->key - 1, ev->ts);
		t->ptr = a;
	}
	return 0;
}

static uint64_t func_key(int tid, const char *fn, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)fn[i]) * 1099511628211ULL;
	return ((uint64_t)(uint32_t)tid << 24) ^ (h & 0xffffff);
}

/* A function's row: the process (comm[tgid]), and the vCPU if it is one. */
static void func_labels(struct stat_ctx *c, const struct tv_event *ev, char *vm, size_t vm_size,
			char *vcpu, size_t vcpu_size)
{
	const struct tv_domain_info *dom = tv_reader_event_domain(c->rd, ev);
	const struct tv_vcpu_thread *known = tv_vcpu_map_find(dom->vcpus, ev->pid);
	pid_t tgid = dom->tgid_of(dom, ev->pid);
	const char *comm = known ? known->vm_name : tep_data_comm_from_pid(ev->tep, tgid);

	if (!comm || !strcmp(comm, "<...>"))
		comm = tep_data_comm_from_pid(ev->tep, ev->pid);
	if (comm && strcmp(comm, "<...>"))
		snprintf(vm, vm_size, "%s[%d]", comm, (int)tgid);
	else
		snprintf(vm, vm_size, "pid%d", (int)tgid);
	if (known && known->vcpu >= 0)
		snprintf(vcpu, vcpu_size, "%d", known->vcpu);
	else
		snprintf(vcpu, vcpu_size, "-");
}

static int func_event(struct stat_ctx *c, const struct tv_event *ev)
{
	const char *name = ev->format->name;
	size_t n = strlen(name);
	char vm[80], vcpu[24], reason[48];
	struct tv_latency_acc *a;
	struct tv_exit_slot *t;
	uint64_t key;

	if (n > 8 && !strcmp(name + n - 8, "__return")) {
		t = tv_exit_tracker_find(&c->threads, func_key(ev->pid, name, n - 8));
		return t ? thread_resolve(c, t, ev->ts) : 0;
	}
	if (n <= 7 || strcmp(name + n - 7, "__entry"))
		return 0;
	key = func_key(ev->pid, name, n - 7);
	func_labels(c, ev, vm, sizeof(vm), vcpu, sizeof(vcpu));
	snprintf(reason, sizeof(reason), "func:%.*s", (int)(n - 7), name);
	a = tv_latency_row(&c->rows, vm, vcpu, reason);
	t = a ? tv_exit_tracker_exit(&c->threads, key, ev->ts) : NULL;
	if (!t)
		return -ENOMEM;
	a->row.count++;
	t->ptr = a;
	return 0;
}

static int cmp_rows(const void *x, const void *y)
{
	const struct tv_exit_stat_row *a = x, *b = y;

	if (a->total_ns != b->total_ns)
		return a->total_ns < b->total_ns ? 1 : -1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return strcmp(a->reason, b->reason);
}

/* Were kvm_exit and kvm_entry recorded (their formats are in the session)? */
static bool session_has_exit_entry(struct tv_reader *rd)
{
	for (size_t d = 0; d < tv_reader_nr_domains(rd); d++) {
		struct tep_handle *tep = tv_reader_domain(rd, d)->tep;

		if (tep_find_event_by_name(tep, "kvm", "kvm_exit") &&
		    tep_find_event_by_name(tep, "kvm", "kvm_entry"))
			return true;
	}
	return false;
}

static void stat_ctx_free(struct stat_ctx *c)
{
	tv_latency_table_free(&c->rows);
	tv_exit_tracker_free(&c->threads);
}

int tv_kvm_stat_pass_new(struct tv_reader *rd, struct tv_exit_stat *out,
			 struct tv_kvm_stat_pass **pass)
{
	struct tv_kvm_stat_pass *p = calloc(1, sizeof(*p));

	memset(out, 0, sizeof(*out));
	if (!p)
		return -ENOMEM;
	p->out = out;
	out->have_exit_entry = session_has_exit_entry(rd);
	for (size_t d = 0; d < tv_reader_nr_domains(rd); d++)
		out->lost += (uint64_t)tv_meta_get_ll(tv_reader_domain(rd, d)->meta, "lost_total", 0);
	p->exits.rd = rd;
	p->exits.exits = true;
	p->pvm.rd = rd;
	p->funcs.rd = rd;
	/*
	 * Recorded kvm_exit may still never fire (PVM): the PVM analysis runs
	 * beside the exits one until the first kvm_exit, so one pass serves.
	 */
	p->have_pvm = true;
	*pass = p;
	return 0;
}

int tv_kvm_stat_pass_event(struct tv_kvm_stat_pass *p, const struct tv_event *ev)
{
	int ret = 0;

	p->out->events++;
	if (ev->format && !strcmp(ev->format->system, "func"))
		return func_event(&p->funcs, ev);
	if (!ev->format || strcmp(ev->format->system, "kvm"))
		return 0;
	if (p->out->have_exit_entry && !strcmp(ev->format->name, "kvm_exit") && !p->nr_exits++ &&
	    p->have_pvm) {
		stat_ctx_free(&p->pvm);
		p->have_pvm = false;
	}
	if (p->out->have_exit_entry)
		ret = stat_event(&p->exits, ev);
	if (!ret && p->have_pvm)
		ret = stat_event(&p->pvm, ev);
	return ret;
}

/* The timed functions' rows after the exits' (their own order inside). */
static int append_func_rows(struct tv_kvm_stat_pass *p, struct tv_exit_stat *out)
{
	struct tv_exit_stat f = { 0 };
	struct tv_exit_stat_row *rows;
	int ret;

	if (!p->funcs.rows.nr)
		return 0;
	ret = tv_latency_table_finish(&p->funcs.rows, &f, cmp_rows);
	if (ret)
		return ret;
	rows = realloc(out->rows, (out->nr_rows + f.nr_rows) * sizeof(*rows));
	if (!rows) {
		tv_exit_stat_free(&f);
		return -ENOMEM;
	}
	memcpy(rows + out->nr_rows, f.rows, f.nr_rows * sizeof(*rows));
	out->rows = rows;
	out->nr_rows += f.nr_rows;
	tv_exit_stat_free(&f);
	return 0;
}

int tv_kvm_stat_pass_finish(struct tv_kvm_stat_pass *p)
{
	struct tv_exit_stat *out = p->out;
	struct stat_ctx *c = &p->exits;

	/* Recorded kvm_exit but none fired: what did fire instead. */
	if (!out->have_exit_entry || !p->nr_exits) {
		out->have_exit_entry = false;
		c = &p->pvm;
	}
	snprintf(out->mode, sizeof(out->mode), "%s", out->have_exit_entry ? "exits" : "pvm");
	/* Exits never paired: followed by another exit, entered before they
	 * left, or still waiting for their entry when the recording ended. */
	out->unmatched_exits = c->threads.unmatched + c->threads.backwards;
	if (out->have_exit_entry)
		out->unmatched_exits += tv_exit_tracker_open(&c->threads);
	return tv_latency_table_finish(&c->rows, out, cmp_rows) ?: append_func_rows(p, out);
}

/*
 * A new, empty table for @c, into which the exits still open (their entry
 * comes in the next interval) move as empty rows of the same name, so that
 * their latency is added where their entry falls.
 */
static int stat_ctx_new_interval(struct stat_ctx *c)
{
	struct tv_latency_table fresh = { 0 };

	for (size_t i = 0; i < c->threads.cap; i++) {
		struct tv_exit_slot *t = &c->threads.slots[i];
		struct tv_latency_acc *old = t->ptr;

		if (!t->key || !t->open || !old)
			continue;
		t->ptr = tv_latency_row_guest(&fresh, old->row.vm, old->row.vcpu, old->row.reason,
					      &old->row);
		if (!t->ptr) {
			tv_latency_table_free(&fresh);
			return -ENOMEM;
		}
	}
	tv_latency_table_free(&c->rows);
	c->rows = fresh;
	return 0;
}

int tv_kvm_stat_pass_interval(struct tv_kvm_stat_pass *p, struct tv_exit_stat *out)
{
	bool exits = p->out->have_exit_entry && p->nr_exits;
	struct stat_ctx *c = exits ? &p->exits : &p->pvm;
	uint64_t unmatched = c->threads.unmatched + c->threads.backwards;
	int ret;

	memset(out, 0, sizeof(*out));
	out->have_exit_entry = exits;
	snprintf(out->mode, sizeof(out->mode), "%s", exits ? "exits" : "pvm");
	out->events = p->out->events - p->interval_events;
	out->unmatched_exits = unmatched - c->interval_unmatched;
	ret = tv_latency_table_finish(&c->rows, out, cmp_rows) ?: append_func_rows(p, out);
	if (!ret)
		ret = stat_ctx_new_interval(&p->funcs);
	if (!ret)
		ret = stat_ctx_new_interval(&p->exits);
	if (!ret && p->have_pvm)
		ret = stat_ctx_new_interval(&p->pvm);
	p->interval_events = p->out->events;
	c->interval_unmatched = unmatched;
	if (ret)
		tv_exit_stat_free(out);
	return ret;
}

void tv_kvm_stat_pass_set_guest(struct tv_kvm_stat_pass *p, tv_exit_guest_fn fn, void *arg)
{
	p->exits.guest_of = p->pvm.guest_of = fn;
	p->exits.guest_arg = p->pvm.guest_arg = arg;
}

void tv_kvm_stat_pass_free(struct tv_kvm_stat_pass *p)
{
	if (!p)
		return;
	stat_ctx_free(&p->exits);
	stat_ctx_free(&p->pvm);
	stat_ctx_free(&p->funcs);
	free(p);
}

int tv_kvm_stat_compute(const char *dir, struct tv_exit_stat *out)
{
	struct tv_kvm_stat_pass *p = NULL;
	struct tv_reader *rd;
	struct tv_event ev;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = tv_reader_open(dir, &rd);
	if (ret)
		return ret;
	ret = tv_kvm_stat_pass_new(rd, out, &p);
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0)
		ret = tv_kvm_stat_pass_event(p, &ev);
	if (!ret)
		ret = tv_kvm_stat_pass_finish(p);
	tv_kvm_stat_pass_free(p);
	tv_reader_close(rd);
	return ret;
}

void tv_exit_stat_free(struct tv_exit_stat *st)
{
	free(st->rows);
	memset(st, 0, sizeof(*st));
}
