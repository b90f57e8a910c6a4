// SPDX-License-Identifier: LGPL-2.1
/*
 * Probe rounds (the probes of one sequence number) and their send/receive
 * pairs, as constraint points of a (guest, peer) clock relation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "sync_probes.h"
#include "tsc.h"
#include "sync_session.h"

/*
 * Every send/receive pair of a round, as (guest-side type, peer-side type,
 * below): below means the guest timestamp is the receive side.
 */
static const int pairs[][3] = {
	{ TV_SYNC_PING_RECV, TV_SYNC_PING_SEND, 1 },
	{ TV_SYNC_PONG_SEND, TV_SYNC_PONG_RECV, 0 },
	{ TV_SYNC_HCALL_BEFORE, TV_PROBE_HCALL_HOST, 0 },
	{ TV_SYNC_HCALL_AFTER, TV_PROBE_HCALL_HOST, 1 },
	{ TV_PROBE_XEN_RECORD, TV_SYNC_XEN_BEFORE, 1 },
	{ TV_PROBE_XEN_RECORD, TV_SYNC_XEN_AFTER, 0 },
	{ TV_SYNC_HCALL_BEFORE, TV_PROBE_XEN_HCALL, 0 },
	{ TV_SYNC_HCALL_AFTER, TV_PROBE_XEN_HCALL, 1 },
};

/* Fill @r from the sorted probes at *@i; advances *@i past the round. */
static void next_round(const struct scan *sc, size_t *i, struct round *r)
{
	const struct probe *p0 = &sc->probes[*i];

	r->guest = p0->guest;
	for (int t = 0; t < TV_PROBE_NR_TYPES; t++) {
		r->ts[t] = -1;
		r->peer[t] = -1;
		r->cpu[t] = -1;
		r->held[t] = 0;
		r->ambiguous[t] = 0;
	}
	for (; *i < sc->nr_probes && sc->probes[*i].guest == p0->guest &&
	       sc->probes[*i].seq == p0->seq; (*i)++) {
		r->ts[sc->probes[*i].type] = (int64_t)sc->probes[*i].ts;
		r->peer[sc->probes[*i].type] = sc->probes[*i].peer;
		r->cpu[sc->probes[*i].type] = sc->probes[*i].cpu;
		r->mapped[sc->probes[*i].type] = sc->probes[*i].mapped;
		r->held[sc->probes[*i].type] = sc->probes[*i].held;
		r->ambiguous[sc->probes[*i].type] = sc->probes[*i].ambiguous;
	}
}

/* Whether probes of @type are written by the probed domain (else by its prober). */
int sync_probe_guest_side(int type)
{
	for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++)
		if (pairs[k][0] == type)
			return 1;
	return 0;
}

/*
 * Two markers one domain writes in one round with work between them (a
 * hypercall; reading a ping and answering it): the pair (first, second)
 * a marker of @type belongs to; 0 when @type has none.
 */
static int bracket_of(int type, int *before, int *after)
{
	switch (type) {
	case TV_SYNC_PING_RECV:
	case TV_SYNC_PONG_SEND:
		*before = TV_SYNC_PING_RECV;
		*after = TV_SYNC_PONG_SEND;
		return 1;
	case TV_SYNC_PING_SEND:
	case TV_SYNC_PONG_RECV:
		*before = TV_SYNC_PING_SEND;
		*after = TV_SYNC_PONG_RECV;
		return 1;
	case TV_SYNC_HCALL_BEFORE:
	case TV_SYNC_HCALL_AFTER:
		*before = TV_SYNC_HCALL_BEFORE;
		*after = TV_SYNC_HCALL_AFTER;
		return 1;
	case TV_SYNC_XEN_BEFORE:
	case TV_SYNC_XEN_AFTER:
		*before = TV_SYNC_XEN_BEFORE;
		*after = TV_SYNC_XEN_AFTER;
		return 1;
	}
	return 0;
}

int sync_round_clock_held(const struct round *r, int type)
{
	int before, after;

	/*
	 * Writing a marker alone takes a system call: two markers with work
	 * between them less than TV_SYNC_HELD_NS apart means the writer's
	 * clock did not run.  A pvclock (Xen's `xen` clocksource, kvm-clock)
	 * returns the highest value read so far when the CPU it now runs on is
	 * behind (Linux's last_value), and the ring buffer may add a few ns to
	 * a time that did not advance: these times are that held value,
	 * milliseconds after the true ones, not readings of the clock
	 * (doc/sync-probes.md, "Xen domUs in the lab").
	 */
	return bracket_of(type, &before, &after) && r->ts[before] >= 0 && r->ts[after] >= 0 &&
	       r->ts[after] - r->ts[before] < TV_SYNC_HELD_NS &&
	       r->ts[before] - r->ts[after] < TV_SYNC_HELD_NS;
}

/*
 * A held time is the highest value the clock returned so far, at or after
 * the true time on the CPU the writer now runs on: as a receive time it
 * still bounds the send from above, as a send time it bounds nothing.  So
 * a pair is left out when its send side was held.  Not so once the
 * writer's events were moved to Xen's common line (sync/xen_offset.c): a
 * held time is moved as a reading of the pCPU it was read on, the one its
 * vCPU left, so it lands at the past moment it was read, before the true
 * time: as a receive time it bounds nothing either (lab run U1: 1.45 and
 * 2.9 ms early), and the pair is left out whichever side was held.  On
 * the line a held marker is also one written within TV_SYNC_HELD_NS of the
 * event before it on its CPU, the marker alone of its bracket: the lab run
 * of 2026-11-26 (free) had dom0 write 8 events at one time, 51042234552
 * ns, after its vCPU moved to a pCPU 3.8 ms behind, the pong's receive
 * among them, put 0.59 ms before d1 sent it.
 */
static int marker_held_on_line(const struct scan *sc, const struct round *r, int writer, int t)
{
	return writer >= 0 && writer < MAX_DOMAINS && sc->on_line[writer] &&
	       (sync_round_clock_held(r, t) || r->held[t]);
}

static int pair_sent_held(const struct scan *sc, const struct round *r, int gt, int pt, int below)
{
	if (below ? sync_round_clock_held(r, pt) : sync_round_clock_held(r, gt))
		return 1;
	return marker_held_on_line(sc, r, r->guest, gt) ||
	       marker_held_on_line(sc, r, r->peer[pt], pt);
}

/* Whether a pair of types @gt, @pt uses round @r's markers misplaced on Xen's line. */
static int pair_misplaced(const struct scan *sc, const struct round *r, int gt, int pt)
{
	int d, b, a;

	return sync_xen_line_misplaced(sc, r, &d, &b, &a) &&
	       (gt == b || gt == a || pt == b || pt == a);
}

/*
 * Whether a marker of the pair has a time on Xen's line that fits two runs
 * of its vCPU on pCPUs whose times differ (struct tv_event.time_ambiguous):
 * where it was written is known to no better than their difference, far
 * above any bound (lab, xen-domu-sync under load: a ping and its pong
 * 10.3 ms on the wrong side of each other).  The pair is left out.
 */
static int pair_ambiguous(const struct round *r, int gt, int pt)
{
	return r->ambiguous[gt] || r->ambiguous[pt];
}

int sync_for_each_pair(const struct scan *sc, round_fn fn, void *ctx)
{
	struct round r;
	int ret = 0;

	for (size_t i = 0; i < sc->nr_probes && !ret;) {
		next_round(sc, &i, &r);
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]) && !ret; k++)
			if (r.ts[pairs[k][0]] >= 0 && r.ts[pairs[k][1]] >= 0 &&
			    !pair_sent_held(sc, &r, pairs[k][0], pairs[k][1], pairs[k][2]) &&
			    !pair_misplaced(sc, &r, pairs[k][0], pairs[k][1]) &&
			    !pair_ambiguous(&r, pairs[k][0], pairs[k][1]))
				ret = fn(&r, pairs[k][0], pairs[k][1], pairs[k][2], ctx);
	}
	return ret;
}

size_t sync_count_misplaced_rounds(const struct scan *sc, int d)
{
	size_t n = 0;
	struct round r;

	for (size_t i = 0; i < sc->nr_probes;) {
		int w, b, a;

		next_round(sc, &i, &r);
		n += sync_xen_line_misplaced(sc, &r, &w, &b, &a) && w == d;
	}
	return n;
}

/* Whether pair @k of round @r meets a reason to be left out. */
typedef int (*pair_test)(const struct scan *sc, const struct round *r, size_t k);

/* Guest @d's rounds with a pair, both sides there, that @test picks. */
static size_t count_rounds(const struct scan *sc, int d, pair_test test)
{
	size_t n = 0;
	struct round r;

	for (size_t i = 0; i < sc->nr_probes;) {
		int hit = 0;

		next_round(sc, &i, &r);
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++)
			if (r.ts[pairs[k][0]] >= 0 && r.ts[pairs[k][1]] >= 0 && r.guest == d && test(sc, &r, k))
				hit = 1;
		n += hit;
	}
	return n;
}

static int pair_k_held(const struct scan *sc, const struct round *r, size_t k)
{
	return pair_sent_held(sc, r, pairs[k][0], pairs[k][1], pairs[k][2]);
}

/* Left out for that alone: neither held nor misplaced. */
static int pair_k_ambiguous(const struct scan *sc, const struct round *r, size_t k)
{
	return pair_ambiguous(r, pairs[k][0], pairs[k][1]) && !pair_k_held(sc, r, k) &&
	       !pair_misplaced(sc, r, pairs[k][0], pairs[k][1]);
}

size_t sync_count_ambiguous_rounds(const struct scan *sc, int d)
{
	return count_rounds(sc, d, pair_k_ambiguous);
}

size_t sync_count_held_rounds(const struct scan *sc, int d)
{
	return count_rounds(sc, d, pair_k_held);
}

int sync_collect_point(const struct round *r, int gt, int pt, int below, void *ctx)
{
	struct points *pts = ctx;

	if (pts->n == pts->cap) {
		size_t cap = pts->cap ? pts->cap * 2 : 1024;
		struct point *grown = realloc(pts->p, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pts->p = grown;
		pts->cap = cap;
	}
	pts->p[pts->n++] = (struct point){ r->guest, r->peer[pt], below, r->ts[gt], r->ts[pt] };
	return 0;
}

int sync_cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	if (x->guest != y->guest)
		return x->guest - y->guest;
	if (x->peer != y->peer)
		return x->peer - y->peer;
	if (x->below != y->below)
		return x->below - y->below;
	return (x->x > y->x) - (x->x < y->x);
}
