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

struct row_acc {
	struct tv_kvm_stat_row row;
	uint64_t *lat;
	size_t nr_lat, cap_lat;
};

/* Per host thread: its VM and vCPU labels and the exit awaiting its entry. */
struct thread_state {
	long long tid;		/* hash key: the tid, or 10^9 - tid when tid <= 0 */
	int vcpu;		/* learned from vcpu_id fields, -1 unknown */
	int pending;		/* 1: an exit (or user-space exit) awaits */
	uint64_t pending_ts;
	struct row_acc *pending_row;
};

struct stat_ctx {
	struct tv_reader *rd;
	struct row_acc **rows;		/* hash of rows by (vm, vcpu, reason) */
	size_t rows_cap, nr_rows;
	struct thread_state *threads;	/* hash by tid */
	size_t threads_cap, nr_threads;
	struct tv_kvm_stat *out;
};

static uint64_t hash_str(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int grow_threads(struct stat_ctx *c)
{
	size_t cap = c->threads_cap ? c->threads_cap * 2 : 256;
	struct thread_state *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < c->threads_cap; i++) {
		size_t j;

		if (!c->threads[i].tid)
			continue;
		for (j = (size_t)c->threads[i].tid % cap; t[j].tid; j = (j + 1) % cap)
			;
		t[j] = c->threads[i];
	}
	free(c->threads);
	c->threads = t;
	c->threads_cap = cap;
	return 0;
}

static struct thread_state *thread_get(struct stat_ctx *c, int pid)
{
	/* idle (0) still needs a non-zero key; a corrupt pid must not overflow */
	long long tid = pid > 0 ? pid : 1000000000LL - pid;
	size_t j;

	if ((c->nr_threads + 1) * 2 > c->threads_cap && grow_threads(c))
		return NULL;
	for (j = (size_t)tid % c->threads_cap; c->threads[j].tid; j = (j + 1) % c->threads_cap)
		if (c->threads[j].tid == tid)
			return &c->threads[j];
	c->threads[j].tid = tid;
	c->threads[j].vcpu = -1;
	c->nr_threads++;
	return &c->threads[j];
}

static int grow_rows(struct stat_ctx *c)
{
	size_t cap = c->rows_cap ? c->rows_cap * 2 : 64;
	struct row_acc **r = calloc(cap, sizeof(*r));

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < c->rows_cap; i++) {
		struct row_acc *a = c->rows[i];
		size_t j;

		if (!a)
			continue;
		j = hash_str(a->row.reason, hash_str(a->row.vcpu, hash_str(a->row.vm, 14695981039346656037ULL))) % cap;
		while (r[j])
			j = (j + 1) % cap;
		r[j] = a;
	}
	free(c->rows);
	c->rows = r;
	c->rows_cap = cap;
	return 0;
}

static struct row_acc *row_get(struct stat_ctx *c, const char *vm, const char *vcpu,
			       const char *reason)
{
	uint64_t h = hash_str(reason, hash_str(vcpu, hash_str(vm, 14695981039346656037ULL)));
	struct row_acc *a;
	size_t j;

	if ((c->nr_rows + 1) * 2 > c->rows_cap && grow_rows(c))
		return NULL;
	for (j = h % c->rows_cap; (a = c->rows[j]); j = (j + 1) % c->rows_cap)
		if (!strcmp(a->row.reason, reason) && !strcmp(a->row.vcpu, vcpu) &&
		    !strcmp(a->row.vm, vm))
			return a;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	snprintf(a->row.vm, sizeof(a->row.vm), "%s", vm);
	snprintf(a->row.vcpu, sizeof(a->row.vcpu), "%s", vcpu);
	snprintf(a->row.reason, sizeof(a->row.reason), "%s", reason);
	a->row.min_ns = UINT64_MAX;
	c->rows[j] = a;
	c->nr_rows++;
	return a;
}

static int row_add_latency(struct row_acc *a, uint64_t ns)
{
	int bucket;

	if (a->nr_lat == a->cap_lat) {
		size_t cap = a->cap_lat ? a->cap_lat * 2 : 64;
		uint64_t *lat = realloc(a->lat, cap * sizeof(*lat));

		if (!lat)
			return -ENOMEM;
		a->lat = lat;
		a->cap_lat = cap;
	}
	a->lat[a->nr_lat++] = ns;
	a->row.has_latency = true;
	a->row.total_ns += ns;
	/* Bucket b holds [2^(b-1), 2^b) ns; bucket 0 holds 0. */
	bucket = ns ? 64 - __builtin_clzll(ns) : 0;
	a->row.hist[bucket > 63 ? 63 : bucket]++;
	return 0;
}

static void event_labels(struct stat_ctx *c, const struct tv_event *ev,
			 struct thread_state *t, char *vm, size_t vm_size,
			 char *vcpu, size_t vcpu_size)
{
	const struct tv_domain_info *dom = tv_reader_event_domain(c->rd, ev);
	const struct tv_vcpu_thread *known = tv_vcpu_map_find(dom->vcpus, ev->pid);
	pid_t tgid = dom->tgid_of(dom, ev->pid);
	const char *comm = known ? known->vm_name : tep_data_comm_from_pid(ev->tep, tgid);
	uint64_t id;

	if (!tv_event_field_u64(ev, "vcpu_id", &id))
		t->vcpu = (int)id;
	else if (t->vcpu < 0 && known && known->vcpu >= 0)
		t->vcpu = known->vcpu;
	if (comm && strcmp(comm, "<...>"))
		snprintf(vm, vm_size, "%s[%d]", comm, (int)tgid);
	else
		snprintf(vm, vm_size, "pid%d", (int)tgid);
	if (t->vcpu >= 0)
		snprintf(vcpu, vcpu_size, "%d", t->vcpu);
	else
		snprintf(vcpu, vcpu_size, "tid%d", ev->pid);
}

/* Close the thread's pending exit at @ts (its entry, or its next event). */
static int thread_resolve(struct stat_ctx *c, struct thread_state *t, uint64_t ts)
{
	if (!t->pending)
		return 0;
	t->pending = 0;
	if (ts < t->pending_ts) {
		c->out->unmatched_exits++;
		return 0;
	}
	return row_add_latency(t->pending_row, ts - t->pending_ts);
}

static void reason_of_exit(const struct tv_event *ev, char *buf, size_t size)
{
	uint64_t code = 0, isa = 0;
	const char *name;

	tv_event_field_u64(ev, "exit_reason", &code);
	tv_event_field_u64(ev, "isa", &isa);
	name = tv_kvm_exit_reason_name((enum tv_kvm_isa)isa, code);
	if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%s:0x%llx", isa == 1 ? "vmx" : isa == 2 ? "svm" : "isa?",
			 (unsigned long long)code);
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

static int stat_event(struct stat_ctx *c, const struct tv_event *ev)
{
	char vm[80], vcpu[24], reason[48];
	struct thread_state *t;
	struct row_acc *a;
	int timed;
	bool is_exit, is_entry;

	if (!ev->format || strcmp(ev->format->system, "kvm"))
		return 0;
	is_exit = !strcmp(ev->format->name, "kvm_exit");
	is_entry = !strcmp(ev->format->name, "kvm_entry");
	t = thread_get(c, ev->pid);
	if (!t)
		return -ENOMEM;
	event_labels(c, ev, t, vm, sizeof(vm), vcpu, sizeof(vcpu));
	if (c->out->have_exit_entry) {
		if (is_entry)
			return thread_resolve(c, t, ev->ts);
		if (!is_exit)
			return 0;
		if (t->pending)	/* an exit with no entry before the next exit */
			c->out->unmatched_exits++;
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
	a = row_get(c, vm, vcpu, reason);
	if (!a)
		return -ENOMEM;
	a->row.count++;
	t->pending = timed;
	t->pending_ts = ev->ts;
	t->pending_row = a;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

static int cmp_rows(const void *x, const void *y)
{
	const struct tv_kvm_stat_row *a = x, *b = y;

	if (a->total_ns != b->total_ns)
		return a->total_ns < b->total_ns ? 1 : -1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return strcmp(a->reason, b->reason);
}

/* Nearest-rank percentile of sorted values. */
static uint64_t percentile(const uint64_t *v, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return v[rank ? rank - 1 : 0];
}

static int stat_finish(struct stat_ctx *c)
{
	struct tv_kvm_stat *out = c->out;
	size_t k = 0;

	/* Exits still waiting for their entry when the recording ended. */
	for (size_t i = 0; out->have_exit_entry && i < c->threads_cap; i++)
		if (c->threads[i].tid && c->threads[i].pending)
			out->unmatched_exits++;

	out->rows = calloc(c->nr_rows ? c->nr_rows : 1, sizeof(*out->rows));
	if (!out->rows)
		return -ENOMEM;
	for (size_t i = 0; i < c->rows_cap; i++) {
		struct row_acc *a = c->rows[i];

		if (!a)
			continue;
		if (a->nr_lat) {
			qsort(a->lat, a->nr_lat, sizeof(*a->lat), cmp_u64);
			a->row.min_ns = a->lat[0];
			a->row.max_ns = a->lat[a->nr_lat - 1];
			a->row.p50_ns = percentile(a->lat, a->nr_lat, 50);
			a->row.p99_ns = percentile(a->lat, a->nr_lat, 99);
		} else {
			a->row.min_ns = 0;
		}
		out->rows[k++] = a->row;
	}
	out->nr_rows = k;
	qsort(out->rows, out->nr_rows, sizeof(*out->rows), cmp_rows);
	return 0;
}

static void stat_ctx_free(struct stat_ctx *c)
{
	for (size_t i = 0; i < c->rows_cap; i++) {
		if (c->rows[i])
			free(c->rows[i]->lat);
		free(c->rows[i]);
	}
	free(c->rows);
	free(c->threads);
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

int tv_kvm_stat_compute(const char *dir, struct tv_kvm_stat *out)
{
	struct stat_ctx c = { 0 };
	struct tv_event ev;
	uint64_t exits = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	c.out = out;
	ret = tv_reader_open(dir, &c.rd);
	if (ret)
		return ret;
	out->have_exit_entry = session_has_exit_entry(c.rd);
	for (size_t d = 0; d < tv_reader_nr_domains(c.rd); d++)
		out->lost += (uint64_t)tv_meta_get_ll(tv_reader_domain(c.rd, d)->meta, "lost_total", 0);
	while ((ret = tv_reader_next(c.rd, &ev)) > 0) {
		out->events++;
		if (ev.format && !strcmp(ev.format->name, "kvm_exit"))
			exits++;
		ret = stat_event(&c, &ev);
		if (ret)
			break;
	}
	/* Recorded kvm_exit but none fired: analyse what did fire instead. */
	if (!ret && out->have_exit_entry && exits == 0) {
		tv_reader_close(c.rd);
		stat_ctx_free(&c);
		memset(&c, 0, sizeof(c));
		c.out = out;
		out->have_exit_entry = false;
		out->events = 0;
		ret = tv_reader_open(dir, &c.rd);
		while (!ret && (ret = tv_reader_next(c.rd, &ev)) > 0) {
			out->events++;
			ret = stat_event(&c, &ev);
		}
	}
	snprintf(out->mode, sizeof(out->mode), "%s", out->have_exit_entry ? "exits" : "pvm");
	if (!ret)
		ret = stat_finish(&c);
	stat_ctx_free(&c);
	tv_reader_close(c.rd);
	return ret;
}

void tv_kvm_stat_free(struct tv_kvm_stat *st)
{
	free(st->rows);
	memset(st, 0, sizeof(*st));
}
