/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The Xen analysis as a pass over events someone else reads, so one merged
 * read of a session feeds it and the VM exit analysis (analysis/exit_stat.c).
 * tv_xen_stat_compute() is the same pass over its own reader.
 *
 * Threads: a pass belongs to the thread that feeds it.
 */
#ifndef TV_XEN_STAT_H
#define TV_XEN_STAT_H

#include "tracevisor/tracevisor.h"
#include "latency_table.h"

struct tv_xen_stat_pass;

/* Start the analysis of @rd's Xen domain into @out (zeroed).
 * Return: 0, -ENOENT when the session has no Xen domain, -ENOMEM. */
int tv_xen_stat_pass_new(struct tv_reader *rd, struct tv_exit_stat *out,
			 struct tv_xen_stat_pass **pass);
/* Every event the reader gives, in order.  0 or -ENOMEM. */
int tv_xen_stat_pass_event(struct tv_xen_stat_pass *p, const struct tv_event *ev);
/* After the last event: the rows, sorted, into @out.  0 or -ENOMEM. */
int tv_xen_stat_pass_finish(struct tv_xen_stat_pass *p);
/*
 * End an interval (the live view, top --xen): the rows of the events since
 * the last interval into @out (the caller's: tv_exit_stat_free()), then
 * start empty.  An exit whose VMENTRY has not come yet is counted in the
 * interval of its VMEXIT and timed in that of its end; a runstate is timed
 * in the interval of the change that ends it, as stat does.  Summed over
 * the intervals, the rows' counts and totals are those of
 * tv_xen_stat_pass_finish().  0 or -ENOMEM.
 */
int tv_xen_stat_pass_interval(struct tv_xen_stat_pass *p, struct tv_exit_stat *out);
/*
 * Exit rows by guest task too (stat --by guest-task): @fn is asked at each
 * VMEXIT (before any event), with the record and its vCPU.
 */
void tv_xen_stat_pass_set_guest(struct tv_xen_stat_pass *p, tv_exit_guest_fn fn, void *arg);
/* stat's row label of Xen domid @dom: "d1", "idle" or "unknown". */
void tv_xen_stat_dom_label(unsigned int dom, char *buf, size_t size);
void tv_xen_stat_pass_free(struct tv_xen_stat_pass *p);

/**
 * tv_xen_stat_compute - Xen analysis of a session's xen/ domain
 * @dir: session directory
 * @out: rows (vm "dN", vcpu, reason): runstate times per domain and vCPU,
 *       HVM exit reasons timed exit→entry, hypercalls and other records
 *       counted; owned by the caller (tv_exit_stat_free())
 *
 * Return: 0, -ENOENT when the session has no Xen domain, or -errno.
 */
int tv_xen_stat_compute(const char *dir, struct tv_exit_stat *out);

#endif
