/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The exit aggregation both flavours of tracevisor top's exit programs
 * share (kvm/bpf/top_exits.bpf.c on the kvm tracepoints' records,
 * kvm/bpf/top_exits_btf.bpf.c on their raw arguments through BTF): the
 * rows and stats maps user space reads, the filter, and what an exit and
 * an entry do once the program has the exit's key and its thread's
 * open-exit slot.  Included once, by a .bpf.c file only.
 *
 * Concurrency: a row is shared by the CPUs its vCPU threads run on, so
 * its counters are updated with atomic adds; max_ns is a racy maximum (a
 * lost update can only lose a value no larger than a concurrent one).
 * An open-exit slot belongs to one host thread: only that thread's exit
 * and entry touch it, never at once.
 */
#ifndef TV_KVM_BPF_TOP_EXITS_PROG_H
#define TV_KVM_BPF_TOP_EXITS_PROG_H

#include "top_exits.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile struct top_cfg cfg = {};

/*
 * A thread's last rows: the ids the rows hash gave for its last exits,
 * direct-mapped by exit reason, so that an exit whose row the thread met
 * lately costs no hash lookup (issue 28: kvm_exit's program went from
 * ~617 to ~479 instructions per run, the tracepoint flavour's from ~807
 * to ~668, lab L1 under -icount; a vCPU thread exits for a few reasons
 * over and over).  An id is used only if its counters hold the exit's
 * key: user space zeroes a forgotten row's counters before its id is
 * free (tracevisor serve), and a reused id holds its new key.
 */
#define ROW_CACHE 4

struct row_cache {
	unsigned int id1[ROW_CACHE];	/* the row's id + 1; 0: empty */
};

struct open_exit {
	unsigned long long ts;		/* 0: no exit open */
	struct top_key key;
	unsigned int id;		/* its row's (unless cfg.by_latency) */
	unsigned int pad;
	struct row_cache cache;
};

/* The rows: key -> row id -> counters (kvm/bpf/top_exits.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TOP_MAX_ROWS);
	__type(key, struct top_key);
	__type(value, unsigned int);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TOP_MAX_ROWS);
	__type(key, unsigned int);
	__type(value, struct top_val);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, TOP_MAX_ROWS);
	__type(value, unsigned int);
} free_ids SEC(".maps");

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

/*
 * A row for @key: a free id, its (zeroed) counters named after the
 * current thread, inserted unless another CPU inserted @key meanwhile
 * (then the id goes back).  The row's id, or NULL (no free id or the
 * hash full: counted lost).
 */
static __always_inline unsigned int *row_new(const struct top_key *key)
{
	unsigned int id, *ref;
	struct top_val *v;

	if (bpf_map_pop_elem(&free_ids, &id)) {
		lost(TOP_LOST_ROWS);
		return NULL;
	}
	v = bpf_map_lookup_elem(&counters, &id);
	if (v) {
		bpf_get_current_comm(v->comm, sizeof(v->comm));
		v->key = *key;
	}
	if (bpf_map_update_elem(&rows, key, &id, BPF_NOEXIST))
		bpf_map_push_elem(&free_ids, &id, 0);
	ref = bpf_map_lookup_elem(&rows, key);
	if (!ref)
		lost(TOP_LOST_ROWS);
	return ref;
}

/* The counters of @key's row, created if new; its id in *@id.  NULL: none. */
static __always_inline struct top_val *row_of(const struct top_key *key, unsigned int *id)
{
	unsigned int *ref = bpf_map_lookup_elem(&rows, key);

	if (!ref && !(ref = row_new(key)))
		return NULL;
	*id = *ref;
	return bpf_map_lookup_elem(&counters, id);
}

/* The cache entry of @reason (a multiplicative hash: SVM's reasons share low bits). */
static __always_inline unsigned int row_cache_index(unsigned int reason)
{
	return (reason * 0x9e3779b1u) >> 30;	/* ROW_CACHE == 4: the top 2 bits */
}

static __always_inline int key_equal(const struct top_key *a, const struct top_key *b)
{
	return a->tgid == b->tgid && a->vcpu == b->vcpu && a->reason == b->reason && a->isa == b->isa;
}

/*
 * row_of() through @c, the thread's last rows (NULL: the hash only): the
 * hash is looked up only when the id cached for @key's reason is not
 * @key's row (a slot's cache written by two threads at once, two claimers
 * of a slot, kvm/bpf/top_exits_btf.bpf.c, holds ids that are checked
 * all the same).
 */
static __always_inline struct top_val *row_of_cached(struct row_cache *c, const struct top_key *key,
						     unsigned int *id)
{
	unsigned int i, id1;
	struct top_val *v;

	if (!c)
		return row_of(key, id);
	i = row_cache_index(key->reason);
	asm volatile("" : "+r"(i));	/* keep the bound for the verifier */
	if (i >= ROW_CACHE)
		return NULL;
	id1 = c->id1[i];
	if (id1) {
		*id = id1 - 1;
		v = bpf_map_lookup_elem(&counters, id);
		if (v && key_equal(&v->key, key))
			return v;
	}
	v = row_of(key, id);
	if (v)
		c->id1[i] = *id + 1;
	return v;
}

/*
 * kvm_exit of @key on the thread of @slot (NULL: none yet): counts it
 * (unless a latency condition counts it at its entry), its row's id in
 * *@id.  1: open it (top_open, as late as can be), 0: not ours.
 */
static __always_inline int top_on_exit(struct open_exit *slot, const struct top_key *key,
				       unsigned int *id)
{
	struct top_val *v;

	if (!passes(key, 0, 0)) {
		if (slot)
			slot->ts = 0;	/* its entry is not ours */
		return 0;
	}
	if (cfg.by_latency)
		return 1;
	v = row_of_cached(slot ? &slot->cache : NULL, key, id);
	if (!v)
		return 0;
	__sync_fetch_and_add(&v->count, 1);
	return 1;
}

/*
 * Opens the exit of @key (row @id) in its thread's @slot, written in place: no
 * allocation or bucket lock per exit (only this thread touches it).  The
 * clock last: the time spent in the program is not the exit's (as
 * kvm_entry reads the clock first).
 */
static __always_inline void top_open(struct open_exit *slot, const struct top_key *key,
				     unsigned int id)
{
	slot->key = *key;
	slot->id = id;
	slot->ts = bpf_ktime_get_ns();
}

/* kvm_entry at @now on the thread of @slot: closes its open exit, if any. */
static __always_inline void top_on_entry(struct open_exit *slot, unsigned long long now)
{
	struct top_key key;
	struct top_val *v;
	unsigned long long ns;
	unsigned int b, id;

	if (!slot || !slot->ts)
		return;		/* no exit of ours open on this thread */
	ns = now - slot->ts;
	slot->ts = 0;
	if (cfg.by_latency) {
		/* a filter on the latency: counted here, if it passes */
		key = slot->key;
		if (!passes(&key, ns, 1))
			return;
		v = row_of_cached(&slot->cache, &key, &id);
		if (!v)
			return;
		__sync_fetch_and_add(&v->count, 1);
	} else {
		/* the row its exit found: no second hash lookup */
		id = slot->id;
		v = bpf_map_lookup_elem(&counters, &id);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->total_ns, ns);
	if (ns > v->max_ns)
		v->max_ns = ns;
	b = top_bucket(ns);
	/* opaque to the compiler, so the bound below stays in the code for
	 * the verifier (older ones lose it through clang's select) */
	asm volatile("" : "+r"(b));
	if (b >= TOP_NBUCKETS)
		return;
	__sync_fetch_and_add(&v->hist[b], 1);
}

#endif
