// SPDX-License-Identifier: LGPL-2.1
/*
 * Clock maps (a domain's clock to the reference's) and the exact KVM x86
 * TSC relation.  All arithmetic is integer, in 128 bits where products of
 * two 64-bit values appear, so results do not depend on floating point.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tsc.h"

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

int tv_tsc_segments_add(struct tv_tsc_segments *s, uint64_t host_ts, uint64_t offset)
{
	if (s->n && s->seg[s->n - 1].offset == offset)
		return 0;
	if (s->n == TV_TSC_MAX_SEGMENTS) {
		s->dropped++;
		return 0;
	}
	s->seg[s->n++] = (struct tv_tsc_segment){ host_ts, offset };
	return 0;
}

/*
 * The offset in force is found from the host time it yields: the latest
 * segment whose start the mapped time reaches (offsets only change while
 * the vCPU is stopped, so a guest time never belongs to two segments).
 */
static uint64_t tsc_apply(const struct tv_sync_domain *d, uint64_t ts)
{
	struct tv_tsc_params p = d->tsc;

	for (size_t k = d->nr_tsc_segments; k-- > 0;) {
		uint64_t host;

		p.offset = d->tsc_segments[k].offset;
		host = tv_tsc_host_from_guest(&p, ts);
		if (k == 0 || host >= d->tsc_segments[k].from_host)
			return host;
	}
	return tv_tsc_host_from_guest(&p, ts);
}

uint64_t tv_sync_domain_apply(const struct tv_sync_domain *d, uint64_t ts)
{
	if (!strcmp(d->method, "tsc"))
		return tsc_apply(d, ts);
	if (!strcmp(d->method, "reference") || !strcmp(d->method, "none"))
		return ts;
	return tv_clock_map_apply(&d->est.map, ts);
}

bool tv_sync_domain_usable(const struct tv_sync_domain *d)
{
	return d->est.quality <= TV_SYNC_APPROXIMATE && strcmp(d->method, "none");
}
