// SPDX-License-Identifier: LGPL-2.1
/*
 * tracevisor serve: the exit programs of top --bpf attached for the
 * daemon's life (kvm/top_bpf.c), their rows read at each scrape, never
 * in between: the kernel keeps every count cumulative, so a scrape costs
 * one walk of the rows map and nothing runs while nobody scrapes.
 *
 * Each scrape: VMMs seen gone for --forget seconds lose their rows (the
 * map stays bounded as VMs come and go, after their last exits had the
 * time to be scraped); every row is folded into its (vm, reason[, vcpu])
 * series; the series are rendered (host/serve_metrics.c).
 * Cardinality: --max-vms VMs have series of their own, the others' exits
 * go to vm="_other" (said once in the log, and by tracevisor_vms_over_limit);
 * reasons are those the architecture's table names, others "unknown".
 * A VMM's pid reused by another VMM within --forget seconds continues the
 * first one's series (the kernel's rows are keyed by pid).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tv_internal.h"
#include "../kvm/bpf/top_exits.h"
#include "../kvm/top_bpf.h"
#include "flight.h"
#include "guest.h"
#include "serve.h"
#include "serve_xen.h"

struct serve {
	const struct tv_serve_opts *opts;
	struct tv_top_bpf *bpf;
	struct serve_xen *xen;		/* --xen: instead of bpf */
	struct serve_http *http;
	struct serve_web *web;
	struct tv_session_record *flight;	/* --flight-recorder: the armed recorder */
	uint64_t alerts;		/* snapshots taken for alerts */
	uint64_t last_alert_ns;		/* when the last one was taken */
	uint64_t holdoff_ns;		/* --trigger-holdoff */
	unsigned int max_alerts;	/* --max-snapshots */
	struct serve_metrics m;		/* vms: every VMM seen (cache); series: per scrape */
	unsigned int other;		/* index of the "_other" VM, if have_other */
	bool have_other, said_limit;
	struct top_val *val;		/* scratch of a row (~8 KiB) */
	struct top_key *forget;		/* rows to delete after the walk */
	size_t nr_forget, cap_forget;
	pid_t *gone;			/* VMMs whose rows this scrape deletes */
	size_t nr_gone, cap_gone;
	unsigned int *idx;		/* open addressing by tgid: VM index + 1, 0 free */
	size_t idx_size;		/* a power of two, at least twice nr_vms */
	unsigned int nr_own;		/* VMs with series of their own */
	uint64_t now_ns;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool vmm_alive(pid_t tgid)
{
	return !kill(tgid, 0) || errno != ESRCH;
}

static size_t idx_slot(const struct serve *s, pid_t tgid)
{
	size_t i = ((size_t)tgid * 2654435761u) & (s->idx_size - 1);

	while (s->idx[i] && s->m.vms[s->idx[i] - 1].tgid != tgid)
		i = (i + 1) & (s->idx_size - 1);
	return i;
}

/* The index of the cache by tgid, sized for one more VM: 0 or -ENOMEM. */
static int idx_fit(struct serve *s)
{
	size_t size = s->idx_size ? s->idx_size : 64;

	if (s->idx && (s->m.nr_vms + 1) * 2 <= s->idx_size)
		return 0;
	while ((s->m.nr_vms + 1) * 2 > size)
		size *= 2;
	free(s->idx);
	s->idx = calloc(size, sizeof(*s->idx));
	s->idx_size = s->idx ? size : 0;
	if (!s->idx)
		return -ENOMEM;
	for (size_t v = 0; v < s->m.nr_vms; v++)
		if (s->m.vms[v].tgid)
			s->idx[idx_slot(s, s->m.vms[v].tgid)] = (unsigned int)v + 1;
	return 0;
}

/*
 * VMMs gone for --forget seconds leave the cache, their pids into
 * s->gone (the walk deletes their rows); the index is rebuilt.  0 or
 * -ENOMEM (the index).
 */
static int vms_expire(struct serve *s)
{
	uint64_t keep = (uint64_t)(s->opts->forget_s ? s->opts->forget_s : TV_SERVE_DEFAULT_FORGET_S) * 1000000000ULL;
	size_t out = 0;

	s->nr_gone = 0;
	for (size_t i = 0; i < s->m.nr_vms; i++) {
		struct serve_vm *vm = &s->m.vms[i];
		bool alive = !vm->tgid || vmm_alive(vm->tgid);

		/* a pid reused meanwhile: the new VMM continues its series */
		vm->gone_ns = alive ? 0 : vm->gone_ns ? vm->gone_ns : s->now_ns;
		/* (no memory to list it: forgotten at a later scrape) */
		if (vm->gone_ns && s->now_ns - vm->gone_ns >= keep &&
		    !tv_array_grow(&s->gone, &s->cap_gone, s->nr_gone, sizeof(*s->gone), 16)) {
			s->gone[s->nr_gone++] = vm->tgid;
			continue;
		}
		s->m.vms[out++] = *vm;
	}
	s->m.nr_vms = out;
	s->have_other = false;
	s->nr_own = 0;
	for (size_t i = 0; i < out; i++) {
		if (!s->m.vms[i].tgid) {
			s->have_other = true;
			s->other = (unsigned int)i;
		}
		s->nr_own += s->m.vms[i].tgid > 0 && !s->m.vms[i].folded;
	}
	/* entries moved: index them again */
	free(s->idx);
	s->idx = NULL;
	s->idx_size = 0;
	return idx_fit(s);
}

static unsigned int vms_max(const struct serve *s)
{
	return s->opts->max_vms ? s->opts->max_vms : TV_SERVE_DEFAULT_MAX_VMS;
}

/* The cache's entry of @k's VMM (new if needed), or -1 (no memory). */
static long vm_of(struct serve *s, const struct top_key *k, const struct top_val *v)
{
	struct serve_metrics *m = &s->m;
	struct serve_vm *vm;
	size_t slot;

	if (idx_fit(s) || tv_array_grow(&m->vms, &m->cap_vms, m->nr_vms, sizeof(*m->vms), 64))
		return -1;
	slot = idx_slot(s, (pid_t)k->tgid);
	if (s->idx[slot])
		return (long)s->idx[slot] - 1;
	vm = &m->vms[m->nr_vms];
	memset(vm, 0, sizeof(*vm));
	vm->tgid = (pid_t)k->tgid;
	/* gone before its first scrape: its --forget time runs from now */
	vm->gone_ns = vmm_alive(vm->tgid) ? 0 : s->now_ns;
	vm->folded = s->nr_own >= vms_max(s);
	s->nr_own += !vm->folded;
	if (vm->folded && !s->said_limit) {
		tv_warn("--max-vms %u reached: the exits of pid %u and of the VMs after it are counted under vm=\"_other\"",
			vms_max(s), k->tgid);
		s->said_limit = true;
	}
	if (!vm->folded)
		serve_vm_identify("/proc", vm->tgid, v->comm, vm->name, sizeof(vm->name), vm->uuid,
				  sizeof(vm->uuid));
	s->idx[slot] = (unsigned int)++m->nr_vms;
	return (long)m->nr_vms - 1;
}

/* The index of vm="_other", made at its first use; -1: no memory. */
static long vm_other(struct serve *s)
{
	struct serve_vm *vm;

	if (s->have_other)
		return s->other;
	if (tv_array_grow(&s->m.vms, &s->m.cap_vms, s->m.nr_vms, sizeof(*s->m.vms), 64))
		return -1;
	vm = &s->m.vms[s->m.nr_vms];
	memset(vm, 0, sizeof(*vm));
	snprintf(vm->name, sizeof(vm->name), "_other");
	s->have_other = true;
	s->other = (unsigned int)s->m.nr_vms++;
	return s->other;
}

static int forget_row(struct serve *s, const struct top_key *k)
{
	if (tv_array_grow(&s->forget, &s->cap_forget, s->nr_forget, sizeof(*s->forget), 64))
		return -ENOMEM;
	s->forget[s->nr_forget++] = *k;
	return 0;
}

/* One kernel row into a series of its own (merged with its equals later). */
static int row_add(void *ctx, const struct top_key *k, const struct top_val *v)
{
	struct serve *s = ctx;
	struct serve_series *ser;
	const char *reason;
	long vm;

	if (k->isa != TOP_ISA_VMX && k->isa != TOP_ISA_SVM)
		return 0;	/* not an exit's row */
	for (size_t i = 0; i < s->nr_gone; i++)
		if (s->gone[i] == (pid_t)k->tgid)
			return forget_row(s, k);
	vm = vm_of(s, k, v);
	if (vm >= 0 && s->m.vms[vm].folded)
		vm = vm_other(s);
	if (vm < 0)
		return -ENOMEM;
	reason = tv_kvm_exit_reason_name((enum tv_kvm_isa)k->isa, k->reason);
	if (!reason) {
		reason = SERVE_REASON_UNKNOWN;
		s->m.health.unknown_reasons++;
	}
	ser = serve_series_new(&s->m, (unsigned int)vm, s->opts->per_vcpu ? (int)k->vcpu : -1, reason);
	if (!ser)
		return -ENOMEM;
	ser->count = v->count;
	ser->sum_ns = v->total_ns;
	serve_series_add_hist(ser, v->hist);
	return 0;
}

/* The kernel's rows into series; gone VMMs' rows deleted. */
static int scrape_bpf(struct serve *s)
{
	int ret = vms_expire(s);

	ret = ret ?: tv_top_bpf_rows(s->bpf, s->val, row_add, s);
	for (size_t i = 0; i < s->nr_forget; i++)
		tv_top_bpf_forget(s->bpf, &s->forget[i]);
	s->m.health.programs = tv_top_bpf_nr_programs(s->bpf);
	tv_top_bpf_lost_by_cause(s->bpf, s->m.health.lost);
	return ret;
}

static int scrape_xen(struct serve *s)
{
	struct serve_xen_opts o = {
		.now_ns = s->now_ns,
		.forget_ns = (uint64_t)(s->opts->forget_s ? s->opts->forget_s : TV_SERVE_DEFAULT_FORGET_S) *
			     1000000000ULL,
		.max_vms = vms_max(s),
		.per_vcpu = s->opts->per_vcpu,
	};

	s->m.health.programs = 0;
	return serve_xen_scrape(s->xen, &s->m, &o);
}

static int scrape(struct serve *s)
{
	unsigned int over = 0;
	int ret;

	s->now_ns = mono_ns();
	s->m.nr_series = 0;
	s->nr_forget = 0;
	s->m.health.unknown_reasons = 0;
	ret = s->xen ? scrape_xen(s) : scrape_bpf(s);
	if (ret)
		return ret;
	serve_series_sort(&s->m);
	for (size_t i = 0; i < s->m.nr_vms; i++)
		over += s->m.vms[i].tgid > 0 && s->m.vms[i].folded;
	s->m.health.vms_over_limit = over;
	s->m.health.max_vms = vms_max(s);
	s->m.health.refused = serve_http_refused(s->http);
	s->m.health.snapshots = s->alerts;
	return 0;
}

/*
 * serve --guest: each guest's stream as its thread keeps it (the stats are
 * safe to take while it runs).  A guest whose stream ended stays, down:
 * its figures are its last.
 */
static void scrape_guests(struct serve *s)
{
	for (size_t i = 0; i < s->m.nr_guests; i++) {
		struct tv_guest *g = tv_session_record_guest(s->flight, i);
		struct serve_guest *sg = &s->m.guests[i];
		struct tv_guest_stats st;

		tv_guest_get_stats(g, &st);
		snprintf(sg->name, sizeof(sg->name), "%s", tv_guest_name(g));
		sg->up = !st.status[0] && !tv_guest_wait_ready(g, 0);
		sg->bytes = st.stream_bytes;
		sg->events = st.events;
		sg->lost = st.lost;
		sg->probes_sent = (uint64_t)st.pings + st.hcalls_asked;
		sg->probes_answered = (uint64_t)st.pongs + st.hcalls_done;
		sg->refused[0] = st.pongs_dropped;
		sg->refused[1] = st.hcalls_dropped;
		/* a bad frame or a limit ends the stream: "failed: ..." */
		sg->refused[2] = !strncmp(st.status, "failed", 6);
	}
}

static int render(void *ctx, bool openmetrics, struct tv_strbuf *body)
{
	struct serve *s = ctx;
	uint64_t t0 = mono_ns();
	int ret = scrape(s);

	if (!ret)
		scrape_guests(s);
	ret = ret ?: serve_metrics_render(&s->m, openmetrics, body);
	s->m.health.scrapes++;
	s->m.health.last_scrape_s = (double)(mono_ns() - t0) / 1e9;
	return ret;
}

/*
 * The webhook's snapshots bounded as record's triggered ones: a flapping
 * alert or a sender replaying webhooks cannot fill the disk (each holds
 * up to --flight-recorder SIZE) nor freeze the ring back to back.  True
 * (429, said in @reply and the log, counted) when refused.
 */
static bool alert_refused(struct serve *s, struct tv_strbuf *reply)
{
	uint64_t since = mono_ns() - s->last_alert_ns;
	char why[128];

	if (s->alerts >= s->max_alerts) {
		s->m.health.snapshots_refused[1]++;
		snprintf(why, sizeof(why), "--max-snapshots %u taken", s->max_alerts);
	} else if (s->alerts && since < s->holdoff_ns) {
		s->m.health.snapshots_refused[0]++;
		snprintf(why, sizeof(why), "--trigger-holdoff %.3g s, the last one %.3g s ago",
			 (double)s->holdoff_ns / 1e9, (double)since / 1e9);
	} else {
		return false;
	}
	tv_strbuf_append(reply, "snapshot refused: %s\n", why);
	tv_warn("POST /snapshot refused: %s", why);
	return true;
}

/*
 * POST /snapshot: an Alertmanager webhook into a snapshot of the flight
 * recorder, named by its session.meta keys alert= and alert_vm=.  One
 * snapshot per request (the ring is one moment, whatever the group).
 */
static int alert_snapshot(void *ctx, const char *body, size_t len, struct tv_strbuf *reply)
{
	struct serve *s = ctx;
	struct serve_alert a;
	char why[256], path[4200];
	const char *keys[5] = { "alert", a.name, "alert_vm", a.vms, NULL };
	int ret = serve_alert_parse(body, len, &a, why, sizeof(why));

	if (ret) {
		tv_strbuf_append(reply, "invalid Alertmanager webhook: %s\n", why);
		return ret == -ENOMEM ? 500 : 400;
	}
	if (!a.firing) {
		tv_strbuf_append(reply, "no firing alert: no snapshot\n");
		return 200;
	}
	if (alert_refused(s, reply))
		return 429;
	if (!a.vms[0])
		keys[2] = NULL;	/* no vm label: no alert_vm= */
	ret = tv_session_record_snapshot_keys(s->flight, keys, path, sizeof(path));
	if (ret) {
		tv_strbuf_append(reply, "snapshot failed: errno=%d (%s)\n", -ret, strerror(-ret));
		return 500;
	}
	s->alerts++;
	s->last_alert_ns = mono_ns();
	tv_info("Snapshot for alert %s%s%s: %s", a.name, a.vms[0] ? ", vm " : "", a.vms, path);
	tv_strbuf_append(reply, "snapshot %s\n", path);
	return 200;
}

/* Answer scrapes and webhooks until the stop fd is readable; tick the recorder. */
static int serve_loop(struct serve *s)
{
	struct serve_handlers hd = { .render = render, .snapshot = s->flight ? alert_snapshot : NULL, .ctx = s };
	struct pollfd p[2] = {
		{ .fd = s->opts->stop_fd, .events = POLLIN },
		{ .fd = serve_http_fd(s->http), .events = POLLIN },
	};

	for (;;) {
		int n = poll(p, 2, s->flight ? tv_session_record_tick_ms(s->flight) : -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (s->flight)
			tv_session_record_tick(s->flight);	/* VMs started since */
		if (p[0].revents)
			return 0;
		if (p[1].revents & POLLIN) {
			int ret = serve_http_answer(s->http, &hd);

			if (ret)
				return ret;
		}
	}
}

/*
 * --flight-recorder: the host's kvm events kept in memory in outdir
 * (record's defaults); with --xen, Xen's records in dom0 instead (as
 * record --xen --flight-recorder: dom0's scheduler too when guests sync),
 * on which serve's exit watch counts.
 */
static int flight_start(struct serve *s)
{
	static const char *const events[] = { TV_RECORD_DEFAULT_EVENTS };
	struct tv_session_record_opts so = { 0 };
	int ret;

	so.host.outdir = s->opts->outdir ? s->opts->outdir : TV_SERVE_DEFAULT_OUTDIR;
	so.host.events = s->opts->xen ? NULL : events;
	so.host.nr_events = s->opts->xen ? 0 : 1;
	so.host.flight_bytes = s->opts->flight_bytes;
	so.xen = s->opts->xen;
	so.xen_opts.flight_bytes = s->opts->xen ? s->opts->flight_bytes : 0;
	so.xen_opts.evt_mask = s->opts->xen ? tv_xen_parse_events(SERVE_XEN_CLASSES) : 0;
	so.guests = s->opts->guests;
	so.nr_guests = s->opts->nr_guests;
	s->max_alerts = s->opts->max_snapshots ? s->opts->max_snapshots : TV_FLIGHT_DEFAULT_MAX_SNAPSHOTS;
	s->holdoff_ns = TV_FLIGHT_DEFAULT_HOLDOFF_NS;
	if (s->opts->trigger_holdoff && tv_flight_parse_duration(s->opts->trigger_holdoff, &s->holdoff_ns)) {
		tv_err("Invalid --trigger-holdoff: '%s' (a duration with its unit: 100ms, 2s, 500us)",
		       s->opts->trigger_holdoff);
		return -EINVAL;
	}
	ret = tv_session_record_start(&so, &s->flight);
	if (!ret && so.xen)
		ret = serve_xen_open_on(tv_session_record_xen(s->flight), &s->xen);
	if (!ret && so.nr_guests) {
		s->m.guests = calloc(so.nr_guests, sizeof(*s->m.guests));
		s->m.nr_guests = s->m.guests ? tv_session_record_nr_guests(s->flight) : 0;
		if (!s->m.guests)
			ret = -ENOMEM;
	}
	if (!ret)
		tv_info("Flight recorder armed: the last %llu bytes of %s; POST /snapshot writes %s/snapshot-N (at most %u, %.3g s apart)",
			(unsigned long long)s->opts->flight_bytes, so.xen ? "Xen's records" : "kvm events",
			so.host.outdir, s->max_alerts,
			(double)s->holdoff_ns / 1e9);
	return ret;
}

/* The recorder stopped: its last buffers are the session in outdir itself. */
static void flight_stop(struct serve *s)
{
	if (!s->flight)
		return;
	if (tv_session_record_stop(s->flight))
		tv_warn("The flight recorder did not stop cleanly (%llu alert snapshots taken)",
			(unsigned long long)s->alerts);
	tv_session_record_destroy(s->flight);
}

int tv_serve_run(const struct tv_serve_opts *opts)
{
	const char *listen = opts->listen ? opts->listen : TV_SERVE_DEFAULT_LISTEN;
	struct serve s = { .opts = opts };
	int ret;

	if (opts->stop_fd < 0) {
		tv_err("No stop fd given");
		return -EINVAL;
	}
	if (opts->nr_guests && !opts->flight_bytes) {
		tv_err("serve --guest records the guests in the flight recorder: give --flight-recorder SIZE");
		return -EINVAL;
	}
	s.val = malloc(sizeof(*s.val));
	if (!s.val)
		return -ENOMEM;
	ret = opts->web_config ? serve_web_load(opts->web_config, &s.web) : 0;
	if (!ret)
		ret = serve_http_open(listen, s.web, &s.http);
	/* --xen --flight-recorder: Xen has one consumer, the flight recorder's */
	if (!ret && !(opts->xen && opts->flight_bytes))
		ret = opts->xen ? serve_xen_open(&s.xen) : tv_top_bpf_open(NULL, NULL, 0, &s.bpf);
	s.m.xen = opts->xen;
	if (!ret && opts->flight_bytes)
		ret = flight_start(&s);
	if (!ret) {
		if (s.xen)
			tv_info("Xen's trace records consumed; /metrics on %s://%s",
				serve_web_tls(s.web) ? "https" : "http", listen);
		else
			tv_info("%u BPF programs attached; /metrics on %s://%s", tv_top_bpf_nr_programs(s.bpf),
				serve_web_tls(s.web) ? "https" : "http", listen);
		ret = serve_loop(&s);
		if (ret)
			tv_err("Stopped: errno=%d (%s)", -ret, strerror(-ret));
	}
	serve_xen_close(s.xen);	/* before the flight recorder that may hold its watch */
	flight_stop(&s);
	tv_top_bpf_close(s.bpf);
	serve_http_close(s.http);
	serve_web_free(s.web);
	serve_metrics_free(&s.m);
	free(s.forget);
	free(s.gone);
	free(s.idx);
	free(s.val);
	return ret;
}
