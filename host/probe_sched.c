// SPDX-License-Identifier: LGPL-2.1
/* The clock-sync probes' schedule (host/probe_sched.h). */
#include <time.h>

#include "probe_sched.h"

double tv_probe_sched_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tv_probe_sched_init(struct tv_probe_sched *s, double interval, unsigned int edge)
{
	s->interval = interval > 0 ? interval : 1.0;
	s->edge = edge;
	s->next = 0;
	s->running = false;
}

unsigned int tv_probe_sched_begin(struct tv_probe_sched *s, double now)
{
	s->running = true;
	s->next = now + s->interval;
	return s->edge;
}

unsigned int tv_probe_sched_due(struct tv_probe_sched *s, double now)
{
	if (!s->running || now < s->next)
		return 0;
	s->next += s->interval;
	if (s->next < now)	/* late (a stall): no burst of catch-up rounds */
		s->next = now + s->interval;
	return 1;
}

double tv_probe_sched_wait(const struct tv_probe_sched *s, double now)
{
	if (!s->running)
		return s->interval;
	return s->next > now ? s->next - now : 0;
}

unsigned int tv_probe_sched_end(struct tv_probe_sched *s)
{
	s->running = false;
	return s->edge;
}
