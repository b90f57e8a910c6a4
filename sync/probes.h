/* SPDX-License-Identifier: LGPL-2.1 */
/* Probe records of doc/sync-probes.md, shared by sync/ files. */
#ifndef TV_SYNC_PROBES_H
#define TV_SYNC_PROBES_H

#include <stdint.h>

#define TV_SYNC_MAGIC 0x59535654u	/* "TVSY" */
#define TV_SYNC_HCALL_NR 0x7476
#define TV_SYNC_HCALL_TAG 0xabc00u
/* TRC_GUEST | this: the Xen-side record of a dom0/Xen probe. */
#define TV_SYNC_XEN_EVENT 0x476

enum tv_sync_probe_type {
	TV_PROBE_PING_SEND = 1,
	TV_PROBE_PING_RECV = 2,
	TV_PROBE_PONG_SEND = 3,
	TV_PROBE_PONG_RECV = 4,
	TV_PROBE_HCALL_BEFORE = 5,
	TV_PROBE_HCALL_AFTER = 6,
	TV_PROBE_XEN_BEFORE = 7,	/* dom0, before injecting Xen record seq */
	TV_PROBE_XEN_AFTER = 8,		/* dom0, after the injection returned */
	TV_PROBE_HCALL_HOST = 9,	/* kvm_hypercall seen by the host */
	TV_PROBE_XEN_RECORD = 10,	/* xen_guest record seen by Xen */
	TV_PROBE_NR_TYPES = 11,
};

struct tv_sync_marker {
	uint32_t magic;
	uint16_t type;
	uint16_t guest;
	uint64_t seq;
	uint64_t aux;
} __attribute__((packed));

#endif
