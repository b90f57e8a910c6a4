// SPDX-License-Identifier: LGPL-2.1
/*
 * Composing the transforms along each domain's path to the reference, and
 * saying why a domain has none.
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

int sync_domain_index(const struct scan *sc, const char *subdir)
{
	for (size_t v = 0; v < sc->nr_domains; v++)
		if (!strcmp(tv_reader_domain(sc->rd, v)->subdir, subdir))
			return (int)v;
	return -1;
}

/* |error| of inner, seen through outer's slope, plus outer's own: ceiling. */
static int64_t compose_bound(int64_t inner, int64_t outer, int64_t outer_slope_q48)
{
	__int128 scaled;

	if (inner < 0 || outer < 0)
		return -1;	/* no bound on one leg: none for the path */
	scaled = ((__int128)inner * outer_slope_q48 + TV_SLOPE_ONE - 1) >> 48;
	return (int64_t)scaled + outer + 2;	/* +2: the composed map's rounding */
}

/*
 * Make @d's map go to the reference: first its via domain's (depth first,
 * so each domain is composed once), then compose.  @state: 0 new,
 * 1 in progress (a cycle), 2 done.
 */
static void compose_one(const struct scan *sc, struct tv_sync_domain *res, int ref, int d,
			char *state)
{
	struct tv_sync_domain *r = &res[d];
	int v = sync_domain_index(sc, r->via);

	if (state[d])
		return;
	state[d] = 1;
	if (strcmp(r->method, "hull") || v < 0 || v == ref) {
		state[d] = 2;
		return;
	}
	compose_one(sc, res, ref, v, state);
	/*
	 * A cycle, or a TSC-exact middle domain whose relation is not a line;
	 * or a middle clock in pieces (its breaks would need mapping: not done).
	 */
	if (state[v] != 2 || strcmp(res[v].method, "hull") || res[v].nr_pieces) {
		snprintf(r->method, sizeof(r->method), "none");
		snprintf(r->est.message, sizeof(r->est.message), "synchronised only against %s, %s",
			 r->via, res[v].nr_pieces ? "whose clock is linear only in pieces"
						  : "which has no linear path to the reference");
		r->est.quality = TV_SYNC_INSUFFICIENT;
		state[d] = 2;
		return;
	}
	tv_clock_map_compose(&res[v].est.map, &r->est.map, &r->est.map);
	r->est.bound_ns = compose_bound(r->est.bound_ns, res[v].est.bound_ns,
					res[v].est.map.slope_q48);
	if (res[v].est.quality > r->est.quality)
		r->est.quality = res[v].est.quality;
	for (size_t k = 0; k < r->nr_pieces; k++) {
		struct tv_sync_piece *pc = &r->pieces[k];

		tv_clock_map_compose(&res[v].est.map, &pc->map, &pc->map);
		pc->bound_ns = compose_bound(pc->bound_ns, res[v].est.bound_ns,
					     res[v].est.map.slope_q48);
		if (res[v].est.quality > pc->quality)
			pc->quality = res[v].est.quality;
	}
	state[d] = 2;
}

/* A hull result takes its edge's pieces, if it has any (before composing). */
int sync_attach_pieces(const struct scan *sc, const struct graph *g, struct tv_sync_domain *res)
{
	for (size_t d = 0; d < sc->nr_domains; d++) {
		int v = sync_domain_index(sc, res[d].via);
		const struct edge *e = v >= 0 ? &g->e[d][v] : NULL;

		if (strcmp(res[d].method, "hull") || !e || !e->nr_pieces)
			continue;
		res[d].pieces = malloc(e->nr_pieces * sizeof(*e->pieces));
		if (!res[d].pieces)
			return -ENOMEM;
		memcpy(res[d].pieces, e->pieces, e->nr_pieces * sizeof(*e->pieces));
		res[d].nr_pieces = e->nr_pieces;
	}
	return 0;
}

/*
 * Compose each hull result with its via domain's, so all map to the
 * reference; via keeps naming the domain the probes were exchanged with.
 */
void sync_compose_paths(const struct scan *sc, struct tv_sync_domain *res, int ref)
{
	char state[MAX_DOMAINS] = { 0 };

	for (size_t d = 0; d < sc->nr_domains; d++)
		compose_one(sc, res, ref, (int)d, state);
}

/*
 * For each domain, the best first hop not taken and the bound its path
 * would have: a domU synchronised via Xen shows what the message probes
 * alone would give (and the other way round).  Read after composing.
 */
void sync_alternative_paths(const struct scan *sc, const struct graph *g,
			    struct tv_sync_domain *res, int ref)
{
	for (size_t d = 0; d < sc->nr_domains; d++) {
		int v = sync_domain_index(sc, res[d].via);

		for (size_t p = 0; p < sc->nr_domains; p++) {
			const struct edge *e = &g->e[d][p];
			int64_t b;

			if ((int)p == v || p == d || !e->valid || e->est.quality > TV_SYNC_APPROXIMATE ||
			    e->est.bound_ns < 0 || e->nr_pieces)
				continue;
			/* a hop to a domain that goes back through d is no path */
			if ((int)p != ref && (!tv_sync_domain_usable(&res[p]) ||
					      sync_domain_index(sc, res[p].via) == (int)d))
				continue;
			b = (int)p == ref ? e->est.bound_ns
					  : compose_bound(e->est.bound_ns, res[p].est.bound_ns,
							  res[p].est.map.slope_q48);
			if (b < 0 || (res[d].alt_bound_ns >= 0 && b >= res[d].alt_bound_ns))
				continue;
			res[d].alt_bound_ns = b;
			snprintf(res[d].alt_via, sizeof(res[d].alt_via), "%s",
				 tv_reader_domain(sc->rd, p)->subdir);
		}
	}
}

/*
 * A domU's HVMOP_xentrace probes that stock Xen wrote without the TSC:
 * say so, once, next to whatever else aligned it.
 */
void sync_explain_untimed(const struct scan *sc, size_t d, struct tv_sync_domain *r)
{
	char note[200];
	size_t len = strlen(r->est.message);

	if (!sc->dom[d].xen_hcall_untimed)
		return;
	snprintf(note, sizeof(note),
		 "%zu Xen hypercall probe records carry no TSC (stock Xen): message probes only; patched Xen: xen/patches/",
		 sc->dom[d].xen_hcall_untimed);
	snprintf(r->est.message + len, sizeof(r->est.message) - len, "%s%s", len ? "; " : "", note);
}

/* Why a domain has no transform: the best edge's message, or no probes. */
void sync_explain_missing(const struct scan *sc, const struct graph *g, size_t d,
			    struct tv_sync_domain *r)
{
	const struct edge *best = NULL;

	snprintf(r->method, sizeof(r->method), "none");
	for (size_t p = 0; p < sc->nr_domains; p++)
		if (g->e[d][p].valid && (!best || g->e[d][p].est.quality < best->est.quality))
			best = &g->e[d][p];
	if (best) {
		r->est = best->est;
		r->nr_probes = best->nr_pairs;
		sync_explain_untimed(sc, d, r);
		return;
	}
	r->est.quality = TV_SYNC_INSUFFICIENT;
	r->est.bound_ns = -1;
	if (sc->dom[d].xen_untimed) {
		snprintf(r->est.message, sizeof(r->est.message),
			 "%zu dom0/Xen sync records carry no TSC (stock Xen): their time is the previous record's, so no bound can be given; record on the patched Xen (xen/patches/)",
			 sc->dom[d].xen_untimed);
		return;
	}
	if (sc->dom[d].xen_hcall_untimed) {
		sync_explain_untimed(sc, d, r);
		return;
	}
	if ((int)d == sc->xen_dom) {
		snprintf(r->est.message, sizeof(r->est.message),
			 "no dom0/Xen sync probes: record host/ and xen/ together (`tracevisor record --xen -e EVENT ...`) with Xen's guest class traced");
		return;
	}
	snprintf(r->est.message, sizeof(r->est.message),
		 "no sync probes (ftrace:raw_data markers or kvm_hypercall 0x7476) for this domain: record with `tracevisor record --guest ...`");
}
