// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel aggregation of VM exits for tracevisor top, the cheap
 * flavour: tp_btf programs on kvm_exit(vcpu, isa) and kvm_entry(vcpu),
 * run with the tracepoints' own arguments, so that no trace record is
 * built (the kvm_exit record alone reads the guest's rip and five exit
 * fields through a static call); the fields are read where KVM keeps
 * them, their offsets relocated (CO-RE) from the BTF of the kvm,
 * kvm_amd and kvm_intel modules at load time.  The open exit lives in
 * the thread's task local storage (freed with the thread; no hash
 * lookup).  Same rows, filter and stats as the tracepoint flavour
 * (kvm/bpf/top_exits_prog.h); kvm/top_bpf.c falls back to that one
 * where this one does not load (no module BTF, an older kernel).
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

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct open_exit);
} open_slots SEC(".maps");

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
	long long reason;

	key.isa = (unsigned int)ctx[1];
	reason = exit_reason(vcpu, key.isa);
	if (reason < 0) {
		lost(TOP_LOST_READ);
		return 0;
	}
	key.reason = (unsigned int)reason;
	key.vcpu = (unsigned int)vcpu->vcpu_id;	/* BTF-typed: a plain load */
	key.tgid = (unsigned int)(bpf_get_current_pid_tgid() >> 32);
	slot = bpf_task_storage_get(&open_slots, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!top_on_exit(slot, &key))
		return 0;
	if (slot)
		top_open(slot, &key);
	else
		lost(TOP_LOST_OPEN);
	return 0;
}

SEC("tp_btf/kvm_entry")
int tv_top_entry_btf(unsigned long long *ctx)
{
	unsigned long long now = bpf_ktime_get_ns();

	top_on_entry(bpf_task_storage_get(&open_slots, bpf_get_current_task_btf(), 0, 0), now);
	return 0;
}
