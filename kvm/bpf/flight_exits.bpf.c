// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The flight recorder's exit-latency watchdog (record --trigger
 * 'exit-latency>DURATION'): an exit is reported while it is still open,
 * the moment it passes the limit, not when it ends.  kvm_exit opens the
 * exit in its thread's slot (tracepoint records, fields at top's offsets),
 * kvm_entry closes it; a perf-event program on CPU 0's clock (every
 * millisecond, kvm/flight_bpf.c) walks the open exits and sends each one
 * past the limit to user space once, through a ring buffer.  A tracing
 * program cannot arm a bpf_timer (the verifier refuses timers in
 * tracepoint programs), hence the periodic walk: at most 1 ms late.
 *
 * hlt exits (the vCPU waiting for an interrupt) are a wait, not a stall:
 * left out unless the rule names them (match_reason).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "flight_exits.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile struct flight_cfg fcfg = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, unsigned int);		/* host thread id */
	__type(value, struct flight_open);
} open SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} hits SEC(".maps");

static __always_inline unsigned int field_u32(void *ctx, unsigned int off)
{
	unsigned int v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off);
	return v;
}

/* The rule's VMM, and its reason (or any but hlt). */
static __always_inline int watched(unsigned int tgid, unsigned int reason, unsigned int isa)
{
	unsigned int code = isa == 2 ? fcfg.reason_svm : fcfg.reason_vmx;

	if (fcfg.tgid && tgid != fcfg.tgid)
		return 0;
	return fcfg.match_reason ? reason == code : reason != code;
}

SEC("tracepoint/kvm/kvm_exit")
int tv_flight_exit(void *ctx)
{
	unsigned long long id = bpf_get_current_pid_tgid();
	unsigned int tid = (unsigned int)id;
	struct flight_open *o = bpf_map_lookup_elem(&open, &tid);
	struct flight_open n = {};

	n.tgid = (unsigned int)(id >> 32);
	n.reason = field_u32(ctx, fcfg.off_reason);
	n.isa = fcfg.off_isa ? field_u32(ctx, fcfg.off_isa) : fcfg.isa_default;
	n.vcpu = field_u32(ctx, fcfg.off_vcpu);
	if (!watched(n.tgid, n.reason, n.isa)) {
		if (o)
			o->ts = 0;
		return 0;
	}
	if (o) {
		o->tgid = n.tgid;
		o->reason = n.reason;
		o->isa = n.isa;
		o->vcpu = n.vcpu;
		o->reported = 0;
		o->ts = bpf_ktime_get_ns();
		return 0;
	}
	n.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&open, &tid, &n, BPF_NOEXIST);
	return 0;
}

SEC("tracepoint/kvm/kvm_entry")
int tv_flight_entry(void *ctx)
{
	unsigned long long now = bpf_ktime_get_ns();
	unsigned int tid = (unsigned int)bpf_get_current_pid_tgid();
	struct flight_open *o = bpf_map_lookup_elem(&open, &tid);

	if (!o || !o->ts)
		return 0;
	if (o->reported) {	/* user space waits for its end to close the snapshot */
		o->done_exit_ts = o->ts;
		o->done_latency_ns = now - o->ts;
	}
	o->ts = 0;
	return 0;
}

struct walk {
	unsigned long long now;
};

static long check_open(void *map, unsigned int *tid, struct flight_open *o, struct walk *w)
{
	unsigned long long ts = o->ts;
	struct flight_hit h = {};

	if (!ts || o->reported || w->now < ts || w->now - ts < fcfg.limit_ns)
		return 0;
	o->reported = 1;
	h.tid = *tid;
	h.tgid = o->tgid;
	h.vcpu = o->vcpu;
	h.reason = o->reason;
	h.isa = o->isa;
	h.exit_ts = ts;
	h.seen_ns = w->now;
	bpf_ringbuf_output(&hits, &h, sizeof(h), 0);
	return 0;
}

SEC("perf_event")
int tv_flight_tick(void *ctx)
{
	struct walk w = { .now = bpf_ktime_get_ns() };

	bpf_for_each_map_elem(&open, check_open, &w, 0);
	return 0;
}
