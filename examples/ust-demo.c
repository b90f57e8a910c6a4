// SPDX-License-Identifier: GPL-2.0
/*
 * ust-demo N THREADS - THREADS threads each emit N events demo:tick with
 * the fields thread and seq (0 .. N-1), through libtracevisor-ust.
 *
 * Traced when TRACEVISOR_UST=GLOB is in the environment (from before
 * main) or when a consumer on TRACEVISOR_UST_SOCK enables demo:*; prints
 * one line at the end: the events emitted and the time they took.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <tracevisor/ust.h>

TV_UST_EVENT(demo, tick,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))

static uint64_t n_events;

static void *worker(void *arg)
{
	int thread = (int)(intptr_t)arg;

	for (uint64_t seq = 0; seq < n_events; seq++)
		tv_ust_trace(demo, tick, thread, seq);
	return NULL;
}

static int parse(const char *s, const char *what, unsigned long long max, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end || !*s || *out > max) {
		fprintf(stderr, "ust-demo: bad %s: \"%s\"\n", what, s);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long n, threads;
	struct timespec t0, t1;
	pthread_t *tids;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: ust-demo N THREADS\n");
		return 2;
	}
	if (parse(argv[1], "N", UINT64_MAX, &n) || parse(argv[2], "THREADS", 1024, &threads) || !threads)
		return 2;
	n_events = n;
	tids = calloc(threads, sizeof(*tids));
	if (!tids)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long long i = 0; i < threads; i++) {
		ret = pthread_create(&tids[i], NULL, worker, (void *)(intptr_t)i);
		if (ret) {
			fprintf(stderr, "ust-demo: cannot create thread %llu: errno=%d\n", i, ret);
			return 1;
		}
	}
	for (unsigned long long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* every reservation committed before we exit (a consumer may read after us) */
	tv_ust_flush(1000);
	printf("ust-demo: %llu events in %llu threads, %.3f s\n", n * threads, threads,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	free(tids);
	return 0;
}
