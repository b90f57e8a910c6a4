// SPDX-License-Identifier: LGPL-2.1
/*
 * top --xen: the live view (kvm/top.c) of Xen, fed by Xen's per-CPU trace
 * buffers (xen/xen_recorder.c) and analysed by the Xen analysis of `tracevisor
 * stat` (xen/xen_stat.c) cut into intervals: one meaning in one place.  Also
 * the same view of a recorded Xen session (top --replay).
 *
 * Here because it joins kvm/'s live view with xen/'s recorder and
 * analysis (kvm/ and xen/ do not know each other); kvm/ only calls the
 * hooks it is given (kvm/top_hooks.h).
 *
 * How: Xen's records go to a session (xen/cpuN.xen, its meta written at
 * once) that the view follows.  An interval ends at "now" in the session's
 * clock, taken from the TSC (dom0 reads the same TSC as Xen: the hardware
 * domain never gets a virtual one) before the recorder's drain thread has
 * gone over every CPU: every record stamped before it is then on disk, so
 * the merge is in time order as when stat reads the finished session.  The
 * last interval stops Xen's tracing and reads the rest.  Besides stat's
 * rows, each vCPU's runstates get their share of the interval (the time in
 * each state, cut at the interval's edges), and rows are named by the
 * domain's xl name from xenstore (a replay: the session's guest domains).
 *
 * Threads: the hooks run on the thread that reads the intervals, close on
 * the one that calls tv_top_close() (after that thread was joined);
 * everything here belongs to the reading thread.  The recorder's drain
 * thread is the recorder's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_trace.h"
#include "../kvm/top_hooks.h"
#include "../xen/xen_stat.h"
#include "../xen/xen_recorder.h"

/* What the view records: lost records and CPU changes, the scheduler
 * (runstates, and who runs where: attribution), HVM exits and handlers,
 * PV entries and hypercalls. */
#define TOP_XEN_CLASSES "gen,sched,hvm,pv"
#define TOP_XEN_FLUSH_MS 5000
#define TOP_XEN_MAX_CPUS 256
/* Xen system time (patched Xen): each CPU's scale is recalibrated every
 * second in band; "now" from the scale at the start is kept this far back. */
#define TOP_XEN_SYSTEM_MARGIN_NS 50000000ULL
#define TOP_XEN_NR_RUNSTATES 4

/* A vCPU's runstate as the records tell it, for the shares. */
struct vcpu_share {
	unsigned int dom, vcpu;
	int state;			/* -1 until its first change */
	uint64_t since;			/* last time counted */
	uint64_t acc[TOP_XEN_NR_RUNSTATES];	/* ns in each state in this interval */
};

struct dom_name {
	unsigned int domid;
	char name[64];
};

struct top_xen {
	bool live;
	struct tv_xen_recorder *rec;	/* live, until live_end or close */
	char outdir[4096];
	struct tv_reader *rd;
	struct tv_exit_stat totals;	/* the pass's running totals */
	struct tv_xen_stat_pass *pass;
	/* the session's clock, to tell "now" from the TSC (live) */
	bool system_time;
	uint64_t khz;
	int ncpus;
	struct {
		uint64_t tsc0, stime0;
		uint32_t mul;
		int8_t shift;
	} scale[TOP_XEN_MAX_CPUS];
	uint64_t newest;		/* the latest record time read (debug) */
	/* runstate shares */
	struct vcpu_share *vcpus;
	size_t nr_vcpus, cap_vcpus;
	uint64_t cur_begin;		/* the current interval's start */
	bool begun;
	/* names by domid */
	struct dom_name *names;
	size_t nr_names, cap_names;
};

/* Now in the session's clock: what every CPU stamps from now on is later. */
static uint64_t xen_now(const struct top_xen *tx)
{
	uint64_t tsc = tv_tsc_read(), now = UINT64_MAX;

	if (!tx->system_time)
		return tv_xen_tsc_to_ns(tsc, tx->khz);
	for (int cpu = 0; cpu < tx->ncpus; cpu++) {
		uint64_t t;

		if (!tx->scale[cpu].mul)
			continue;
		t = tv_xen_tsc_to_stime(tsc, tx->scale[cpu].tsc0, tx->scale[cpu].stime0,
					tx->scale[cpu].mul, tx->scale[cpu].shift);
		if (t < now)
			now = t;
	}
	if (now == UINT64_MAX)
		return tv_xen_tsc_to_ns(tsc, tx->khz);
	return now > TOP_XEN_SYSTEM_MARGIN_NS ? now - TOP_XEN_SYSTEM_MARGIN_NS : 0;
}

/* The clock of the session being recorded, from xen/meta (as the reader). */
static int xen_load_clock(struct top_xen *tx)
{
	char path[sizeof(tx->outdir) + 16], key[64];
	struct tv_meta *meta;
	const char *clock;
	int ret;

	snprintf(path, sizeof(path), "%s/xen/meta", tx->outdir);
	ret = tv_meta_read(path, &meta);
	if (ret)
		return ret;
	clock = tv_meta_get(meta, "clock");
	tx->khz = (uint64_t)tv_meta_get_ll(meta, "tsc_khz", 0);
	tx->system_time = clock && !strcmp(clock, "xen-system");
	for (int cpu = 0; tx->system_time && cpu < TOP_XEN_MAX_CPUS; cpu++) {
		snprintf(key, sizeof(key), "cpu%d.tsc_to_system_mul", cpu);
		if (!tv_meta_get(meta, key))
			break;
		tx->scale[cpu].mul = (uint32_t)tv_meta_get_ll(meta, key, 0);
		snprintf(key, sizeof(key), "cpu%d.tsc_shift", cpu);
		tx->scale[cpu].shift = (int8_t)tv_meta_get_ll(meta, key, 0);
		snprintf(key, sizeof(key), "cpu%d.tsc_timestamp", cpu);
		tx->scale[cpu].tsc0 = (uint64_t)tv_meta_get_ll(meta, key, 0);
		snprintf(key, sizeof(key), "cpu%d.system_time", cpu);
		tx->scale[cpu].stime0 = (uint64_t)tv_meta_get_ll(meta, key, 0);
		tx->ncpus = cpu + 1;
	}
	tv_meta_free(meta);
	if (!tx->khz && !tx->ncpus) {
		tv_err("Xen's trace clock is unknown: path=\"%s\" has no tsc_khz", path);
		return -EINVAL;
	}
	return 0;
}

static int hook_live_start(void *ctx, const char *outdir, uint64_t *t0)
{
	struct top_xen *tx = ctx;
	struct tv_xen_record_opts o = {
		.outdir = outdir,
		.evt_mask = tv_xen_parse_events(TOP_XEN_CLASSES),
	};
	int ret;

	snprintf(tx->outdir, sizeof(tx->outdir), "%s", outdir);
	ret = tv_xen_recorder_create(&o, &tx->rec);
	if (!ret)
		ret = tv_xen_recorder_start(tx->rec);
	if (!ret)
		ret = tv_xen_recorder_checkpoint(tx->rec);
	/*
	 * The reader, opened next, takes each CPU's first vCPU from the first
	 * scheduler record in the file, else from the recorder's snapshot of
	 * who runs where, taken after tracing began: a switch between the two
	 * must be on disk when the reader looks, or the snapshot's later state
	 * is taken for the start (lab xen-top of 2026-11-28: one hlt exit of
	 * d8 counted as the idle vCPU's, where stat of the finished session,
	 * which sees the switch, counts it as d8's).
	 */
	if (!ret)
		ret = tv_xen_recorder_flush(tx->rec, TOP_XEN_FLUSH_MS);
	if (!ret)
		ret = xen_load_clock(tx);
	/* records from here on are in the first interval; those before, too */
	*t0 = ret ? 0 : xen_now(tx);
	tx->cur_begin = *t0;
	tx->begun = true;
	return ret;
}

static int hook_live_flush(void *ctx, uint64_t *limit)
{
	struct top_xen *tx = ctx;

	*limit = xen_now(tx);	/* before the drain pass that makes it true */
	tv_debug("top --xen: interval limit %llu, newest record read %llu",
		 (unsigned long long)*limit, (unsigned long long)tx->newest);
	return tv_xen_recorder_flush(tx->rec, TOP_XEN_FLUSH_MS);
}

static int hook_live_end(void *ctx, uint64_t *t_end)
{
	struct top_xen *tx = ctx;
	int ret;

	/* disabled first: nothing is stamped after now */
	ret = tv_xen_recorder_stop(tx->rec);
	*t_end = xen_now(tx);
	tv_xen_recorder_destroy(tx->rec);
	tx->rec = NULL;
	return ret;
}

/* What each domid of a recorded session is called: its guest domain's xl name. */
static int names_from_session(struct top_xen *tx, struct tv_reader *rd)
{
	for (size_t d = 0; d < tv_reader_nr_domains(rd); d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);
		long long id = tv_meta_get_ll(di->meta, "xen_domid", -1);
		const char *name = tv_meta_get(di->meta, "xen_domain");
		struct dom_name *n;

		if (id <= 0 || !name)
			continue;
		if (tx->nr_names == tx->cap_names) {
			size_t cap = tx->cap_names ? 2 * tx->cap_names : 8;

			n = realloc(tx->names, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			tx->names = n;
			tx->cap_names = cap;
		}
		n = &tx->names[tx->nr_names++];
		n->domid = (unsigned int)id;
		snprintf(n->name, sizeof(n->name), "%s", name);
	}
	return 0;
}

static int hook_opened(void *ctx, struct tv_reader *rd)
{
	struct top_xen *tx = ctx;
	int ret;

	tx->rd = rd;
	ret = tv_xen_stat_pass_new(rd, &tx->totals, &tx->pass);
	if (ret == -ENOENT)
		tv_err("Not a Xen session: no domain of kind xen-trace (top --xen and its --replay show Xen's records)");
	return ret;
}

static struct vcpu_share *share_slot(struct top_xen *tx, unsigned int dom, unsigned int vcpu)
{
	struct vcpu_share *v;

	for (size_t i = 0; i < tx->nr_vcpus; i++)
		if (tx->vcpus[i].dom == dom && tx->vcpus[i].vcpu == vcpu)
			return &tx->vcpus[i];
	if (tv_array_grow(&tx->vcpus, &tx->cap_vcpus, tx->nr_vcpus, sizeof(*v), 16))
		return NULL;
	v = &tx->vcpus[tx->nr_vcpus++];
	memset(v, 0, sizeof(*v));
	v->dom = dom;
	v->vcpu = vcpu;
	v->state = -1;
	return v;
}

static uint64_t ev_field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

/* A runstate change: the time since the last one counted goes to the old state. */
static int share_runstate(struct top_xen *tx, const struct tv_event *ev)
{
	unsigned int old = (unsigned int)ev_field(ev, "old_state");
	struct vcpu_share *v = share_slot(tx, (unsigned int)ev_field(ev, "domid") & 0xffff,
					  (unsigned int)ev_field(ev, "vcpuid") & 0xffff);
	uint64_t from;

	if (!v)
		return -ENOMEM;
	/* first seen: it was in the old state since the interval began */
	from = v->state < 0 || v->since < tx->cur_begin ? tx->cur_begin : v->since;
	if (old < TOP_XEN_NR_RUNSTATES && ev->ts > from)
		v->acc[old] += ev->ts - from;
	v->since = ev->ts > from ? ev->ts : from;
	v->state = (int)ev_field(ev, "new_state");
	return 0;
}

static int hook_event(void *ctx, const struct tv_event *ev)
{
	struct top_xen *tx = ctx;
	int ret;

	if (!tx->begun) {	/* a replay: the first interval starts here */
		tx->cur_begin = ev->ts;
		tx->begun = true;
	}
	if (ev->ts > tx->newest)
		tx->newest = ev->ts;
	ret = tv_xen_stat_pass_event(tx->pass, ev);
	if (!ret && ev->format && ev->format->id == TV_XEN_EV_RUNSTATE &&
	    !strcmp(ev->format->system, "xen"))
		ret = share_runstate(tx, ev);
	return ret ? ret : 1;	/* none for the VM exit analysis */
}

/* The row of runstate @state of @v in @out, added empty if the interval has none. */
static struct tv_exit_stat_row *share_row(struct tv_exit_stat *out, const struct vcpu_share *v,
					 int state)
{
	char vm[80], vcpu[24], reason[48];
	struct tv_exit_stat_row *r;

	tv_xen_stat_dom_label(v->dom, vm, sizeof(vm));
	snprintf(vcpu, sizeof(vcpu), "%u", v->vcpu);
	snprintf(reason, sizeof(reason), "runstate:%s", tv_xen_runstate_name((unsigned int)state));
	for (size_t i = 0; i < out->nr_rows; i++) {
		r = &out->rows[i];
		if (!strcmp(r->vm, vm) && !strcmp(r->vcpu, vcpu) && !strcmp(r->reason, reason))
			return r;
	}
	r = realloc(out->rows, (out->nr_rows + 1) * sizeof(*r));
	if (!r)
		return NULL;
	out->rows = r;
	r = &out->rows[out->nr_rows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->vm, sizeof(r->vm), "%s", vm);
	snprintf(r->vcpu, sizeof(r->vcpu), "%s", vcpu);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->guest_pid = -1;
	return r;
}

/* Each vCPU's time in each state in [t_begin, t_end), as shares of rows. */
static int add_shares(struct top_xen *tx, uint64_t t_begin, uint64_t t_end, struct tv_exit_stat *out)
{
	double len = t_end > t_begin ? (double)(t_end - t_begin) : 0;

	for (size_t i = 0; i < tx->nr_vcpus; i++) {
		struct vcpu_share *v = &tx->vcpus[i];

		if (v->state >= 0 && v->state < TOP_XEN_NR_RUNSTATES && t_end > v->since) {
			uint64_t from = v->since > t_begin ? v->since : t_begin;

			v->acc[v->state] += t_end - from;
			v->since = t_end;
		}
		for (int s = 0; s < TOP_XEN_NR_RUNSTATES; s++) {
			struct tv_exit_stat_row *r;

			if (!v->acc[s])
				continue;
			r = share_row(out, v, s);
			if (!r)
				return -ENOMEM;
			r->share = len > 0 ? (double)v->acc[s] / len : 0;
			if (r->share > 1)
				r->share = 1;	/* a record stamped before the interval */
			v->acc[s] = 0;
		}
	}
	return 0;
}

/* The xl name of @domid: from xenstore (live, kept), the session (replay), else NULL. */
static const char *dom_name(struct top_xen *tx, unsigned int domid)
{
	struct dom_name *n;

	for (size_t i = 0; i < tx->nr_names; i++)
		if (tx->names[i].domid == domid)
			return tx->names[i].name;
	if (!domid)
		return "Domain-0";
	if (!tx->live)
		return NULL;
	if (tv_array_grow(&tx->names, &tx->cap_names, tx->nr_names, sizeof(*n), 8))
		return NULL;
	n = &tx->names[tx->nr_names];
	n->domid = domid;
	if (tv_xen_domain_name(domid, n->name, sizeof(n->name)))
		return NULL;	/* gone already: dN, asked again next time */
	tx->nr_names++;
	return n->name;
}

static const char *row_kind(const char *reason)
{
	static const struct { const char *prefix, *kind; } kinds[] = {
		{ "vmexit:", "exit" }, { "runstate:", "runstate" }, { "hypercall:", "hypercall" },
		{ "subcall:", "hypercall" }, { "pv:", "pv" }, { "hvm:", "hvm" },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(reason, kinds[i].prefix, strlen(kinds[i].prefix)))
			return kinds[i].kind;
	return "other";
}

/* stat's rows (vm d1, idle) as the view names them: NAME[1], xen. */
static void name_rows(struct top_xen *tx, struct tv_exit_stat *out)
{
	for (size_t i = 0; i < out->nr_rows; i++) {
		struct tv_exit_stat_row *r = &out->rows[i];
		unsigned int id;
		const char *name;
		char end;

		snprintf(r->kind, sizeof(r->kind), "%s", row_kind(r->reason));
		if (strcmp(r->kind, "runstate"))
			r->share = -1;
		r->domid = -1;
		if (!strcmp(r->vm, "idle")) {
			snprintf(r->vm, sizeof(r->vm), "xen");
			continue;
		}
		if (sscanf(r->vm, "d%u%c", &id, &end) != 1)
			continue;
		r->domid = (int)id;
		name = dom_name(tx, id);
		if (name)
			snprintf(r->vm, sizeof(r->vm), "%.60s[%u]", name, id);
		else
			snprintf(r->vm, sizeof(r->vm), "d%u[%u]", id, id);
	}
}

static int hook_interval(void *ctx, uint64_t t_begin, uint64_t t_end, struct tv_exit_stat *out)
{
	struct top_xen *tx = ctx;
	int ret = tv_xen_stat_pass_interval(tx->pass, out);

	if (!ret)
		ret = add_shares(tx, tx->cur_begin > t_begin ? tx->cur_begin : t_begin, t_end, out);
	if (ret) {
		tv_exit_stat_free(out);
		return ret;
	}
	tx->cur_begin = t_end;
	name_rows(tx, out);
	return 0;
}

static void hook_close(void *ctx)
{
	struct top_xen *tx = ctx;

	if (tx->rec) {	/* ended otherwise than by the last interval */
		tv_xen_recorder_stop(tx->rec);
		tv_xen_recorder_destroy(tx->rec);
	}
	tv_xen_stat_pass_free(tx->pass);
	tv_exit_stat_free(&tx->totals);
	free(tx->vcpus);
	free(tx->names);
	free(tx);
}

/* A one-line reason why this is no place for top --xen, before touching Xen. */
static int xen_live_preflight(void)
{
	char type[32] = "", caps[128] = "";
	FILE *f;

	if (geteuid() != 0) {
		tv_err("top --xen reads Xen's trace buffers through privcmd: run it as root, in dom0");
		return -EPERM;
	}
	f = fopen("/sys/hypervisor/type", "re");
	if (f) {
		if (!fgets(type, sizeof(type), f))
			type[0] = '\0';
		fclose(f);
	}
	type[strcspn(type, "\n")] = '\0';
	if (strcmp(type, "xen")) {
		tv_err("Not running on Xen: /sys/hypervisor/type is \"%s\" (top --xen runs in dom0 of a Xen host)",
		       type);
		return -ENODEV;
	}
	f = fopen("/proc/xen/capabilities", "re");
	if (f) {	/* xenfs mounted: it says whether this is dom0 */
		if (!fgets(caps, sizeof(caps), f))
			caps[0] = '\0';
		fclose(f);
		if (!strstr(caps, "control_d")) {
			tv_err("Not Xen's dom0: /proc/xen/capabilities has no control_d (top --xen runs in dom0)");
			return -ENODEV;
		}
	}
	return 0;
}

/* A --vm that is a plain name must be a domain now (globs and domids need not). */
static int check_vms(const struct tv_top_opts *opts)
{
	for (size_t i = 0; i < opts->nr_vms; i++) {
		const char *v = opts->vms[i];
		unsigned int id;
		int ret;

		if (strpbrk(v, "*?[") || v[strspn(v, "0123456789")] == '\0' || !strcmp(v, "xen"))
			continue;
		ret = tv_xen_domain_id(v, &id);
		if (ret == -ENOENT) {
			tv_err("Cannot find Xen domain: name=\"%s\" (no /local/domain/*/name in xenstore says so; see xl list)",
			       v);
			return ret;
		}
		if (ret) {
			tv_err("Cannot list Xen domains in xenstore: errno=%d (%s) (xenstored running?)", -ret,
			       strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int tv_top_xen_open(const struct tv_top_opts *opts, struct tv_top **out)
{
	struct top_xen *tx;
	struct tv_top_hooks h = {
		.opened = hook_opened,
		.event = hook_event,
		.interval = hook_interval,
		.close = hook_close,
	};
	int ret;

	*out = NULL;
	if (opts->bpf || opts->nr_events || opts->filter || opts->nr_time_functions) {
		tv_err("top --xen shows Xen's records: no --bpf, -e, --filter or --time-function with it");
		return -EINVAL;
	}
	if (!opts->replay_dir) {
		ret = xen_live_preflight();
		if (!ret)
			ret = check_vms(opts);
		if (ret)
			return ret;
	}
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return -ENOMEM;
	tx->live = !opts->replay_dir;
	if (!tx->live) {
		/* the view reads xen/ alone: the names are in the guest domains */
		struct tv_reader *rd;

		ret = tv_reader_open(opts->replay_dir, &rd);
		if (!ret) {
			ret = names_from_session(tx, rd);
			tv_reader_close(rd);
		}
		if (ret) {
			free(tx);
			return ret;
		}
		h.replay_domain = "xen";
	} else {
		h.live_start = hook_live_start;
		h.live_flush = hook_live_flush;
		h.live_end = hook_live_end;
	}
	h.ctx = tx;
	return tv_top_open_hooked(opts, &h, out);
}
