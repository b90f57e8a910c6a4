/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The latency table of the stat analyses (kvm/kvm_stat.c, xen/xen_stat.c): one row
 * per (vm, vcpu, reason) with its count and every latency added, turned
 * into struct tv_exit_stat_row (count, min, p50, p99, max, total and a log2
 * histogram) by one computation.
 *
 * Threads: a table belongs to the thread that uses it; no locking.
 */
#ifndef TV_LIB_LATENCY_TABLE_H
#define TV_LIB_LATENCY_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "tracevisor/tracevisor.h"

struct tv_latency_acc {
	struct tv_exit_stat_row row;
	uint64_t *lat;
	size_t nr_lat, cap_lat;
};

struct tv_latency_table {
	struct tv_latency_acc **rows;	/* hash by (vm, vcpu, reason) */
	size_t cap, nr;
};

/* The row of (@vm, @vcpu, @reason), created empty on first use; NULL: -ENOMEM. */
struct tv_latency_acc *tv_latency_row(struct tv_latency_table *t, const char *vm,
				      const char *vcpu, const char *reason);
/*
 * The row of (@vm, @vcpu, @reason) and @guest's task, pid and context
 * (stat --by guest-task), created empty on first use; NULL: -ENOMEM.
 */
struct tv_latency_acc *tv_latency_row_guest(struct tv_latency_table *t, const char *vm,
					    const char *vcpu, const char *reason,
					    const struct tv_exit_stat_row *guest);
/*
 * stat --by guest-task: what the guest ran on vCPU @vcpu (-1: unknown) of
 * the VM of exit event @exit (a host kvm_exit, a Xen VMEXIT record), into
 * @out's guest_task, guest_pid and guest_context.  0, or -1 when unknown
 * (the row says "?").  analysis/guest_context.c's tv_guest_context_of().
 */
typedef int (*tv_exit_guest_fn)(void *arg, const struct tv_event *exit, int vcpu,
				struct tv_exit_stat_row *out);
/* One latency of @a's row: total, histogram and the percentiles' sample. */
int tv_latency_add(struct tv_latency_acc *a, uint64_t ns);
/*
 * Compute every row (min, p50, p99 by nearest rank, max) into @out->rows,
 * sorted by @cmp (on struct tv_exit_stat_row).  Return: 0 or -ENOMEM.
 */
int tv_latency_table_finish(struct tv_latency_table *t, struct tv_exit_stat *out,
			    int (*cmp)(const void *, const void *));
void tv_latency_table_free(struct tv_latency_table *t);

#endif
