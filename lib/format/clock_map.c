// SPDX-License-Identifier: LGPL-2.1
/*
 * Applying clock maps (a domain's clock to the reference's, as
 * DIR/sync/transforms holds them) and the exact KVM x86 TSC relation: the
 * reader's side; estimating them is sync/'s.  All arithmetic is integer,
 * in 128 bits where products of two 64-bit values appear, so results do
 * not depend on floating point.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "format_io.h"

typedef __int128 i128;
typedef unsigned __int128 u128;

uint64_t tv_clock_map_apply(const struct tv_clock_map *map, uint64_t ts)
{
	i128 v = (i128)map->base_ref +
		 (((i128)((i128)ts - map->base_dom) * map->slope_q48) >> 48);

	if (v < 0)
		return 0;
	return v > INT64_MAX ? INT64_MAX : (uint64_t)v;
}

void tv_clock_map_compose(const struct tv_clock_map *outer, const struct tv_clock_map *inner,
			  struct tv_clock_map *out)
{
	i128 base = (i128)outer->base_ref +
		    ((((i128)inner->base_ref - outer->base_dom) * outer->slope_q48) >> 48);
	struct tv_clock_map m;

	m.base_dom = inner->base_dom;
	m.base_ref = base > INT64_MAX ? INT64_MAX : base < INT64_MIN ? INT64_MIN : (int64_t)base;
	m.slope_q48 = (int64_t)(((i128)inner->slope_q48 * outer->slope_q48) >> 48);
	*out = m;
}

uint64_t tv_tsc_guest_from_host(const struct tv_tsc_params *p, uint64_t host_tsc)
{
	/* The guest TSC wraps like the hardware's: unsigned 64-bit sum. */
	return p->offset + (uint64_t)(((u128)host_tsc * p->ratio) >> p->frac_bits);
}

uint64_t tv_tsc_host_from_guest(const struct tv_tsc_params *p, uint64_t guest_tsc)
{
	u128 scaled = (u128)(uint64_t)(guest_tsc - p->offset) << p->frac_bits;
	u128 host;

	if (!p->ratio)
		return 0;
	/* Ceiling: the first host TSC whose scaled value reaches the guest's. */
	host = (scaled + p->ratio - 1) / p->ratio;
	return host > UINT64_MAX ? UINT64_MAX : (uint64_t)host;
}

/* First index in [lo, hi) whose vcpu is >= @vcpu. */
static size_t vcpu_lower_bound(const struct tv_tsc_segment *s, size_t lo, size_t hi,
			       uint32_t vcpu)
{
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (s[m].vcpu < vcpu)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* This vCPU's segments, [*lo, *hi): a CPU without its own, the lowest vCPU's. */
static void vcpu_segments(const struct tv_sync_domain *d, int cpu, size_t *lo, size_t *hi)
{
	const struct tv_tsc_segment *s = d->tsc_segments;
	size_t n = d->nr_tsc_segments;

	*lo = cpu < 0 ? n : vcpu_lower_bound(s, 0, n, (uint32_t)cpu);
	if (*lo == n || s[*lo].vcpu != (uint32_t)cpu)
		*lo = 0;
	*hi = vcpu_lower_bound(s, *lo, n, s[*lo].vcpu + 1);
}

static uint64_t segment_map(const struct tv_sync_domain *d, size_t m, uint64_t ts)
{
	struct tv_tsc_params p = d->tsc;

	p.offset = d->tsc_segments[m].offset;
	return tv_tsc_host_from_guest(&p, ts);
}

/*
 * The offset in force is found from the host time it yields: the latest
 * segment in [lo, hi) whose start the mapped time reaches (lo if none).
 * KVM normally restarts a guest TSC at least where it stopped, so a vCPU's
 * guest times do not go back across a change: the test then holds for
 * every segment up to the right one and for none after it, and a binary
 * search finds it.  Where KVM moved the TSC back, segment_follow() decides.
 */
static size_t segment_search(const struct tv_sync_domain *d, size_t lo, size_t hi, uint64_t ts)
{
	while (hi - lo > 1) {
		size_t m = lo + (hi - lo) / 2;

		if (segment_map(d, m, ts) >= d->tsc_segments[m].from_host)
			lo = m;
		else
			hi = m;
	}
	return lo;
}

/* The first segment after @k in [.., hi) whose write moved the TSC back, or @hi. */
static size_t next_moved_back(const struct tv_sync_domain *d, size_t k, size_t hi)
{
	while (++k < hi && !d->tsc_segments[k].moved_back)
		;
	return k;
}

/*
 * A write that moved the guest's TSC back (moved_back, sync/tsc_segments.c)
 * makes its segment overlap the one before in guest time, and the guest's
 * events show where it took effect: there their times go back.  (Not at
 * the write's own time stamp: in the nested lab a guest traced times of
 * the old offset for up to 0.5 s after it.)  So a stream stays in the
 * region between two such writes until its clock goes back.
 */
static void cursor_start(const struct tv_sync_domain *d, size_t lo, size_t hi, uint64_t ts,
			 struct tv_tsc_cursor *cur)
{
	size_t m = segment_search(d, lo, hi, ts);

	cur->lo = m;
	while (cur->lo > lo && !d->tsc_segments[cur->lo].moved_back)
		cur->lo--;
	cur->hi = next_moved_back(d, m, hi);
	cur->valid = 1;
}

void tv_tsc_cursor_step_back(const struct tv_sync_domain *d, int cpu, struct tv_tsc_cursor *cur)
{
	size_t lo, hi;

	/* counted whatever the map: callers step until they reach a count */
	cur->backs++;
	cur->last_ts = 0;
	if (strcmp(d->method, "tsc") || !d->nr_tsc_segments || !cur->valid)
		return;
	vcpu_segments(d, cpu, &lo, &hi);
	if (cur->hi >= hi)
		return;
	cur->lo = cur->hi;
	cur->hi = next_moved_back(d, cur->lo, hi);
}

static uint64_t tsc_apply(const struct tv_sync_domain *d, int cpu, uint64_t ts,
			  struct tv_tsc_cursor *cur)
{
	size_t lo, hi;

	if (!d->nr_tsc_segments)
		return tv_tsc_host_from_guest(&d->tsc, ts);
	vcpu_segments(d, cpu, &lo, &hi);
	if (!cur)
		return segment_map(d, segment_search(d, lo, hi, ts), ts);
	if (!cur->valid || cur->lo < lo || cur->hi > hi)
		cursor_start(d, lo, hi, ts, cur);
	else if (ts < cur->last_ts)
		tv_tsc_cursor_step_back(d, cpu, cur);
	cur->last_ts = ts;
	return segment_map(d, segment_search(d, cur->lo, cur->hi, ts), ts);
}

/* The piece whose range holds @ts: the last one starting at or before it. */
static const struct tv_sync_piece *piece_of(const struct tv_sync_domain *d, uint64_t ts)
{
	size_t lo = 0, hi = d->nr_pieces;
	int64_t t = ts > INT64_MAX ? INT64_MAX : (int64_t)ts;

	while (hi - lo > 1) {
		size_t m = lo + (hi - lo) / 2;

		if (d->pieces[m].from_dom <= t)
			lo = m;
		else
			hi = m;
	}
	return &d->pieces[lo];
}

static uint64_t domain_apply(const struct tv_sync_domain *d, int cpu, uint64_t ts,
			     struct tv_tsc_cursor *cur)
{
	if (!strcmp(d->method, "tsc"))
		return tsc_apply(d, cpu, ts, cur);
	if (!strcmp(d->method, "reference") || !strcmp(d->method, "none"))
		return ts;
	if (d->nr_pieces)
		return tv_clock_map_apply(&piece_of(d, ts)->map, ts);
	return tv_clock_map_apply(&d->est.map, ts);
}

uint64_t tv_sync_domain_apply_cpu(const struct tv_sync_domain *d, int cpu, uint64_t ts)
{
	return domain_apply(d, cpu, ts, NULL);
}

uint64_t tv_sync_domain_apply_stream(const struct tv_sync_domain *d, int cpu, uint64_t ts,
				     struct tv_tsc_cursor *cur)
{
	return domain_apply(d, cpu, ts, cur);
}

uint64_t tv_sync_domain_apply(const struct tv_sync_domain *d, uint64_t ts)
{
	return tv_sync_domain_apply_cpu(d, -1, ts);
}

/* A malloc'ed copy of @n elements of @size at @src; NULL for none or no memory. */
static void *copy_array(const void *src, size_t n, size_t size)
{
	void *dst = n ? malloc(n * size) : NULL;

	if (dst)
		memcpy(dst, src, n * size);
	return dst;
}

int tv_sync_domain_copy(struct tv_sync_domain *dst, const struct tv_sync_domain *src)
{
	*dst = *src;
	dst->tsc_segments = copy_array(src->tsc_segments, src->nr_tsc_segments,
				       sizeof(*src->tsc_segments));
	dst->pieces = copy_array(src->pieces, src->nr_pieces, sizeof(*src->pieces));
	if ((src->nr_tsc_segments && !dst->tsc_segments) || (src->nr_pieces && !dst->pieces)) {
		tv_sync_domain_release(dst);
		return -ENOMEM;
	}
	return 0;
}

void tv_sync_domain_release(struct tv_sync_domain *d)
{
	free(d->tsc_segments);
	d->tsc_segments = NULL;
	d->nr_tsc_segments = 0;
	free(d->pieces);
	d->pieces = NULL;
	d->nr_pieces = 0;
}

bool tv_sync_domain_usable(const struct tv_sync_domain *d)
{
	return d->est.quality <= TV_SYNC_APPROXIMATE && strcmp(d->method, "none");
}

const char *tv_sync_quality_name(enum tv_sync_quality q)
{
	static const char *const names[] = { "exact", "accurate", "approximate",
					     "insufficient", "failed" };

	return (unsigned int)q < 5 ? names[q] : "unknown";
}
