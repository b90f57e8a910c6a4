// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel aggregation of VM exits for tracevisor top: at kvm_exit the
 * exit is counted in its row (VMM process, vCPU, reason) and remembered
 * per host thread; at that thread's next kvm_entry the exit->entry time
 * goes into the row's log-linear histogram.  No event crosses to user
 * space: kvm/top_bpf.c reads the rows map every interval.
 *
 * Concurrency: a row is shared by the CPUs its vCPU threads run on, so
 * its counters are updated with atomic adds; max_ns is a racy maximum (a
 * lost update can only lose a value no larger than a concurrent one).
 * The open-exit map is keyed by thread, so only that thread's exit and
 * entry touch an entry, never at once; an entry stays for the thread's
 * life (ts 0: nothing open), so an exit costs no map update.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "top_exits.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile struct top_cfg cfg = {};

struct open_exit {
	unsigned long long ts;		/* 0: no exit open */
	struct top_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, unsigned int);		/* host thread id */
	__type(value, struct open_exit);
} open_exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct top_key);
	__type(value, struct top_val);
} rows SEC(".maps");

/* A zeroed row to insert from (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, unsigned int);
	__type(value, struct top_val);
} zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TOP_NSTATS);
	__type(key, unsigned int);
	__type(value, unsigned long long);
} stats SEC(".maps");

static __always_inline void lost(unsigned int what)
{
	unsigned long long *n = bpf_map_lookup_elem(&stats, &what);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline unsigned int field_u32(void *ctx, unsigned int off)
{
	unsigned int v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off);
	return v;
}

/* The exit passes the filter's conditions (the latency's only at kvm_entry). */
static __always_inline int passes(const struct top_key *k, unsigned long long latency, int at_entry)
{
#pragma unroll
	for (int i = 0; i < TOP_MAX_CONDS; i++) {
		unsigned long long v;

		if (i >= cfg.nr_conds)
			break;
		switch (cfg.conds[i].field) {
		case TOP_F_REASON: v = k->reason; break;
		case TOP_F_VCPU: v = k->vcpu; break;
		case TOP_F_ISA: v = k->isa; break;
		case TOP_F_TGID: v = k->tgid; break;
		default:
			if (!at_entry)
				continue;	/* known at kvm_entry only */
			v = latency;
		}
		if (!top_compare(v, cfg.conds[i].op, cfg.conds[i].value))
			return 0;
	}
	return 1;
}

/* The row of @key, created (zeroed, the current thread's name) if new. */
static __always_inline struct top_val *row_of(const struct top_key *key)
{
	struct top_val *v = bpf_map_lookup_elem(&rows, key), *z;
	unsigned int k0 = 0;

	if (v)
		return v;
	z = bpf_map_lookup_elem(&zero, &k0);
	if (!z)
		return NULL;
	bpf_get_current_comm(z->comm, sizeof(z->comm));
	bpf_map_update_elem(&rows, key, z, BPF_NOEXIST);
	v = bpf_map_lookup_elem(&rows, key);
	if (!v)
		lost(TOP_LOST_ROWS);
	return v;
}

SEC("tracepoint/kvm/kvm_exit")
int tv_top_exit(void *ctx)
{
	unsigned long long id = bpf_get_current_pid_tgid();
	unsigned int tid = (unsigned int)id;
	struct open_exit o = {};
	struct top_val *v;

	struct open_exit *slot = bpf_map_lookup_elem(&open_exits, &tid);

	o.key.tgid = (unsigned int)(id >> 32);
	o.key.reason = field_u32(ctx, cfg.off_reason);
	o.key.isa = cfg.off_isa ? field_u32(ctx, cfg.off_isa) : cfg.isa_default;
	o.key.vcpu = field_u32(ctx, cfg.off_vcpu);
	if (!passes(&o.key, 0, 0)) {
		if (slot)
			slot->ts = 0;	/* its entry is not ours */
		return 0;
	}
	if (!cfg.by_latency) {
		v = row_of(&o.key);
		if (!v)
			return 0;
		__sync_fetch_and_add(&v->count, 1);
	}
	/* last: the time spent here is not the exit's (as kvm_entry reads
	 * the clock first) */
	o.ts = bpf_ktime_get_ns();
	/* a vCPU thread keeps its slot: written in place, no allocation or
	 * bucket lock per exit (only this thread touches it) */
	if (slot) {
		slot->key = o.key;
		slot->ts = o.ts;
	} else if (bpf_map_update_elem(&open_exits, &tid, &o, BPF_NOEXIST)) {
		lost(TOP_LOST_OPEN);
	}
	return 0;
}

SEC("tracepoint/kvm/kvm_entry")
int tv_top_entry(void *ctx)
{
	unsigned int tid = (unsigned int)bpf_get_current_pid_tgid();
	unsigned long long now = bpf_ktime_get_ns(), ns;
	struct open_exit *o = bpf_map_lookup_elem(&open_exits, &tid);
	struct top_key key;
	struct top_val *v;
	unsigned int b;

	if (!o || !o->ts)
		return 0;	/* no exit of ours open on this thread */
	ns = now - o->ts;
	key = o->key;
	o->ts = 0;
	if (cfg.by_latency) {
		/* a filter on the latency: counted here, if it passes */
		if (!passes(&key, ns, 1))
			return 0;
		v = row_of(&key);
		if (!v)
			return 0;
		__sync_fetch_and_add(&v->count, 1);
	} else {
		v = bpf_map_lookup_elem(&rows, &key);
		if (!v)
			return 0;
	}
	__sync_fetch_and_add(&v->timed, 1);
	__sync_fetch_and_add(&v->total_ns, ns);
	if (ns > v->max_ns)
		v->max_ns = ns;
	b = top_bucket(ns);
	/* opaque to the compiler, so the bound below stays in the code for
	 * the verifier (older ones lose it through clang's select) */
	asm volatile("" : "+r"(b));
	if (b >= TOP_NBUCKETS)
		return 0;
	__sync_fetch_and_add(&v->hist[b], 1);
	return 0;
}
