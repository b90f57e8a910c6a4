// SPDX-License-Identifier: LGPL-2.1
/*
 * The TSC offset history of a guest's vCPUs, gathered by the sync
 * estimation from kvm_write_tsc_offset (applied by lib/clock_map.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "tsc.h"

static int segments_push(struct tv_tsc_segments *s, struct tv_tsc_segment seg)
{
	if (tv_array_grow(&s->seg, &s->cap, s->n, sizeof(*s->seg), 256))
		return -ENOMEM;
	s->seg[s->n++] = seg;
	return 0;
}

/* The last segment of @vcpu, or NULL (few vCPUs: the scan back is short). */
static const struct tv_tsc_segment *segments_last(const struct tv_tsc_segments *s,
						  uint32_t vcpu)
{
	for (size_t k = s->n; k-- > 0;)
		if (s->seg[k].vcpu == vcpu)
			return &s->seg[k];
	return NULL;
}

bool tv_tsc_segments_has(const struct tv_tsc_segments *s, uint32_t vcpu)
{
	return segments_last(s, vcpu) != NULL;
}

int tv_tsc_segments_add(struct tv_tsc_segments *s, uint32_t vcpu, uint64_t host_ts,
			uint64_t prev, uint64_t offset)
{
	const struct tv_tsc_segment *last = segments_last(s, vcpu);
	int ret;

	if (!last) {
		ret = segments_push(s, (struct tv_tsc_segment){ 0, prev, vcpu });
		if (ret)
			return ret;
		last = &s->seg[s->n - 1];
	}
	if (last->offset == offset)
		return 0;
	return segments_push(s, (struct tv_tsc_segment){ host_ts, offset, vcpu });
}

int tv_tsc_segments_sort(struct tv_tsc_segments *s)
{
	struct tv_tsc_segment *sorted;
	size_t out = 0;
	uint32_t next = 0;

	if (!s->n)
		return 0;
	sorted = malloc(s->n * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	/* One pass per vCPU, lowest id first: keeps each vCPU's time order. */
	for (bool more = true; more;) {
		uint32_t v = next, after = UINT32_MAX;

		more = false;
		for (size_t k = 0; k < s->n; k++) {
			if (s->seg[k].vcpu == v)
				sorted[out++] = s->seg[k];
			else if (s->seg[k].vcpu > v && s->seg[k].vcpu <= after)
				after = s->seg[k].vcpu, more = true;
		}
		next = after;
	}
	free(s->seg);
	s->seg = sorted;
	s->cap = s->n;
	return 0;
}

void tv_tsc_segments_free(struct tv_tsc_segments *s)
{
	free(s->seg);
	memset(s, 0, sizeof(*s));
}
