/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Xen's recorder (xen/record.c, or xen/no_xen.c without Xen) as the layers
 * above use it: the session recording (host/recorder.c) and top --xen
 * (host/top_xen.c); a client program records through
 * tv_session_record_start() with opts.xen.
 */
#ifndef TV_XEN_XEN_RECORDER_H
#define TV_XEN_XEN_RECORDER_H

#include <stdint.h>

#include "tracevisor/tracevisor.h"

/*
 * Threads: a Xen recorder runs one drain thread between its start and
 * stop; call the tv_xen_recorder_* functions from one thread.
 */
struct tv_xen_recorder;

/**
 * tv_xen_recorder_create - map Xen's trace buffers for recording
 * @opts: what to record and where (copied; its strings must outlive @out)
 * @out: the recorder, owned by the caller (tv_xen_recorder_destroy())
 *
 * Opens libxenctrl, libxenforeignmemory and libxenevtchn, allocates the
 * buffers if Xen has none, maps t_info and every CPU's buffer, binds
 * VIRQ_TBUF and creates DIR/xen/.  Tracing starts with
 * tv_xen_recorder_start().  Threads: one caller thread; the recorder
 * drains in a thread of its own between start and stop.
 * Return: 0 or -errno; -ENODEV when this is not a Xen dom0, -ENOTSUP when
 * built without Xen (both logged on one line).
 */
int tv_xen_recorder_create(const struct tv_xen_record_opts *opts, struct tv_xen_recorder **out);

/**
 * tv_xen_recorder_start - set the masks, enable tracing, start the drain thread
 * @rec: the recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_recorder_start(struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_stop - disable tracing, drain every CPU, restore the masks, write xen/meta
 * @rec: a started recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_recorder_stop(struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_destroy - restore the hypervisor's trace state if still changed, unmap, free
 * @rec: a recorder, or NULL
 */
void tv_xen_recorder_destroy(struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_nr_cpus - the number of physical CPUs recorded
 * @rec: the recorder
 */
int tv_xen_recorder_nr_cpus(const struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_bytes - bytes written so far (progress output)
 * @rec: the recorder
 *
 * Threads: safe while the drain thread runs (a snapshot).
 */
uint64_t tv_xen_recorder_bytes(const struct tv_xen_recorder *rec);

/**
 * tv_xen_host_cpu_khz - xc_physinfo's cpu_khz
 *
 * Return: kHz, or 0 when not on a Xen dom0 (or built without Xen).
 */
uint64_t tv_xen_host_cpu_khz(void);

#endif
