/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Clock synchronisation of a session's domains (sync/, doc/sync-probes.md):
 * estimate every domain's clock against the reference, write and read
 * DIR/sync/transforms.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_SYNC_H
#define TRACEVISOR_SYNC_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/sync.h>"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(default)

/*
 * A domain's clock mapped to the reference clock (the host's):
 *   ref = base_ref + floor((dom - base_dom) * slope_q48 / 2^48)
 * computed in 128-bit integers.  slope_q48 = 2^48 is a pure offset.
 */
struct tv_clock_map {
	int64_t base_dom;
	int64_t base_ref;
	int64_t slope_q48;
};

#define TV_SLOPE_ONE ((int64_t)1 << 48)

enum tv_sync_quality {
	TV_SYNC_EXACT,		/* exact arithmetic relation (same TSC) */
	TV_SYNC_ACCURATE,	/* two bounding lines, bound <= TV_SYNC_ACCURATE_NS */
	TV_SYNC_APPROXIMATE,	/* a line fits, but the bound is loose or one-sided */
	TV_SYNC_INSUFFICIENT,	/* not enough probes in both directions */
	TV_SYNC_FAILED,		/* no line fits the probes */
};

#define TV_SYNC_ACCURATE_NS 100000

/**
 * tv_sync_quality_name - "exact", "accurate", ... for @q
 * @q: a quality
 *
 * Return: a static string ("unknown" for a value out of range).
 */
const char *tv_sync_quality_name(enum tv_sync_quality q);

struct tv_sync_estimate {
	enum tv_sync_quality quality;
	struct tv_clock_map map;
	int64_t bound_ns;		/* guaranteed |error| over [span_lo, span_hi]; -1: none */
	int64_t span_lo, span_hi;	/* domain-clock range the bound covers */
	double slope_min, slope_max;	/* the two bounding slopes (informative) */
	size_t nr_above, nr_below;	/* points kept on each hull */
	char message[200];		/* why, when not exact/accurate */
};

/* KVM x86 TSC scaling: guest = offset + (host * ratio >> frac_bits). */
struct tv_tsc_params {
	uint64_t offset;
	uint64_t ratio;
	unsigned int frac_bits;	/* 48 on VMX, 32 on SVM */
};

/*
 * A TSC offset of vCPU @vcpu in force from host TSC @from_host on
 * (kvm_write_tsc_offset; from_host 0: the offset in force when the trace
 * began).  KVM rewrites a vCPU's offset at every vCPU load when the host's
 * TSC is unstable, thousands of times a second, so there is no fixed limit.
 * Such a write restarts the guest TSC where it stopped; @moved_back marks one
 * that set it below times the guest had already reached (the vCPU entered
 * guest mode after the point it was set back to): guest times of the two
 * segments then overlap, and only the order of events tells them apart.
 */
struct tv_tsc_segment {
	uint64_t from_host;
	uint64_t offset;
	uint32_t vcpu;
	uint32_t moved_back;	/* the write moved a running guest's TSC back */
};

/*
 * One piece of a clock that is linear only piecewise (it jumped, or changed
 * rate): the map and bound from domain time @from_dom on, until the next
 * piece's.  The first piece also maps anything before its @from_dom.
 */
struct tv_sync_piece {
	int64_t from_dom;
	struct tv_clock_map map;	/* to the reference */
	int64_t bound_ns;		/* guaranteed |error| inside the piece */
	enum tv_sync_quality quality;
};

/* Per-domain result of tv_sync_session(); also what DIR/sync/transforms holds. */
struct tv_sync_domain {
	char domain[80];		/* subdirectory name: guest-vm1 */
	char via[80];			/* domain it was synchronised against */
	char method[16];		/* reference, tsc, hull, none */
	struct tv_sync_estimate est;	/* composed to the reference */
	struct tv_tsc_params tsc;	/* method tsc: ratio, frac_bits, first offset */
	struct tv_tsc_segment *tsc_segments;	/* by vcpu, then from_host (owned) */
	size_t nr_tsc_segments;		/* 0: tsc.offset always, on every vCPU */
	struct tv_sync_piece *pieces;	/* method hull, no line over the whole trace (owned) */
	size_t nr_pieces;		/* 0: est.map everywhere */
	int64_t hull_tsc_diff;		/* method tsc: largest |hull - TSC| at a probe, -1: none */
	int64_t hull_bound;		/* method tsc: the hull's own bound, -1: no hull */
	size_t nr_probes;		/* matched probe pairs */
	size_t nr_pairs_checked;	/* send/receive pairs checked for causality */
	size_t causality_violations;	/* probe pairs + vCPU events below */
	size_t nr_vcpu_checked;		/* guest events checked against their vCPU's runs */
	size_t vcpu_violations;		/* of those, seen while the vCPU was out of the guest */
	/*
	 * A Xen domU: its events checked against its vCPUs' running intervals
	 * in Xen's runstate records (sync/runstate_check.c), and those
	 * outside every interval by more than its bound plus Xen's.
	 */
	size_t nr_runstate_checked;
	size_t runstate_violations;
	/*
	 * The best path not taken: its first hop (a domain synchronised via Xen
	 * could also be via the host, by message probes) and its bound composed
	 * to the reference; "" and -1 when there is none.
	 */
	char alt_via[80];
	int64_t alt_bound_ns;
	/*
	 * Of causality_violations, those of message-probe pairs (ping/pong
	 * with the peer over a channel), and the probe rounds left out
	 * because the domain's clock held still across a hypercall bracket
	 * (a pvclock returning the highest value read so far).
	 */
	size_t message_violations;
	size_t held_rounds;
	/*
	 * Hypercall rounds left out because, moved to Xen's common time line,
	 * the domain's markers missed Xen's record of the hypercall: the
	 * walk put them on a pCPU other than the one that ran them
	 * (sync/xen_offset.c).
	 */
	size_t misplaced_rounds;
	/*
	 * Xen only: the largest difference between two physical CPUs' system
	 * times at one TSC, from Xen's time-scale records (the patched Xen's
	 * TRC_TRACE_TSCALE); -1: not known.  Xen stamps its records, and a
	 * domain's pvclock reads, the system time of the CPU that runs it, so
	 * events of a vCPU that moved between CPUs may be off by up to this
	 * much beyond their bound.
	 */
	int64_t pcpu_skew_ns;
	/*
	 * A pvclock domain of a Xen session put on Xen's common time line
	 * (dom0, a domU: doc/sync-probes.md): its events were moved from the
	 * system time of the pCPU their vCPU ran on to pCPU 0's, @pvclock_ns
	 * being that system time minus the domain's clock (estimated from its
	 * hypercall brackets), before @est applies.  0: not moved.
	 */
	int xen_line;
	int64_t pvclock_ns;
	/*
	 * Sync records in this domain's own stream that were not its to write
	 * (markers naming another guest's index, a prober's markers in a
	 * guest, its vCPU's hypercall probe naming another guest): ignored, so
	 * that a guest's forged probes move no other domain's clock.
	 */
	size_t foreign_probes;
	/*
	 * Probe rounds left out because a marker's time, moved to Xen's
	 * common line, fits two runs of its writer's vCPU on pCPUs whose
	 * times differ (struct tv_event.time_ambiguous): not in the hull, not
	 * in the causality checks.
	 */
	size_t ambiguous_rounds;
};

struct tv_sync_result {
	struct tv_sync_domain *domains;
	size_t nr;
	char reference[80];
};

/**
 * tv_sync_session - estimate every domain's clock against the reference
 * @dir: session directory
 * @out: results, one per domain (the reference first); owned by the caller
 *       (tv_sync_result_free()), also on failure
 *
 * Reads the probes (doc/sync-probes.md) with the domains' own clocks,
 * estimates, composes and checks causality.  Does not write anything.
 * Return: 0 or -errno (logged).
 */
int tv_sync_session(const char *dir, struct tv_sync_result *out);

/**
 * tv_sync_domain_usable - whether @d is good enough to merge by
 * @d: a domain's result
 *
 * Return: true for exact, accurate and approximate.
 */
bool tv_sync_domain_usable(const struct tv_sync_domain *d);

/**
 * tv_sync_write - write @res as DIR/sync/transforms (doc/session-format.md)
 * @dir: session directory
 * @res: the results
 *
 * Return: 0 or -errno (logged).
 */
int tv_sync_write(const char *dir, const struct tv_sync_result *res);

/**
 * tv_sync_result_free - free every domain's result and empty @res
 * @res: results; the struct itself is the caller's
 */
void tv_sync_result_free(struct tv_sync_result *res);

#pragma GCC visibility pop

#endif /* TRACEVISOR_SYNC_H */
