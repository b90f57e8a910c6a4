// SPDX-License-Identifier: LGPL-2.1
/*
 * Causality of every probe pair under the final transforms, and the
 * cross-check of exact TSC relations against the probes' own hull.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "probes.h"
#include "tsc.h"
#include "sync_session.h"

/*
 * Cross-check of an exact TSC relation: the probes' own convex-hull line
 * (guest TSC -> host TSC) should put each probe where the TSC relation does,
 * within the hull's bound.  It only holds where the guest TSC is a line of
 * the host's: KVM on a host whose TSC is unstable restarts a guest's TSC
 * where it stopped at every vCPU load, and the hull cannot see that.
 */
static void hull_cross_check(const struct causality *c, const struct round *r, int gt,
			     int pt, struct tv_sync_domain *g, uint64_t gts)
{
	int via = r->peer[pt];
	const struct edge *e;
	int64_t diff;

	if (strcmp(g->method, "tsc") || via < 0)
		return;
	e = &c->g->e[r->guest][via];
	if (!e->valid || e->est.quality > TV_SYNC_APPROXIMATE || e->est.bound_ns < 0 ||
	    e->nr_pieces)
		return;
	diff = (int64_t)(gts - tv_clock_map_apply(&e->est.map, (uint64_t)r->ts[gt]));
	if (diff < 0)
		diff = -diff;
	if (diff > g->hull_tsc_diff)
		g->hull_tsc_diff = diff;
	g->hull_bound = e->est.bound_ns;
}

int sync_check_pair(const struct round *r, int gt, int pt, int below, void *ctx)
{
	struct causality *c = ctx;
	struct tv_sync_domain *g = &c->res[r->guest], *p = &c->res[r->peer[pt]];
	uint64_t gts = tv_sync_domain_apply_cpu(g, r->cpu[gt], (uint64_t)r->ts[gt]);
	uint64_t pts = tv_sync_domain_apply_cpu(p, r->cpu[pt], (uint64_t)r->ts[pt]);

	if (!tv_sync_domain_usable(g) || !tv_sync_domain_usable(p))
		return 0;
	g->nr_pairs_checked++;
	hull_cross_check(c, r, gt, pt, g, gts);
	/* below: the guest received what the peer sent, so it may not be earlier. */
	if (below ? gts < pts : gts > pts)
		g->causality_violations++;
	return 0;
}

/*
 * Say in the message whether the probes agree with the TSC relation; @e is
 * the probes' edge to the via domain, when there is one.
 */
void sync_describe_cross_check(struct tv_sync_domain *r, const struct edge *e)
{
	if (strcmp(r->method, "tsc"))
		return;
	if (r->hull_tsc_diff >= 0)
		snprintf(r->est.message, sizeof(r->est.message),
			 "exact TSC relation (%zu offset segments); the probe hull puts probes at most %lld from it, hull bound %lld%s",
			 r->nr_tsc_segments, (long long)r->hull_tsc_diff, (long long)r->hull_bound,
			 r->hull_tsc_diff <= r->hull_bound ? ": they agree" :
			 ": they disagree (the guest TSC is not a line of the host's: offsets changed)");
	else if (e && e->valid)
		snprintf(r->est.message, sizeof(r->est.message),
			 "exact TSC relation (%zu offset segments); the probe hull (%zu pairs) is %s, no cross-check: %s",
			 r->nr_tsc_segments, e->nr_pairs, tv_sync_quality_name(e->est.quality),
			 e->est.message);
	else
		snprintf(r->est.message, sizeof(r->est.message),
			 "exact TSC relation (%zu offset segments); no probe hull to cross-check it",
			 r->nr_tsc_segments);
}
