/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * What kvm/bpf/top_exits.bpf.c (in the kernel) and kvm/top_bpf.c (user
 * space) share: the maps' keys and values and the load-time settings.
 * Plain C types of fixed width, the same layout on both sides.
 */
#ifndef TV_KVM_BPF_TOP_EXITS_H
#define TV_KVM_BPF_TOP_EXITS_H

/*
 * Log-linear latency buckets (HDR-style): values below 16 ns exact, then
 * 16 buckets per power of two, so a bucket is at most 1/16 of its values
 * wide and its midpoint within 1/32 (3.1%) of any value in it: p50 and
 * p99 within 5% as the live view promises.
 */
#define TOP_SUB_BITS 4
#define TOP_SUB (1 << TOP_SUB_BITS)
#define TOP_NBUCKETS (61 * TOP_SUB)	/* bucket of 2^64 - 1: 975 */

/*
 * The bucket of a latency of @v ns: @v itself below TOP_SUB, then
 * (floor(log2 v) - TOP_SUB_BITS + 1) * TOP_SUB + the TOP_SUB_BITS bits
 * after the leading one.  At most 975 (v = 2^64 - 1).  Shifts and
 * compares only: the BPF side has no count-leading-zeros instruction.
 */
static inline unsigned int top_bucket(unsigned long long v)
{
	unsigned long long x = v;
	unsigned int msb = 0;

	if (v < TOP_SUB)
		return (unsigned int)v;
	if (x >> 32) { msb += 32; x >>= 32; }
	if (x >> 16) { msb += 16; x >>= 16; }
	if (x >> 8) { msb += 8; x >>= 8; }
	if (x >> 4) { msb += 4; x >>= 4; }
	if (x >> 2) { msb += 2; x >>= 2; }
	if (x >> 1) msb += 1;
	return (msb - TOP_SUB_BITS + 1) * TOP_SUB +
	       (unsigned int)((v >> (msb - TOP_SUB_BITS)) & (TOP_SUB - 1));
}

/* kvm_exit's isa (TV_KVM_ISA_* in lib/tv_internal.h) */
enum { TOP_ISA_VMX = 1, TOP_ISA_SVM = 2 };

struct top_key {
	unsigned int tgid;	/* the VMM process */
	unsigned int vcpu;	/* kvm_exit's vcpu_id */
	unsigned int reason;	/* exit_reason, as kvm_exit has it */
	unsigned int isa;	/* 1 VMX, 2 SVM */
};

/*
 * A row's counters.  How many exits were paired with their kvm_entry (or
 * calls with their return) is the sum of hist: no counter of its own, one
 * atomic add less per entry.
 */
struct top_val {
	char comm[16];			/* the first exiting thread's, for a VMM gone
					 * before user space reads /proc */
	struct top_key key;		/* an exit row's own key (zero: free), so that
					 * a thread's cached id is checked where its
					 * exit counts (kvm/bpf/top_exits_prog.h) */
	unsigned long long count;	/* counted at kvm_exit */
	unsigned long long total_ns;
	unsigned long long max_ns;
	unsigned long long hist[TOP_NBUCKETS];
};

/*
 * The exit programs' rows: the rows hash maps a struct top_key to a row
 * id (unsigned int), the index of the row's struct top_val in the
 * counters array, so that kvm_entry reaches the counters through the id
 * its exit left in the thread's slot (an array lookup the verifier
 * inlines), not through a second hash lookup.  Ids are taken from the
 * free_ids queue, which user space fills at load and refills with the id
 * of a row it forgets (tracevisor serve), after zeroing its counters.
 * (The function rows, kvm/bpf/top_funcs.bpf.c, keep struct top_val in
 * their hash.)
 */
#define TOP_MAX_ROWS 16384

/* top --bpf --filter: conditions all true for an exit to count. */
#define TOP_MAX_CONDS 4
enum { TOP_F_REASON, TOP_F_VCPU, TOP_F_ISA, TOP_F_TGID, TOP_F_LATENCY };
enum { TOP_OP_EQ, TOP_OP_NE, TOP_OP_LT, TOP_OP_LE, TOP_OP_GT, TOP_OP_GE };

struct top_cond {
	unsigned int field, op;
	unsigned long long value;
};

static inline int top_compare(unsigned long long a, unsigned int op, unsigned long long b)
{
	switch (op) {
	case TOP_OP_EQ: return a == b;
	case TOP_OP_NE: return a != b;
	case TOP_OP_LT: return a < b;
	case TOP_OP_LE: return a <= b;
	case TOP_OP_GT: return a > b;
	default: return a >= b;
	}
}

/* Load-time settings: the event fields' offsets on this kernel, the filter. */
struct top_cfg {
	unsigned int off_reason;
	unsigned int off_isa;		/* 0: no isa field (VMX only kernels) */
	unsigned int off_vcpu;
	unsigned int isa_default;
	unsigned int nr_conds;
	unsigned int by_latency;	/* a latency condition: count at kvm_entry */
	struct top_cond conds[TOP_MAX_CONDS];
};

/*
 * Counters of what could not be aggregated (the header's "lost"): no row
 * (map full), no open-exit slot, an exit whose reason could not be read.
 */
enum { TOP_LOST_ROWS, TOP_LOST_OPEN, TOP_LOST_READ, TOP_NSTATS };

#endif
