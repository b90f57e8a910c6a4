/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * What kvm/bpf/flight_exits.bpf.c (in the kernel) and kvm/flight_bpf.c
 * (user space) share: the flight recorder's exit-latency watchdog
 * (record --trigger 'exit-latency>DURATION').  Plain C types of fixed
 * width, the same layout on both sides.
 */
#ifndef TV_KVM_BPF_FLIGHT_EXITS_H
#define TV_KVM_BPF_FLIGHT_EXITS_H

/* Load-time settings: kvm_exit's fields on this kernel (as top's), the rule. */
struct flight_cfg {
	unsigned int off_reason;
	unsigned int off_isa;		/* 0: no isa field (VMX only kernels) */
	unsigned int off_vcpu;
	unsigned int isa_default;
	unsigned long long limit_ns;	/* an exit open this long fires */
	unsigned int tgid;		/* 0: every VMM, else this one only (vm=) */
	unsigned int match_reason;	/* 1: only reason_vmx/_svm; 0: every reason but hlt */
	unsigned int reason_vmx, reason_svm;	/* the reason= (or hlt's codes when 0) */
};

/* A thread's open exit (map "open", keyed by host thread id). */
struct flight_open {
	unsigned long long ts;		/* bpf_ktime_get_ns() at kvm_exit; 0: none open */
	unsigned int tgid, vcpu, reason, isa;
	unsigned int reported;		/* this exit fired already */
	unsigned int pad;
	unsigned long long done_exit_ts;	/* the last reported exit once it closed: its ts */
	unsigned long long done_latency_ns;	/* and its exit->entry time */
};

/* One exit that passed the limit while open (ring buffer "hits"). */
struct flight_hit {
	unsigned int tid, tgid, vcpu, reason, isa, pad;
	unsigned long long exit_ts;	/* CLOCK_MONOTONIC ns of its kvm_exit */
	unsigned long long seen_ns;	/* CLOCK_MONOTONIC ns when the check saw it past the limit */
};

#endif
