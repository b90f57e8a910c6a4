/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Shared by the steps of a session's clock synchronisation (sync/sync_session.c
 * drives them): probe scan, probe pairs, pieces, TSC method, path graph,
 * composition and causality, one file each.
 *
 * Threads: a scan belongs to the thread that runs tv_sync_session().
 */
#ifndef TV_SYNC_SESSION_H
#define TV_SYNC_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "tracevisor/tracevisor.h"
#include "sync_probes.h"
#include "tsc.h"

#define MAX_DOMAINS 64

/* One probe timestamp. @guest is the probed domain, @peer the prober. */
struct probe {
	uint64_t seq;
	uint64_t ts;
	int guest, peer;
	int type;
	int cpu;		/* the CPU that wrote it: a guest's vCPU */
	uint64_t mapped;	/* ts in the reference clock (sync_map_probes()) */
	uint64_t stream_first;	/* its CPU stream's first time */
	unsigned int backs;	/* how often that stream's clock went back before it */
	int held;		/* its stream's clock did not run since the event before */
	int ambiguous;		/* its time on Xen's line fits two runs (tv_event.time_ambiguous) */
};

/* A constraint point of one (guest, peer) relation. */
struct point {
	int guest, peer, below;
	int64_t x, y;
};

struct dom_scan {
	struct tep_event *raw_data, *hypercall, *write_tsc, *xen_guest, *kvm_entry;
	int64_t first, last;
	int is_guest;
	size_t xen_untimed;	/* Xen probe records without a TSC (stock Xen) */
	size_t xen_hcall_untimed;	/* a domU's: its HVMOP_xentrace records without a TSC */
	int guest_index;	/* among guest-* domains, -1 otherwise */
	/*
	 * A guest's probes are named by (prober, sync_index): the domain whose
	 * recorder probes it (-1: the session's own recorder, the host; meta
	 * sync_prober otherwise) and the index it gives the guest (meta
	 * sync_index, else guest_index).  A marker counts only through them.
	 */
	int sync_index, prober;
	int recorder;		/* linux-ftrace and no guest: the recorder's own trace */
	size_t foreign;		/* sync records in its stream that were not its to write */
};

struct scan {
	struct tv_reader *rd;
	size_t nr_domains;
	struct dom_scan dom[MAX_DOMAINS];
	int guest_dom[MAX_DOMAINS];	/* guest index -> domain */
	size_t nr_guests;
	int xen_dom;		/* the xen/ domain, -1 if none */
	struct probe *probes;
	size_t nr_probes, cap_probes;
	struct tv_tsc_segments tsc[MAX_DOMAINS];
	struct vcpu_entry {	/* each host thread's last kvm_entry */
		int pid;
		uint64_t ts;
	} entries[256];
	size_t nr_entries;
	struct stream_scan {	/* each (domain, CPU) stream's clock so far */
		int d, cpu;
		uint64_t first, last;
		unsigned int backs;
		int held;	/* the last event within TV_SYNC_HELD_NS of the one before */
		int ambiguous;	/* the last event's tv_event.time_ambiguous */
	} *streams;
	size_t nr_streams, cap_streams;
	struct stream_scan *cur;	/* the current event's */
	int on_line[MAX_DOMAINS];	/* its events moved to Xen's line (xen_offset.c) */
	/* a moved domain's constant and how far its brackets may miss Xen's record */
	int64_t line_pvclock_ns[MAX_DOMAINS], line_tol_ns[MAX_DOMAINS];
};

/* One probe round: the timestamps of each type, -1 when missing. */
struct round {
	int guest, peer[TV_PROBE_NR_TYPES], cpu[TV_PROBE_NR_TYPES];
	int64_t ts[TV_PROBE_NR_TYPES];
	uint64_t mapped[TV_PROBE_NR_TYPES];	/* ts in the reference clock */
	int held[TV_PROBE_NR_TYPES];	/* struct probe's held */
	int ambiguous[TV_PROBE_NR_TYPES];	/* struct probe's ambiguous */
};

typedef int (*round_fn)(const struct round *r, int guest_t, int peer_t, int below, void *ctx);

struct points {
	struct point *p;
	size_t n, cap;
};

/* An estimated edge guest -> peer. */
struct edge {
	int valid;
	size_t nr_pairs;
	struct tv_sync_estimate est;	/* with pieces: the worst piece's quality and bound */
	struct tv_sync_piece *pieces;	/* no line fits the whole trace, but these do */
	size_t nr_pieces;
};

struct graph {
	struct edge e[MAX_DOMAINS][MAX_DOMAINS];	/* [guest][peer] */
};

struct causality {
	struct tv_sync_domain *res;
	const struct graph *g;
};

/* probe_scan.c */
/*
 * @line: NULL, or the pvclock domains to move to Xen's line (xen_offset.c);
 * then the xen/ domain's records are not read (tv_reader_open_moved): the
 * caller adds what they gave a scan without @line (sync_session.c).
 */
int sync_scan_session(struct scan *sc, const char *dir, const struct tv_sync_result *line);
int sync_cmp_probe(const void *a, const void *b);

/* xen_offset.c */
int sync_xen_line_constants(struct scan *sc, struct tv_sync_result *line,
			     int64_t tol_ns[MAX_DOMAINS]);
/*
 * Whether round @r's hypercall markers, moved to the line, miss Xen's
 * record of that hypercall (put on a pCPU other than the one that ran
 * them); then *@before and *@after are their types.  Its domain: *@d.
 */
int sync_xen_line_misplaced(const struct scan *sc, const struct round *r, int *d, int *before,
			    int *after);

/* probe_pairs.c */
int sync_for_each_pair(const struct scan *sc, round_fn fn, void *ctx);
/* Whether the marker of @type in @r is in a bracket whose clock held still. */
int sync_round_clock_held(const struct round *r, int type);
/* Probe rounds of domain @d with a pair left out so (its send time held). */
size_t sync_count_held_rounds(const struct scan *sc, int d);
size_t sync_count_ambiguous_rounds(const struct scan *sc, int d);
/* Hypercall rounds of domain @d left out: markers misplaced on Xen's line (xen_offset.c). */
size_t sync_count_misplaced_rounds(const struct scan *sc, int d);
int sync_collect_point(const struct round *r, int gt, int pt, int below, void *ctx);
int sync_cmp_point(const void *a, const void *b);

/* pieces.c */
int sync_estimate_edges(const struct scan *sc, struct graph *g);

/* sync_tsc_method.c */
int sync_tsc_method(struct scan *sc, int d, int ref, struct tv_sync_domain *out);

/* path_graph.c */
void sync_resolve_paths(const struct scan *sc, const struct graph *g, int ref,
			  struct tv_sync_domain *res);

/* compose.c */
int sync_domain_index(const struct scan *sc, const char *subdir);
int sync_attach_pieces(const struct scan *sc, const struct graph *g, struct tv_sync_domain *res);
void sync_compose_paths(const struct scan *sc, struct tv_sync_domain *res, int ref);
void sync_explain_missing(const struct scan *sc, const struct graph *g, size_t d,
			    struct tv_sync_domain *r);
void sync_explain_untimed(const struct scan *sc, size_t d, struct tv_sync_domain *r);
void sync_alternative_paths(const struct scan *sc, const struct graph *g,
			    struct tv_sync_domain *res, int ref);

/* causality.c */
int sync_probe_guest_side(int type);
int sync_map_probes(struct scan *sc, const struct tv_sync_domain *res);
int sync_check_pair(const struct round *r, int gt, int pt, int below, void *ctx);
void sync_describe_cross_check(struct tv_sync_domain *r, const struct edge *e);

/**
 * tv_sync_check_vcpus - count guest events mapped where their vCPU was out of guest mode
 * @dir: session directory
 * @res: results to check; nr_vcpu_checked and vcpu_violations are set
 *
 * tv_sync_session() calls it; exposed for results read back from a file.
 * Return: 0 or -errno.
 */
int tv_sync_check_vcpus(const char *dir, struct tv_sync_result *res);

/**
 * tv_sync_check_runstates - count Xen domU events outside their vCPU's running intervals
 * @dir: session directory (with a xen/ domain and guest-NAME/meta xen_domid)
 * @res: results to check; nr_runstate_checked and runstate_violations are
 *       set for each synchronised guest domain of a Xen domU
 *
 * A domU's code runs only while Xen has its vCPU running: after the
 * transforms, every event of guest CPU N must lie inside an interval that
 * xen:xen_runstate_change records of (xen_domid, N) open (new state 0,
 * running) and close (old state 0), up to the guest's bound plus Xen's.
 * A vCPU is checked from its first runstate record on.  tv_sync_session()
 * calls it.  Return: 0 or -errno.  Without Xen runstate records, nothing
 * is checked.
 */
int tv_sync_check_runstates(const char *dir, struct tv_sync_result *res);

#endif
