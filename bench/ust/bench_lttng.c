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

static uint64_t n_events;
static pthread_barrier_t go;
static double cpu_ns[64];	/* per worker: its CPU time (CLOCK_THREAD_CPUTIME_ID) */

static void *worker(void *arg)
{
	uint64_t b = (uint64_t)(uintptr_t)arg;
	struct timespec c0, c1;

	pthread_barrier_wait(&go);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (uint64_t i = 0; i < n_events; i++)
		lttng_ust_tracepoint(bench, ev, i, b);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	cpu_ns[b] = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
	return NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 0;
	pthread_t tids[64];
	double t0, t1;

	if (threads < 1 || threads > 64) {
		fprintf(stderr, "usage: bench_lttng THREADS EVENTS [disabled]\n");
		return 2;
	}
	n_events = strtoull(argv[2], NULL, 10);
	pthread_barrier_init(&go, NULL, (unsigned int)threads + 1);
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i);
	pthread_barrier_wait(&go);
	t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t1 = now();
	double cpu = 0;

	for (int i = 0; i < threads; i++)
		cpu += cpu_ns[i];
	/* CPU of the emitting threads per event (the machine may be shared), and wall */
	printf("ns_per_event=%.3f wall_ns_per_event=%.3f\n", cpu / ((double)n_events * threads),
	       (t1 - t0) * 1e9 / ((double)n_events * threads));
	return 0;
}
