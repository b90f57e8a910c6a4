/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * When clock-sync probes run (doc/sync-probes.md): the one schedule of the
 * guests' probes (host/guest.c) and the dom0/Xen probes (host/recorder.c).
 * A burst of @edge rounds when probing begins and another when it ends -
 * more points at the hull's ends - and one round every @interval seconds
 * in between.  The scheduler only says how many rounds are due; the caller
 * runs them.
 *
 * Threads: a scheduler belongs to the thread that runs its probes.
 */
#ifndef TV_HOST_PROBE_SCHED_H
#define TV_HOST_PROBE_SCHED_H

#include <stdbool.h>

struct tv_probe_sched {
	double interval;	/* seconds between periodic rounds */
	unsigned int edge;	/* rounds at the start and at the end */
	double next;		/* tv_probe_sched_now() of the next periodic round */
	bool running;		/* between begin and end */
};

/* CLOCK_MONOTONIC in seconds: the schedule's clock. */
double tv_probe_sched_now(void);
void tv_probe_sched_init(struct tv_probe_sched *s, double interval, unsigned int edge);
/* Probing begins at @now: returns the rounds to run now (the edge burst). */
unsigned int tv_probe_sched_begin(struct tv_probe_sched *s, double now);
/* 1 when a periodic round is due at @now (then the next one is scheduled), else 0. */
unsigned int tv_probe_sched_due(struct tv_probe_sched *s, double now);
/* Seconds until the next periodic round (0 if due, the interval if not running). */
double tv_probe_sched_wait(const struct tv_probe_sched *s, double now);
/* Probing ends: returns the rounds to run now (the edge burst); no more due. */
unsigned int tv_probe_sched_end(struct tv_probe_sched *s);

#endif
