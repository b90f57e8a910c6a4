/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Xen in the flight recorder (xen/xen_flight.c): record --xen
 * --flight-recorder SIZE keeps the last SIZE / pCPUs bytes of each
 * physical CPU's trace records in dom0 memory (struct tv_xen_fring), and
 * exit-latency triggers are evaluated on the records as the consumer
 * drains them (struct tv_xen_exit_watch).  Used by xen/xen_recorder.c
 * (the drain thread feeds both) and host/ (snapshots, triggers); the unit
 * tests drive both without Xen.
 */
#ifndef TV_XEN_XEN_FLIGHT_H
#define TV_XEN_XEN_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "xen_trace.h"

/* A per-CPU ring's bounds: below, a few records; above, dom0 memory. */
#define TV_XEN_FRING_MIN_BYTES (16u * 1024)
#define TV_XEN_FRING_MAX_BYTES (4ULL << 30)

/*
 * One physical CPU's last records, whole records only, oldest first: a
 * record that does not fit pushes out the oldest ones (and the records
 * without a TSC after them, which would have no time of their own).
 * Threads: none; the caller locks.
 */
struct tv_xen_fring {
	unsigned char *buf;
	size_t cap;			/* bytes */
	size_t head, len;		/* the oldest record's offset, bytes held */
	unsigned char part[XT_REC_MAX];	/* a record cut at a window's end */
	unsigned int part_len;
	uint64_t fed;			/* records fed */
	uint64_t dropped;		/* records pushed out */
};

/* @cap bytes (TV_XEN_FRING_MIN_BYTES..TV_XEN_FRING_MAX_BYTES).  0, -EINVAL, -ENOMEM. */
int tv_xen_fring_init(struct tv_xen_fring *r, size_t cap);
/* Append @len bytes of records (cut anywhere: a partial record waits for the rest). */
void tv_xen_fring_feed(struct tv_xen_fring *r, const unsigned char *p, size_t len);
/* The records held, oldest first, into @out (r->len bytes).  Return: bytes copied. */
size_t tv_xen_fring_copy(const struct tv_xen_fring *r, unsigned char *out);
void tv_xen_fring_free(struct tv_xen_fring *r);

/* What an exit-latency rule watches on Xen. */
struct tv_xen_exit_rule {
	uint64_t limit_ns;		/* > 0 */
	int domid;			/* -1: every domain */
	int match_reason;		/* 1: @reason only; 0: every reason but @hlt */
	uint32_t reason, hlt;		/* exit codes of the host's ISA (hlt: ~0 none) */
};

/* An exit past its limit, reported once. */
struct tv_xen_exit_hit {
	unsigned int domid, vcpu, pcpu, reason;
	uint64_t exit_tsc;		/* its VMEXIT record's TSC */
	uint64_t exit_ns;		/* the same in the xen domain's clock: TSC / cpu_khz
					 * (xen-tsc), or pCPU 0's system time (xen-system) */
	uint64_t latency_ns;		/* open: as far as the records went; closed: exit->entry */
	int open;			/* 1: still open when seen past the limit */
	int system_time;		/* exit_ns is xen-system (else xen-tsc) */
};

struct tv_xen_exit_watch;

/*
 * tv_xen_exit_watch_new - a watch over @ncpus pCPUs' records, times by
 * @khz (TSC kHz).  Threads: fed by one thread (the drain thread); the
 * hits are taken from another through tv_xen_exit_watch_fd/_take, and
 * _closed asks from any: all under the watch's lock.  Freed by
 * tv_xen_exit_watch_free().  Return: 0 or -ENOMEM, -EINVAL.
 */
int tv_xen_exit_watch_new(const struct tv_xen_exit_rule *rule, int ncpus, uint64_t khz,
			  struct tv_xen_exit_watch **out);
/*
 * The session's clock is xen-system (the patched Xen): the hits' exit_ns
 * are pCPU 0's system time at their TSC, by the scale @tsc0, @stime0,
 * @mul, @shift (the consumer's at the start), and then by each time scale
 * record (TRC_TRACE_TSCALE) of pCPU 0 drained: the xen domain's raw time
 * that report matches trigger_time against.
 */
void tv_xen_exit_watch_set_scale(struct tv_xen_exit_watch *w, uint64_t tsc0, uint64_t stime0,
				 uint32_t mul, int8_t shift);
/* The records of @cpu as drained (cut anywhere; every record goes through whole). */
void tv_xen_exit_watch_feed(struct tv_xen_exit_watch *w, int cpu, const unsigned char *p, size_t len);
/*
 * After a drain pass: the open exits that passed the limit by the latest
 * time seen on any CPU become hits (the exits that closed past it did as
 * they closed).  An eventfd (tv_xen_exit_watch_fd) tells of new hits.
 */
void tv_xen_exit_watch_pass(struct tv_xen_exit_watch *w);
/* Readable (POLLIN) when a hit waits. */
int tv_xen_exit_watch_fd(const struct tv_xen_exit_watch *w);
/* The oldest waiting hit into @hit: 1, or 0 none (the fd is read). */
int tv_xen_exit_watch_take(struct tv_xen_exit_watch *w, struct tv_xen_exit_hit *hit);
/*
 * Has @hit's exit closed?  1 with *@latency_ns its exit->entry time (or
 * exit->runnable, as xen stat times it), 0 still open, -ENOENT another
 * exit of its vCPU since (its end was lost).
 */
int tv_xen_exit_watch_closed(struct tv_xen_exit_watch *w, const struct tv_xen_exit_hit *hit,
			     uint64_t *latency_ns);
/* Hits dropped because 64 were waiting already. */
uint64_t tv_xen_exit_watch_overflow(const struct tv_xen_exit_watch *w);
void tv_xen_exit_watch_free(struct tv_xen_exit_watch *w);

/*
 * Exit counts of a watch (serve --xen): every VMEXIT counted per (domain,
 * vCPU, reason), every exit paired with its end timed into a histogram
 * of powers of two: bucket b holds latencies in (2^(b-1), 2^b] ns (b = 0:
 * up to 1 ns), the last one everything above 2^(NBUCKETS-2) ns.  A
 * domain is an attacker: its (vCPU, reason) pairs are bounded by
 * TV_XEN_EXIT_MAX_COUNTS rows over all domains, exits past it counted
 * as lost.
 */
#define TV_XEN_EXIT_NBUCKETS 34
#define TV_XEN_EXIT_MAX_COUNTS 16384
struct tv_xen_exit_count {
	unsigned int domid, vcpu, reason;
	uint64_t count;			/* VMEXIT records */
	uint64_t timed;			/* of them paired with their end */
	uint64_t sum_ns;		/* their latencies */
	uint64_t hist[TV_XEN_EXIT_NBUCKETS];
};
/* The bucket of @ns (0 .. TV_XEN_EXIT_NBUCKETS - 1). */
unsigned int tv_xen_exit_bucket(uint64_t ns);
/* Count @w's exits from now on (rows allocated as they come): 0 or -ENOMEM. */
int tv_xen_exit_watch_count(struct tv_xen_exit_watch *w);
/*
 * tv_xen_exit_watch_counts - a copy of the counts (cumulative since
 * _count()): *@rows (the caller frees it), *@nr of them, *@lost the exits
 * past TV_XEN_EXIT_MAX_COUNTS.  Threads: any (under the watch's lock).
 * Return: 0 or -ENOMEM (*@rows NULL).
 */
int tv_xen_exit_watch_counts(struct tv_xen_exit_watch *w, struct tv_xen_exit_count **rows, size_t *nr,
			     uint64_t *lost);
/* Drop domain @domid's rows (a domain gone): bounded over a long life. */
void tv_xen_exit_watch_forget(struct tv_xen_exit_watch *w, unsigned int domid);

#endif
