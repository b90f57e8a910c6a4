// SPDX-License-Identifier: LGPL-2.1
/*
 * top --guest: the live view (kvm/top.c) with each exit joined to what the
 * guest ran on that vCPU at that moment (analysis/guest_context.c, the meaning
 * stat --by guest-task gives a recorded session).
 *
 * Here because it joins kvm/'s live view with guests (agents, probes:
 * host/guest.c); kvm/ only calls the hooks it is given (kvm/top_hooks.h).
 *
 * How: the top's recorder and every guest's agent record with the x86-tsc
 * trace clock, so a guest's time stamps are its vCPU's TSC, which KVM
 * keeps at the host's TSC plus a per-vCPU offset (no scaling on the hosts
 * this was built for).  The top's following reader reads the session raw:
 * host and guest events in their own clocks.  Guest events are put aside
 * per guest CPU as they come; a host exit on vCPU N at host TSC T is
 * joined after the guest events of CPU N up to T + offset(N) were given to
 * the guest context, in order.  The offsets follow the host's
 * kvm:kvm_write_tsc_offset events (read in time order, before the exits
 * they apply to: a vCPU's offset changes only while it is out of the
 * guest), starting from the guest's debugfs values (guest-NAME/tsc).  A
 * guest's events reach the host a second or so late (its agent sends the
 * page being written once a second), so the view reads only what is
 * TV_TOP_GUEST_LAG_NS old.  The sync probes run as in record --guest: the
 * session kept with -o is a host + guest session for `tracevisor sync` and
 * `stat --by guest-task`, which give the same rows summed.
 *
 * Threads: the hooks run on the thread that reads the intervals; each
 * guest has its thread (host/guest.c), which only writes the session's
 * files.  Everything here belongs to the reading thread, but close, which
 * tv_top_close() calls after joining it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event-parse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "../kvm/top_hooks.h"
#include "../kvm/recorder_session.h"
#include "../analysis/guest_context.h"
#include "guest.h"
#include "../kvm/kvm_recorder.h"

#define TOP_GUEST_READY_MS 30000
#define TOP_GUEST_MAX_CPUS 1024
/* Guest events put aside per CPU before the oldest is given anyway. */
#define TOP_GUEST_QUEUE_MAX (1u << 20)

/* A guest event kept until the exits before it were joined. */
struct queued {
	struct tv_event ev;
	struct tep_record rec;		/* ev.record points here; rec.data is ours */
};

struct guest_cpu {
	struct queued *q;		/* ring of cap */
	size_t head, len, cap;
	uint64_t offset;		/* guest TSC - host TSC (mod 2^64) */
	int offset_known;
};

/* What a domain of the reader is to us. */
struct dom_state {
	int guest;			/* a guest-NAME domain */
	const char *vm;			/* NAME */
	struct guest_cpu *cpu;		/* TOP_GUEST_MAX_CPUS, guests only */
};

struct top_guest {
	const struct tv_guest_spec *specs;
	size_t nr;
	struct tv_guest **g;
	struct tv_recorder *rec;
	struct tv_reader *rd;
	struct tv_guest_context *gc;
	struct dom_state *dom;
	size_t nr_dom;
	int host;			/* the host's domain index */
	char outdir[4096];
};

static void queued_free(struct queued *e)
{
	free(e->rec.data);
}

static void cpu_queue_free(struct guest_cpu *c)
{
	for (size_t i = 0; i < c->len; i++)
		queued_free(&c->q[(c->head + i) % c->cap]);
	free(c->q);
	c->q = NULL;
	c->head = c->len = c->cap = 0;
}

/* Give the oldest queued event of @c to the guest context. */
static int cpu_queue_pop(struct top_guest *tg, struct guest_cpu *c)
{
	struct queued *e = &c->q[c->head];
	int ret;

	e->ev.record = &e->rec;
	ret = tv_guest_context_event(tg->gc, &e->ev);
	queued_free(e);
	c->head = (c->head + 1) % c->cap;
	c->len--;
	return ret;
}

static int cpu_queue_push(struct top_guest *tg, struct guest_cpu *c, const struct tv_event *ev)
{
	struct queued *e;

	if (c->len == TOP_GUEST_QUEUE_MAX) {
		/* no exit asked for so long: the state moves on without one */
		int ret = cpu_queue_pop(tg, c);

		if (ret)
			return ret;
	}
	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct queued *q = malloc(cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < c->len; i++)
			q[i] = c->q[(c->head + i) % c->cap];
		free(c->q);
		c->q = q;
		c->head = 0;
		c->cap = cap;
	}
	e = &c->q[(c->head + c->len) % c->cap];
	e->ev = *ev;
	e->rec = *ev->record;
	e->rec.data = malloc(ev->record->size ? (size_t)ev->record->size : 1);
	if (!e->rec.data)
		return -ENOMEM;
	memcpy(e->rec.data, ev->record->data, (size_t)ev->record->size);
	c->len++;
	return 0;
}

/* The guest domain whose vCPU thread @pid is (by host/vcpus), or the only guest. */
static struct dom_state *guest_of_pid(struct top_guest *tg, int pid)
{
	const struct tv_domain_info *host = tv_reader_domain(tg->rd, (size_t)tg->host);
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(host->vcpus, pid);
	struct dom_state *only = NULL;
	size_t n = 0;

	for (size_t d = 0; d < tg->nr_dom; d++) {
		if (!tg->dom[d].guest)
			continue;
		n++;
		only = &tg->dom[d];
		if (t && !strcmp(tg->dom[d].vm, t->vm_name))
			return &tg->dom[d];
	}
	return n == 1 ? only : NULL;
}

static struct guest_cpu *cpu_of(struct dom_state *d, int cpu)
{
	return d && d->cpu && cpu >= 0 && cpu < TOP_GUEST_MAX_CPUS ? &d->cpu[cpu] : NULL;
}

/* kvm:kvm_write_tsc_offset: vCPU vcpu_id's offset from now on. */
static void tsc_offset_event(struct top_guest *tg, const struct tv_event *ev)
{
	uint64_t vcpu, next;
	struct guest_cpu *c;

	if (tv_event_field_u64(ev, "vcpu_id", &vcpu) || tv_event_field_u64(ev, "next_tsc_offset", &next))
		return;
	c = cpu_of(guest_of_pid(tg, ev->pid), (int)vcpu);
	if (c) {
		c->offset = next;
		c->offset_known = 1;
	}
}

static int hook_event(void *ctx, const struct tv_event *ev)
{
	struct top_guest *tg = ctx;
	struct dom_state *d;
	struct guest_cpu *c;

	if (ev->domain_index < 0 || (size_t)ev->domain_index >= tg->nr_dom || !ev->format)
		return 0;
	d = &tg->dom[ev->domain_index];
	if (!d->guest) {
		if (ev->domain_index == tg->host && !strcmp(ev->format->name, "kvm_write_tsc_offset"))
			tsc_offset_event(tg, ev);
		return 0;
	}
	c = cpu_of(d, ev->cpu);
	if (!c)
		return 1;
	return cpu_queue_push(tg, c, ev) ?: 1;	/* the analysis counts host exits only */
}

/* The exit's vCPU: its guest events up to the exit, then what ran. */
static int hook_guest_of(void *ctx, const struct tv_event *exit, int vcpu, struct tv_exit_stat_row *out)
{
	struct top_guest *tg = ctx;
	struct guest_cpu *c = cpu_of(guest_of_pid(tg, exit->pid), vcpu);
	uint64_t guest_ts;

	if (!c || !c->offset_known)
		return -1;	/* "?": no TSC relation yet */
	guest_ts = exit->ts_raw + c->offset;
	while (c->len && c->q[c->head].ev.ts_raw <= guest_ts)
		if (cpu_queue_pop(tg, c))
			return -1;
	return tv_guest_context_of(tg->gc, exit, vcpu, out);
}

/* The guest's vCPU offsets as debugfs gave them when it got ready.  Return: how many. */
static int read_tsc_file(struct dom_state *d, const char *outdir)
{
	char path[4200], line[256];
	FILE *f = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "%s/guest-%s/tsc", outdir, d->vm);
	/* written by the guest's thread just after it got ready */
	for (int i = 0; i < 20 && !(f = fopen(path, "re")); i++)
		usleep(50000);
	while (f && fgets(line, sizeof(line), f)) {
		long long offset;
		int vcpu;
		struct guest_cpu *c;

		if (sscanf(line, "%d %lld", &vcpu, &offset) != 2)
			continue;
		c = cpu_of(d, vcpu);
		if (c && !c->offset_known) {
			c->offset = (uint64_t)offset;
			c->offset_known = 1;
			n++;
		}
	}
	if (f)
		fclose(f);
	return n;
}

static int hook_started(void *ctx, struct tv_recorder *rec)
{
	struct top_guest *tg = ctx;
	struct tv_guest_opts go = { .clock = "x86-tsc" };
	int ret = 0;

	tg->rec = rec;
	snprintf(tg->outdir, sizeof(tg->outdir), "%s", tv_session_writer_dir(tv_recorder_session(rec)));
	for (size_t i = 0; i < tg->nr && !ret; i++) {
		go.index = (unsigned int)i;
		ret = tv_guest_start(rec, &tg->specs[i], &go, &tg->g[i]);
	}
	for (size_t i = 0; i < tg->nr && !ret; i++) {
		ret = tv_guest_wait_ready(tg->g[i], TOP_GUEST_READY_MS);
		if (ret) {
			struct tv_guest_stats st;

			tv_guest_get_stats(tg->g[i], &st);
			tv_err("Guest not recording: name=\"%s\", %s", tv_guest_name(tg->g[i]),
			       st.status[0] ? st.status : ret == -ETIMEDOUT ? "no answer in 30 s" : "failed");
		}
	}
	return ret;
}

static int hook_opened(void *ctx, struct tv_reader *rd)
{
	struct top_guest *tg = ctx;
	size_t guests = 0;
	int ret;

	tg->rd = rd;
	tg->host = -1;
	tg->nr_dom = tv_reader_nr_domains(rd);
	tg->dom = calloc(tg->nr_dom ? tg->nr_dom : 1, sizeof(*tg->dom));
	if (!tg->dom)
		return -ENOMEM;
	for (size_t d = 0; d < tg->nr_dom; d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);

		if (!strcmp(di->subdir, "host"))
			tg->host = (int)d;
		if (strncmp(di->subdir, "guest-", 6))
			continue;
		tg->dom[d].guest = 1;
		tg->dom[d].vm = di->subdir + 6;
		tg->dom[d].cpu = calloc(TOP_GUEST_MAX_CPUS, sizeof(*tg->dom[d].cpu));
		if (!tg->dom[d].cpu)
			return -ENOMEM;
		if (!read_tsc_file(&tg->dom[d], tg->outdir))
			tv_warn("No TSC offset of guest %s from debugfs (kvm/PID-*/vcpuN/tsc-offset; give its pid:QEMU_PID): its exits say ? until the host's kvm_write_tsc_offset",
				tg->dom[d].vm);
		guests++;
	}
	if (tg->host < 0 || guests != tg->nr) {
		tv_err("The live view sees %zu of its %zu guests: path=\"%s\"", guests, tg->nr, tg->outdir);
		return -EIO;
	}
	ret = tv_guest_context_new_live(rd, &tg->gc);
	return ret;
}

static void hook_close(void *ctx)
{
	struct top_guest *tg = ctx;

	for (size_t i = 0; i < tg->nr; i++)
		if (tg->g[i])
			tv_guest_request_stop(tg->g[i]);
	for (size_t i = 0; i < tg->nr; i++) {
		if (!tg->g[i])
			continue;
		tv_guest_stop(tg->g[i]);	/* its domain joins the kept session */
		tv_guest_destroy(tg->g[i]);
	}
	for (size_t d = 0; d < tg->nr_dom; d++) {
		for (int c = 0; tg->dom[d].cpu && c < TOP_GUEST_MAX_CPUS; c++)
			cpu_queue_free(&tg->dom[d].cpu[c]);
		free(tg->dom[d].cpu);
	}
	free(tg->dom);
	tv_guest_context_free(tg->gc);
	free(tg->g);
	free(tg);
}

int tv_top_guest_open(const struct tv_top_opts *opts, const struct tv_guest_spec *guests,
		      size_t nr_guests, struct tv_top **out)
{
	static const char *const extra[] = { "kvm:kvm_write_tsc_offset" };
	struct tv_top_opts o = *opts;
	struct tv_top_hooks h = {
		.started = hook_started,
		.opened = hook_opened,
		.event = hook_event,
		.guest_of = hook_guest_of,
		.close = hook_close,
		.tsc_clock = true,
		.lag_ns = TV_TOP_GUEST_LAG_NS,
	};
	const char **events;
	struct top_guest *tg;
	size_t n = 0;

	*out = NULL;
	if (!nr_guests)
		return tv_top_open(opts, out);
	tg = calloc(1, sizeof(*tg));
	events = calloc((opts->nr_events ? opts->nr_events : TV_TOP_NR_DEFAULT_EVENTS) + 1,
			sizeof(*events));
	if (tg)
		tg->g = calloc(nr_guests, sizeof(*tg->g));
	if (!tg || !events || !tg->g) {
		if (tg)
			free(tg->g);
		free(tg);
		free(events);
		return -ENOMEM;
	}
	tg->specs = guests;
	tg->nr = nr_guests;
	/* the exits, and the TSC offsets that tie the guests' clocks to them */
	for (size_t i = 0; i < (opts->nr_events ? opts->nr_events : TV_TOP_NR_DEFAULT_EVENTS); i++)
		events[n++] = opts->nr_events ? opts->events[i] : tv_top_default_events[i];
	events[n++] = extra[0];
	o.events = events;
	o.nr_events = n;
	h.ctx = tg;
	h.owned = events;	/* the top's copy of o points at them */
	return tv_top_open_hooked(&o, &h, out);	/* frees tg (h.close) and events */
}
