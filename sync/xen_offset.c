// SPDX-License-Identifier: LGPL-2.1
/*
 * Putting dom0 and the domUs of a Xen session on Xen's common time line
 * (lib/reader/xen_line.c, doc/sync-probes.md "vCPUs free to move").  A pvclock
 * domain's clock is the system time of the pCPU its vCPU runs on, minus a
 * constant of its own (Linux's sched_clock offset).  The reader moves its
 * events to the line once that constant is known; estimating it is sync/'s
 * job: each hypercall bracket of the domain (a domU's HVMOP_xentrace
 * probe, dom0's injected record) has Xen's record stamped by the pCPU that
 * ran the vCPU, so that pCPU's system time minus the middle of the bracket
 * is one reading of the constant, off by at most half the bracket.  The
 * median of the domain's readings is taken (brackets whose clock held
 * still, TV_SYNC_HELD_NS, read nothing).  Only the constant is needed to
 * find each event's pCPU and its difference to the line: an error of E in
 * it moves an event by E times the rate difference of two pCPUs' scales
 * (under 2% in the lab) and may pick the neighbouring run within E of a
 * move, which the sync after it measures and bounds like any other error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "sync_probes.h"
#include "sync_session.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One round's reading: Xen's pCPU system time minus the bracket's middle;
 * *@half: half the bracket, how far the reading may be off.
 */
static int line_reading(const struct tv_xen_line *l, const struct probe *before,
			const struct probe *after, const struct probe *x, int64_t *out,
			int64_t *half)
{
	int64_t st;

	if (!before || !after || !x || after->ts < before->ts + TV_SYNC_HELD_NS)
		return 0;
	st = (int64_t)x->ts + tv_xen_line_pcpu_offset(l, x->cpu, x->ts);
	*half = (int64_t)(after->ts - before->ts) / 2;
	*out = st - (int64_t)before->ts - *half;
	return 1;
}

struct readings {
	int64_t *v, *half;
	size_t n, cap, cap_half;
};

static int readings_add(struct readings *r, int64_t v, int64_t half)
{
	if (tv_array_grow(&r->v, &r->cap, r->n, sizeof(*r->v), 64) ||
	    tv_array_grow(&r->half, &r->cap_half, r->n, sizeof(*r->half), 64))
		return -ENOMEM;
	r->half[r->n] = half;
	r->v[r->n++] = v;
	return 0;
}

/*
 * Each probe round (probes sorted by probed domain, then sequence): a
 * domU's bracket is its markers HCALL_BEFORE/AFTER and Xen's record of the
 * hypercall; dom0's is its markers XEN_BEFORE/AFTER (the probed domain is
 * Xen, dom0 the peer) and Xen's record of the injection.
 */
static int line_round(const struct scan *sc, const struct tv_xen_line *l, const struct probe *p,
		      size_t n, struct readings *r)
{
	const struct probe *b = NULL, *a = NULL, *x = NULL;
	int d = -1;
	int64_t v, half;

	for (size_t i = 0; i < n; i++) {
		if (p[i].guest == sc->xen_dom) {
			if (p[i].type == TV_SYNC_XEN_BEFORE || p[i].type == TV_SYNC_XEN_AFTER)
				d = p[i].peer;
			b = p[i].type == TV_SYNC_XEN_BEFORE ? &p[i] : b;
			a = p[i].type == TV_SYNC_XEN_AFTER ? &p[i] : a;
			x = p[i].type == TV_PROBE_XEN_RECORD ? &p[i] : x;
		} else {
			d = p[i].guest;
			b = p[i].type == TV_SYNC_HCALL_BEFORE && p[i].peer < 0 ? &p[i] : b;
			a = p[i].type == TV_SYNC_HCALL_AFTER && p[i].peer < 0 ? &p[i] : a;
			x = p[i].type == TV_PROBE_XEN_HCALL ? &p[i] : x;
		}
	}
	if (d < 0 || d >= (int)sc->nr_domains || !line_reading(l, b, a, x, &v, &half))
		return 0;
	return readings_add(&r[d], v, half);
}

int sync_xen_line_constants(struct scan *sc, struct tv_sync_result *line,
			     int64_t tol_ns[MAX_DOMAINS])
{
	const struct tv_xen_line *l = tv_reader_xen_line(sc->rd);
	struct readings *r;
	size_t i = 0, moved = 0;
	int ret = 0;

	memset(line, 0, sizeof(*line));
	if (!l || sc->xen_dom < 0)
		return 0;
	r = calloc(sc->nr_domains, sizeof(*r));
	line->domains = calloc(sc->nr_domains, sizeof(*line->domains));
	if (!r || !line->domains) {
		free(r);
		return -ENOMEM;
	}
	line->nr = sc->nr_domains;
	qsort(sc->probes, sc->nr_probes, sizeof(*sc->probes), sync_cmp_probe);
	while (i < sc->nr_probes && !ret) {
		size_t j = i;

		while (j < sc->nr_probes && sc->probes[j].guest == sc->probes[i].guest &&
		       sc->probes[j].seq == sc->probes[i].seq)
			j++;
		ret = line_round(sc, l, &sc->probes[i], j - i, r);
		i = j;
	}
	for (size_t d = 0; d < sc->nr_domains; d++) {
		struct tv_sync_domain *o = &line->domains[d];

		snprintf(o->domain, sizeof(o->domain), "%s", tv_reader_domain(sc->rd, d)->subdir);
		if (!r[d].n || (int)d == sc->xen_dom)
			continue;
		qsort(r[d].v, r[d].n, sizeof(*r[d].v), cmp_i64);
		qsort(r[d].half, r[d].n, sizeof(*r[d].half), cmp_i64);
		o->xen_line = 1;
		o->pvclock_ns = r[d].v[r[d].n / 2];
		/* each reading is off by at most its half bracket, their median by about the median one */
		if (d < MAX_DOMAINS)
			tol_ns[d] = r[d].half[r[d].n / 2];
		moved++;
	}
	for (size_t d = 0; d < sc->nr_domains; d++) {
		free(r[d].v);
		free(r[d].half);
	}
	free(r);
	if (!moved)
		line->nr = 0;
	return ret;
}

/*
 * Where a vCPU moved to a pCPU whose system time is behind, the end of its
 * run on the old pCPU and the start of the new one overlap in those times:
 * a guest event read in the overlap fits both runs, and the walk
 * (lib/reader/xen_line.c) keeps it in the old one.  Lab run of 2026-11-26 (free):
 * 2 of d1's 23 hypercall rounds, read 0.9 ms into a run on pCPU 1 that
 * began 1.1 ms, in pCPU 1's time, before the run on pCPU 0 ended, were
 * left on pCPU 0, 2.5 and 4 ms early, and no line fitted d1 any more (3
 * pieces, 114 guest events outside their vCPU's runs).  Xen's record of
 * the hypercall says which pCPU ran the markers: on the line, minus the
 * domain's constant, it must lie in their bracket, up to the constant's
 * error.  A round where it does not is left out (its markers were put on
 * the wrong pCPU); other events in such overlaps cannot be checked so,
 * but they stay inside a run of their vCPU either way.
 */
int sync_xen_line_misplaced(const struct scan *sc, const struct round *r, int *d, int *before,
			    int *after)
{
	int x;
	int64_t t;

	if (r->guest == sc->xen_dom) {	/* dom0's markers around Xen's injected record */
		*before = TV_SYNC_XEN_BEFORE;
		*after = TV_SYNC_XEN_AFTER;
		x = TV_PROBE_XEN_RECORD;
		*d = r->peer[TV_SYNC_XEN_BEFORE];
	} else {		/* a domU's markers around its HVMOP_xentrace hypercall */
		*before = TV_SYNC_HCALL_BEFORE;
		*after = TV_SYNC_HCALL_AFTER;
		x = TV_PROBE_XEN_HCALL;
		*d = r->peer[TV_SYNC_HCALL_BEFORE] < 0 ? r->guest : -1;
	}
	if (*d < 0 || *d >= MAX_DOMAINS || !sc->on_line[*d] || r->ts[*before] < 0 ||
	    r->ts[*after] < 0 || r->ts[x] < 0 ||
	    r->ts[*after] < r->ts[*before] + TV_SYNC_HELD_NS)
		return 0;	/* not moved, incomplete, or held (left out as such) */
	t = r->ts[x] - sc->line_pvclock_ns[*d];
	return t < r->ts[*before] - sc->line_tol_ns[*d] || t > r->ts[*after] + sc->line_tol_ns[*d];
}
