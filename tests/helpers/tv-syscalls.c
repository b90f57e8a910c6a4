// SPDX-License-Identifier: GPL-2.0
/*
 * tv-syscalls: a workload of a known number of system calls, for the root
 * tests that need events every kernel fires (syscalls:* tracepoints), with
 * or without a KVM.
 *
 * usage: tv-syscalls [--getppids N] [--seeks M] [--offset OFF] [--quiet]
 *
 *   --getppids N  N getppid() calls                                (default 0)
 *   --seeks M     M lseek(-1, OFF, SEEK_SET) calls, each failing
 *                 with EBADF (traced all the same)                  (default 0)
 *   --offset OFF  the lseek offset, decimal or 0x hex          (default 0x1234)
 *   --quiet       do not print the summary line
 *
 * Trace events of one run (this process, comm "tv-syscalls"):
 *   syscalls:sys_enter_getppid / sys_exit_getppid  N each, ret = the parent's pid
 *   syscalls:sys_enter_lseek  M "fd: 0xffffffff, offset: 0x<OFF>, whence: 0x00000000"
 *   syscalls:sys_exit_lseek   M, ret -9 (EBADF)
 * The calls go through syscall(2): glibc might otherwise answer from a cache.
 *
 * On success it prints one line on stdout and exits 0:
 *   tv-syscalls: pid=P ppid=Q getppids=N seeks=M offset=0xOFF
 * (ppid -1 when N is 0: no getppid() beyond the N asked for).
 * A call that does not return what it should: one line on stderr, exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: tv-syscalls [--getppids N] [--seeks M] [--offset OFF] [--quiet]\n");
	return 2;
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
	long getppids = 0, seeks = 0, offset = 0x1234, ppid = 0;
	int quiet = 0;

	for (int i = 1; i < argc; i++) {
		long *dst = NULL;

		if (!strcmp(argv[i], "--getppids"))
			dst = &getppids;
		else if (!strcmp(argv[i], "--seeks"))
			dst = &seeks;
		else if (!strcmp(argv[i], "--offset"))
			dst = &offset;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else
			return usage();
		if (dst && (i + 1 >= argc || count_arg(argv[++i], dst)))
			return usage();
	}
	for (long i = 0; i < getppids; i++) {
		long r = syscall(SYS_getppid);

		if (i && r != ppid) {
			fprintf(stderr, "tv-syscalls: getppid returned %ld, then %ld\n", ppid, r);
			return 1;
		}
		ppid = r;
	}
	for (long i = 0; i < seeks; i++) {
		if (syscall(SYS_lseek, -1, offset, SEEK_SET) != -1 || errno != EBADF) {
			fprintf(stderr, "tv-syscalls: lseek(-1) did not fail with EBADF\n");
			return 1;
		}
	}
	if (!quiet)
		printf("tv-syscalls: pid=%d ppid=%ld getppids=%ld seeks=%ld offset=%#lx\n",
		       getpid(), getppids ? ppid : -1L, getppids, seeks, offset);
	return 0;
}
