/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the tracer's unit tests: a private consumer socket setting,
 * records collected by an in-test consumer, and per-thread order checks.
 */
#ifndef TV_TEST_UST_COMMON_H
#define TV_TEST_UST_COMMON_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tv_test.h"
#include "ust_consumer.h"

/*
 * The library's listener starts before main() and would connect to the
 * machine's consumer (/run/tracevisor/ust.sock): run again with
 * TRACEVISOR_UST_SOCK="" (no listener) unless the test set it.
 */
static inline void ust_test_private(char **argv)
{
	if (!getenv("TRACEVISOR_UST_SOCK")) {
		setenv("TRACEVISOR_UST_SOCK", "", 1);
		execv("/proc/self/exe", argv);
		perror("execv /proc/self/exe");
		exit(1);
	}
}

/* One event as the tests' events lay it out: (int thread, u64 seq) after the common fields. */
struct ust_test_rec {
	uint64_t ts;
	uint16_t id;
	int32_t thread;
	uint64_t seq;
	uint32_t buf;
};

struct ust_test_log {
	pthread_mutex_t lock;
	struct ust_test_rec *recs;
	size_t n, cap;
};

static inline void ust_test_collect(void *ctx, uint32_t buf, uint64_t ts, uint16_t id, int32_t tid,
				    const char *event, uint16_t size)
{
	struct ust_test_log *log = ctx;
	struct ust_test_rec *r;

	(void)tid;
	(void)size;
	if (log->n == log->cap) {
		log->cap = log->cap ? log->cap * 2 : 1 << 16;
		log->recs = realloc(log->recs, log->cap * sizeof(*log->recs));
		if (!log->recs)
			abort();
	}
	r = &log->recs[log->n++];
	r->ts = ts;
	r->id = id;
	r->buf = buf;
	memcpy(&r->thread, event + 8, 4);
	memcpy(&r->seq, event + 16, 8);
}

static inline int ust_test_by_time(const void *a, const void *b)
{
	const struct ust_test_rec *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Records of event @id, in time order: per thread (0 .. @threads-1) the seqs
 * must be first[t], first[t]+1, ... with no gap or repeat (@gaps: only
 * increasing, for events that may have been dropped); @count[t] gets how
 * many.  Return: the number of violations (the first few reported).
 */
static inline int ust_test_check_order(struct ust_test_log *log, uint16_t id, int threads,
				       uint64_t *first, uint64_t *count, bool gaps)
{
	uint64_t *next = calloc((size_t)threads, sizeof(*next));
	int bad = 0;

	qsort(log->recs, log->n, sizeof(*log->recs), ust_test_by_time);
	for (int t = 0; t < threads; t++)
		count[t] = 0;
	for (size_t i = 0; i < log->n; i++) {
		struct ust_test_rec *r = &log->recs[i];

		if (r->id != id)
			continue;
		if (r->thread < 0 || r->thread >= threads) {
			if (bad++ < 5)
				fprintf(stderr, "record %zu: thread %d out of range\n", i, r->thread);
			continue;
		}
		if (count[r->thread] == 0)
			next[r->thread] = first ? first[r->thread] : r->seq;
		if (gaps ? r->seq < next[r->thread] : r->seq != next[r->thread]) {
			if (bad++ < 5)
				fprintf(stderr, "id %u thread %d: seq %llu where %llu was next (buf %u ts %llu)\n",
					id, r->thread, (unsigned long long)r->seq,
					(unsigned long long)next[r->thread], r->buf,
					(unsigned long long)r->ts);
			next[r->thread] = r->seq;
		}
		next[r->thread]++;
		count[r->thread]++;
	}
	free(next);
	return bad;
}

/* Run @fn in a child (its own buffers: a process has one set); its failures count here. */
static inline void ust_test_fork(const char *name, int (*fn)(void))
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		int failed;

		tv_test_passed = tv_test_failed = 0;
		failed = fn();

		fprintf(stderr, "%s: %s\n", name, failed ? "FAILED" : "ok");
		fflush(stdout);
		_exit(failed ? 1 : 0);
	}
	TV_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			 WEXITSTATUS(status) == 0,
		 "%s failed (status %d)", name, status);
}

#endif
