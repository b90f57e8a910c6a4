// SPDX-License-Identifier: GPL-2.0
/*
 * Clock-sync probes on the guest side (doc/sync-probes.md): markers in the
 * guest trace, hypercalls the host traces, answers to PING.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>


#include "agent.h"

static void write_marker(struct session *s, uint16_t type, uint64_t seq, uint64_t aux)
{
	unsigned char m[TV_SYNC_MARKER_SIZE];

	tv_sync_marker_encode(m, type, s->guest, seq, aux);
	if (s->marker_fd >= 0 && write(s->marker_fd, m, sizeof(m)) < 0 && verbose)
		say("Cannot write sync marker: errno=%d", errno);
}

static void cpuid(unsigned leaf, unsigned *a, unsigned *b, unsigned *c, unsigned *d)
{
	__asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

/* 1: AMD (vmmcall), 0: Intel (vmcall), -1: not under KVM (no probe). */
static int hcall_flavour(void)
{
	unsigned a, b, c, d;
	char vendor[13], hv[13];

	cpuid(0, &a, &b, &c, &d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	cpuid(1, &a, &b, &c, &d);
	if (!(c & (1u << 31)))
		return -1;
	cpuid(0x40000000, &a, &b, &c, &d);
	memcpy(hv, &b, 4);
	memcpy(hv + 4, &c, 4);
	memcpy(hv + 8, &d, 4);
	hv[12] = '\0';
	if (strncmp(hv, "KVMKVMKVM", 9))
		return -1;
	return (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine")) ? 1 : 0;
}

static sigjmp_buf hcall_jmp;

static void hcall_sigill(int sig)
{
	(void)sig;
	siglongjmp(hcall_jmp, 1);
}

/*
 * KVM traces kvm_hypercall before it checks the caller's privilege, so a
 * user-space call with an unknown number is seen by the host and returns
 * -KVM_EPERM here.
 */
static void hypercall(int amd, uint64_t seq, uint64_t a1)
{
	long ret, nr = TV_SYNC_HCALL_NR;

	if (amd)
		__asm__ volatile(".byte 0x0f,0x01,0xd9"
				 : "=a"(ret) : "a"(nr), "b"(seq), "c"(a1), "d"(0L), "S"(0L) : "memory");
	else
		__asm__ volatile(".byte 0x0f,0x01,0xc1"
				 : "=a"(ret) : "a"(nr), "b"(seq), "c"(a1), "d"(0L), "S"(0L) : "memory");
	(void)ret;
}

static uint32_t run_hcalls(struct session *s, uint64_t first, uint32_t count)
{
	static int flavour = -2;
	struct sigaction sa = { .sa_handler = hcall_sigill }, old;
	volatile uint32_t done = 0;

	if (flavour == -2)
		flavour = no_hcalls ? -1 : hcall_flavour();
	if (flavour < 0 || count > 1000)
		return 0;
	sigaction(SIGILL, &sa, &old);
	if (sigsetjmp(hcall_jmp, 1) == 0) {
		for (uint32_t i = 0; i < count; i++) {
			write_marker(s, TV_SYNC_HCALL_BEFORE, first + i, 0);
			hypercall(flavour, first + i, 0xabc00u | s->guest);
			write_marker(s, TV_SYNC_HCALL_AFTER, first + i, 0);
			done = i + 1;
		}
	} else {
		say("Hypercall probe raised SIGILL: probes disabled");
		flavour = -1;
	}
	sigaction(SIGILL, &old, NULL);
	return done;
}

void answer_hcall(struct session *s, const unsigned char *p, size_t len)
{
	unsigned char out[16];
	uint64_t first;
	uint32_t count;

	if (len < 12)
		return;
	first = tv_proto_get_u64(p);
	count = tv_proto_get_u32(p + 8);
	tv_proto_put_u64(out, first);
	tv_proto_put_u32(out + 8, count);
	tv_proto_put_u32(out + 12, run_hcalls(s, first, count));
	send_frame(s, TV_MSG_HCALL_DONE, 0, out, sizeof(out));
}

void answer_ping(struct session *s, const unsigned char *p, size_t len)
{
	uint64_t seq;

	if (len < 8)
		return;
	seq = tv_proto_get_u64(p);
	write_marker(s, TV_SYNC_PING_RECV, seq, 0);
	write_marker(s, TV_SYNC_PONG_SEND, seq, 0);
	send_frame(s, TV_MSG_PONG, 0, p, 8);
}
