// SPDX-License-Identifier: LGPL-2.1
/*
 * One dom0/Xen clock-sync probe (doc/sync-probes.md): a Xen record injected
 * between two markers in dom0's ftrace trace.  It joins the host recorder
 * (kvm/) and Xen injection (xen/), so it lives above both.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>

#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "tv_internal.h"
#include "../xen/xen_recorder.h"
#include "../kvm/kvm_recorder.h"
#include "xen_probe.h"

struct probe_ctx {
	struct tv_recorder *rec;
	uint64_t seq;
};

static void probe_marker(void *arg, int after)
{
	struct probe_ctx *p = arg;
	unsigned char m[TV_SYNC_MARKER_SIZE];

	tv_sync_marker_encode(m, after ? TV_SYNC_XEN_AFTER : TV_SYNC_XEN_BEFORE, 0, p->seq, 0);
	tv_recorder_write_marker(p->rec, m, sizeof(m));
}

/*
 * The markers are written inside the open handle's lifetime, right around
 * the hypercall, so the bracket holds only the hypercall itself.
 */
int tv_xen_sync_probe(struct tv_recorder *rec, uint64_t seq)
{
	uint32_t words[3] = { TV_SYNC_MAGIC, (uint32_t)seq, (uint32_t)(seq >> 32) };
	struct probe_ctx p = { rec, seq };

	return tv_xen_inject_hooked(TV_SYNC_XEN_EVENT, words, 3, NULL, probe_marker, &p);
}
