/* SPDX-License-Identifier: LGPL-2.1 */
/* TSC offset history gathered from kvm_write_tsc_offset (sync/ internal). */
#ifndef TV_SYNC_TSC_H
#define TV_SYNC_TSC_H

#include "tracevisor/tracevisor.h"

/* Offset changes of one guest's vCPUs, in host time order. */
struct tv_tsc_segments {
	struct tv_tsc_segment *seg;
	uint64_t *entered;	/* per seg: the vCPU's last kvm_entry before it, 0 unknown */
	size_t n, cap, cap_entered;
};

/*
 * Record that vCPU @vcpu's offset went from @prev to @offset at host time
 * @host_ts, the vCPU having last entered guest mode at host time @entered
 * (0: unknown).  The first change of a vCPU also records @prev from host
 * time 0: the offset its events carry before the change.
 */
int tv_tsc_segments_add(struct tv_tsc_segments *s, uint32_t vcpu, uint64_t host_ts,
			uint64_t prev, uint64_t offset, uint64_t entered);
/* Mark the changes that moved a running guest's TSC back, under scaling @p. */
void tv_tsc_segments_mark_back(struct tv_tsc_segments *s, const struct tv_tsc_params *p);
/* Whether vCPU @vcpu has a history in @s. */
bool tv_tsc_segments_has(const struct tv_tsc_segments *s, uint32_t vcpu);
/* Sort @s by vCPU, keeping host time order within each; 0 or -ENOMEM. */
int tv_tsc_segments_sort(struct tv_tsc_segments *s);
void tv_tsc_segments_free(struct tv_tsc_segments *s);

#endif
