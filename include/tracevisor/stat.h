/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Analyses of a recorded session (`tracevisor stat`): VM exits, Xen,
 * traced processes, as tables of rows.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_STAT_H
#define TRACEVISOR_STAT_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/stat.h>"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(default)

struct tv_exit_stat_row {
	char vm[80];
	char vcpu[24];
	char reason[48];
	/* stat --by guest-task: what the guest ran on that vCPU at the exit */
	char guest_task[24];		/* its comm; "" when not asked or unknown */
	int guest_pid;			/* -1 when unknown */
	char guest_context[32];		/* "syscall:N", "irq:N", "softirq:N" or "" */
	uint64_t count;
	uint64_t min_ns, p50_ns, p99_ns, max_ns, total_ns;
	bool has_latency;
	uint64_t hist[64];	/* log2(ns) buckets */
	/* top --xen (tv_top_xen_open()): "" elsewhere */
	char kind[16];			/* "exit", "runstate", "hypercall", "pv", "hvm" */
	int domid;			/* the Xen domid; -1: Xen itself (idle) or unknown */
	double share;			/* runstate rows: the share of the interval the
					 * vCPU spent in that state (0..1); -1 others */
};

/*
 * One table of any analysis: KVM exits, Xen exits and runstates, traced
 * processes (UST); a row's kind says which when they mix.
 */
struct tv_exit_stat {
	struct tv_exit_stat_row *rows;
	size_t nr_rows;
	bool have_exit_entry;	/* kvm_exit/kvm_entry were recorded */
	char mode[32];		/* "exits" or "pvm" (no kvm_exit/kvm_entry) */
	uint64_t events;
	uint64_t lost;
	uint64_t unmatched_exits;
};

/**
 * tv_exit_stat_free - free the rows of @st
 * @st: the analysis; the struct itself is the caller's
 */
void tv_exit_stat_free(struct tv_exit_stat *st);

/**
 * tv_ust_stat_compute - the traced processes' events of a session (record --ust)
 * @dir: session directory
 * @out: rows owned by the caller (tv_exit_stat_free()), sorted by domain,
 *       process and name: @vm the domain (host, guest:NAME), @vcpu the
 *       process id, @reason PROVIDER:EVENT with its count and no latency,
 *       or PROVIDER:NAME (PROVIDER:NAME() for _entry/_exit) with the count
 *       and latencies of its begin/end pairs: PROVIDER:NAME_begin then
 *       PROVIDER:NAME_end (or NAME_entry, NAME_exit) in one thread, an end
 *       closing the latest open begin.  @events: the processes' events,
 *       @lost: the events they discarded, @unmatched_exits: ends without
 *       a begin, @mode "ust".
 *
 * Return: 0, -ENOENT (no traced process in the session, not logged), or
 * -errno (logged).
 */
int tv_ust_stat_compute(const char *dir, struct tv_exit_stat *out);

struct tv_stat_opts {
	/*
	 * Attribute every timed VM exit to what the guest ran on that vCPU
	 * at that moment (its task, pid, and syscall, IRQ or softirq): rows
	 * gain guest_task, guest_pid and guest_context.  Needs the guest's
	 * sched_switch (and for the context raw_syscalls, irq and softirq
	 * events), recorded through its agent, and a synchronised session
	 * (tracevisor sync) for the two clocks to be one.
	 */
	bool by_guest_task;
};

/**
 * tv_stat_compute_opts - every analysis of `stat` in one merged read of a session
 * @dir: session directory
 * @opts: NULL: the default analysis
 * @kvm: the VM exit analysis: rows sorted by total time, then count
 * @xen: the Xen analysis, when the session has a Xen domain (then
 *       *@have_xen is true): rows (vm "dN", vcpu, reason) of runstate
 *       times per domain and vCPU, HVM exit reasons timed exit->entry,
 *       hypercalls and other records counted
 * @have_xen: whether @xen was computed
 *
 * The session is read once.  The caller owns both results and frees them
 * with tv_exit_stat_free() (also when !*@have_xen: @xen is then empty).
 * Threads: none shared; call from any one thread.
 * Return: 0, or -errno (logged; nothing to free).
 */
int tv_stat_compute_opts(const char *dir, const struct tv_stat_opts *opts, struct tv_exit_stat *kvm,
			 struct tv_exit_stat *xen, bool *have_xen);

#pragma GCC visibility pop

#endif /* TRACEVISOR_STAT_H */
