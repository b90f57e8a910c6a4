/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The VM exit analysis as a pass over events someone else reads, so one
 * merged read of a session feeds it and the Xen analysis (analysis/exit_stat.c).
 * tv_kvm_stat_compute() is the same pass over its own reader.
 *
 * Threads: a pass belongs to the thread that feeds it.
 */
#ifndef TV_KVM_STAT_H
#define TV_KVM_STAT_H

#include "tracevisor/tracevisor.h"
#include "latency_table.h"

struct tv_kvm_stat_pass;

/* Start the analysis of @rd's session into @out (zeroed).  0 or -ENOMEM. */
int tv_kvm_stat_pass_new(struct tv_reader *rd, struct tv_exit_stat *out,
			 struct tv_kvm_stat_pass **pass);
/* Every event the reader gives, in order.  0 or -ENOMEM. */
int tv_kvm_stat_pass_event(struct tv_kvm_stat_pass *p, const struct tv_event *ev);
/* After the last event: the rows, sorted, into @out.  0 or -ENOMEM. */
int tv_kvm_stat_pass_finish(struct tv_kvm_stat_pass *p);
/*
 * End an interval (the live view): the rows of the events since the last
 * interval into @out (owned by the caller: tv_exit_stat_free()), then start
 * empty.  An exit whose entry has not come yet is timed in the interval of
 * its entry; it is counted in the interval of its exit.  0 or -ENOMEM.
 */
int tv_kvm_stat_pass_interval(struct tv_kvm_stat_pass *p, struct tv_exit_stat *out);
/* Rows by guest task too (lib/util/latency_table.h): @fn is asked at each timed exit (before any event). */
void tv_kvm_stat_pass_set_guest(struct tv_kvm_stat_pass *p, tv_exit_guest_fn fn, void *arg);
void tv_kvm_stat_pass_free(struct tv_kvm_stat_pass *p);

/**
 * tv_kvm_stat_compute - VM exit analysis of a session
 * @dir: session directory
 * @out: rows sorted by total time, then count; owned by the caller
 *       (tv_exit_stat_free())
 *
 * Return: 0 or -errno (logged).
 */
int tv_kvm_stat_compute(const char *dir, struct tv_exit_stat *out);

#endif
