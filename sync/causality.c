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
#include "sync_probes.h"
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

/* The domain that wrote probe @p. */
static int probe_writer(const struct probe *p)
{
	return sync_probe_guest_side(p->type) ? p->guest : p->peer;
}

/* Order of the probes as each (domain, CPU) wrote them: a round's seq, then time. */
static int cmp_written(const void *a, const void *b, void *arg)
{
	const struct probe *ps = arg, *x = &ps[*(const size_t *)a], *y = &ps[*(const size_t *)b];
	int dx = probe_writer(x), dy = probe_writer(y);

	if (dx != dy)
		return dx - dy;
	if (x->cpu != y->cpu)
		return x->cpu - y->cpu;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/*
 * Every probe in the reference clock, mapped in the order its CPU wrote
 * them: with a TSC relation the offset that applies depends on where the
 * CPU's stream went back before (KVM may move a vCPU's TSC back,
 * lib/format/clock_map.c), which the scan counted for each probe.  A domain's
 * probe rounds are in time order by seq; inside a round, time decides.
 */
int sync_map_probes(struct scan *sc, const struct tv_sync_domain *res)
{
	size_t *order = malloc((sc->nr_probes + 1) * sizeof(*order));
	struct tv_tsc_cursor cur = { 0 };

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < sc->nr_probes; i++)
		order[i] = i;
	qsort_r(order, sc->nr_probes, sizeof(*order), cmp_written, sc->probes);
	for (size_t k = 0; k < sc->nr_probes; k++) {
		struct probe *p = &sc->probes[order[k]];
		int d = probe_writer(p);

		if (d < 0) {
			p->mapped = p->ts;
			continue;
		}
		if (!k || probe_writer(&sc->probes[order[k - 1]]) != d ||
		    sc->probes[order[k - 1]].cpu != p->cpu) {
			cur = (struct tv_tsc_cursor){ 0 };
			tv_sync_domain_apply_stream(&res[d], p->cpu, p->stream_first, &cur);
		}
		while (cur.backs < p->backs)
			tv_tsc_cursor_step_back(&res[d], p->cpu, &cur);
		cur.last_ts = 0;	/* probes are not every event: the scan saw where it went back */
		p->mapped = tv_sync_domain_apply_stream(&res[d], p->cpu, p->ts, &cur);
	}
	free(order);
	return 0;
}

int sync_check_pair(const struct round *r, int gt, int pt, int below, void *ctx)
{
	struct causality *c = ctx;
	struct tv_sync_domain *g = &c->res[r->guest], *p = &c->res[r->peer[pt]];
	uint64_t gts = r->mapped[gt], pts = r->mapped[pt];

	if (!tv_sync_domain_usable(g) || !tv_sync_domain_usable(p))
		return 0;
	g->nr_pairs_checked++;
	hull_cross_check(c, r, gt, pt, g, gts);
	/* below: the guest received what the peer sent, so it may not be earlier. */
	if (below ? gts < pts : gts > pts) {
		tv_debug("Causality violation: domain=%s, guest marker type=%d (raw %lld, mapped %llu), peer %s type=%d (mapped %llu), by %lld ns",
			 g->domain, gt, (long long)r->ts[gt], (unsigned long long)gts, p->domain, pt,
			 (unsigned long long)pts, (long long)(below ? pts - gts : gts - pts));
		g->causality_violations++;
		if (gt == TV_SYNC_PING_RECV || gt == TV_SYNC_PONG_SEND)
			g->message_violations++;
	}
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
