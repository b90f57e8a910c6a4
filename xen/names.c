// SPDX-License-Identifier: LGPL-2.1
/* Names of Xen runstates, hypercalls and HVM handler records (public ABI). */
#include <stddef.h>
#include <stdint.h>

#include "xen_trace.h"

const char *tv_xen_runstate_name(unsigned int state)
{
	static const char *const names[] = { "running", "runnable", "blocked", "offline" };

	return state < 4 ? names[state] : "unknown";
}

const char *tv_xen_hypercall_name(unsigned int op)
{
	static const char *const names[] = {
		[0] = "set_trap_table", [1] = "mmu_update", [2] = "set_gdt",
		[3] = "stack_switch", [4] = "set_callbacks", [5] = "fpu_taskswitch",
		[6] = "sched_op_compat", [7] = "platform_op", [8] = "set_debugreg",
		[9] = "get_debugreg", [10] = "update_descriptor", [12] = "memory_op",
		[13] = "multicall", [14] = "update_va_mapping", [15] = "set_timer_op",
		[16] = "event_channel_op_compat", [17] = "xen_version", [18] = "console_io",
		[19] = "physdev_op_compat", [20] = "grant_table_op", [21] = "vm_assist",
		[22] = "update_va_mapping_otherdomain", [23] = "iret", [24] = "vcpu_op",
		[25] = "set_segment_base", [26] = "mmuext_op", [27] = "xsm_op",
		[28] = "nmi_op", [29] = "sched_op", [30] = "callback_op",
		[31] = "xenoprof_op", [32] = "event_channel_op", [33] = "physdev_op",
		[34] = "hvm_op", [35] = "sysctl", [36] = "domctl", [37] = "kexec_op",
		[38] = "tmem_op", [39] = "argo_op", [40] = "xenpmu_op", [41] = "dm_op",
		[42] = "hypfs_op",
	};

	return op < sizeof(names) / sizeof(names[0]) ? names[op] : NULL;
}

const char *tv_xen_hvm_handler_name(uint32_t event)
{
	static const char *const names[] = {
		[0x01] = "pf_xen", [0x02] = "pf_inject", [0x03] = "inj_exc",
		[0x04] = "inj_virq", [0x05] = "reinj_virq", [0x06] = "io_read",
		[0x07] = "io_write", [0x08] = "cr_read", [0x09] = "cr_write",
		[0x0a] = "dr_read", [0x0b] = "dr_write", [0x0c] = "msr_read",
		[0x0d] = "msr_write", [0x0e] = "cpuid", [0x0f] = "intr", [0x10] = "nmi",
		[0x11] = "smi", [0x12] = "vmmcall", [0x13] = "hlt", [0x14] = "invlpg",
		[0x15] = "mce", [0x16] = "ioport_read", [0x17] = "iomem_read",
		[0x18] = "clts", [0x19] = "lmsw", [0x1a] = "rdtsc", [0x20] = "intr_window",
		[0x21] = "npf", [0x22] = "realmode_emulate", [0x23] = "trap",
		[0x24] = "trap_debug", [0x25] = "vlapic", [0x26] = "xcr_read",
		[0x27] = "xcr_write",
	};
	unsigned int sub = event & 0xff;

	/* 0x216/0x217: the write variants of ioport/iomem. */
	if ((event & 0xfff) == 0x216)
		return "ioport_write";
	if ((event & 0xfff) == 0x217)
		return "iomem_write";
	return sub < sizeof(names) / sizeof(names[0]) ? names[sub] : NULL;
}
