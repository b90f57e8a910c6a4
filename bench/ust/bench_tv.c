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
		tv_ust_trace(bench, ev, i, b);
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
	int threads = argc > 2 ? atoi(argv[1]) : 0, disabled = argc > 3 && !strcmp(argv[3], "disabled");
	pthread_t tids[64];
	double t0, t1;

	if (threads < 1 || threads > 64) {
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
	pthread_barrier_init(&go, NULL, (unsigned int)threads + 1);
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i);
	pthread_barrier_wait(&go);
	t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t1 = now();
	if (disabled) {
		double e0 = now(), e1;

		for (uint64_t i = 0; i < n_events; i++)
			__asm__ __volatile__("" : : "r"(i));	/* the loop alone */
		e1 = now();
		printf("empty_loop_ns=%.3f ", (e1 - e0) * 1e9 / (double)n_events);
	} else {
		tv_ust_flush(5000);
	}
	double cpu = 0;

	for (int i = 0; i < threads; i++)
		cpu += cpu_ns[i];
	/* CPU of the emitting threads per event (the machine may be shared), and wall */
	printf("ns_per_event=%.3f wall_ns_per_event=%.3f\n", cpu / ((double)n_events * threads),
	       (t1 - t0) * 1e9 / ((double)n_events * threads));
	return 0;
}
