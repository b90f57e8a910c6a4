/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The flight recorder's exit-latency watchdog (kvm/flight_bpf.c, in the
 * kernel kvm/bpf/flight_exits.bpf.c): an exit open longer than a limit is
 * reported while still open.  Threads: one thread polls and consumes; the
 * programs run in the kernel on every CPU.
 */
#ifndef TV_KVM_FLIGHT_BPF_H
#define TV_KVM_FLIGHT_BPF_H

#include <stdint.h>
#include <sys/types.h>

struct tv_flight_bpf_opts {
	uint64_t limit_ns;		/* > 0 */
	pid_t tgid;			/* 0: every VMM */
	int match_reason;		/* 1: reason_vmx/_svm only; 0: every reason but hlt */
	unsigned int reason_vmx, reason_svm;
};

struct tv_flight_exit_hit {
	pid_t tid, tgid;		/* the vCPU thread, its VMM */
	unsigned int vcpu, reason, isa;	/* isa: 1 VMX, 2 SVM */
	uint64_t exit_ts;		/* CLOCK_MONOTONIC ns of its kvm_exit */
	uint64_t seen_ns;		/* CLOCK_MONOTONIC ns it was seen past the limit */
};

typedef void (*tv_flight_hit_fn)(void *ctx, const struct tv_flight_exit_hit *hit);

struct tv_flight_bpf;

/*
 * Load, attach (kvm_exit, kvm_entry, a 1 kHz perf event on CPU 0);
 * @fn(@ctx) hears each hit from tv_flight_bpf_consume().
 * Return: 0, or -errno logged in one line; *@out NULL on failure.
 */
int tv_flight_bpf_open(const struct tv_flight_bpf_opts *o, tv_flight_hit_fn fn, void *ctx,
		       struct tv_flight_bpf **out);
/* Readable when a hit waits (an epoll fd: poll it for POLLIN). */
int tv_flight_bpf_fd(const struct tv_flight_bpf *b);
/* Hand the waiting hits to the callback.  Return: how many, or -errno. */
int tv_flight_bpf_consume(struct tv_flight_bpf *b);
/*
 * Has @hit's exit closed?  1 with *@latency_ns its exit->entry time, 0
 * still open, -ENOENT its thread gone or another exit reported since.
 */
int tv_flight_bpf_closed(struct tv_flight_bpf *b, const struct tv_flight_exit_hit *hit,
			 uint64_t *latency_ns);
/* Detach and free; NULL-safe. */
void tv_flight_bpf_close(struct tv_flight_bpf *b);

#endif
