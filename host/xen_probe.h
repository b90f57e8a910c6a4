/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * dom0/Xen clock-sync probes (host/xen_probe.c), for the session recording.
 */
#ifndef TV_HOST_XEN_PROBE_H
#define TV_HOST_XEN_PROBE_H

#include <stdint.h>

#include "tracevisor/tracevisor.h"

/**
 * tv_xen_sync_probe - one dom0/Xen clock-sync probe (doc/sync-probes.md)
 * @rec: the host (dom0) recorder of the same session
 * @seq: probe sequence number
 *
 * Writes the XEN_BEFORE marker into dom0's trace, injects the Xen record
 * TRC_GUEST | 0x476 { magic, seq low, seq high }, then the XEN_AFTER marker.
 * Threads: as tv_recorder_write_marker(), safe from any thread.
 * Return: 0 or -errno (logged).
 */
int tv_xen_sync_probe(struct tv_recorder *rec, uint64_t seq);

#endif
