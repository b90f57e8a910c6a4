// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel aggregation of VM exits for tracevisor top, on the records of
 * the kvm:kvm_exit and kvm:kvm_entry tracepoints: the flavour for kernels
 * whose kvm module has no BTF (kvm/bpf/top_exits_btf.bpf.c is cheaper:
 * no record is built for it).  At kvm_exit the exit is counted in its row
 * (VMM process, vCPU, reason) and remembered per host thread; at that
 * thread's next kvm_entry the exit->entry time goes into the row's
 * log-linear histogram (kvm/bpf/top_exits_prog.h).  No event crosses to
 * user space: kvm/top_bpf.c reads the rows map every interval.
 *
 * The open-exit map is keyed by thread; an entry stays for the thread's
 * life (ts 0: nothing open), so an exit costs no map update.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "top_exits_prog.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, unsigned int);		/* host thread id */
	__type(value, struct open_exit);
} open_exits SEC(".maps");

static __always_inline unsigned int field_u32(void *ctx, unsigned int off)
{
	unsigned int v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off);
	return v;
}

SEC("tracepoint/kvm/kvm_exit")
int tv_top_exit(void *ctx)
{
	unsigned long long id = bpf_get_current_pid_tgid();
	unsigned int tid = (unsigned int)id;
	struct open_exit *slot = bpf_map_lookup_elem(&open_exits, &tid);
	struct open_exit o = {};
	unsigned int row = 0;

	o.key.tgid = (unsigned int)(id >> 32);
	o.key.reason = field_u32(ctx, cfg.off_reason);
	o.key.isa = cfg.off_isa ? field_u32(ctx, cfg.off_isa) : cfg.isa_default;
	o.key.vcpu = field_u32(ctx, cfg.off_vcpu);
	if (!top_on_exit(slot, &o.key, &row))
		return 0;
	if (slot) {
		top_open(slot, &o.key, row);
	} else {
		top_open(&o, &o.key, row);
		if (bpf_map_update_elem(&open_exits, &tid, &o, BPF_NOEXIST))
			lost(TOP_LOST_OPEN);
	}
	return 0;
}

SEC("tracepoint/kvm/kvm_entry")
int tv_top_entry(void *ctx)
{
	unsigned int tid = (unsigned int)bpf_get_current_pid_tgid();
	unsigned long long now = bpf_ktime_get_ns();

	top_on_entry(bpf_map_lookup_elem(&open_exits, &tid), now);
	return 0;
}
