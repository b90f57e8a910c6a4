/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Probe records of doc/sync-probes.md as the sync/ files see them.  The
 * on-disk marker types, magic and hypercall number are the protocol's
 * (lib/format/proto.h, shared with the agent); sync adds two internal types for
 * the measured side of a bracket, which are never written to a trace.
 */
#ifndef TV_SYNC_PROBES_H
#define TV_SYNC_PROBES_H

#include <stdint.h>

#include "proto.h"
#include "tv_internal.h"

#define TV_SYNC_HCALL_TAG 0xabc00u
/* Two markers of one round closer than this: the writer's clock was held. */
#define TV_SYNC_HELD_NS 200

enum tv_sync_probe_internal {
	TV_PROBE_HCALL_HOST = 9,	/* kvm_hypercall seen by the host */
	TV_PROBE_XEN_RECORD = 10,	/* xen_guest record seen by Xen */
	TV_PROBE_XEN_HCALL = 11,	/* a domU's HVMOP_xentrace record seen by Xen */
	TV_PROBE_NR_TYPES = 12,
};

/* tv_sync_marker_of_event() is lib's (tv_internal.h). */

#endif
