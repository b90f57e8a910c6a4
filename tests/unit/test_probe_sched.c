// SPDX-License-Identifier: GPL-2.0
/* The clock-sync probes' one schedule (host/probe_sched.c). */
#include "tv_test.h"
#include "probe_sched.h"

int main(void)
{
	struct tv_probe_sched s;

	tv_probe_sched_init(&s, 0.5, 5);
	TV_CHECK(tv_probe_sched_due(&s, 100.0) == 0, "due before begin");
	TV_CHECK(tv_probe_sched_begin(&s, 10.0) == 5, "edge burst at the start");
	TV_CHECK(tv_probe_sched_due(&s, 10.4) == 0, "due before the interval");
	TV_CHECK(tv_probe_sched_wait(&s, 10.4) > 0.09 && tv_probe_sched_wait(&s, 10.4) < 0.11, "wait");
	TV_CHECK(tv_probe_sched_due(&s, 10.5) == 1, "periodic round");
	TV_CHECK(tv_probe_sched_due(&s, 10.6) == 0, "one round per interval");
	TV_CHECK(tv_probe_sched_due(&s, 11.01) == 1, "next round on the grid");
	/* A stall: one round, then back to the interval from now. */
	TV_CHECK(tv_probe_sched_due(&s, 20.0) == 1, "late round");
	TV_CHECK(tv_probe_sched_due(&s, 20.1) == 0, "no catch-up burst");
	TV_CHECK(tv_probe_sched_due(&s, 20.5) == 1, "interval from the late round");
	TV_CHECK(tv_probe_sched_end(&s) == 5, "edge burst at the end");
	TV_CHECK(tv_probe_sched_due(&s, 30.0) == 0, "nothing due after the end");
	tv_probe_sched_init(&s, 0, 3);
	TV_CHECK(s.interval == 1.0, "default interval 1 s");
	return tv_test_done("test_probe_sched");
}
