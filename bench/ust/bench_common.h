/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench/ust-bench's workload, the same for every tracer (bench_tv.c,
 * bench_lttng.c): THREADS threads, released together, each emit n_events
 * events with BENCH_EMIT(i, b) in a loop timed by its own CPU clock.  The
 * tracer's call is a macro so that the loop measured is the tracer's
 * inline code, not a call through a pointer.  Define BENCH_EMIT before
 * including this file.
 */
#ifndef BENCH_UST_COMMON_H
#define BENCH_UST_COMMON_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define BENCH_MAX_THREADS 64

static uint64_t n_events;
static pthread_barrier_t go;
static double cpu_ns[BENCH_MAX_THREADS];	/* per worker: its CPU time (CLOCK_THREAD_CPUTIME_ID) */

static void *bench_worker(void *arg)
{
	uint64_t b = (uint64_t)(uintptr_t)arg;
	struct timespec c0, c1;

	pthread_barrier_wait(&go);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (uint64_t i = 0; i < n_events; i++)
		BENCH_EMIT(i, b);
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

/* The workers started, released together and joined: wall time from release to the last join. */
static void bench_run(int threads, double *t0, double *t1)
{
	pthread_t tids[BENCH_MAX_THREADS];

	pthread_barrier_init(&go, NULL, (unsigned int)threads + 1);
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, bench_worker, (void *)(uintptr_t)i);
	pthread_barrier_wait(&go);
	*t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	*t1 = now();
}

static void bench_print(int threads, double t0, double t1)
{
	double cpu = 0;

	for (int i = 0; i < threads; i++)
		cpu += cpu_ns[i];
	/* CPU of the emitting threads per event (the machine may be shared), and wall */
	printf("ns_per_event=%.3f wall_ns_per_event=%.3f\n", cpu / ((double)n_events * threads),
	       (t1 - t0) * 1e9 / ((double)n_events * threads));
}

#endif
