// SPDX-License-Identifier: GPL-2.0
/*
 * tv-syscall-storm: a workload that fires tracepoints at a high rate on any
 * kernel, no KVM needed: N getppid() system calls in a tight loop, so with
 * syscalls:sys_enter_getppid and syscalls:sys_exit_getppid enabled exactly
 * 2N events from this process (nothing else here calls getppid).  The
 * output line mirrors tv-testvmm's, for the benchmarks:
 *
 *   tv-syscall-storm: calls=N elapsed_ns=T ns_per_call=C
 *
 * usage: tv-syscall-storm [--calls N] [--quiet]   (default 1000000)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long calls = 1000000, i, t0, t1;
	int quiet = 0;
	char *end;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--calls") && a + 1 < argc) {
			calls = strtoll(argv[++a], &end, 10);
			if (*end || calls < 0) {
				fprintf(stderr, "tv-syscall-storm: bad --calls %s\n", argv[a]);
				return 2;
			}
		} else if (!strcmp(argv[a], "--quiet")) {
			quiet = 1;
		} else {
			fprintf(stderr, "usage: tv-syscall-storm [--calls N] [--quiet]\n");
			return 2;
		}
	}
	t0 = now_ns();
	for (i = 0; i < calls; i++)
		syscall(SYS_getppid);	/* the raw call: no libc caching, ever */
	t1 = now_ns();
	if (!quiet)
		printf("tv-syscall-storm: calls=%lld elapsed_ns=%lld ns_per_call=%lld\n", calls,
		       t1 - t0, calls ? (t1 - t0) / calls : 0);
	return 0;
}
