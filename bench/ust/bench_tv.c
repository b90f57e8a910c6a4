// SPDX-License-Identifier: GPL-2.0
/*
 * bench_tv THREADS EVENTS [disabled] - bench/ust-bench's workload on
 * libtracevisor-ust: THREADS threads each emit EVENTS events bench:ev with
 * two 8-byte fields.  Enabled runs wait until a consumer (bench_tv_consumer)
 * has enabled bench:ev.  Prints "ns_per_event=X" (wall time of the loops
 * over all events) and, for "disabled", also the empty loop's time.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tracevisor/ust.h>

TV_UST_EVENT(bench, ev,
	TV_UST_ARGS(uint64_t a, uint64_t b),
	TV_UST_FIELDS(tv_ust_field_integer(uint64_t, a, a),
		      tv_ust_field_integer(uint64_t, b, b)))

#define BENCH_EMIT(i, b) tv_ust_trace(bench, ev, i, b)
#include "bench_common.h"

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 0, disabled = argc > 3 && !strcmp(argv[3], "disabled");
	double t0, t1;

	if (threads < 1 || threads > BENCH_MAX_THREADS) {
		fprintf(stderr, "usage: bench_tv THREADS EVENTS [disabled]\n");
		return 2;
	}
	n_events = strtoull(argv[2], NULL, 10);
	if (!disabled) {
		for (int i = 0; tv_ust_event_enabled("bench:ev") != 1; i++) {
			if (i > 10000) {
				fprintf(stderr, "bench_tv: bench:ev not enabled by a consumer within 10 s\n");
				return 1;
			}
			usleep(1000);
		}
	}
	bench_run(threads, &t0, &t1);
	if (disabled) {
		double e0 = now(), e1;

		for (uint64_t i = 0; i < n_events; i++)
			__asm__ __volatile__("" : : "r"(i));	/* the loop alone */
		e1 = now();
		printf("empty_loop_ns=%.3f ", (e1 - e0) * 1e9 / (double)n_events);
	} else {
		tv_ust_flush(5000);
	}
	bench_print(threads, t0, t1);
	return 0;
}
