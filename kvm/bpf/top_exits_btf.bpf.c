// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel aggregation of VM exits for tracevisor top, the cheap
 * flavour: tp_btf programs on kvm_exit(vcpu, isa) and kvm_entry(vcpu),
 * run with the tracepoints' own arguments, so that no trace record is
 * built (the kvm_exit record alone reads the guest's rip and five exit
 * fields through a static call); the fields are read where KVM keeps
 * them, their offsets relocated (CO-RE) from the BTF of the kvm,
 * kvm_amd and kvm_intel modules at load time.  The open exit lives in
 * a per-thread slot of an array indexed by thread id (the verifier
 * inlines an array lookup: no helper call, no hash), owned by (tid, the
 * thread's start time) so that a reused tid never closes a dead thread's
 * exit; a thread whose slot another live thread holds open (equal ids
 * modulo the array's size) uses a hash map instead.  Measured in the
 * lab's L1 (nested TCG, bpf_stats), task local storage cost ~450 ns more
 * per program run than a hash keyed by tid (its per-CPU busy lock and
 * migrate_disable); the array saves the hash's helper call as well.  The
 * thread's ids are read from its task (BTF: plain loads), not through
 * bpf_get_current_pid_tgid(), which whoami() would call again beside the
 * task helper.  Where a run goes (the lab's L1 under -icount, bpf_stats
 * per program, instructions per run; issue 28, bench/top-bench):
 * kvm_exit ~479 (617 when it looked its row up in the rows hash each
 * time: it now takes the id its thread's slot cached for the reason,
 * checked against the key in the row's counters, kvm/bpf/top_exits_prog.h),
 * of which the exit reason's two probe reads ~200 (the vmcb is beyond
 * struct kvm_vcpu: a 6.1 verifier allows no direct load there, and no
 * bpf_rdonly_cast before 6.2); kvm_entry ~262 (440 when it looked the
 * row up again: it now reaches the counters through the row id its exit
 * left in the slot, an inlined array lookup).  Same rows, filter and stats as the
 * tracepoint flavour (kvm/bpf/top_exits_prog.h);
 * kvm/top_bpf.c falls back to that one where this one does not load (no
 * module BTF, an older kernel).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "top_exits_prog.h"

/* What the programs read of KVM's structures (6.1 names; CO-RE finds
 * their offsets and sizes on the running kernel). */
struct kvm_vcpu {
	int vcpu_id;
} __attribute__((preserve_access_index));

struct vmcb_control_area {
	unsigned int exit_code;
} __attribute__((preserve_access_index));

struct vmcb {
	struct vmcb_control_area control;
} __attribute__((preserve_access_index));

struct vcpu_svm {
	struct vmcb *vmcb;
} __attribute__((preserve_access_index));

union vmx_exit_reason {
	unsigned int full;
} __attribute__((preserve_access_index));

struct vcpu_vmx {
	union vmx_exit_reason exit_reason;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	unsigned long long start_time;
} __attribute__((preserve_access_index));

#define SLOTS (1 << 16)

/* A thread's open exit, and whose it is. */
struct thread_slot {
	unsigned int tid;
	unsigned int pad;
	unsigned long long start;	/* the thread's start_time */
	struct open_exit o;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, unsigned int);		/* tid % SLOTS */
	__type(value, struct thread_slot);
} slots SEC(".maps");

/* The slots of threads whose array slot another thread holds. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, unsigned int);		/* tid */
	__type(value, struct thread_slot);
} slots_more SEC(".maps");

/* Whose is the current thread: its tid and start time. */
struct whom {
	unsigned int tid;
	unsigned int tgid;
	unsigned long long start;
};

static __always_inline struct whom whoami(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct whom w = { (unsigned int)t->pid, (unsigned int)t->tgid, t->start_time };

	return w;
}

static __always_inline int owned(const struct thread_slot *s, const struct whom *w)
{
	return s->tid == w->tid && s->start == w->start;
}

/*
 * The current thread's slot at its kvm_exit: its array slot unless another
 * live thread has an exit open there, else one in slots_more.  NULL: none
 * (slots_more full).  Two threads of equal ids modulo SLOTS exiting at the
 * same instant on two CPUs may both claim a free array slot (no
 * compare-and-swap before BPF v3 atomics): the loser's exit is counted but
 * its latency not timed (its entry finds the slot not its own).
 */
static __always_inline struct open_exit *slot_at_exit(const struct whom *w)
{
	unsigned int i = w->tid % SLOTS;
	struct thread_slot *s = bpf_map_lookup_elem(&slots, &i), fresh = {};

	if (!s)
		return NULL;
	if (owned(s, w) || !s->o.ts) {
		s->tid = w->tid;
		s->start = w->start;
		return &s->o;
	}
	/* taken: the other thread's exit is open (or it died with one open:
	 * then this thread stays in slots_more, correct, a little slower) */
	s = bpf_map_lookup_elem(&slots_more, &w->tid);
	if (s && owned(s, w))
		return &s->o;
	fresh.tid = w->tid;
	fresh.start = w->start;
	if (bpf_map_update_elem(&slots_more, &w->tid, &fresh, BPF_ANY))
		return NULL;
	s = bpf_map_lookup_elem(&slots_more, &w->tid);
	return s ? &s->o : NULL;
}

/* The current thread's slot at its kvm_entry, or NULL (no exit of ours). */
static __always_inline struct open_exit *slot_at_entry(const struct whom *w)
{
	unsigned int i = w->tid % SLOTS;
	struct thread_slot *s = bpf_map_lookup_elem(&slots, &i);

	if (s && owned(s, w))
		return &s->o;
	s = bpf_map_lookup_elem(&slots_more, &w->tid);
	return s && owned(s, w) ? &s->o : NULL;
}

/*
 * The exit reason kvm_exit's record would hold (what
 * kvm_x86_ops.get_exit_info gives): SVM's vmcb exit code, VMX's
 * exit_reason.full.  -1: not readable here (a module without BTF, or a
 * failed read), the exit then counted lost.  A type the kernel lacks
 * makes its branch constant false at load, never a failed relocation.
 */
static __always_inline long long exit_reason(struct kvm_vcpu *vcpu, unsigned int isa)
{
	unsigned long long r = 0;

	if (isa == TOP_ISA_SVM) {
		if (bpf_core_type_exists(struct vcpu_svm)) {
			struct vmcb *vmcb = NULL;

			/* vcpu_svm embeds the vcpu: container_of is a cast,
			 * but beyond struct kvm_vcpu: read, not loaded */
			if (bpf_core_read(&vmcb, sizeof(vmcb), &((struct vcpu_svm *)vcpu)->vmcb) || !vmcb ||
			    bpf_core_read(&r, bpf_core_field_size(vmcb->control.exit_code),
					  &vmcb->control.exit_code))
				return -1;
			return (long long)(unsigned int)r;
		}
	} else if (isa == TOP_ISA_VMX) {
		if (bpf_core_type_exists(struct vcpu_vmx)) {
			struct vcpu_vmx *vmx = (struct vcpu_vmx *)vcpu;

			if (bpf_core_read(&r, bpf_core_field_size(vmx->exit_reason.full),
					  &vmx->exit_reason.full))
				return -1;
			return (long long)(unsigned int)r;
		}
	}
	return -1;
}

SEC("tp_btf/kvm_exit")
int tv_top_exit_btf(unsigned long long *ctx)
{
	struct kvm_vcpu *vcpu = (struct kvm_vcpu *)ctx[0];
	struct open_exit *slot;
	struct top_key key;
	struct whom w;
	long long reason;
	unsigned int row = 0;

	key.isa = (unsigned int)ctx[1];
	reason = exit_reason(vcpu, key.isa);
	if (reason < 0) {
		lost(TOP_LOST_READ);
		return 0;
	}
	key.reason = (unsigned int)reason;
	key.vcpu = (unsigned int)vcpu->vcpu_id;	/* BTF-typed: a plain load */
	w = whoami();
	key.tgid = w.tgid;
	slot = slot_at_exit(&w);
	if (!top_on_exit(slot, &key, &row))
		return 0;
	if (slot)
		top_open(slot, &key, row);
	else
		lost(TOP_LOST_OPEN);
	return 0;
}

SEC("tp_btf/kvm_entry")
int tv_top_entry_btf(unsigned long long *ctx)
{
	unsigned long long now = bpf_ktime_get_ns();
	struct whom w = whoami();

	top_on_entry(slot_at_entry(&w), now);
	return 0;
}
