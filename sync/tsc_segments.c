// SPDX-License-Identifier: LGPL-2.1
/*
 * The TSC offset history of a guest's vCPUs, gathered by the sync
 * estimation from kvm_write_tsc_offset (applied by lib/format/clock_map.c).
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

static int segments_push(struct tv_tsc_segments *s, struct tv_tsc_segment seg, uint64_t entered)
{
	if (tv_array_grow(&s->seg, &s->cap, s->n, sizeof(*s->seg), 256) ||
	    tv_array_grow(&s->entered, &s->cap_entered, s->n, sizeof(*s->entered), 256))
		return -ENOMEM;
	s->entered[s->n] = entered;
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
			uint64_t prev, uint64_t offset, uint64_t entered)
{
	const struct tv_tsc_segment *last = segments_last(s, vcpu);
	int ret;

	if (!last) {
		ret = segments_push(s, (struct tv_tsc_segment){ 0, prev, vcpu, 0 }, 0);
		if (ret)
			return ret;
		last = &s->seg[s->n - 1];
	}
	if (last->offset == offset)
		return 0;
	return segments_push(s, (struct tv_tsc_segment){ host_ts, offset, vcpu, 0 }, entered);
}

int tv_tsc_segments_sort(struct tv_tsc_segments *s)
{
	struct tv_tsc_segment *sorted;
	uint64_t *entered;
	size_t out = 0;
	uint32_t next = 0;

	if (!s->n)
		return 0;
	sorted = malloc(s->n * sizeof(*sorted));
	entered = malloc(s->n * sizeof(*entered));
	if (!sorted || !entered) {
		free(sorted);
		free(entered);
		return -ENOMEM;
	}
	/* One pass per vCPU, lowest id first: keeps each vCPU's time order. */
	for (bool more = true; more;) {
		uint32_t v = next, after = UINT32_MAX;

		more = false;
		for (size_t k = 0; k < s->n; k++) {
			if (s->seg[k].vcpu == v) {
				entered[out] = s->entered[k];
				sorted[out++] = s->seg[k];
			}
			else if (s->seg[k].vcpu > v && s->seg[k].vcpu <= after)
				after = s->seg[k].vcpu, more = true;
		}
		next = after;
	}
	free(s->seg);
	free(s->entered);
	s->seg = sorted;
	s->entered = entered;
	s->cap = s->cap_entered = s->n;
	return 0;
}

/*
 * KVM restarts a guest TSC where it stopped, so the vCPU's last entry
 * before a change comes before the point the guest TSC restarts from, in
 * the old offset's terms.  When the vCPU entered guest mode after that
 * point, the guest had run past the time it was set back to.  Seen in the
 * nested lab: a write set a vCPU's TSC 6 s (of host time) back while it
 * kept running.
 */
void tv_tsc_segments_mark_back(struct tv_tsc_segments *s, const struct tv_tsc_params *p)
{
	for (size_t k = 1; k < s->n; k++) {
		struct tv_tsc_params old = *p, cur = *p;

		if (s->seg[k].vcpu != s->seg[k - 1].vcpu || !s->entered[k])
			continue;
		old.offset = s->seg[k - 1].offset;
		cur.offset = s->seg[k].offset;
		s->seg[k].moved_back = tv_tsc_guest_from_host(&old, s->entered[k]) >
				       tv_tsc_guest_from_host(&cur, s->seg[k].from_host);
	}
}

void tv_tsc_segments_free(struct tv_tsc_segments *s)
{
	free(s->seg);
	free(s->entered);
	memset(s, 0, sizeof(*s));
}
