// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel function timing for tracevisor top --bpf --time-function: at a
 * function's entry the call is counted in its row (process, function) and
 * its time remembered per (thread, function); at that thread's return from
 * it, the entry->return time goes into the row's log-linear histogram (the
 * exits' buckets, kvm/bpf/top_exits.h).  A recursive call times its
 * innermost pair, as stat does.  No event crosses to user space:
 * kvm/top_bpf.c reads the rows map every interval.
 *
 * Two ways in, one accounting:
 *  - tv_fn_entry / tv_fn_return, attached as kprobe/kretprobe (kernel
 *    function) or uprobe/uretprobe (PATH:SYMBOL) through perf events, any
 *    number of times: the attach cookie says which function;
 *  - tv_fn_fentry / tv_fn_fexit (BTF trampolines, where kprobes are not
 *    built in): their target is fixed at load time, so kvm/top_bpf.c loads
 *    one more copy of this object per such function, sharing the maps
 *    (bpf_map__reuse_fd), with cfg_func naming the function.
 *
 * Concurrency: a row is shared by the CPUs its process's threads run on,
 * so its counters are updated with atomic adds; max_ns is a racy maximum
 * (a lost update only loses a value no larger than a concurrent one).  An
 * open call is keyed by thread, so only that thread touches it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "top_exits.h"
#include "top_funcs.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The function of this copy's fentry/fexit programs (unused by the kprobes). */
const volatile unsigned int cfg_func = 0;

struct open_key {
	unsigned int tid;
	unsigned int func;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct open_key);
	__type(value, unsigned long long);	/* entry time, ns */
} fn_open SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TOP_FN_MAX_ROWS);
	__type(key, struct top_key);		/* TOP_KEY_FUNC: see top_funcs.h */
	__type(value, struct top_val);
} fn_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, unsigned int);
	__type(value, struct top_val);
} fn_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TOP_NSTATS);
	__type(key, unsigned int);
	__type(value, unsigned long long);
} fn_stats SEC(".maps");

static __always_inline void lost(unsigned int what)
{
	unsigned long long *n = bpf_map_lookup_elem(&fn_stats, &what);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void row_key(struct top_key *k, unsigned int tgid, unsigned int func)
{
	k->tgid = tgid;
	k->vcpu = 0;
	k->reason = func;
	k->isa = TOP_KEY_FUNC;
}

static __always_inline int fn_enter(unsigned int func)
{
	unsigned long long id = bpf_get_current_pid_tgid(), ts;
	struct open_key ok = { .tid = (unsigned int)id, .func = func };
	struct top_val *v, *z;
	struct top_key key;
	unsigned int k0 = 0;

	row_key(&key, (unsigned int)(id >> 32), func);
	v = bpf_map_lookup_elem(&fn_rows, &key);
	if (!v) {
		z = bpf_map_lookup_elem(&fn_zero, &k0);
		if (!z)
			return 0;
		bpf_get_current_comm(z->comm, sizeof(z->comm));
		bpf_map_update_elem(&fn_rows, &key, z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&fn_rows, &key);
		if (!v) {
			lost(TOP_LOST_ROWS);
			return 0;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	/* last: the time spent here is not the call's */
	ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&fn_open, &ok, &ts, BPF_ANY))
		lost(TOP_LOST_OPEN);
	return 0;
}

static __always_inline int fn_exit(unsigned int func)
{
	unsigned long long id = bpf_get_current_pid_tgid();
	unsigned long long now = bpf_ktime_get_ns(), ns, *t0;
	struct open_key ok = { .tid = (unsigned int)id, .func = func };
	struct top_key key;
	struct top_val *v;
	unsigned int b;

	t0 = bpf_map_lookup_elem(&fn_open, &ok);
	if (!t0)
		return 0;	/* entered before we attached, or an outer call */
	ns = now - *t0;
	bpf_map_delete_elem(&fn_open, &ok);
	row_key(&key, (unsigned int)(id >> 32), func);
	v = bpf_map_lookup_elem(&fn_rows, &key);
	if (!v)
		return 0;
	__sync_fetch_and_add(&v->total_ns, ns);
	if (ns > v->max_ns)
		v->max_ns = ns;
	b = top_bucket(ns);
	/* opaque to the compiler, so the bound stays for the verifier */
	asm volatile("" : "+r"(b));
	if (b >= TOP_NBUCKETS)
		return 0;
	__sync_fetch_and_add(&v->hist[b], 1);
	return 0;
}

SEC("kprobe")
int tv_fn_entry(void *ctx)
{
	return fn_enter((unsigned int)bpf_get_attach_cookie(ctx));
}

SEC("kretprobe")
int tv_fn_return(void *ctx)
{
	return fn_exit((unsigned int)bpf_get_attach_cookie(ctx));
}

SEC("fentry")
int tv_fn_fentry(void *ctx)
{
	return fn_enter(cfg_func);
}

SEC("fexit")
int tv_fn_fexit(void *ctx)
{
	return fn_exit(cfg_func);
}
