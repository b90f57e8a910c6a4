// SPDX-License-Identifier: GPL-2.0
/*
 * Clock-sync probes on the guest side (doc/sync-probes.md): markers in the
 * guest trace, hypercalls the host (KVM) or the hypervisor (Xen) traces,
 * answers to PING.
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
#include <sys/ioctl.h>
#include <sys/mman.h>
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

enum hcall_flavour {
	HCALL_NONE = -1,
	HCALL_KVM_INTEL = 0,	/* vmcall */
	HCALL_KVM_AMD = 1,	/* vmmcall */
	HCALL_XEN = 2,		/* HVMOP_xentrace through /dev/xen/privcmd */
};

/* KVM by its CPUID signature, or HCALL_NONE. */
static int kvm_flavour(void)
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
		return HCALL_NONE;
	cpuid(0x40000000, &a, &b, &c, &d);
	memcpy(hv, &b, 4);
	memcpy(hv + 4, &c, 4);
	memcpy(hv + 8, &d, 4);
	hv[12] = '\0';
	if (strncmp(hv, "KVMKVMKVM", 9))
		return HCALL_NONE;
	return (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine")) ?
		HCALL_KVM_AMD : HCALL_KVM_INTEL;
}

/*
 * Xen domU probes (doc/sync-probes.md): HVMOP_xentrace through privcmd,
 * which Xen records as TRC_GUEST | 0x477 (with the TSC on our patched
 * Xen).  The ABI is spelled out here: the agent has nothing but libc.
 */
#define XEN_HYPERVISOR_hvm_op	34
#define XEN_HVMOP_xentrace	11
struct privcmd_hypercall {
	uint64_t op;
	uint64_t arg[5];
};
#define IOCTL_PRIVCMD_HYPERCALL _IOC(_IOC_NONE, 'P', 0, sizeof(struct privcmd_hypercall))

struct xen_hvm_xentrace {	/* xen/include/public/hvm/hvm_op.h */
	uint16_t event, extra_bytes;
	uint8_t extra[7 * sizeof(uint32_t)];
};

static int privcmd_fd = -1;
/*
 * Xen reads the argument through the guest's page tables while the
 * hypercall runs: locked, so it is never paged out under it.
 */
static struct xen_hvm_xentrace *xen_arg;

static int xen_flavour(void)
{
	privcmd_fd = open("/dev/xen/privcmd", O_RDWR | O_CLOEXEC);
	if (privcmd_fd < 0)
		return HCALL_NONE;
	xen_arg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (xen_arg == MAP_FAILED || mlock(xen_arg, 4096)) {
		say("Cannot lock the Xen probe buffer: errno=%d: hypercall probes disabled", errno);
		close(privcmd_fd);
		privcmd_fd = -1;
		return HCALL_NONE;
	}
	return HCALL_XEN;
}

static int hcall_flavour(void)
{
	int f = kvm_flavour();

	return f != HCALL_NONE ? f : xen_flavour();
}

/* Return: 0, or -errno of a refused hypercall (said once by the caller). */
static int xen_probe(uint16_t guest, uint64_t seq)
{
	uint32_t w[4] = { TV_SYNC_MAGIC, guest, (uint32_t)seq, (uint32_t)(seq >> 32) };
	struct privcmd_hypercall h = { .op = XEN_HYPERVISOR_hvm_op,
				       .arg = { XEN_HVMOP_xentrace, (uint64_t)(uintptr_t)xen_arg } };

	xen_arg->event = TV_SYNC_XEN_GUEST_EVENT;
	xen_arg->extra_bytes = sizeof(w);
	memcpy(xen_arg->extra, w, sizeof(w));
	return ioctl(privcmd_fd, IOCTL_PRIVCMD_HYPERCALL, &h) < 0 ? -errno : 0;
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

/*
 * Xen: a refused HVMOP_xentrace (a 6.1 privcmd without unrestricted=1
 * answers EPERM for a domU; stock Xen without tracing EINVAL never) stops
 * the probes for good, said once: message probes remain.
 */
static uint32_t run_xen_probes(struct session *s, uint64_t first, uint32_t count, int *flavour)
{
	uint32_t done = 0;
	int err = 0;

	for (uint32_t i = 0; i < count && !err; i++) {
		write_marker(s, TV_SYNC_HCALL_BEFORE, first + i, TV_SYNC_HCALL_AUX_XEN);
		err = xen_probe(s->guest, first + i);
		write_marker(s, TV_SYNC_HCALL_AFTER, first + i, TV_SYNC_HCALL_AUX_XEN);
		done += !err;
	}
	if (err) {
		say("HVMOP_xentrace refused: errno=%d (%s) (load xen-privcmd with unrestricted=1): Xen hypercall probes disabled, message probes only",
		    -err, strerror(-err));
		*flavour = HCALL_NONE;
	}
	return done;
}

static uint32_t run_hcalls(struct session *s, uint64_t first, uint32_t count)
{
	static int flavour = -2;
	struct sigaction sa = { .sa_handler = hcall_sigill }, old;
	volatile uint32_t done = 0;

	if (flavour == -2)
		flavour = no_hcalls ? HCALL_NONE : hcall_flavour();
	if (flavour < 0 || count > 1000)
		return 0;
	if (flavour == HCALL_XEN)
		return run_xen_probes(s, first, count, &flavour);
	sigaction(SIGILL, &sa, &old);
	if (sigsetjmp(hcall_jmp, 1) == 0) {
		for (uint32_t i = 0; i < count; i++) {
			write_marker(s, TV_SYNC_HCALL_BEFORE, first + i, 0);
			hypercall(flavour == HCALL_KVM_AMD, first + i, 0xabc00u | s->guest);
			write_marker(s, TV_SYNC_HCALL_AFTER, first + i, 0);
			done = i + 1;
		}
	} else {
		say("Hypercall probe raised SIGILL: probes disabled");
		flavour = HCALL_NONE;
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
