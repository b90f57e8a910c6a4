// SPDX-License-Identifier: GPL-2.0
/*
 * tv-cpuid: a guest workload of a known number of VM exits from user
 * space: N cpuid instructions (leaf 0), each a CPUID exit on a VMX or SVM
 * host.  tests/e2e/kvm-svm-guest-task.sh runs it in the lab's L2 and checks
 * that `stat --by guest-task` puts those exits on this process.
 *
 * usage: tv-cpuid N
 * Prints "tv-cpuid: pid=P cpuids=N" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : -1;

	if (n < 0) {
		fprintf(stderr, "usage: tv-cpuid N\n");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		unsigned int a = 0, b, c = 0, d;

		__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	}
	printf("tv-cpuid: pid=%d cpuids=%ld\n", (int)getpid(), n);
	return 0;
}
