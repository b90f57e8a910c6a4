// SPDX-License-Identifier: LGPL-2.1
/*
 * Names of VM exit reasons.  VMX basic exit reasons (Intel SDM vol. 3,
 * appendix C) and SVM exit codes (AMD APM vol. 2, appendix C), as the
 * kernel's arch/x86/include/uapi/asm/{vmx,svm}.h name them; user-space exit
 * reasons from include/uapi/linux/kvm.h.  Kept here rather than parsed from
 * kvm_exit's print format so that sessions of any kernel get the same names.
 */
#include <stddef.h>
#include <stdio.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

struct reason_name {
	uint64_t code;
	const char *name;
};

static const struct reason_name vmx_reasons[] = {
	{ 0, "EXCEPTION_NMI" }, { 1, "EXTERNAL_INTERRUPT" }, { 2, "TRIPLE_FAULT" },
	{ 3, "INIT_SIGNAL" }, { 4, "SIPI_SIGNAL" }, { 7, "INTERRUPT_WINDOW" },
	{ 8, "NMI_WINDOW" }, { 9, "TASK_SWITCH" }, { 10, "CPUID" }, { 12, "HLT" },
	{ 13, "INVD" }, { 14, "INVLPG" }, { 15, "RDPMC" }, { 16, "RDTSC" },
	{ 18, "VMCALL" }, { 19, "VMCLEAR" }, { 20, "VMLAUNCH" }, { 21, "VMPTRLD" },
	{ 22, "VMPTRST" }, { 23, "VMREAD" }, { 24, "VMRESUME" }, { 25, "VMWRITE" },
	{ 26, "VMOFF" }, { 27, "VMON" }, { 28, "CR_ACCESS" }, { 29, "DR_ACCESS" },
	{ 30, "IO_INSTRUCTION" }, { 31, "MSR_READ" }, { 32, "MSR_WRITE" },
	{ 33, "INVALID_STATE" }, { 34, "MSR_LOAD_FAIL" }, { 36, "MWAIT_INSTRUCTION" },
	{ 37, "MONITOR_TRAP_FLAG" }, { 39, "MONITOR_INSTRUCTION" },
	{ 40, "PAUSE_INSTRUCTION" }, { 41, "MCE_DURING_VMENTRY" },
	{ 43, "TPR_BELOW_THRESHOLD" }, { 44, "APIC_ACCESS" }, { 45, "EOI_INDUCED" },
	{ 46, "GDTR_IDTR" }, { 47, "LDTR_TR" }, { 48, "EPT_VIOLATION" },
	{ 49, "EPT_MISCONFIG" }, { 50, "INVEPT" }, { 51, "RDTSCP" },
	{ 52, "PREEMPTION_TIMER" }, { 53, "INVVPID" }, { 54, "WBINVD" },
	{ 55, "XSETBV" }, { 56, "APIC_WRITE" }, { 57, "RDRAND" }, { 58, "INVPCID" },
	{ 59, "VMFUNC" }, { 60, "ENCLS" }, { 61, "RDSEED" }, { 62, "PML_FULL" },
	{ 63, "XSAVES" }, { 64, "XRSTORS" }, { 67, "UMWAIT" }, { 68, "TPAUSE" },
	{ 74, "BUS_LOCK" }, { 75, "NOTIFY" }, { 77, "TDCALL" },
	{ 84, "MSR_READ_IMM" }, { 85, "MSR_WRITE_IMM" },
};

static const struct reason_name svm_reasons[] = {
	{ 0x000, "read_cr0" }, { 0x002, "read_cr2" }, { 0x003, "read_cr3" },
	{ 0x004, "read_cr4" }, { 0x008, "read_cr8" }, { 0x010, "write_cr0" },
	{ 0x012, "write_cr2" }, { 0x013, "write_cr3" }, { 0x014, "write_cr4" },
	{ 0x018, "write_cr8" }, { 0x020, "read_dr0" }, { 0x021, "read_dr1" },
	{ 0x022, "read_dr2" }, { 0x023, "read_dr3" }, { 0x024, "read_dr4" },
	{ 0x025, "read_dr5" }, { 0x026, "read_dr6" }, { 0x027, "read_dr7" },
	{ 0x030, "write_dr0" }, { 0x031, "write_dr1" }, { 0x032, "write_dr2" },
	{ 0x033, "write_dr3" }, { 0x034, "write_dr4" }, { 0x035, "write_dr5" },
	{ 0x036, "write_dr6" }, { 0x037, "write_dr7" },
	{ 0x040, "DE_excp" }, { 0x041, "DB_excp" }, { 0x043, "BP_excp" },
	{ 0x044, "OF_excp" }, { 0x045, "BR_excp" }, { 0x046, "UD_excp" },
	{ 0x047, "NM_excp" }, { 0x048, "DF_excp" }, { 0x04a, "TS_excp" },
	{ 0x04b, "NP_excp" }, { 0x04c, "SS_excp" }, { 0x04d, "GP_excp" },
	{ 0x04e, "PF_excp" }, { 0x050, "MF_excp" }, { 0x051, "AC_excp" },
	{ 0x052, "MC_excp" }, { 0x053, "XF_excp" },
	{ 0x060, "interrupt" }, { 0x061, "nmi" }, { 0x062, "smi" }, { 0x063, "init" },
	{ 0x064, "vintr" }, { 0x065, "cr0_sel_write" }, { 0x066, "read_idtr" },
	{ 0x067, "read_gdtr" }, { 0x068, "read_ldtr" }, { 0x069, "read_rt" },
	{ 0x06a, "write_idtr" }, { 0x06b, "write_gdtr" }, { 0x06c, "write_ldtr" },
	{ 0x06d, "write_rt" }, { 0x06e, "rdtsc" }, { 0x06f, "rdpmc" }, { 0x070, "pushf" },
	{ 0x071, "popf" }, { 0x072, "cpuid" }, { 0x073, "rsm" }, { 0x074, "iret" },
	{ 0x075, "swint" }, { 0x076, "invd" }, { 0x077, "pause" }, { 0x078, "hlt" },
	{ 0x079, "invlpg" }, { 0x07a, "invlpga" }, { 0x07b, "io" }, { 0x07c, "msr" },
	{ 0x07d, "task_switch" }, { 0x07e, "ferr_freeze" }, { 0x07f, "shutdown" },
	{ 0x080, "vmrun" }, { 0x081, "hypercall" }, { 0x082, "vmload" },
	{ 0x083, "vmsave" }, { 0x084, "stgi" }, { 0x085, "clgi" }, { 0x086, "skinit" },
	{ 0x087, "rdtscp" }, { 0x088, "icebp" }, { 0x089, "wbinvd" },
	{ 0x08a, "monitor" }, { 0x08b, "mwait" }, { 0x08d, "xsetbv" },
	{ 0x08f, "write_efer_trap" }, { 0x090, "write_cr0_trap" },
	{ 0x094, "write_cr4_trap" }, { 0x098, "write_cr8_trap" }, { 0x0a2, "invpcid" },
	{ 0x0a5, "buslock" }, { 0x0a6, "idle-halt" }, { 0x400, "npf" },
	{ 0x401, "avic_incomplete_ipi" }, { 0x402, "avic_unaccelerated_access" },
	{ 0x403, "vmgexit" },
	{ 0x80000001, "vmgexit_mmio_read" }, { 0x80000002, "vmgexit_mmio_write" },
	{ 0x80000003, "vmgexit_nmi_complete" }, { 0x80000004, "vmgexit_ap_hlt_loop" },
	{ 0x80000005, "vmgexit_ap_jump_table" }, { 0x80000010, "vmgexit_page_state_change" },
	{ 0x80000011, "vmgexit_guest_request" }, { 0x80000012, "vmgexit_ext_guest_request" },
	{ 0x80000013, "vmgexit_ap_creation" }, { 0x8000fffd, "vmgexit_hypervisor_feature" },
	{ 0xffffffffULL, "invalid_guest_state" },
	{ 0xffffffffffffffffULL, "invalid_guest_state" },
};

static const struct reason_name userspace_reasons[] = {
	{ 0, "UNKNOWN" }, { 1, "EXCEPTION" }, { 2, "IO" }, { 3, "HYPERCALL" },
	{ 4, "DEBUG" }, { 5, "HLT" }, { 6, "MMIO" }, { 7, "IRQ_WINDOW_OPEN" },
	{ 8, "SHUTDOWN" }, { 9, "FAIL_ENTRY" }, { 10, "INTR" }, { 11, "SET_TPR" },
	{ 12, "TPR_ACCESS" }, { 16, "NMI" }, { 17, "INTERNAL_ERROR" }, { 18, "OSI" },
	{ 24, "SYSTEM_EVENT" }, { 26, "IOAPIC_EOI" }, { 27, "HYPERV" },
	{ 29, "X86_RDMSR" }, { 30, "X86_WRMSR" }, { 31, "DIRTY_RING_FULL" },
	{ 32, "AP_RESET_HOLD" }, { 33, "X86_BUS_LOCK" }, { 34, "XEN" },
	{ 35, "RISCV_SBI" }, { 36, "RISCV_CSR" }, { 37, "NOTIFY" },
	{ 38, "LOONGARCH_IOCSR" }, { 39, "MEMORY_FAULT" }, { 40, "TDX" },
};

static const char *lookup(const struct reason_name *t, size_t n, uint64_t code)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

#define LOOKUP(table, code) lookup(table, sizeof(table) / sizeof(table[0]), code)

const char *tv_kvm_exit_reason_name(enum tv_kvm_isa isa, uint64_t code)
{
	switch (isa) {
	case TV_KVM_ISA_VMX:
		/* Bits 31:16 are flags (FAILED_VMENTRY...), not the reason. */
		return LOOKUP(vmx_reasons, code & 0xffff);
	case TV_KVM_ISA_SVM:
		return LOOKUP(svm_reasons, code);
	default:
		return NULL;
	}
}

const char *tv_kvm_userspace_exit_name(uint64_t reason)
{
	return LOOKUP(userspace_reasons, reason);
}

void tv_kvm_exit_reason_label(enum tv_kvm_isa isa, uint64_t code, char *buf, size_t size)
{
	const char *name = tv_kvm_exit_reason_name(isa, code);

	if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%s:0x%llx", isa == TV_KVM_ISA_VMX ? "vmx" : isa == TV_KVM_ISA_SVM ? "svm" : "isa?",
			 (unsigned long long)code);
}
