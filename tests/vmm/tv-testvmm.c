// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tv-testvmm - a tiny test VMM that drives a known number of real KVM exits.
 *
 * Usage:
 *   tv-testvmm [--outs N] [--ins M] [--cpuids K] [--repeat R]
 *              [--io-delay-us U] [--pause] [--quiet]
 *
 *   --outs N     guest does N  `out dx,al` to port 0x1234   (default 0)
 *   --ins M      guest does M  `in al,dx` from port 0x1235  (default 0)
 *   --cpuids K   guest does K  `cpuid` with eax=0           (default 0)
 *   --repeat R   run the whole guest program R times (>= 1, default 1)
 *   --io-delay-us U  the VMM spends U us (a sleep) on each port I/O exit
 *                before entering the guest again: a slow device model, so
 *                that the vCPU's thread sits in a user-space exit (a stop
 *                of the VMM then lands in one: an exit of known reason that
 *                lasts the whole stop)
 *   --pause      before each run after the first, wait for SIGUSR1 (out
 *                of KVM_RUN: no exit is open meanwhile), so that a test
 *                can look at the VM between two runs of one process
 *   --quiet      do not print the summary line
 *
 * The guest is 16-bit real-mode code at guest-physical 0x1000, generated
 * from the counts: an OUT loop, an IN loop, a CPUID loop, then `hlt`.
 * No in-kernel irqchip/PIT is created, so both ports go to user space:
 * every OUT/IN is one KVM_EXIT_IO, every program run ends with one
 * KVM_EXIT_HLT. CPUID is handled in the kernel (not visible here), so
 * its count is the requested one. Per run the VMM therefore sees
 * exactly N + M + 1 KVM_RUN returns.
 *
 * On success it prints one line on stdout and exits 0:
 *   tv-testvmm: outs=N*R ins=M*R cpuids=K*R hlts=R exits=E elapsed_ns=T
 *               ns_per_exit=T/E          (all on one line)
 * On any error it prints one line on stderr and exits 1, e.g.
 *   tv-testvmm: Cannot open /dev/kvm: errno=2 (No such file or directory)
 *   tv-testvmm: Unexpected exit reason 8 (SHUTDOWN) at rip=0x1003
 *
 * Build (must work static: it runs in a minimal nested L1 with no libs):
 *   gcc -Wall -Wextra -Werror -O2 -static -o tv-testvmm tv-testvmm.c
 *
 * Guest instructions (real mode, 0x66 = 32-bit operand prefix):
 *   66 be imm32  mov esi,imm32   loop counter: cpuid clobbers eax..edx
 *   ba imm16     mov dx,imm16
 *   b0 imm8      mov al,imm8
 *   ee / ec      out dx,al / in al,dx
 *   66 31 c0     xor eax,eax      (66 31 c9: xor ecx,ecx)
 *   0f a2        cpuid
 *   66 4e        dec esi
 *   75 rel8      jnz
 *   f4           hlt
 * `vmcall` is deliberately not used: in real mode it spins forever under PVM.
 *
 * Trace events per run of `--outs N --ins M --cpuids K --repeat R`
 * (measured on the PVM host, comm "tv-testvmm"):
 *   kvm_pio            N*R "pio_write at 0x1234 size 1 count 1 val 0x5a"
 *                    + M*R "pio_read at 0x1235 size 1 count 1 val 0xa5"
 *                      (a read is traced on completion, i.e. after its
 *                      kvm_userspace_exit, on the next KVM_RUN)
 *   kvm_userspace_exit (N+M)*R KVM_EXIT_IO (2) + R KVM_EXIT_HLT (5)
 *   kvm_cpuid          K*R "func 0 idx 0 ... cpuid entry found"
 *   kvm_emulate_insn   R * (4 + 3N + 3M + 5K + [N>0] + [M>0] + [K>0])
 *                      under PVM only (real mode is emulated there)
 *   kvm_fpu            2 per KVM_RUN return (load + unload)
 * plus once per process: kvm_write_tsc_offset, kvm_track_tsc,
 * kvm_apicv_inhibit_changed, kvm_unmap_hva_range (1 each),
 * kvm_update_master_clock (2), kvm_mmu_get_page (4); the 8
 * kvm_mmu_prepare_zap_page at teardown come from the kthread
 * "kvm-nx-lpage-re", not from this process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PROG "tv-testvmm"
#define GUEST_PHYS 0x1000ULL /* code (and the whole memory slot) starts here */
#define GUEST_SIZE 0x1000ULL /* one page is plenty for < 64 bytes of code */
#define OUT_PORT 0x1234
#define IN_PORT 0x1235
#define OUT_BYTE 0x5a /* value the guest writes, checked by the VMM */
#define IN_BYTE 0xa5  /* value the VMM returns for every IN */

struct opts {
	uint64_t outs, ins, cpuids, repeat, io_delay_us;
	int quiet, pause;
};

struct vm {
	int kvm, vm, vcpu;
	struct kvm_run *run;
	uint8_t *mem;
};

struct counts {
	uint64_t outs, ins, hlts, exits;
};

/* One-line error with errno, then exit 1: the contract for callers/tests. */
static void die_errno(const char *what)
{
	int e = errno;

	fprintf(stderr, PROG ": Cannot %s: errno=%d (%s)\n", what, e,
		strerror(e));
	exit(1);
}

static void die(const char *msg)
{
	fprintf(stderr, PROG ": %s\n", msg);
	exit(1);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--outs N] [--ins M] [--cpuids K]"
		   " [--repeat R] [--io-delay-us U] [--pause] [--quiet]\n");
}

/* Counts feed a 32-bit esi loop counter, so they are capped at 2^32-1. */
static uint64_t parse_count(const char *s, const char *name, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, PROG ": Invalid %s '%s' (0..%" PRIu64 ")\n",
			name, s, max);
		exit(1);
	}
	return v;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "outs", required_argument, NULL, 'o' },
		{ "ins", required_argument, NULL, 'i' },
		{ "cpuids", required_argument, NULL, 'c' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "io-delay-us", required_argument, NULL, 'd' },
		{ "pause", no_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .repeat = 1 };
	while ((c = getopt_long(argc, argv, "o:i:c:r:d:pqh", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o->outs = parse_count(optarg, "--outs", UINT32_MAX); break;
		case 'i': o->ins = parse_count(optarg, "--ins", UINT32_MAX); break;
		case 'c': o->cpuids = parse_count(optarg, "--cpuids", UINT32_MAX); break;
		case 'r': o->repeat = parse_count(optarg, "--repeat", UINT32_MAX); break;
		case 'd': o->io_delay_us = parse_count(optarg, "--io-delay-us", 10000000); break;
		case 'p': o->pause = 1; break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(1);
		}
	}
	if (optind < argc || o->repeat == 0) {
		usage(stderr);
		exit(1);
	}
}

/* ---- guest code generation ---------------------------------------- */

static size_t emit(uint8_t *p, size_t at, const uint8_t *b, size_t n)
{
	memcpy(p + at, b, n);
	return at + n;
}

static size_t emit_mov_esi(uint8_t *p, size_t at, uint32_t v)
{
	uint8_t b[6] = { 0x66, 0xbe, v, v >> 8, v >> 16, v >> 24 };

	return emit(p, at, b, sizeof(b));
}

static size_t emit_mov_dx(uint8_t *p, size_t at, uint16_t port)
{
	uint8_t b[3] = { 0xba, port, port >> 8 };

	return emit(p, at, b, sizeof(b));
}

/* `dec esi; jnz top`: the loop tail shared by all three loops. */
static size_t emit_loop_tail(uint8_t *p, size_t at, size_t top)
{
	static const uint8_t dec[2] = { 0x66, 0x4e };

	at = emit(p, at, dec, sizeof(dec));
	p[at] = 0x75;
	p[at + 1] = (uint8_t)(int8_t)((long)top - (long)(at + 2));
	return at + 2;
}

/* A loop running `body` count times; nothing at all when count is 0
 * (esi=0 would make dec/jnz run 2^32 times). */
static size_t emit_loop(uint8_t *p, size_t at, uint32_t count,
			const uint8_t *body, size_t n)
{
	size_t top;

	if (!count)
		return at;
	at = emit_mov_esi(p, at, count);
	top = at;
	at = emit(p, at, body, n);
	return emit_loop_tail(p, at, top);
}

static size_t gen_guest(uint8_t *p, const struct opts *o)
{
	static const uint8_t out_body[] = { 0xee };		/* out dx,al */
	static const uint8_t in_body[] = { 0xec };		/* in al,dx */
	static const uint8_t cpuid_body[] = { 0x66, 0x31, 0xc0, 0x66, 0x31,
					      0xc9, 0x0f, 0xa2 };
	static const uint8_t mov_al[] = { 0xb0, OUT_BYTE };
	size_t at = 0;

	at = emit(p, at, mov_al, sizeof(mov_al));
	at = emit_mov_dx(p, at, OUT_PORT);
	at = emit_loop(p, at, o->outs, out_body, sizeof(out_body));
	at = emit_mov_dx(p, at, IN_PORT);
	at = emit_loop(p, at, o->ins, in_body, sizeof(in_body));
	/* `xor eax,eax; xor ecx,ecx; cpuid` each time: cpuid overwrites both,
	 * and a fixed ecx keeps every kvm_cpuid event identical (idx 0). */
	at = emit_loop(p, at, o->cpuids, cpuid_body, sizeof(cpuid_body));
	p[at++] = 0xf4; /* hlt */
	return at;
}

/* ---- VM setup ------------------------------------------------------ */

static void open_kvm(struct vm *v)
{
	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0)
		die_errno("open /dev/kvm");
	if (ioctl(v->kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		die("Unsupported KVM API version (want 12)");
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
	if (v->vm < 0)
		die_errno("create VM (KVM_CREATE_VM)");
	/* VMX without unrestricted guest needs a TSS for real mode; SVM and
	 * PVM don't. Best effort: failure here is not fatal. */
	if (ioctl(v->kvm, KVM_CHECK_EXTENSION, KVM_CAP_SET_TSS_ADDR) > 0)
		(void)ioctl(v->vm, KVM_SET_TSS_ADDR, 0xfffbd000UL);
}

static void map_memory(struct vm *v)
{
	struct kvm_userspace_memory_region r = {
		.slot = 0,
		.guest_phys_addr = GUEST_PHYS,
		.memory_size = GUEST_SIZE,
	};

	v->mem = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->mem == MAP_FAILED)
		die_errno("mmap guest memory");
	r.userspace_addr = (uintptr_t)v->mem;
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &r) < 0)
		die_errno("set guest memory (KVM_SET_USER_MEMORY_REGION)");
}

static void create_vcpu(struct vm *v)
{
	int sz;

	v->vcpu = ioctl(v->vm, KVM_CREATE_VCPU, 0);
	if (v->vcpu < 0)
		die_errno("create vCPU (KVM_CREATE_VCPU)");
	sz = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz < 0)
		die_errno("get kvm_run size (KVM_GET_VCPU_MMAP_SIZE)");
	v->run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->vcpu, 0);
	if (v->run == MAP_FAILED)
		die_errno("mmap kvm_run");
}

/* Give the vCPU the host's supported CPUID table. Without it every guest
 * cpuid returns zeros and kvm_cpuid says "cpuid entry not found"; with it
 * leaf 0 returns the real max leaf and vendor string, as in a real VM. */
static void set_cpuid(struct vm *v)
{
	enum { MAX_ENTRIES = 256 };
	struct kvm_cpuid2 *c;

	c = calloc(1, sizeof(*c) + MAX_ENTRIES * sizeof(c->entries[0]));
	if (!c)
		die_errno("allocate CPUID table");
	c->nent = MAX_ENTRIES;
	if (ioctl(v->kvm, KVM_GET_SUPPORTED_CPUID, c) < 0)
		die_errno("get CPUID (KVM_GET_SUPPORTED_CPUID)");
	if (ioctl(v->vcpu, KVM_SET_CPUID2, c) < 0)
		die_errno("set CPUID (KVM_SET_CPUID2)");
	free(c);
}

/* Real mode with cs.base=0 so that ip == guest-physical address. */
static void set_sregs(struct vm *v)
{
	struct kvm_sregs s;

	if (ioctl(v->vcpu, KVM_GET_SREGS, &s) < 0)
		die_errno("get sregs (KVM_GET_SREGS)");
	s.cs.base = 0;
	s.cs.selector = 0;
	if (ioctl(v->vcpu, KVM_SET_SREGS, &s) < 0)
		die_errno("set sregs (KVM_SET_SREGS)");
}

/* Start (or restart, for --repeat) the program at its first byte. */
static void reset_regs(struct vm *v)
{
	struct kvm_regs r = { .rip = GUEST_PHYS, .rflags = 2 };

	if (ioctl(v->vcpu, KVM_SET_REGS, &r) < 0)
		die_errno("set regs (KVM_SET_REGS)");
}

/* ---- run loop ------------------------------------------------------ */

static const char *exit_name(uint32_t r)
{
	static const char *const n[] = {
		[KVM_EXIT_UNKNOWN] = "UNKNOWN",
		[KVM_EXIT_EXCEPTION] = "EXCEPTION",
		[KVM_EXIT_IO] = "IO",
		[KVM_EXIT_HYPERCALL] = "HYPERCALL",
		[KVM_EXIT_DEBUG] = "DEBUG",
		[KVM_EXIT_HLT] = "HLT",
		[KVM_EXIT_MMIO] = "MMIO",
		[KVM_EXIT_IRQ_WINDOW_OPEN] = "IRQ_WINDOW_OPEN",
		[KVM_EXIT_SHUTDOWN] = "SHUTDOWN",
		[KVM_EXIT_FAIL_ENTRY] = "FAIL_ENTRY",
		[KVM_EXIT_INTR] = "INTR",
		[KVM_EXIT_INTERNAL_ERROR] = "INTERNAL_ERROR",
		[KVM_EXIT_SYSTEM_EVENT] = "SYSTEM_EVENT",
		[KVM_EXIT_X86_RDMSR] = "X86_RDMSR",
		[KVM_EXIT_X86_WRMSR] = "X86_WRMSR",
	};

	if (r < sizeof(n) / sizeof(n[0]) && n[r])
		return n[r];
	return "?";
}

/* Anything but IO on our ports or HLT means the guest went wrong. */
static void die_exit(struct vm *v, const char *why)
{
	struct kvm_regs r;
	uint32_t reason = v->run->exit_reason;
	unsigned long long rip = ~0ULL;

	if (ioctl(v->vcpu, KVM_GET_REGS, &r) == 0)
		rip = r.rip;
	fprintf(stderr, PROG ": %s exit reason %u (%s) at rip=0x%llx", why,
		reason, exit_name(reason), rip);
	if (reason == KVM_EXIT_FAIL_ENTRY)
		fprintf(stderr, " hw_reason=0x%llx", (unsigned long long)
			v->run->fail_entry.hardware_entry_failure_reason);
	if (reason == KVM_EXIT_INTERNAL_ERROR)
		fprintf(stderr, " suberror=%u", v->run->internal.suberror);
	if (reason == KVM_EXIT_IO)
		fprintf(stderr, " port=0x%x dir=%s size=%u", v->run->io.port,
			v->run->io.direction == KVM_EXIT_IO_OUT ? "out" : "in",
			v->run->io.size);
	fputc('\n', stderr);
	exit(1);
}

/* Count one KVM_EXIT_IO; IN gets IN_BYTE, OUT must carry OUT_BYTE. */
static void handle_io(struct vm *v, struct counts *c)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;

	if (run->io.size != 1)
		die_exit(v, "Unexpected");
	if (run->io.direction == KVM_EXIT_IO_OUT && run->io.port == OUT_PORT) {
		if (data[0] != OUT_BYTE)
			die_exit(v, "Bad OUT data in");
		c->outs += run->io.count;
	} else if (run->io.direction == KVM_EXIT_IO_IN &&
		   run->io.port == IN_PORT) {
		memset(data, IN_BYTE, run->io.count);
		c->ins += run->io.count;
	} else {
		die_exit(v, "Unexpected");
	}
}

/* The slow device of --io-delay-us: a sleep inside the exit (restarted
 * after a stop: the whole delay is spent whatever the signals). */
static void io_delay(uint64_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	while (us && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Run the guest program once, up to and including its HLT exit. */
static void run_once(struct vm *v, struct counts *c, uint64_t io_delay_us)
{
	reset_regs(v);
	for (;;) {
		if (ioctl(v->vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue; /* a signal, not a guest exit */
			die_errno("run vCPU (KVM_RUN)");
		}
		c->exits++;
		if (v->run->exit_reason == KVM_EXIT_HLT) {
			c->hlts++;
			return;
		}
		if (v->run->exit_reason != KVM_EXIT_IO)
			die_exit(v, "Unexpected");
		handle_io(v, c);
		io_delay(io_delay_us);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The guest code fixes the counts; a mismatch means KVM lost or invented
 * exits (or this VMM is buggy), which tests must see as a failure. */
static void check_counts(const struct opts *o, const struct counts *c)
{
	if (c->outs == o->outs * o->repeat && c->ins == o->ins * o->repeat &&
	    c->hlts == o->repeat)
		return;
	fprintf(stderr, PROG ": Count mismatch: outs=%" PRIu64 "/%" PRIu64
		" ins=%" PRIu64 "/%" PRIu64 " hlts=%" PRIu64 "/%" PRIu64 "\n",
		c->outs, o->outs * o->repeat, c->ins, o->ins * o->repeat,
		c->hlts, o->repeat);
	exit(1);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct vm v;
	struct counts c = { 0 };
	uint64_t t0, ns, r;
	sigset_t usr1;
	int sig;

	parse_opts(argc, argv, &o);
	open_kvm(&v);
	map_memory(&v);
	gen_guest(v.mem, &o);
	create_vcpu(&v);
	set_cpuid(&v);
	set_sregs(&v);

	/* --pause: SIGUSR1 blocked from the start, so an early one waits */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (o.pause && sigprocmask(SIG_BLOCK, &usr1, NULL))
		die_errno("block SIGUSR1");
	t0 = now_ns();
	for (r = 0; r < o.repeat; r++) {
		if (r && o.pause && sigwait(&usr1, &sig))
			die("Cannot wait for SIGUSR1");
		run_once(&v, &c, o.io_delay_us);
	}
	ns = now_ns() - t0;

	check_counts(&o, &c);
	if (!o.quiet)
		printf(PROG ": outs=%" PRIu64 " ins=%" PRIu64 " cpuids=%" PRIu64
		       " hlts=%" PRIu64 " exits=%" PRIu64 " elapsed_ns=%" PRIu64
		       " ns_per_exit=%" PRIu64 "\n", c.outs, c.ins,
		       o.cpuids * o.repeat, c.hlts, c.exits, ns,
		       c.exits ? ns / c.exits : 0);
	return 0;
}
