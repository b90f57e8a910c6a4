/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The live view's in-kernel aggregation (kvm/top_bpf.c): a BPF program on
 * kvm_exit/kvm_entry keeps per (VMM, vCPU, reason) counts and latency
 * histograms; each interval reads the difference.
 * Threads: one reader thread.
 */
#ifndef TV_KVM_TOP_BPF_H
#define TV_KVM_TOP_BPF_H

#include <stdint.h>

#include "tracevisor/tracevisor.h"
#include "bpf/top_exits.h"

struct tv_top_bpf;

/*
 * Load and attach; @filter (or NULL): conditions on exit_reason, vcpu_id,
 * isa, tgid and latency joined by &&, evaluated in the kernel (exits only).
 * @funcs: @nr_funcs functions to time, SYMBOL (kernel) or PATH:SYMBOL
 * (user space), rows "func:SYMBOL" per process; with functions, a kernel
 * without kvm:kvm_exit times the functions only.
 * Return: 0, or -errno logged in one line (no BPF, no kvm events, a bad
 * filter, an unknown symbol, a missing file...); nothing stays attached.
 */
int tv_top_bpf_open(const char *filter, const char *const *funcs, size_t nr_funcs,
		    struct tv_top_bpf **out);
/* The rows since the last call into @out (tv_exit_stat_free()); @lost: exits not aggregated. */
int tv_top_bpf_interval(struct tv_top_bpf *b, struct tv_exit_stat *out, uint64_t *lost);
void tv_top_bpf_close(struct tv_top_bpf *b);
/*
 * The exit rows as the kernel holds them, cumulative since the programs
 * were attached (tracevisor serve): @fn(@ctx, key, value) per row, in the
 * map's order; a non-zero return stops the walk and is returned.  @val
 * is scratch the caller gives (a struct top_val is ~8 KiB).
 */
int tv_top_bpf_rows(struct tv_top_bpf *b, struct top_val *val,
		    int (*fn)(void *ctx, const struct top_key *k, const struct top_val *v), void *ctx);
/* Forget @k's row (its VMM is gone): 0 or -errno. */
int tv_top_bpf_forget(struct tv_top_bpf *b, const struct top_key *k);
/* The kernel's counters of exits not aggregated, cumulative: @lost[TOP_NSTATS]. */
void tv_top_bpf_lost_by_cause(struct tv_top_bpf *b, uint64_t *lost);
/* How many BPF programs are attached now. */
unsigned int tv_top_bpf_nr_programs(const struct tv_top_bpf *b);
/* Bucket @i's values: [*lo, *hi) (kvm/bpf/top_exits.h's top_bucket()). */
void tv_top_bucket_range(unsigned int i, uint64_t *lo, uint64_t *hi);
/* Nearest-rank percentile @pct of histogram @h of @n values: its bucket's middle. */
uint64_t tv_top_hist_percentile(const uint64_t *h, uint64_t n, unsigned int pct);

/*
 * kvm_exit's field offsets on this kernel into @cfg (off_reason, off_isa,
 * off_vcpu, isa_default), for another exit program (kvm/flight_bpf.c).
 * Return: 0 or -ENOENT (logged: no kvm:kvm_exit, or not the fields).
 */
struct top_cfg;
int tv_top_bpf_exit_fields(struct top_cfg *cfg);

#endif
