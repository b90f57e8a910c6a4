// SPDX-License-Identifier: LGPL-2.1
/*
 * Estimating one (guest, peer) edge: the convex-hull line over all its
 * points, or where none fits, the clock split into linear pieces.
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
#include "hull.h"

static int hull_add_point(struct tv_sync_hull *h, const struct point *p)
{
	return p->below ? tv_sync_hull_add_below(h, p->x, p->y)
			: tv_sync_hull_add_above(h, p->x, p->y);
}

/* The estimate over [lo, hi] of the points [from, to) of @p. */
static int estimate_points(const struct point *p, size_t from, size_t to, int64_t lo,
			   int64_t hi, struct tv_sync_estimate *est)
{
	struct tv_sync_hull *h = tv_sync_hull_new();
	int ret = h ? 0 : -ENOMEM;

	for (size_t i = from; i < to && !ret; i++)
		ret = hull_add_point(h, &p[i]);
	if (!ret)
		ret = tv_sync_hull_estimate(h, lo, hi, est);
	tv_sync_hull_free(h);
	return ret;
}

static int cmp_point_x(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return (x->x > y->x) - (x->x < y->x);
}

/* Pieces a clock may jump into (a suspended VM, a clock step) before we call it noise. */
#define MAX_PIECES 16

/*
 * Where no line fits the whole trace, the clock may still be linear in
 * pieces: in time order, a new piece starts at each probe that no line
 * through the current piece's probes admits.  Return: the number of
 * pieces, with their first probes in @start, or 0 when there are more
 * than MAX_PIECES; -errno.
 */
static int split_pieces(const struct point *p, size_t n, size_t start[MAX_PIECES])
{
	struct tv_sync_hull *h = tv_sync_hull_new();
	struct tv_sync_estimate est;
	int nr = 1, ret = h ? 0 : -ENOMEM;

	start[0] = 0;
	for (size_t i = 0; i < n && !ret && nr; i++) {
		ret = hull_add_point(h, &p[i]);
		if (!ret)
			ret = tv_sync_hull_estimate(h, p[start[nr - 1]].x, p[i].x, &est);
		if (ret || est.quality != TV_SYNC_FAILED)
			continue;
		tv_sync_hull_free(h);
		h = tv_sync_hull_new();
		if (!h || nr == MAX_PIECES) {
			ret = h ? 0 : -ENOMEM;
			nr = 0;
			break;
		}
		start[nr++] = i;
		ret = hull_add_point(h, &p[i]);
	}
	tv_sync_hull_free(h);
	return ret ? ret : nr;
}

/* How far back a piece's start is moved, at most (probes). */
#define PIECE_BACKTRACK 64

/*
 * A piece starts at the first probe its predecessor's lines cannot take,
 * but the clock may have jumped a few probes before: probes that both
 * admit (a forward jump shows only in probes sent from the domain).  Move
 * each start back over the probes the later piece admits too, so that
 * only the inside of one probe round stays ambiguous.
 */
static int backtrack_pieces(const struct point *p, size_t n, size_t *start, int nr)
{
	for (int k = 1; k < nr; k++) {
		size_t to = k + 1 < nr ? start[k + 1] : n, floor = start[k - 1] + 1;

		for (size_t j = start[k]; j > floor && start[k] - j < PIECE_BACKTRACK; j--) {
			struct tv_sync_estimate est;
			int ret = estimate_points(p, j - 1, to, p[j - 1].x, p[to - 1].x, &est);

			if (ret)
				return ret;
			if (est.quality == TV_SYNC_FAILED)
				break;
			start[k] = j - 1;
		}
	}
	return 0;
}

/* Each piece's own estimate, over its stretch of the domain's time. */
static int estimate_pieces(const struct dom_scan *ds, const struct point *p, size_t n,
			   const size_t *start, int nr, struct tv_sync_piece *pc)
{
	for (int k = 0; k < nr; k++) {
		size_t to = k + 1 < nr ? start[k + 1] : n;
		int64_t lo = k ? p[start[k]].x : ds->first;
		int64_t hi = k + 1 < nr ? p[start[k + 1]].x : ds->last;
		struct tv_sync_estimate est;
		int ret = estimate_points(p, start[k], to, lo, hi, &est);

		if (ret)
			return ret;
		pc[k] = (struct tv_sync_piece){ lo, est.map, est.bound_ns, est.quality };
	}
	return 0;
}

/* Summary of usable pieces in @e->est: the worst quality and bound, the breaks. */
static void describe_pieces(struct edge *e, const struct dom_scan *ds)
{
	struct tv_sync_estimate *est = &e->est;
	size_t off;

	est->quality = TV_SYNC_EXACT;
	est->bound_ns = 0;
	est->map = e->pieces[0].map;
	est->span_lo = ds->first;
	est->span_hi = ds->last;
	for (size_t k = 0; k < e->nr_pieces; k++) {
		if (e->pieces[k].quality > est->quality)
			est->quality = e->pieces[k].quality;
		if (e->pieces[k].bound_ns < 0 || est->bound_ns < 0)
			est->bound_ns = -1;
		else if (e->pieces[k].bound_ns > est->bound_ns)
			est->bound_ns = e->pieces[k].bound_ns;
	}
	off = (size_t)snprintf(est->message, sizeof(est->message),
			       "no line fits the whole trace; %zu linear pieces, each bounded, from x=",
			       e->nr_pieces);
	for (size_t k = 1; k < e->nr_pieces && off < sizeof(est->message); k++)
		off += (size_t)snprintf(est->message + off, sizeof(est->message) - off, "%s%lld",
					k > 1 ? "," : "", (long long)e->pieces[k].from_dom);
}

/*
 * Pieces for an edge whose probes no line fits: kept only when there are at
 * most MAX_PIECES and each is approximate or better; else the edge stays
 * failed, with its first message.
 */
static int try_pieces(const struct dom_scan *ds, const struct point *sorted, size_t n,
		      struct edge *e)
{
	struct point *p = malloc(n * sizeof(*p));
	size_t start[MAX_PIECES];
	int nr, ret = 0;

	if (!p)
		return -ENOMEM;
	memcpy(p, sorted, n * sizeof(*p));
	qsort(p, n, sizeof(*p), cmp_point_x);
	nr = split_pieces(p, n, start);
	if (nr > 1)
		ret = backtrack_pieces(p, n, start, nr);
	if (nr > 1 && !ret)
		e->pieces = calloc((size_t)nr, sizeof(*e->pieces));
	if (nr > 1 && !ret && !e->pieces)
		nr = -ENOMEM;
	if (nr > 1 && !ret)
		ret = estimate_pieces(ds, p, n, start, nr, e->pieces);
	for (int k = 0; nr > 1 && !ret && k < nr; k++)
		if (e->pieces[k].quality > TV_SYNC_APPROXIMATE)
			nr = 0;
	if (nr > 1 && !ret) {
		e->nr_pieces = (size_t)nr;
		describe_pieces(e, ds);
	} else {
		free(e->pieces);
		e->pieces = NULL;
	}
	free(p);
	return nr < 0 ? nr : ret;
}

static int estimate_edge(const struct scan *sc, const struct point *p, size_t n,
			 struct edge *e)
{
	const struct dom_scan *ds = &sc->dom[p[0].guest];
	int ret = estimate_points(p, 0, n, ds->first, ds->last, &e->est);

	if (!ret && e->est.quality == TV_SYNC_FAILED)
		ret = try_pieces(ds, p, n, e);
	e->valid = !ret;
	e->nr_pairs = n;
	return ret;
}

int sync_estimate_edges(const struct scan *sc, struct graph *g)
{
	struct points pts = { 0 };
	int ret = sync_for_each_pair(sc, sync_collect_point, &pts);

	if (!ret && pts.n)
		qsort(pts.p, pts.n, sizeof(*pts.p), sync_cmp_point);
	for (size_t i = 0, j; !ret && i < pts.n; i = j) {
		for (j = i; j < pts.n && pts.p[j].guest == pts.p[i].guest &&
			    pts.p[j].peer == pts.p[i].peer; j++)
			;
		ret = estimate_edge(sc, &pts.p[i], j - i,
				    &g->e[pts.p[i].guest][pts.p[i].peer]);
	}
	free(pts.p);
	return ret;
}
