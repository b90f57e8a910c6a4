/* SPDX-License-Identifier: LGPL-2.1 */
/* TSC offset history gathered from kvm_write_tsc_offset (sync/ internal). */
#ifndef TV_SYNC_TSC_H
#define TV_SYNC_TSC_H

#include "tracevisor/tracevisor.h"

struct tv_tsc_segments {
	struct tv_tsc_segment seg[TV_TSC_MAX_SEGMENTS];
	size_t n;
	size_t dropped;		/* changes beyond TV_TSC_MAX_SEGMENTS */
};

/* Record that @offset is in force from host time @host_ts on. */
int tv_tsc_segments_add(struct tv_tsc_segments *s, uint64_t host_ts, uint64_t offset);

#endif
