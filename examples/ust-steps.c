// SPDX-License-Identifier: GPL-2.0
/*
 * ust-steps N STEPS THREADS DIR - a flight recorder's workload with known
 * points: THREADS threads each emit demo:tick (thread, seq) with seq going
 * on from step to step; after each step of N events per thread, the
 * program creates DIR/stepK (K from 1; its text: the next seq of every
 * thread) and waits until DIR/goK exists before the next step.
 *
 * Traced like ust-demo (TRACEVISOR_UST=GLOB, or a consumer that enables
 * demo:*).  A snapshot taken between stepK and goK holds events up to
 * seq K*N-1 of every thread at least.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <tracevisor/ust.h>

TV_UST_EVENT(demo, tick,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))

static uint64_t n_events;
static unsigned long steps;
static pthread_barrier_t step_done, step_go;

static void *worker(void *arg)
{
	int thread = (int)(intptr_t)arg;
	uint64_t seq = 0;

	for (unsigned long k = 0; k < steps; k++) {
		for (uint64_t i = 0; i < n_events; i++, seq++)
			tv_ust_trace(demo, tick, thread, seq);
		pthread_barrier_wait(&step_done);
		pthread_barrier_wait(&step_go);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long threads;
	pthread_t *tids;
	char path[PATH_MAX];

	if (argc != 5) {
		fprintf(stderr, "usage: ust-steps N STEPS THREADS DIR\n");
		return 2;
	}
	n_events = strtoull(argv[1], NULL, 10);
	steps = strtoul(argv[2], NULL, 10);
	threads = strtoul(argv[3], NULL, 10);
	if (!n_events || !steps || !threads || threads > 256) {
		fprintf(stderr, "ust-steps: N, STEPS and THREADS (<= 256) must be positive\n");
		return 2;
	}
	tids = calloc(threads, sizeof(*tids));
	if (!tids)
		return 1;
	pthread_barrier_init(&step_done, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&step_go, NULL, (unsigned)threads + 1);
	for (unsigned long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)(intptr_t)i)) {
			fprintf(stderr, "ust-steps: cannot create thread %lu\n", i);
			return 1;
		}
	for (unsigned long k = 1; k <= steps; k++) {
		FILE *f;

		pthread_barrier_wait(&step_done);
		/* every event of the step committed before we say so */
		tv_ust_flush(1000);
		snprintf(path, sizeof(path), "%s/step%lu", argv[4], k);
		f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "ust-steps: cannot create %s: errno=%d\n", path, errno);
			return 1;
		}
		fprintf(f, "%llu\n", (unsigned long long)(k * n_events));
		fclose(f);
		snprintf(path, sizeof(path), "%s/go%lu", argv[4], k);
		while (access(path, F_OK))
			poll(NULL, 0, 5);
		pthread_barrier_wait(&step_go);
	}
	for (unsigned long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	tv_ust_flush(1000);
	free(tids);
	return 0;
}
