// SPDX-License-Identifier: GPL-2.0
/*
 * tv-timed: a function called a known number of times, each call taking a
 * known least time, for the tests of function timing (record/top
 * --time-function PATH:tv_timed_call).
 *
 * usage: tv-timed [--calls N] [--sleep-us U] [--quiet]
 *
 *   --calls N     N calls of tv_timed_call()                       (default 100)
 *   --sleep-us U  each sleeps U microseconds (clock_nanosleep on
 *                 CLOCK_MONOTONIC, so at least U)                    (default 1000)
 *   --quiet       do not print the summary line
 *
 * tv_timed_call() is a global, never inlined function of this executable
 * (its symbol in .symtab and .dynsym), entered and left once per call.
 * On success it prints one line on stdout and exits 0:
 *   tv-timed: pid=P calls=N sleep_us=U min_ns=A max_ns=B
 * (A and B: the shortest and longest call as measured around it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* What the tests time: exported (-rdynamic) so a stripped copy still has it. */
__attribute__((noinline, used, visibility("default"))) int tv_timed_call(long sleep_us)
{
	struct timespec ts = { .tv_sec = sleep_us / 1000000, .tv_nsec = (sleep_us % 1000000) * 1000 };
	int r;

	while ((r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts)) == EINTR)
		;
	/* keeps the call a call (no tail call the compiler could fold) */
	__asm__ volatile("" ::: "memory");
	return r;
}

static int count_arg(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 0);
	return errno || end == s || *end || *out < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	long calls = 100, sleep_us = 1000;
	long long lo = -1, hi = 0;
	int quiet = 0;

	for (int i = 1; i < argc; i++) {
		long *dst = NULL;

		if (!strcmp(argv[i], "--calls"))
			dst = &calls;
		else if (!strcmp(argv[i], "--sleep-us"))
			dst = &sleep_us;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else
			goto usage;
		if (dst && (i + 1 >= argc || count_arg(argv[++i], dst)))
			goto usage;
	}
	for (long i = 0; i < calls; i++) {
		long long t0 = now_ns(), d;

		if (tv_timed_call(sleep_us)) {
			fprintf(stderr, "tv-timed: clock_nanosleep failed\n");
			return 1;
		}
		d = now_ns() - t0;
		lo = lo < 0 || d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	if (!quiet)
		printf("tv-timed: pid=%d calls=%ld sleep_us=%ld min_ns=%lld max_ns=%lld\n", getpid(),
		       calls, sleep_us, lo < 0 ? 0 : lo, hi);
	return 0;
usage:
	fprintf(stderr, "usage: tv-timed [--calls N] [--sleep-us U] [--quiet]\n");
	return 2;
}
