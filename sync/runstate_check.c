// SPDX-License-Identifier: LGPL-2.1
/*
 * Causality against Xen's scheduler: a domU's code runs only while Xen has
 * its vCPU running, so after the transforms every event of guest CPU N of
 * a Xen domU must fall inside a running interval of vCPU N in Xen's own
 * xen:xen_runstate_change records (opened by new_state 0, closed by
 * old_state 0) - up to the guest's bound plus Xen's, both mapped to the
 * reference.  One streaming pass over the merged session, a small state
 * per vCPU, the same pairing as the KVM check (sync/vcpu_check.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "exit_tracker.h"
#include "xen_trace.h"
#include "tv_internal.h"
#include "sync_session.h"

#define RUNSTATE_RUNNING 0
#define MAX_PENDING 256
#define MAX_PCPUS 256

/* Guest events seen while their vCPU was not running, undecided until it runs again. */
struct pending {
	uint64_t ts[MAX_PENDING];
	size_t nr;
};

struct rs_guest {
	long domid;		/* Xen's, from guest-NAME/meta; -1: not a checked domU */
	uint64_t tol;		/* the guest's bound plus Xen's */
	struct tv_sync_domain *res;
};

/* A physical CPU's time scale in force (TRC_TRACE_TSCALE). */
struct rs_scale {
	uint64_t tsc0, stime0;
	uint32_t mul;
	int8_t shift;
	bool known;
};

struct rs_check {
	struct tv_reader *rd;
	int xen;		/* the xen/ domain's index */
	struct tep_event *runstate;
	struct tep_event *tscale;
	struct rs_scale scales[MAX_PCPUS];
	struct tv_sync_domain *xen_res;
	size_t nr;
	struct rs_guest *g;	/* one per domain */
	/*
	 * Per guest domain and vCPU (key domain << 32 | vCPU), known from its
	 * first runstate record: open while the vCPU is not running, since it
	 * left the running state.
	 */
	struct tv_exit_tracker vcpus;
};

static struct tv_sync_domain *result_of(struct tv_sync_result *res, const char *subdir)
{
	for (size_t i = 0; i < res->nr; i++)
		if (!strcmp(res->domains[i].domain, subdir))
			return &res->domains[i];
	return NULL;
}

static int rs_init(struct rs_check *c, struct tv_sync_result *res)
{
	struct tv_sync_domain *xr = NULL;

	c->xen = -1;
	c->nr = tv_reader_nr_domains(c->rd);
	c->g = calloc(c->nr, sizeof(*c->g));
	if (!c->g)
		return -ENOMEM;
	for (size_t d = 0; d < c->nr; d++)
		c->g[d].domid = -1;
	for (size_t d = 0; d < c->nr; d++)
		if (!strcmp(tv_reader_domain(c->rd, d)->subdir, "xen")) {
			c->xen = (int)d;
			xr = result_of(res, "xen");
		}
	if (c->xen < 0 || !xr || !tv_sync_domain_usable(xr) || xr->est.bound_ns < 0)
		return 0;	/* Xen's records are not on the reference's time line */
	c->runstate = tep_find_event_by_name(tv_reader_domain(c->rd, (size_t)c->xen)->tep, "xen",
					     "xen_runstate_change");
	c->tscale = tep_find_event_by_name(tv_reader_domain(c->rd, (size_t)c->xen)->tep, "xen",
					   "xen_tscale");
	c->xen_res = xr;
	for (size_t d = 0; d < c->nr; d++) {
		const struct tv_domain_info *info = tv_reader_domain(c->rd, d);
		struct tv_sync_domain *r = result_of(res, info->subdir);

		if (!r || strncmp(info->subdir, "guest-", 6) || !tv_sync_domain_usable(r) ||
		    r->est.bound_ns < 0)
			continue;
		c->g[d].domid = tv_meta_get_ll(info->meta, "xen_domid", -1);
		c->g[d].tol = (uint64_t)r->est.bound_ns + (uint64_t)xr->est.bound_ns;
		c->g[d].res = r;
	}
	return 0;
}

static uint64_t rs_key(size_t d, uint64_t vcpu)
{
	return (uint64_t)d << 32 | (vcpu & 0xffffffffu);
}

/* The vCPU ran again at @ts: its pending events were outside if too far before. */
static void rs_resolve(struct rs_guest *g, struct tv_exit_slot *v, uint64_t ts)
{
	struct pending *p = v->ptr;

	for (size_t i = 0; p && i < p->nr; i++)
		if (ts - p->ts[i] > g->tol)
			g->res->runstate_violations++;
	if (p)
		p->nr = 0;
}

/*
 * Each physical CPU stamps Xen's records with its own system time, and a
 * domU's pvclock follows the CPU its vCPU runs on, so a run is on the time
 * line of the CPU that ran it.  Those CPUs' times may differ by
 * milliseconds (under QEMU TCG: doc/sync-probes.md, "Xen domUs in the
 * lab"): when a vCPU moves, its run on the new CPU can start, on the
 * merged time line, before the old CPU's record of its end.  So a run is
 * paired per physical CPU: slot data[0] has a bit for each CPU whose run
 * of the vCPU is open (CPU modulo 64: two CPUs sharing a bit would only
 * need to overlap such a change), and the vCPU is not running once none
 * is.  A run whose end record was lost stays open, counting nothing.
 */
static uint64_t rs_pcpu_bit(int cpu)
{
	return 1ULL << ((unsigned int)cpu & 63);
}

static int rs_xen_event(struct rs_check *c, const struct tv_event *ev)
{
	uint64_t domid, vcpu, old_state, new_state, dur;
	struct tv_exit_slot *v;
	size_t d;

	if (tv_event_field_u64(ev, "domid", &domid) || tv_event_field_u64(ev, "vcpuid", &vcpu) ||
	    tv_event_field_u64(ev, "old_state", &old_state) ||
	    tv_event_field_u64(ev, "new_state", &new_state))
		return 0;
	for (d = 0; d < c->nr && c->g[d].domid != (long)domid; d++)
		;
	if (d == c->nr)
		return 0;
	if (new_state != RUNSTATE_RUNNING && old_state != RUNSTATE_RUNNING)
		return 0;
	v = tv_exit_tracker_slot(&c->vcpus, rs_key(d, vcpu));
	if (!v)
		return -ENOMEM;
	if (new_state == RUNSTATE_RUNNING) {
		v->data[0] |= rs_pcpu_bit(ev->cpu);
		tv_exit_tracker_close(&c->vcpus, v, ev->ts, &dur);
		rs_resolve(&c->g[d], v, ev->ts);
		return 0;
	}
	/* a run that started before the recording has no bit: it ends here too */
	v->data[0] &= ~rs_pcpu_bit(ev->cpu);
	if (!v->data[0] && !tv_exit_tracker_exit(&c->vcpus, rs_key(d, vcpu), ev->ts))
		return -ENOMEM;
	return 0;
}

/*
 * A physical CPU's new time scale: how far apart are the CPUs' system
 * times at its stamp's TSC, by each other CPU's scale in force?  The TSC
 * is one counter for all CPUs (Xen's runstate records never overlap in
 * its order: doc/sync-probes.md), so any difference is Xen's own.
 */
static void rs_tscale_event(struct rs_check *c, const struct tv_event *ev)
{
	uint64_t tsc0, stime0, mul, shift;
	struct rs_scale *sc;

	if (ev->cpu < 0 || ev->cpu >= MAX_PCPUS ||
	    tv_event_field_u64(ev, "stamp_tsc", &tsc0) ||
	    tv_event_field_u64(ev, "stamp_system_time", &stime0) ||
	    tv_event_field_u64(ev, "tsc_to_system_mul", &mul) ||
	    tv_event_field_u64(ev, "tsc_shift", &shift))
		return;
	sc = &c->scales[ev->cpu];
	*sc = (struct rs_scale){ tsc0, stime0, (uint32_t)mul, (int8_t)shift, true };
	for (int o = 0; o < MAX_PCPUS; o++) {
		const struct rs_scale *other = &c->scales[o];
		int64_t diff;

		if (o == ev->cpu || !other->known || tsc0 < other->tsc0)
			continue;
		diff = (int64_t)(tv_xen_tsc_to_stime(tsc0, other->tsc0, other->stime0, other->mul,
						     other->shift) - stime0);
		if (diff < 0)
			diff = -diff;
		if (diff > c->xen_res->pcpu_skew_ns)
			c->xen_res->pcpu_skew_ns = diff;
	}
}

static int rs_guest_event(struct rs_check *c, size_t d, const struct tv_event *ev)
{
	struct tv_exit_slot *v = tv_exit_tracker_find(&c->vcpus, rs_key(d, (uint64_t)ev->cpu));
	struct rs_guest *g = &c->g[d];
	struct pending *p;

	if (!v || ev->cpu < 0)
		return 0;
	g->res->nr_runstate_checked++;
	if (!v->open || ev->ts - v->exit_ts <= g->tol)
		return 0;
	if (!v->ptr && !(v->ptr = calloc(1, sizeof(struct pending))))
		return -ENOMEM;
	p = v->ptr;
	/* More than MAX_PENDING events while not running: the vCPU's state is wrong already. */
	if (p->nr == MAX_PENDING)
		g->res->runstate_violations++;
	else
		p->ts[p->nr++] = ev->ts;
	return 0;
}

int tv_sync_check_runstates(const char *dir, struct tv_sync_result *res)
{
	struct rs_check c = { 0 };
	struct tv_event ev;
	int ret;

	ret = tv_reader_open_synced(dir, res, &c.rd);
	if (ret)
		return ret;
	ret = rs_init(&c, res);
	while (!ret && c.runstate && (ret = tv_reader_next(c.rd, &ev)) > 0) {
		ret = 0;
		if (ev.domain_index == c.xen && ev.format == c.runstate)
			ret = rs_xen_event(&c, &ev);
		else if (ev.domain_index == c.xen && ev.format == c.tscale && c.tscale)
			rs_tscale_event(&c, &ev);
		else if (ev.domain_index != c.xen && c.g[ev.domain_index].domid >= 0)
			ret = rs_guest_event(&c, (size_t)ev.domain_index, &ev);
	}
	/* Events of vCPUs that never ran again before the session ended. */
	for (size_t i = 0; i < c.vcpus.cap; i++) {
		struct tv_exit_slot *v = &c.vcpus.slots[i];
		struct pending *p = v->ptr;

		if (!v->key || !p)
			continue;
		c.g[(v->key - 1) >> 32].res->runstate_violations += p->nr;
		free(p);
	}
	tv_exit_tracker_free(&c.vcpus);
	free(c.g);
	tv_reader_close(c.rd);
	return ret < 0 ? ret : 0;
}
