// SPDX-License-Identifier: LGPL-2.1
/*
 * What each guest vCPU runs, followed through the merged read of a
 * synchronised session, so that a host VM exit can be attributed to the
 * guest task (and its syscall, IRQ or softirq) that was running on that
 * vCPU when it exited: stat --by guest-task.  On Xen the exit is a VMEXIT
 * record of the xen domain, and its guest the domain whose meta names its
 * cur_dom (xen_domid=, record --guest xen:NAME).
 *
 * Guest CPU N is vCPU N.  Per guest CPU: the task of the last sched_switch
 * (next_comm, next_pid), the syscall between raw_syscalls:sys_enter and
 * sys_exit, the IRQ between irq_handler_entry and _exit, the softirq
 * between softirq_entry and _exit.  A host exit asks for the state of its
 * vCPU as of the guest events before it in the reference clock, which the
 * merged read gives in order.  Until a vCPU's first sched_switch, its task
 * is that of its first guest event (common_pid).  Unknown ("?"): before
 * the guest CPU's first event and after its last one (the guest's trace
 * starts after the host's and ends before it: its agent is stopped first);
 * where each guest CPU's trace ends is read beforehand, one pass over the
 * guest domains alone.  Live (top --guest, host/top_guest.c) no end is
 * known: the caller feeds each guest event once the exits before it in
 * the reference clock were asked about.
 *
 * Threads: a context belongs to the thread that feeds it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "guest_context.h"

#define MAX_GUEST_CPUS 1024

struct cpu_state {
	int known;		/* an event of this CPU was seen */
	uint64_t end_ts;	/* the CPU's last event in the session (reference clock) */
	char comm[24];
	int pid;
	long long syscall, irq, softirq;	/* -1: not in one */
};

struct guest_cpus {
	int dom;		/* domain index, -1: not a guest */
	int live;		/* being recorded: no end known (top --guest) */
	long xen_domid;		/* a Xen domU's (its meta's xen_domid), -1: none */
	struct cpu_state *cpu;	/* MAX_GUEST_CPUS, made on first use */
};

struct tv_guest_context {
	struct tv_reader *rd;
	int host;		/* the domain whose vCPU threads exit */
	int xen;		/* the domain of Xen's records, -1: none */
	size_t nr;
	struct guest_cpus *g;	/* one per domain */
};

static struct cpu_state *cpu_of(struct guest_cpus *g, int cpu);

/* Where each CPU of guest domain @g's trace ends, in the reference clock. */
static int guest_ends(struct guest_cpus *g, const char *dir, const char *subdir)
{
	struct tv_reader *rd;
	struct tv_event ev;
	int ret = tv_reader_open_domain(dir, subdir, &rd);

	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		struct cpu_state *s = cpu_of(g, ev.cpu);

		ret = s || !g->cpu ? 0 : -ENOMEM;
		if (s && ev.ts > s->end_ts)
			s->end_ts = ev.ts;
	}
	tv_reader_close(rd);
	return ret;
}

static int context_new(struct tv_reader *rd, const char *dir, struct tv_guest_context **out);

int tv_guest_context_new(struct tv_reader *rd, const char *dir, struct tv_guest_context **out)
{
	return context_new(rd, dir, out);
}

int tv_guest_context_new_live(struct tv_reader *rd, struct tv_guest_context **out)
{
	return context_new(rd, NULL, out);
}

/* @dir NULL: live, the guests' traces have no end yet. */
static int context_new(struct tv_reader *rd, const char *dir, struct tv_guest_context **out)
{
	struct tv_guest_context *c = calloc(1, sizeof(*c));
	int ret;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->rd = rd;
	c->host = c->xen = -1;
	c->nr = tv_reader_nr_domains(rd);
	c->g = calloc(c->nr ? c->nr : 1, sizeof(*c->g));
	if (!c->g) {
		free(c);
		return -ENOMEM;
	}
	for (size_t d = 0; d < c->nr; d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);

		c->g[d].dom = strncmp(di->subdir, "guest-", 6) ? -1 : (int)d;
		c->g[d].live = !dir;
		c->g[d].xen_domid = c->g[d].dom < 0 ? -1 : tv_meta_get_ll(di->meta, "xen_domid", -1);
		if (!strcmp(di->subdir, "host"))
			c->host = (int)d;
		if (!strcmp(di->subdir, "xen"))
			c->xen = (int)d;
		if (c->g[d].dom >= 0 && dir && (ret = guest_ends(&c->g[d], dir, di->subdir))) {
			tv_guest_context_free(c);
			return ret;
		}
	}
	*out = c;
	return 0;
}

void tv_guest_context_free(struct tv_guest_context *c)
{
	if (!c)
		return;
	for (size_t d = 0; d < c->nr; d++)
		free(c->g[d].cpu);
	free(c->g);
	free(c);
}

/* Field @name of @ev as a string of at most @size - 1 bytes; "" if none. */
static void field_str(const struct tv_event *ev, const char *name, char *out, size_t size)
{
	struct tep_format_field *f = tep_find_field(ev->format, name);
	size_t n;

	out[0] = '\0';
	if (!f || f->offset < 0 || f->size <= 0 ||
	    (size_t)f->offset + (size_t)f->size > (size_t)ev->record->size)
		return;
	n = (size_t)f->size < size - 1 ? (size_t)f->size : size - 1;
	memcpy(out, (const char *)ev->record->data + f->offset, n);
	out[n] = '\0';
}

static long long field_or(const struct tv_event *ev, const char *name, long long dflt)
{
	uint64_t v;

	return tv_event_field_u64(ev, name, &v) ? dflt : (long long)v;
}

static struct cpu_state *cpu_of(struct guest_cpus *g, int cpu)
{
	if (cpu < 0 || cpu >= MAX_GUEST_CPUS)
		return NULL;
	if (!g->cpu) {
		g->cpu = calloc(MAX_GUEST_CPUS, sizeof(*g->cpu));
		if (!g->cpu)
			return NULL;
		for (int i = 0; i < MAX_GUEST_CPUS; i++) {
			g->cpu[i].syscall = g->cpu[i].irq = g->cpu[i].softirq = -1;
			g->cpu[i].end_ts = g->live ? UINT64_MAX : 0;
		}
	}
	return &g->cpu[cpu];
}

int tv_guest_context_event(struct tv_guest_context *c, const struct tv_event *ev)
{
	struct guest_cpus *g;
	struct cpu_state *s;
	const char *name;

	if (ev->domain_index < 0 || (size_t)ev->domain_index >= c->nr || !ev->format)
		return 0;
	g = &c->g[ev->domain_index];
	if (g->dom < 0)
		return 0;
	s = cpu_of(g, ev->cpu);
	if (!s)
		return g->cpu ? 0 : -ENOMEM;
	name = ev->format->name;
	if (!s->known && ev->pid >= 0 && strcmp(name, "sched_switch")) {
		/* before its first switch, a CPU's events name its task */
		const char *comm = tep_data_comm_from_pid(ev->tep, ev->pid);

		s->known = 1;
		s->pid = ev->pid;
		snprintf(s->comm, sizeof(s->comm), "%s", ev->pid == 0 ? "swapper" : comm ? comm : "<...>");
	}
	if (!strcmp(name, "sched_switch")) {
		s->known = 1;
		field_str(ev, "next_comm", s->comm, sizeof(s->comm));
		s->pid = (int)field_or(ev, "next_pid", -1);
		s->syscall = s->irq = s->softirq = -1;
	} else if (!strcmp(name, "sys_enter")) {
		s->syscall = field_or(ev, "id", -1);
	} else if (!strcmp(name, "sys_exit")) {
		s->syscall = -1;
	} else if (!strcmp(name, "irq_handler_entry")) {
		s->irq = field_or(ev, "irq", -1);
	} else if (!strcmp(name, "irq_handler_exit")) {
		s->irq = -1;
	} else if (!strcmp(name, "softirq_entry")) {
		s->softirq = field_or(ev, "vec", -1);
	} else if (!strcmp(name, "softirq_exit")) {
		s->softirq = -1;
	}
	return 0;
}

/* The guest domain a host vCPU thread runs: by the vcpus file, or the only guest. */
static struct guest_cpus *guest_of_thread(struct tv_guest_context *c, const struct tv_event *ev)
{
	const struct tv_domain_info *host = tv_reader_domain(c->rd, (size_t)c->host);
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(host->vcpus, ev->pid);
	struct guest_cpus *only = NULL;
	size_t n = 0;

	for (size_t d = 0; d < c->nr; d++) {
		if (c->g[d].dom < 0)
			continue;
		n++;
		only = &c->g[d];
		if (t && !strcmp(tv_reader_domain(c->rd, d)->subdir + 6, t->vm_name))
			return &c->g[d];
	}
	return n == 1 ? only : NULL;
}

/* The guest domain of a Xen exit record: the domU whose xen_domid is its cur_dom. */
static struct guest_cpus *guest_of_domid(struct tv_guest_context *c, const struct tv_event *ev)
{
	uint64_t dom;

	if (tv_event_field_u64(ev, "cur_dom", &dom))
		return NULL;
	for (size_t d = 0; d < c->nr; d++)
		if (c->g[d].dom >= 0 && c->g[d].xen_domid == (long)dom)
			return &c->g[d];
	return NULL;
}

int tv_guest_context_of(void *arg, const struct tv_event *exit, int vcpu,
			struct tv_exit_stat_row *out)
{
	struct tv_guest_context *c = arg;
	struct guest_cpus *g;
	struct cpu_state *s;

	if (c->xen >= 0 && exit->domain_index == c->xen)
		g = guest_of_domid(c, exit);
	else if (c->host >= 0 && exit->domain_index == c->host)
		g = guest_of_thread(c, exit);
	else
		return -1;
	s = g && g->cpu && vcpu >= 0 && vcpu < MAX_GUEST_CPUS ? &g->cpu[vcpu] : NULL;
	if (!s || !s->known || exit->ts > s->end_ts)
		return -1;
	snprintf(out->guest_task, sizeof(out->guest_task), "%s", s->comm);
	out->guest_pid = s->pid;
	if (s->irq >= 0)
		snprintf(out->guest_context, sizeof(out->guest_context), "irq:%lld", s->irq);
	else if (s->softirq >= 0)
		snprintf(out->guest_context, sizeof(out->guest_context), "softirq:%lld", s->softirq);
	else if (s->syscall >= 0)
		snprintf(out->guest_context, sizeof(out->guest_context), "syscall:%lld", s->syscall);
	return 0;
}
