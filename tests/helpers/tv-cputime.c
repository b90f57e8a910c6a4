// SPDX-License-Identifier: GPL-2.0
/*
 * tv-cputime: the CPU time of a command's whole life, exec to exit, in
 * microseconds (bench/xen-bench: a trace consumer's start, drain and stop).
 * busybox time prints hundredths of a second; a consumer's life in the
 * icount lab is tens of milliseconds.
 *
 * usage: tv-cputime OUTFILE COMMAND [ARG...]
 *
 * Runs COMMAND as its child (signal it directly: its pid is this process's
 * only child), waits for it with wait4() and writes one line to OUTFILE:
 *   cpu_us=U status=S wall_us=W
 * U: user + system time of COMMAND and of the children it waited for
 * (rusage; the kernel scales both to the scheduler's exact runtime), S: its
 * exit status, or 128 + the signal that ended it, W: CLOCK_MONOTONIC from
 * before the fork to after the wait (bench/guest-bench times its guest
 * workload with it: busybox has no clock finer than /proc/uptime's 10 ms).
 * Exits with S.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	int status, code;
	long long t0, wall;
	FILE *out;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: tv-cputime OUTFILE COMMAND [ARG...]\n");
		return 2;
	}
	t0 = mono_us();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tv-cputime: Cannot fork: errno=%d (%s)\n", errno, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "tv-cputime: Cannot run command: name=\"%s\", errno=%d (%s)\n",
			argv[2], errno, strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "tv-cputime: wait4 failed: errno=%d (%s)\n", errno, strerror(errno));
			return 1;
		}
	wall = mono_us() - t0;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	out = fopen(argv[1], "w");
	if (!out) {
		fprintf(stderr, "tv-cputime: Cannot open output: path=\"%s\", errno=%d (%s)\n", argv[1],
			errno, strerror(errno));
		return 1;
	}
	fprintf(out, "cpu_us=%lld status=%d wall_us=%lld\n",
		(long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
			ru.ru_utime.tv_usec + ru.ru_stime.tv_usec, code, wall);
	return fclose(out) ? 1 : code;
}
