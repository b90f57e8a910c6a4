/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Xen: what to record of Xen's trace buffers (from dom0), a xentrace file
 * imported as a session, a record written into Xen's trace.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_XEN_H
#define TRACEVISOR_XEN_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/xen.h>"
#endif

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(default)

/* Xen's trace buffers, from dom0: session domain xen/, kind xen-trace. */
#define TV_XEN_DEFAULT_PAGES 32		/* per CPU, as xentrace */
#define TV_XEN_DEFAULT_MASK 0x0ffff000u	/* TRC_ALL, as xentrace */
#define TV_XEN_GEN_CLASS 0x0001f000u	/* TRC_GEN: always recorded (its time scales) */

struct tv_xen_record_opts {
	const char *outdir;	/* the session directory */
	uint32_t evt_mask;	/* 0: TV_XEN_DEFAULT_MASK */
	const char *cpus;	/* physical CPU list "0-3,6"; NULL: all */
	unsigned int pages;	/* per CPU buffer; 0: default (used if Xen has none yet) */
	uint64_t flight_bytes;	/* keep the last bytes in dom0 memory (over the pCPUs), 0: write */
};

/**
 * tv_xen_parse_events - "sched,hvm,pv" (class names), "all" or a hex mask to a Xen event mask
 * @spec: the text
 *
 * Return: the mask, 0 if invalid.
 */
uint32_t tv_xen_parse_events(const char *spec);

/**
 * tv_xen_cpu_in_list - whether @cpu is in the list "0-3,6"
 * @list: the list
 * @cpu: the CPU
 */
bool tv_xen_cpu_in_list(const char *list, int cpu);

/**
 * tv_xen_import_xentrace - convert a file written by Xen's xentrace
 * @file: the xentrace output
 * @outdir: the session directory to create
 * @cpu_khz: TSC frequency; 0: xc_physinfo's when on Xen, else 2.4 GHz (warned)
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_import_xentrace(const char *file, const char *outdir, uint64_t cpu_khz);

/**
 * tv_xen_inject - write a TRC_GUEST record into Xen's trace (HVMOP_xentrace)
 * @event: 0..4095, ORed into TRC_GUEST (0x0800f000)
 * @data: up to 7 words (copied)
 * @nr: number of words
 * @mono: NULL, or filled with dom0's CLOCK_MONOTONIC (ns) just before and
 *        just after the hypercall
 *
 * A sync point: on the patched hypervisor the record carries Xen's TSC.
 * Threads: safe from any thread.
 * Return: 0 or -errno (logged; -ENOTSUP when built without Xen).
 */
int tv_xen_inject(unsigned int event, const uint32_t *data, unsigned int nr, uint64_t mono[2]);

#pragma GCC visibility pop

#endif /* TRACEVISOR_XEN_H */
