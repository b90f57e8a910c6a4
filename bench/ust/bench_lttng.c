// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lttng THREADS EVENTS [disabled] - the same workload as bench_tv.c
 * on lttng-ust 2.13 (the session and channel are set up by bench/ust-bench
 * with lttng before it starts; lttng-ust registers with the session daemon
 * in its constructor, before main).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "bench_lttng_tp.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_EMIT(i, b) lttng_ust_tracepoint(bench, ev, i, b)
#include "bench_common.h"

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 0;
	double t0, t1;

	if (threads < 1 || threads > BENCH_MAX_THREADS) {
		fprintf(stderr, "usage: bench_lttng THREADS EVENTS [disabled]\n");
		return 2;
	}
	n_events = strtoull(argv[2], NULL, 10);
	bench_run(threads, &t0, &t1);
	bench_print(threads, t0, t1);
	return 0;
}
