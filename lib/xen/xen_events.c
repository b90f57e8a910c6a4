// SPDX-License-Identifier: LGPL-2.1
/*
 * The Xen record classes decoded field by field beyond the fixed events of
 * xen_decode.c: PV entry points, HVM handlers and emulated devices, the
 * scheduler's verbose records and the credit, credit2, RTDS and null
 * schedulers' internals, memory (grant, p2m, PoD), shadow paging, power
 * management, IRQs and dom0 domain operations.
 *
 * Layouts are those Xen 4.17 writes (xen/include/public/trace.h and the
 * __trace_var()/TRACE_nD() call sites), as xenalyze reads them.  Each
 * synthesized event ("xen_pv_page_fault") has up to XG_MAX_FIELDS fields,
 * all stored as 64-bit numbers so that a record class with 32- and 64-bit
 * variants (TRC_64_FLAG) maps to one event: the decoder rows below say, per
 * Xen event id, where each field comes from in the record's extra words.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xen_trace.h"

/* How a field is taken from the extra words. */
enum xs_kind {
	XS_NONE = 0,
	XS_U32,		/* word w */
	XS_S32,		/* word w, sign-extended */
	XS_U64,		/* words w (low) and w + 1 (high) */
	XS_BITS,	/* bits [shift, shift + bits) of word w */
	XS_SBITS,	/* the same, sign-extended */
	XS_HAS,		/* 1 when the record has more than w words */
};

struct xs {
	uint8_t kind, word, shift, bits;
};

#define W(w)		{ XS_U32, w, 0, 32 }
#define SW(w)		{ XS_S32, w, 0, 32 }
#define Q(w)		{ XS_U64, w, 0, 64 }
#define LO(w)		{ XS_BITS, w, 0, 16 }
#define HI(w)		{ XS_BITS, w, 16, 16 }
#define SLO(w)		{ XS_SBITS, w, 0, 16 }
#define SHI(w)		{ XS_SBITS, w, 16, 16 }
#define BITS(w, s, n)	{ XS_BITS, w, s, n }
#define HAS(w)		{ XS_HAS, w, 0, 0 }

/* The table events, in id order (see gen_events). */
enum xg {
	XG_PV_HYPERCALL_V1, XG_PV_TRAP, XG_PV_PAGE_FAULT, XG_PV_FORCED_INVALID_OP,
	XG_PV_EMULATE_PRIVOP, XG_PV_EMULATE_4GB, XG_PV_MATH_STATE_RESTORE,
	XG_PV_PAGING_FIXUP, XG_PV_GDT_LDT_MAPPING_FAULT, XG_PV_PTWR_EMULATION,
	XG_SCHED_DOM_ADD, XG_SCHED_DOM_REM, XG_SCHED_YIELD, XG_SCHED_BLOCK,
	XG_SCHED_SHUTDOWN, XG_SCHED_CTL, XG_SCHED_ADJDOM, XG_SCHED_S_TIMER_FN,
	XG_SCHED_T_TIMER_FN, XG_SCHED_DOM_TIMER_FN, XG_SCHED_SWITCH_INFPREV,
	XG_SCHED_SWITCH_INFNEXT, XG_SCHED_SHUTDOWN_CODE, XG_SCHED_SWITCH_INFCONT,
	XG_CSCHED_SCHED_TASKLET, XG_CSCHED_ACCOUNT_START, XG_CSCHED_ACCOUNT_STOP,
	XG_CSCHED_STOLEN_VCPU, XG_CSCHED_PICKED_CPU, XG_CSCHED_TICKLE,
	XG_CSCHED_BOOST_START, XG_CSCHED_BOOST_END, XG_CSCHED_SCHEDULE,
	XG_CSCHED_RATELIMIT, XG_CSCHED_STEAL_CHECK,
	XG_CSCHED2_TICK, XG_CSCHED2_RUNQ_POS, XG_CSCHED2_CREDIT_BURN,
	XG_CSCHED2_CREDIT_ADD, XG_CSCHED2_TICKLE_CHECK, XG_CSCHED2_TICKLE,
	XG_CSCHED2_CREDIT_RESET, XG_CSCHED2_SCHED_TASKLET, XG_CSCHED2_UPDATE_LOAD,
	XG_CSCHED2_RUNQ_ASSIGN, XG_CSCHED2_UPDATE_VCPU_LOAD, XG_CSCHED2_UPDATE_RUNQ_LOAD,
	XG_CSCHED2_TICKLE_NEW, XG_CSCHED2_RUNQ_MAX_WEIGHT, XG_CSCHED2_MIGRATE,
	XG_CSCHED2_LOAD_CHECK, XG_CSCHED2_LOAD_BALANCE, XG_CSCHED2_PICKED_CPU,
	XG_CSCHED2_RUNQ_CANDIDATE, XG_CSCHED2_SCHEDULE, XG_CSCHED2_RATELIMIT,
	XG_CSCHED2_RUNQ_CAND_CHECK,
	XG_RTDS_TICKLE, XG_RTDS_RUNQ_PICK, XG_RTDS_BURN_BUDGET, XG_RTDS_REPL_BUDGET,
	XG_RTDS_SCHED_TASKLET, XG_RTDS_SCHEDULE,
	XG_NULL_PICKED_CPU, XG_NULL_VCPU_ASSIGN, XG_NULL_VCPU_DEASSIGN, XG_NULL_MIGRATE,
	XG_NULL_SCHEDULE, XG_NULL_SCHED_TASKLET,
	XG_DOM0_DOMAIN_CREATE, XG_DOM0_DOMAIN_DESTROY,
	XG_HVM_PF_XEN, XG_HVM_PF_INJECT, XG_HVM_INJ_EXC, XG_HVM_INJ_VIRQ,
	XG_HVM_REINJ_VIRQ, XG_HVM_IO_READ, XG_HVM_IO_WRITE, XG_HVM_CR_READ,
	XG_HVM_CR_WRITE, XG_HVM_DR_READ, XG_HVM_DR_WRITE, XG_HVM_MSR_READ,
	XG_HVM_MSR_WRITE, XG_HVM_CPUID, XG_HVM_INTR, XG_HVM_NMI, XG_HVM_SMI,
	XG_HVM_VMMCALL, XG_HVM_HLT, XG_HVM_INVLPG, XG_HVM_MCE, XG_HVM_IOPORT_READ,
	XG_HVM_IOPORT_WRITE, XG_HVM_IOMEM_READ, XG_HVM_IOMEM_WRITE, XG_HVM_CLTS,
	XG_HVM_LMSW, XG_HVM_RDTSC, XG_HVM_INTR_WINDOW, XG_HVM_NPF,
	XG_HVM_REALMODE_EMULATE, XG_HVM_TRAP, XG_HVM_TRAP_DEBUG, XG_HVM_VLAPIC,
	XG_HVM_XCR_READ, XG_HVM_XCR_WRITE, XG_HVM_OP_DESTROY_PROC,
	XG_EMUL_HPET_START, XG_EMUL_PIT_START, XG_EMUL_RTC_START, XG_EMUL_LAPIC_START,
	XG_EMUL_HPET_STOP, XG_EMUL_PIT_STOP, XG_EMUL_RTC_STOP, XG_EMUL_LAPIC_STOP,
	XG_EMUL_PIT_CB, XG_EMUL_LAPIC_CB, XG_EMUL_PIC_INT_OUTPUT, XG_EMUL_PIC_KICK,
	XG_EMUL_PIC_INTACK, XG_EMUL_PIC_POSEDGE, XG_EMUL_PIC_NEGEDGE,
	XG_EMUL_PIC_PEND_IRQ_CALL, XG_EMUL_LAPIC_PIC_INTR,
	XG_MEM_GRANT_MAP, XG_MEM_GRANT_UNMAP, XG_MEM_GRANT_TRANSFER,
	XG_MEM_SET_P2M_ENTRY, XG_MEM_DECREASE_RESERVATION, XG_MEM_POD_POPULATE,
	XG_MEM_POD_ZERO_RECLAIM, XG_MEM_POD_SUPERPAGE_SPLINTER,
	XG_SHADOW_NOT_SHADOW, XG_SHADOW_FAST_PROPAGATE, XG_SHADOW_FAST_MMIO,
	XG_SHADOW_FALSE_FAST_PATH, XG_SHADOW_MMIO, XG_SHADOW_FIXUP, XG_SHADOW_DOMF_DYING,
	XG_SHADOW_EMULATE, XG_SHADOW_UNSHADOW_USER, XG_SHADOW_UNSHADOW_EVTINJ,
	XG_SHADOW_UNSHADOW_UNHANDLED, XG_SHADOW_WRMAP_BF, XG_SHADOW_PREALLOC_UNPIN,
	XG_SHADOW_RESYNC_FULL, XG_SHADOW_RESYNC_ONLY,
	XG_PM_FREQ_CHANGE, XG_PM_IDLE_ENTRY, XG_PM_IDLE_EXIT,
	XG_IRQ_MOVE_CLEANUP_DELAY, XG_IRQ_MOVE_CLEANUP, XG_IRQ_BIND_VECTOR,
	XG_IRQ_CLEAR_VECTOR, XG_IRQ_MOVE_FINISH, XG_IRQ_ASSIGN_VECTOR,
	XG_IRQ_UNMAPPED_VECTOR, XG_IRQ_HANDLED,
	XG_COUNT
};

/*
 * Field names; a suffix ":x" prints in hex, ":d" is signed.  An event's id
 * is TV_XEN_EV_GEN_BASE + its index here, and sessions keep the formats
 * with those ids: append new events at the end, never reorder or remove.
 */
static const struct tv_xen_gen_event gen_events[] = {
	/* PV entry points (TRC_PV_ENTRY), 32- and 64-bit guests */
	[XG_PV_HYPERCALL_V1] = { "xen_pv_hypercall_v1", { "rip:x", "op" } },
	[XG_PV_TRAP] = { "xen_pv_trap", { "rip:x", "trapnr", "use_error_code", "error_code:x" } },
	[XG_PV_PAGE_FAULT] = { "xen_pv_page_fault", { "rip:x", "addr:x", "error_code:x" } },
	[XG_PV_FORCED_INVALID_OP] = { "xen_pv_forced_invalid_op", { "rip:x" } },
	[XG_PV_EMULATE_PRIVOP] = { "xen_pv_emulate_privop", { "rip:x" } },
	[XG_PV_EMULATE_4GB] = { "xen_pv_emulate_4gb", { "rip:x" } },
	[XG_PV_MATH_STATE_RESTORE] = { "xen_pv_math_state_restore", { NULL } },
	[XG_PV_PAGING_FIXUP] = { "xen_pv_paging_fixup", { "rip:x", "addr:x" } },
	[XG_PV_GDT_LDT_MAPPING_FAULT] = { "xen_pv_gdt_ldt_mapping_fault", { "rip:x", "offset:x" } },
	[XG_PV_PTWR_EMULATION] = { "xen_pv_ptwr_emulation", { "pte:x", "addr:x", "rip:x" } },
	/* scheduler, verbose (TRC_SCHED_VERBOSE) */
	[XG_SCHED_DOM_ADD] = { "xen_sched_dom_add", { "domid" } },
	[XG_SCHED_DOM_REM] = { "xen_sched_dom_rem", { "domid" } },
	[XG_SCHED_YIELD] = { "xen_sched_yield", { "domid", "vcpuid" } },
	[XG_SCHED_BLOCK] = { "xen_sched_block", { "domid", "vcpuid" } },
	[XG_SCHED_SHUTDOWN] = { "xen_sched_shutdown", { "domid", "vcpuid", "reason" } },
	[XG_SCHED_CTL] = { "xen_sched_ctl", { NULL } },
	[XG_SCHED_ADJDOM] = { "xen_sched_adjdom", { "domid" } },
	[XG_SCHED_S_TIMER_FN] = { "xen_sched_s_timer_fn", { NULL } },
	[XG_SCHED_T_TIMER_FN] = { "xen_sched_t_timer_fn", { NULL } },
	[XG_SCHED_DOM_TIMER_FN] = { "xen_sched_dom_timer_fn", { NULL } },
	[XG_SCHED_SWITCH_INFPREV] = { "xen_sched_switch_infprev", { "domid", "vcpuid", "runtime_ns" } },
	[XG_SCHED_SWITCH_INFNEXT] = { "xen_sched_switch_infnext", { "domid", "vcpuid", "waited_ns", "slice_ns:d" } },
	[XG_SCHED_SHUTDOWN_CODE] = { "xen_sched_shutdown_code", { "domid", "vcpuid", "reason" } },
	[XG_SCHED_SWITCH_INFCONT] = { "xen_sched_switch_infcont", { "domid", "vcpuid", "runtime_ns", "slice_ns:d" } },
	/* credit scheduler (TRC_SCHED_CLASS_EVT(CSCHED, n)) */
	[XG_CSCHED_SCHED_TASKLET] = { "xen_csched_sched_tasklet", { NULL } },
	[XG_CSCHED_ACCOUNT_START] = { "xen_csched_account_start", { "domid", "vcpuid", "active_units" } },
	[XG_CSCHED_ACCOUNT_STOP] = { "xen_csched_account_stop", { "domid", "vcpuid", "active_units" } },
	[XG_CSCHED_STOLEN_VCPU] = { "xen_csched_stolen_vcpu", { "peer_cpu", "domid", "vcpuid" } },
	[XG_CSCHED_PICKED_CPU] = { "xen_csched_picked_cpu", { "domid", "vcpuid", "cpu" } },
	[XG_CSCHED_TICKLE] = { "xen_csched_tickle", { "cpu" } },
	[XG_CSCHED_BOOST_START] = { "xen_csched_boost_start", { "domid", "vcpuid" } },
	[XG_CSCHED_BOOST_END] = { "xen_csched_boost_end", { "domid", "vcpuid" } },
	[XG_CSCHED_SCHEDULE] = { "xen_csched_schedule", { "cpu", "tasklet", "idle" } },
	[XG_CSCHED_RATELIMIT] = { "xen_csched_ratelimit", { "domid", "vcpuid", "runtime_ns" } },
	[XG_CSCHED_STEAL_CHECK] = { "xen_csched_steal_check", { "peer_cpu", "checked" } },
	/* credit2 (TRC_SCHED_CLASS_EVT(CSCHED2, n)) */
	[XG_CSCHED2_TICK] = { "xen_csched2_tick", { NULL } },
	[XG_CSCHED2_RUNQ_POS] = { "xen_csched2_runq_pos", { "domid", "vcpuid", "pos" } },
	[XG_CSCHED2_CREDIT_BURN] = { "xen_csched2_credit_burn", { "domid", "vcpuid", "credit:d", "budget:d", "delta:d" } },
	[XG_CSCHED2_CREDIT_ADD] = { "xen_csched2_credit_add", { NULL } },
	[XG_CSCHED2_TICKLE_CHECK] = { "xen_csched2_tickle_check", { "domid", "vcpuid", "credit:d", "score:d" } },
	[XG_CSCHED2_TICKLE] = { "xen_csched2_tickle", { "cpu" } },
	[XG_CSCHED2_CREDIT_RESET] = { "xen_csched2_credit_reset", { "domid", "vcpuid", "credit_start:d", "credit_end:d" } },
	[XG_CSCHED2_SCHED_TASKLET] = { "xen_csched2_sched_tasklet", { NULL } },
	[XG_CSCHED2_UPDATE_LOAD] = { "xen_csched2_update_load", { NULL } },
	[XG_CSCHED2_RUNQ_ASSIGN] = { "xen_csched2_runq_assign", { "domid", "vcpuid", "rq_id" } },
	[XG_CSCHED2_UPDATE_VCPU_LOAD] = { "xen_csched2_update_vcpu_load", { "domid", "vcpuid", "avgload", "shift" } },
	[XG_CSCHED2_UPDATE_RUNQ_LOAD] = { "xen_csched2_update_runq_load", { "rq_id", "rq_load", "rq_avgload", "b_avgload", "shift" } },
	[XG_CSCHED2_TICKLE_NEW] = { "xen_csched2_tickle_new", { "domid", "vcpuid", "processor", "credit:d" } },
	[XG_CSCHED2_RUNQ_MAX_WEIGHT] = { "xen_csched2_runq_max_weight", { "rq_id", "max_weight" } },
	[XG_CSCHED2_MIGRATE] = { "xen_csched2_migrate", { "domid", "vcpuid", "rq_id", "target_rq_id" } },
	[XG_CSCHED2_LOAD_CHECK] = { "xen_csched2_load_check", { "lrq_id", "orq_id", "load_delta" } },
	[XG_CSCHED2_LOAD_BALANCE] = { "xen_csched2_load_balance", { "lrq_id", "orq_id", "lb_avgload", "ob_avgload" } },
	[XG_CSCHED2_PICKED_CPU] = { "xen_csched2_picked_cpu", { "domid", "vcpuid", "rq_id", "new_cpu", "b_avgload" } },
	[XG_CSCHED2_RUNQ_CANDIDATE] = { "xen_csched2_runq_candidate", { "domid", "vcpuid", "tickled_cpu:d", "credit:d" } },
	[XG_CSCHED2_SCHEDULE] = { "xen_csched2_schedule", { "cpu", "rq_id", "tasklet", "idle", "smt_idle", "tickled" } },
	[XG_CSCHED2_RATELIMIT] = { "xen_csched2_ratelimit", { "domid", "vcpuid", "runtime_ns" } },
	[XG_CSCHED2_RUNQ_CAND_CHECK] = { "xen_csched2_runq_cand_check", { "domid", "vcpuid" } },
	/* RTDS (TRC_SCHED_CLASS_EVT(RTDS, n)) */
	[XG_RTDS_TICKLE] = { "xen_rtds_tickle", { "cpu" } },
	[XG_RTDS_RUNQ_PICK] = { "xen_rtds_runq_pick", { "domid", "vcpuid", "deadline", "budget" } },
	[XG_RTDS_BURN_BUDGET] = { "xen_rtds_burn_budget", { "domid", "vcpuid", "budget", "delta:d" } },
	[XG_RTDS_REPL_BUDGET] = { "xen_rtds_repl_budget", { "domid", "vcpuid", "deadline", "budget" } },
	[XG_RTDS_SCHED_TASKLET] = { "xen_rtds_sched_tasklet", { NULL } },
	[XG_RTDS_SCHEDULE] = { "xen_rtds_schedule", { "cpu", "tasklet", "idle", "tickled" } },
	/* null scheduler (TRC_SCHED_CLASS_EVT(SNULL, n)) */
	[XG_NULL_PICKED_CPU] = { "xen_null_picked_cpu", { "domid", "vcpuid", "new_cpu" } },
	[XG_NULL_VCPU_ASSIGN] = { "xen_null_vcpu_assign", { "domid", "vcpuid", "cpu" } },
	[XG_NULL_VCPU_DEASSIGN] = { "xen_null_vcpu_deassign", { "domid", "vcpuid", "cpu" } },
	[XG_NULL_MIGRATE] = { "xen_null_migrate", { "domid", "vcpuid", "cpu", "new_cpu" } },
	[XG_NULL_SCHEDULE] = { "xen_null_schedule", { "cpu", "tasklet", "domid:d", "vcpuid:d" } },
	[XG_NULL_SCHED_TASKLET] = { "xen_null_sched_tasklet", { NULL } },
	/* dom0 operations (TRC_DOM0_DOMOPS) */
	[XG_DOM0_DOMAIN_CREATE] = { "xen_dom0_domain_create", { "domid" } },
	[XG_DOM0_DOMAIN_DESTROY] = { "xen_dom0_domain_destroy", { "domid" } },
	/* HVM handlers (TRC_HVM_HANDLER): the guest is the running vCPU */
	[XG_HVM_PF_XEN] = { "xen_hvm_pf_xen", { "error_code:x", "va:x" } },
	[XG_HVM_PF_INJECT] = { "xen_hvm_pf_inject", { "error_code:x", "cr2:x" } },
	[XG_HVM_INJ_EXC] = { "xen_hvm_inj_exc", { "vector", "error_code:x" } },
	[XG_HVM_INJ_VIRQ] = { "xen_hvm_inj_virq", { "vector", "fake" } },
	[XG_HVM_REINJ_VIRQ] = { "xen_hvm_reinj_virq", { "vector" } },
	[XG_HVM_IO_READ] = { "xen_hvm_io_read", { "port:x", "size" } },
	[XG_HVM_IO_WRITE] = { "xen_hvm_io_write", { "port:x", "size" } },
	[XG_HVM_CR_READ] = { "xen_hvm_cr_read", { "cr", "value:x" } },
	[XG_HVM_CR_WRITE] = { "xen_hvm_cr_write", { "cr", "value:x" } },
	[XG_HVM_DR_READ] = { "xen_hvm_dr_read", { NULL } },
	[XG_HVM_DR_WRITE] = { "xen_hvm_dr_write", { NULL } },
	[XG_HVM_MSR_READ] = { "xen_hvm_msr_read", { "msr:x", "value:x" } },
	[XG_HVM_MSR_WRITE] = { "xen_hvm_msr_write", { "msr:x", "value:x" } },
	[XG_HVM_CPUID] = { "xen_hvm_cpuid", { "leaf:x", "subleaf:x", "eax:x", "ebx:x", "ecx:x", "edx:x" } },
	[XG_HVM_INTR] = { "xen_hvm_intr", { "vector" } },
	[XG_HVM_NMI] = { "xen_hvm_nmi", { NULL } },
	[XG_HVM_SMI] = { "xen_hvm_smi", { NULL } },
	[XG_HVM_VMMCALL] = { "xen_hvm_vmmcall", { "rax:x" } },
	[XG_HVM_HLT] = { "xen_hvm_hlt", { "pending" } },
	[XG_HVM_INVLPG] = { "xen_hvm_invlpg", { "invlpga", "va:x" } },
	[XG_HVM_MCE] = { "xen_hvm_mce", { NULL } },
	[XG_HVM_IOPORT_READ] = { "xen_hvm_ioport_read", { "port:x", "has_data", "data:x" } },
	[XG_HVM_IOPORT_WRITE] = { "xen_hvm_ioport_write", { "port:x", "has_data", "data:x" } },
	[XG_HVM_IOMEM_READ] = { "xen_hvm_iomem_read", { "gpa:x", "has_data", "data:x" } },
	[XG_HVM_IOMEM_WRITE] = { "xen_hvm_iomem_write", { "gpa:x", "has_data", "data:x" } },
	[XG_HVM_CLTS] = { "xen_hvm_clts", { NULL } },
	[XG_HVM_LMSW] = { "xen_hvm_lmsw", { "value:x" } },
	[XG_HVM_RDTSC] = { "xen_hvm_rdtsc", { "tsc" } },
	[XG_HVM_INTR_WINDOW] = { "xen_hvm_intr_window", { "vector", "source", "pending_vector:d" } },
	[XG_HVM_NPF] = { "xen_hvm_npf", { "gpa:x", "mfn:x", "qualification:x", "p2mt" } },
	[XG_HVM_REALMODE_EMULATE] = { "xen_hvm_realmode_emulate", { NULL } },
	[XG_HVM_TRAP] = { "xen_hvm_trap", { "vector" } },
	[XG_HVM_TRAP_DEBUG] = { "xen_hvm_trap_debug", { "exit_qualification:x" } },
	[XG_HVM_VLAPIC] = { "xen_hvm_vlapic", { NULL } },
	[XG_HVM_XCR_READ] = { "xen_hvm_xcr_read", { "xcr", "value:x" } },
	[XG_HVM_XCR_WRITE] = { "xen_hvm_xcr_write", { "xcr", "value:x" } },
	[XG_HVM_OP_DESTROY_PROC] = { "xen_hvm_op_destroy_proc", { NULL } },
	/* HVM emulated devices (TRC_HVM_EMUL) */
	[XG_EMUL_HPET_START] = { "xen_hvm_emul_hpet_start_timer", { "timer", "irq", "delta", "period" } },
	[XG_EMUL_PIT_START] = { "xen_hvm_emul_pit_start_timer", { "delta", "period" } },
	[XG_EMUL_RTC_START] = { "xen_hvm_emul_rtc_start_timer", { "delta", "period" } },
	[XG_EMUL_LAPIC_START] = { "xen_hvm_emul_lapic_start_timer", { "delta", "period", "irq" } },
	[XG_EMUL_HPET_STOP] = { "xen_hvm_emul_hpet_stop_timer", { "timer" } },
	[XG_EMUL_PIT_STOP] = { "xen_hvm_emul_pit_stop_timer", { NULL } },
	[XG_EMUL_RTC_STOP] = { "xen_hvm_emul_rtc_stop_timer", { NULL } },
	[XG_EMUL_LAPIC_STOP] = { "xen_hvm_emul_lapic_stop_timer", { NULL } },
	[XG_EMUL_PIT_CB] = { "xen_hvm_emul_pit_timer_cb", { NULL } },
	[XG_EMUL_LAPIC_CB] = { "xen_hvm_emul_lapic_timer_cb", { NULL } },
	[XG_EMUL_PIC_INT_OUTPUT] = { "xen_hvm_emul_pic_int_output", { "int_output", "is_master", "irq" } },
	[XG_EMUL_PIC_KICK] = { "xen_hvm_emul_pic_kick", { "irq" } },
	[XG_EMUL_PIC_INTACK] = { "xen_hvm_emul_pic_intack", { "is_master", "irq" } },
	[XG_EMUL_PIC_POSEDGE] = { "xen_hvm_emul_pic_posedge", { "irq" } },
	[XG_EMUL_PIC_NEGEDGE] = { "xen_hvm_emul_pic_negedge", { "irq" } },
	[XG_EMUL_PIC_PEND_IRQ_CALL] = { "xen_hvm_emul_pic_pend_irq_call", { "accept_pic_intr", "int_output" } },
	[XG_EMUL_LAPIC_PIC_INTR] = { "xen_hvm_emul_lapic_pic_intr", { "i8259_target", "accept_pic_intr" } },
	/* memory (TRC_MEM) */
	[XG_MEM_GRANT_MAP] = { "xen_mem_page_grant_map", { "domid" } },
	[XG_MEM_GRANT_UNMAP] = { "xen_mem_page_grant_unmap", { "domid" } },
	[XG_MEM_GRANT_TRANSFER] = { "xen_mem_page_grant_transfer", { "domid" } },
	[XG_MEM_SET_P2M_ENTRY] = { "xen_mem_set_p2m_entry", { "domid", "gfn:x", "mfn:x", "p2mt", "order" } },
	[XG_MEM_DECREASE_RESERVATION] = { "xen_mem_decrease_reservation", { "domid", "gfn:x", "order" } },
	[XG_MEM_POD_POPULATE] = { "xen_mem_pod_populate", { "domid", "gfn:x", "mfn:x", "order" } },
	[XG_MEM_POD_ZERO_RECLAIM] = { "xen_mem_pod_zero_reclaim", { "domid", "gfn:x", "mfn:x", "order" } },
	[XG_MEM_POD_SUPERPAGE_SPLINTER] = { "xen_mem_pod_superpage_splinter", { "domid", "gfn:x" } },
	/* shadow paging (TRC_SHADOW), 32- and 64-bit guests */
	[XG_SHADOW_NOT_SHADOW] = { "xen_shadow_not_shadow", { "gl1e:x", "va:x", "flags:x" } },
	[XG_SHADOW_FAST_PROPAGATE] = { "xen_shadow_fast_propagate", { "va:x" } },
	[XG_SHADOW_FAST_MMIO] = { "xen_shadow_fast_mmio", { "va:x" } },
	[XG_SHADOW_FALSE_FAST_PATH] = { "xen_shadow_false_fast_path", { "va:x" } },
	[XG_SHADOW_MMIO] = { "xen_shadow_mmio", { "va:x" } },
	[XG_SHADOW_FIXUP] = { "xen_shadow_fixup", { "gl1e:x", "va:x", "flags:x" } },
	[XG_SHADOW_DOMF_DYING] = { "xen_shadow_domf_dying", { "va:x" } },
	[XG_SHADOW_EMULATE] = { "xen_shadow_emulate", { "gl1e:x", "write_val:x", "va:x", "flags:x" } },
	[XG_SHADOW_UNSHADOW_USER] = { "xen_shadow_emulate_unshadow_user", { "va:x", "gfn:x" } },
	[XG_SHADOW_UNSHADOW_EVTINJ] = { "xen_shadow_emulate_unshadow_evtinj", { "va:x", "gfn:x" } },
	[XG_SHADOW_UNSHADOW_UNHANDLED] = { "xen_shadow_emulate_unshadow_unhandled", { "va:x", "gfn:x" } },
	[XG_SHADOW_WRMAP_BF] = { "xen_shadow_wrmap_bf", { "gfn:x" } },
	[XG_SHADOW_PREALLOC_UNPIN] = { "xen_shadow_prealloc_unpin", { "gfn:x" } },
	[XG_SHADOW_RESYNC_FULL] = { "xen_shadow_resync_full", { "gfn:x" } },
	[XG_SHADOW_RESYNC_ONLY] = { "xen_shadow_resync_only", { "gfn:x" } },
	/* power management (TRC_HW_PM) */
	[XG_PM_FREQ_CHANGE] = { "xen_pm_freq_change", { "old_mhz", "new_mhz" } },
	[XG_PM_IDLE_ENTRY] = { "xen_pm_idle_entry", { "cstate", "tick", "expected_us", "predicted_us" } },
	[XG_PM_IDLE_EXIT] = { "xen_pm_idle_exit", { "cstate", "tick", "irq0", "irq1", "irq2", "irq3" } },
	/* IRQs (TRC_HW_IRQ) */
	[XG_IRQ_MOVE_CLEANUP_DELAY] = { "xen_irq_move_cleanup_delay", { "irq", "vector:x", "cpu" } },
	[XG_IRQ_MOVE_CLEANUP] = { "xen_irq_move_cleanup", { "irq", "vector:x", "cpu" } },
	[XG_IRQ_BIND_VECTOR] = { "xen_irq_bind_vector", { "irq", "vector:x", "mask0:x", "mask1:x", "mask2:x", "mask3:x" } },
	[XG_IRQ_CLEAR_VECTOR] = { "xen_irq_clear_vector", { "irq", "vector:x", "mask0:x", "mask1:x", "mask2:x", "mask3:x" } },
	[XG_IRQ_MOVE_FINISH] = { "xen_irq_move_finish", { "irq", "old_vector:x", "cpu" } },
	[XG_IRQ_ASSIGN_VECTOR] = { "xen_irq_assign_vector", { "irq", "vector:x", "mask0:x", "mask1:x", "mask2:x", "mask3:x" } },
	[XG_IRQ_UNMAPPED_VECTOR] = { "xen_irq_unmapped_vector", { "vector:x" } },
	[XG_IRQ_HANDLED] = { "xen_irq_handled", { "irq", "start_tsc_lo", "end_tsc_lo" } },
};

_Static_assert(sizeof(gen_events) / sizeof(gen_events[0]) == XG_COUNT,
	       "gen_events and enum xg out of step");
_Static_assert(TV_XEN_EV_GEN_BASE + XG_COUNT <= 0xffff, "event ids fit common_type");

/* One Xen event id and where its fields come from (in the event's order). */
struct xen_decoder {
	uint32_t event;
	uint16_t gen;
	struct xs src[TV_XEN_GEN_MAX_FIELDS];
};

#define PV(n)		(0x00201000u + (n))
#define PV64(n)		(0x00201100u + (n))
#define VERB(n)		(0x00028000u + (n))
#define CS(n)		(0x00022000u + (n))
#define CS2(n)		(0x00022200u + (n))
#define RTDS(n)		(0x00022800u + (n))
#define SNULL(n)	(0x00022a00u + (n))
#define HVMH(n)		(0x00082000u + (n))
#define EMUL(n)		(0x00084000u + (n))
#define MEM(n)		(0x0010f000u + (n))
#define SHADOW(n)	(0x0040f000u + (n))
#define SHADOW64(n)	(0x0040f100u + (n))

/* Sorted by event id (checked by tv_xen_gen_check). */
static const struct xen_decoder decoders[] = {
	{ CS(1), XG_CSCHED_SCHED_TASKLET, { } },
	{ CS(2), XG_CSCHED_ACCOUNT_START, { W(0), W(1), W(2) } },
	{ CS(3), XG_CSCHED_ACCOUNT_STOP, { W(0), W(1), W(2) } },
	{ CS(4), XG_CSCHED_STOLEN_VCPU, { W(0), W(1), W(2) } },
	{ CS(5), XG_CSCHED_PICKED_CPU, { W(0), W(1), W(2) } },
	{ CS(6), XG_CSCHED_TICKLE, { W(0) } },
	{ CS(7), XG_CSCHED_BOOST_START, { W(0), W(1) } },
	{ CS(8), XG_CSCHED_BOOST_END, { W(0), W(1) } },
	{ CS(9), XG_CSCHED_SCHEDULE, { LO(0), BITS(0, 16, 8), BITS(0, 24, 8) } },
	{ CS(10), XG_CSCHED_RATELIMIT, { HI(0), LO(0), W(1) } },
	{ CS(11), XG_CSCHED_STEAL_CHECK, { W(0), W(1) } },
	{ CS2(1), XG_CSCHED2_TICK, { } },
	{ CS2(2), XG_CSCHED2_RUNQ_POS, { HI(0), LO(0), W(1) } },
	{ CS2(3), XG_CSCHED2_CREDIT_BURN, { HI(0), LO(0), SW(1), SW(2), SW(3) } },
	{ CS2(4), XG_CSCHED2_CREDIT_ADD, { } },
	{ CS2(5), XG_CSCHED2_TICKLE_CHECK, { HI(0), LO(0), SW(1), SW(2) } },
	{ CS2(6), XG_CSCHED2_TICKLE, { LO(0) } },
	{ CS2(7), XG_CSCHED2_CREDIT_RESET, { HI(0), LO(0), SW(1), SW(2) } },
	{ CS2(8), XG_CSCHED2_SCHED_TASKLET, { } },
	{ CS2(9), XG_CSCHED2_UPDATE_LOAD, { } },
	{ CS2(10), XG_CSCHED2_RUNQ_ASSIGN, { HI(0), LO(0), LO(1) } },
	{ CS2(11), XG_CSCHED2_UPDATE_VCPU_LOAD, { HI(2), LO(2), Q(0), W(3) } },
	{ CS2(12), XG_CSCHED2_UPDATE_RUNQ_LOAD,
	  { BITS(4, 16, 8), LO(4), Q(0), Q(2), BITS(4, 24, 8) } },
	{ CS2(13), XG_CSCHED2_TICKLE_NEW, { HI(0), LO(0), W(1), SW(2) } },
	{ CS2(14), XG_CSCHED2_RUNQ_MAX_WEIGHT, { LO(0), HI(0) } },
	{ CS2(15), XG_CSCHED2_MIGRATE, { HI(0), LO(0), LO(1), HI(1) } },
	{ CS2(16), XG_CSCHED2_LOAD_CHECK, { LO(0), HI(0), W(1) } },
	{ CS2(17), XG_CSCHED2_LOAD_BALANCE, { LO(4), HI(4), Q(0), Q(2) } },
	{ CS2(19), XG_CSCHED2_PICKED_CPU, { HI(2), LO(2), LO(3), HI(3), Q(0) } },
	{ CS2(20), XG_CSCHED2_RUNQ_CANDIDATE, { HI(0), LO(0), SW(1), SW(2) } },
	{ CS2(21), XG_CSCHED2_SCHEDULE,
	  { LO(0), HI(0), BITS(1, 0, 8), BITS(1, 8, 8), BITS(1, 16, 8), BITS(1, 24, 8) } },
	{ CS2(22), XG_CSCHED2_RATELIMIT, { HI(0), LO(0), W(1) } },
	{ CS2(23), XG_CSCHED2_RUNQ_CAND_CHECK, { HI(0), LO(0) } },
	{ RTDS(1), XG_RTDS_TICKLE, { LO(0) } },
	{ RTDS(2), XG_RTDS_RUNQ_PICK, { HI(0), LO(0), Q(1), Q(3) } },
	{ RTDS(3), XG_RTDS_BURN_BUDGET, { HI(0), LO(0), Q(1), SW(3) } },
	{ RTDS(4), XG_RTDS_REPL_BUDGET, { HI(0), LO(0), Q(1), Q(3) } },
	{ RTDS(5), XG_RTDS_SCHED_TASKLET, { } },
	{ RTDS(6), XG_RTDS_SCHEDULE, { LO(0), BITS(0, 16, 8), BITS(0, 24, 4), BITS(0, 28, 4) } },
	{ SNULL(1), XG_NULL_PICKED_CPU, { HI(0), LO(0), W(1) } },
	{ SNULL(2), XG_NULL_VCPU_ASSIGN, { HI(0), LO(0), W(1) } },
	{ SNULL(3), XG_NULL_VCPU_DEASSIGN, { HI(0), LO(0), W(1) } },
	{ SNULL(4), XG_NULL_MIGRATE, { HI(0), LO(0), LO(1), HI(1) } },
	{ SNULL(5), XG_NULL_SCHEDULE, { HI(0), LO(0), SHI(1), SLO(1) } },
	{ SNULL(6), XG_NULL_SCHED_TASKLET, { } },
	{ VERB(1), XG_SCHED_DOM_ADD, { W(0) } },
	{ VERB(2), XG_SCHED_DOM_REM, { W(0) } },
	{ VERB(5), XG_SCHED_YIELD, { W(0), W(1) } },
	{ VERB(6), XG_SCHED_BLOCK, { W(0), W(1) } },
	{ VERB(7), XG_SCHED_SHUTDOWN, { W(0), W(1), W(2) } },
	{ VERB(8), XG_SCHED_CTL, { } },
	{ VERB(9), XG_SCHED_ADJDOM, { W(0) } },
	{ VERB(11), XG_SCHED_S_TIMER_FN, { } },
	{ VERB(12), XG_SCHED_T_TIMER_FN, { } },
	{ VERB(13), XG_SCHED_DOM_TIMER_FN, { } },
	{ VERB(14), XG_SCHED_SWITCH_INFPREV, { W(0), W(1), W(2) } },
	{ VERB(15), XG_SCHED_SWITCH_INFNEXT, { W(0), W(1), W(2), SW(3) } },
	{ VERB(16), XG_SCHED_SHUTDOWN_CODE, { W(0), W(1), W(2) } },
	{ VERB(17), XG_SCHED_SWITCH_INFCONT, { W(0), W(1), W(2), SW(3) } },
	{ 0x00041001u, XG_DOM0_DOMAIN_CREATE, { W(0) } },
	{ 0x00041002u, XG_DOM0_DOMAIN_DESTROY, { W(0) } },
	{ HVMH(0x01), XG_HVM_PF_XEN, { W(0), W(1) } },
	{ HVMH(0x02), XG_HVM_PF_INJECT, { W(0), W(1) } },
	{ HVMH(0x03), XG_HVM_INJ_EXC, { W(0), W(1) } },
	{ HVMH(0x04), XG_HVM_INJ_VIRQ, { W(0), W(1) } },
	{ HVMH(0x05), XG_HVM_REINJ_VIRQ, { W(0) } },
	{ HVMH(0x06), XG_HVM_IO_READ, { W(0), W(1) } },
	{ HVMH(0x07), XG_HVM_IO_WRITE, { W(0), W(1) } },
	{ HVMH(0x08), XG_HVM_CR_READ, { W(0), W(1) } },
	{ HVMH(0x09), XG_HVM_CR_WRITE, { W(0), W(1) } },
	{ HVMH(0x0a), XG_HVM_DR_READ, { } },
	{ HVMH(0x0b), XG_HVM_DR_WRITE, { } },
	{ HVMH(0x0c), XG_HVM_MSR_READ, { W(0), Q(1) } },
	{ HVMH(0x0d), XG_HVM_MSR_WRITE, { W(0), Q(1) } },
	{ HVMH(0x0e), XG_HVM_CPUID, { W(0), W(1), W(2), W(3), W(4), W(5) } },
	{ HVMH(0x0f), XG_HVM_INTR, { W(0) } },
	{ HVMH(0x10), XG_HVM_NMI, { } },
	{ HVMH(0x11), XG_HVM_SMI, { } },
	{ HVMH(0x12), XG_HVM_VMMCALL, { W(0) } },
	{ HVMH(0x13), XG_HVM_HLT, { W(0) } },
	{ HVMH(0x14), XG_HVM_INVLPG, { W(0), W(1) } },
	{ HVMH(0x15), XG_HVM_MCE, { } },
	{ HVMH(0x16), XG_HVM_IOPORT_READ, { W(0), HAS(1), W(1) } },
	{ HVMH(0x17), XG_HVM_IOMEM_READ, { W(0), HAS(1), W(1) } },
	{ HVMH(0x18), XG_HVM_CLTS, { } },
	{ HVMH(0x19), XG_HVM_LMSW, { W(0) } },
	{ HVMH(0x1a), XG_HVM_RDTSC, { Q(0) } },
	{ HVMH(0x20), XG_HVM_INTR_WINDOW, { W(0), W(1), SW(2) } },
	{ HVMH(0x21), XG_HVM_NPF, { Q(0), Q(2), W(4), W(5) } },
	{ HVMH(0x22), XG_HVM_REALMODE_EMULATE, { } },
	{ HVMH(0x23), XG_HVM_TRAP, { W(0) } },
	{ HVMH(0x24), XG_HVM_TRAP_DEBUG, { W(0) } },
	{ HVMH(0x25), XG_HVM_VLAPIC, { } },
	{ HVMH(0x100), XG_HVM_OP_DESTROY_PROC, { } },
	{ HVMH(0x101), XG_HVM_PF_XEN, { W(0), Q(1) } },
	{ HVMH(0x102), XG_HVM_PF_INJECT, { W(0), Q(1) } },
	{ HVMH(0x108), XG_HVM_CR_READ, { W(0), Q(1) } },
	{ HVMH(0x109), XG_HVM_CR_WRITE, { W(0), Q(1) } },
	{ HVMH(0x114), XG_HVM_INVLPG, { W(0), Q(1) } },
	{ HVMH(0x116), XG_HVM_IOPORT_READ, { Q(0), HAS(2), Q(2) } },
	{ HVMH(0x117), XG_HVM_IOMEM_READ, { Q(0), HAS(2), Q(2) } },
	{ HVMH(0x119), XG_HVM_LMSW, { Q(0) } },
	{ HVMH(0x126), XG_HVM_XCR_READ, { W(0), Q(1) } },
	{ HVMH(0x127), XG_HVM_XCR_WRITE, { W(0), Q(1) } },
	{ HVMH(0x216), XG_HVM_IOPORT_WRITE, { W(0), HAS(1), W(1) } },
	{ HVMH(0x217), XG_HVM_IOMEM_WRITE, { W(0), HAS(1), W(1) } },
	{ HVMH(0x316), XG_HVM_IOPORT_WRITE, { Q(0), HAS(2), Q(2) } },
	{ HVMH(0x317), XG_HVM_IOMEM_WRITE, { Q(0), HAS(2), Q(2) } },
	{ EMUL(0x01), XG_EMUL_HPET_START, { W(0), W(1), Q(2), Q(4) } },
	{ EMUL(0x02), XG_EMUL_PIT_START, { W(0), W(1) } },
	{ EMUL(0x03), XG_EMUL_RTC_START, { W(0), W(1) } },
	{ EMUL(0x04), XG_EMUL_LAPIC_START, { Q(0), Q(2), W(4) } },
	{ EMUL(0x05), XG_EMUL_HPET_STOP, { W(0) } },
	{ EMUL(0x06), XG_EMUL_PIT_STOP, { } },
	{ EMUL(0x07), XG_EMUL_RTC_STOP, { } },
	{ EMUL(0x08), XG_EMUL_LAPIC_STOP, { } },
	{ EMUL(0x09), XG_EMUL_PIT_CB, { } },
	{ EMUL(0x0a), XG_EMUL_LAPIC_CB, { } },
	{ EMUL(0x0b), XG_EMUL_PIC_INT_OUTPUT, { W(0), W(1), W(2) } },
	{ EMUL(0x0c), XG_EMUL_PIC_KICK, { W(0) } },
	{ EMUL(0x0d), XG_EMUL_PIC_INTACK, { W(0), W(1) } },
	{ EMUL(0x0e), XG_EMUL_PIC_POSEDGE, { W(0) } },
	{ EMUL(0x0f), XG_EMUL_PIC_NEGEDGE, { W(0) } },
	{ EMUL(0x10), XG_EMUL_PIC_PEND_IRQ_CALL, { W(0), W(1) } },
	{ EMUL(0x11), XG_EMUL_LAPIC_PIC_INTR, { W(0), W(1) } },
	{ MEM(1), XG_MEM_GRANT_MAP, { W(0) } },
	{ MEM(2), XG_MEM_GRANT_UNMAP, { W(0) } },
	{ MEM(3), XG_MEM_GRANT_TRANSFER, { W(0) } },
	{ MEM(4), XG_MEM_SET_P2M_ENTRY, { LO(5), Q(0), Q(2), W(4), HI(5) } },
	{ MEM(5), XG_MEM_DECREASE_RESERVATION, { SLO(2), Q(0), SHI(2) } },
	{ MEM(16), XG_MEM_POD_POPULATE, { SLO(4), Q(0), Q(2), SHI(4) } },
	{ MEM(17), XG_MEM_POD_ZERO_RECLAIM, { SLO(4), Q(0), Q(2), SHI(4) } },
	{ MEM(18), XG_MEM_POD_SUPERPAGE_SPLINTER, { SLO(2), Q(0) } },
	{ PV(1), XG_PV_HYPERCALL_V1, { W(0), W(1) } },
	{ PV(3), XG_PV_TRAP, { W(0), BITS(1, 0, 15), BITS(1, 15, 1), BITS(1, 16, 16) } },
	{ PV(4), XG_PV_PAGE_FAULT, { W(0), W(1), W(2) } },
	{ PV(5), XG_PV_FORCED_INVALID_OP, { W(0) } },
	{ PV(6), XG_PV_EMULATE_PRIVOP, { W(0) } },
	{ PV(7), XG_PV_EMULATE_4GB, { W(0) } },
	{ PV(8), XG_PV_MATH_STATE_RESTORE, { } },
	{ PV(9), XG_PV_PAGING_FIXUP, { W(0), W(1) } },
	{ PV(10), XG_PV_GDT_LDT_MAPPING_FAULT, { W(0), W(1) } },
	{ PV(12), XG_PV_PTWR_EMULATION, { Q(0), W(2), W(3) } },	/* PAE */
	{ PV64(1), XG_PV_HYPERCALL_V1, { Q(0), W(2) } },
	{ PV64(3), XG_PV_TRAP, { Q(0), BITS(2, 0, 15), BITS(2, 15, 1), BITS(2, 16, 16) } },
	{ PV64(4), XG_PV_PAGE_FAULT, { Q(0), Q(2), W(4) } },
	{ PV64(5), XG_PV_FORCED_INVALID_OP, { Q(0) } },
	{ PV64(6), XG_PV_EMULATE_PRIVOP, { Q(0) } },
	{ PV64(7), XG_PV_EMULATE_4GB, { Q(0) } },
	{ PV64(8), XG_PV_MATH_STATE_RESTORE, { } },
	{ PV64(9), XG_PV_PAGING_FIXUP, { Q(0), Q(2) } },
	{ PV64(10), XG_PV_GDT_LDT_MAPPING_FAULT, { Q(0), Q(2) } },
	{ PV64(11), XG_PV_PTWR_EMULATION, { Q(0), Q(2), Q(4) } },
	{ SHADOW(1), XG_SHADOW_NOT_SHADOW, { Q(0), W(2), W(3) } },
	{ SHADOW(2), XG_SHADOW_FAST_PROPAGATE, { W(0) } },
	{ SHADOW(3), XG_SHADOW_FAST_MMIO, { W(0) } },
	{ SHADOW(4), XG_SHADOW_FALSE_FAST_PATH, { W(0) } },
	{ SHADOW(5), XG_SHADOW_MMIO, { W(0) } },
	{ SHADOW(6), XG_SHADOW_FIXUP, { W(0), W(1), W(2) } },
	{ SHADOW(7), XG_SHADOW_DOMF_DYING, { W(0) } },
	{ SHADOW(8), XG_SHADOW_EMULATE, { W(0), W(1), W(2), W(3) } },
	{ SHADOW(9), XG_SHADOW_UNSHADOW_USER, { W(0), W(1) } },
	{ SHADOW(10), XG_SHADOW_UNSHADOW_EVTINJ, { W(0), W(1) } },
	{ SHADOW(11), XG_SHADOW_UNSHADOW_UNHANDLED, { W(0), W(1) } },
	{ SHADOW(12), XG_SHADOW_WRMAP_BF, { W(0) } },
	{ SHADOW(13), XG_SHADOW_PREALLOC_UNPIN, { W(0) } },
	{ SHADOW(14), XG_SHADOW_RESYNC_FULL, { W(0) } },
	{ SHADOW(15), XG_SHADOW_RESYNC_ONLY, { W(0) } },
	{ SHADOW64(1), XG_SHADOW_NOT_SHADOW, { Q(0), Q(2), W(4) } },
	{ SHADOW64(2), XG_SHADOW_FAST_PROPAGATE, { Q(0) } },
	{ SHADOW64(3), XG_SHADOW_FAST_MMIO, { Q(0) } },
	{ SHADOW64(4), XG_SHADOW_FALSE_FAST_PATH, { Q(0) } },
	{ SHADOW64(5), XG_SHADOW_MMIO, { Q(0) } },
	{ SHADOW64(6), XG_SHADOW_FIXUP, { Q(0), Q(2), W(4) } },
	{ SHADOW64(7), XG_SHADOW_DOMF_DYING, { Q(0) } },
	{ SHADOW64(8), XG_SHADOW_EMULATE, { Q(0), Q(2), Q(4), W(6) } },
	{ SHADOW64(9), XG_SHADOW_UNSHADOW_USER, { Q(0), Q(2) } },
	{ SHADOW64(10), XG_SHADOW_UNSHADOW_EVTINJ, { Q(0), Q(2) } },
	{ SHADOW64(11), XG_SHADOW_UNSHADOW_UNHANDLED, { Q(0), Q(2) } },
	{ SHADOW64(12), XG_SHADOW_WRMAP_BF, { Q(0) } },
	{ SHADOW64(13), XG_SHADOW_PREALLOC_UNPIN, { Q(0) } },
	{ SHADOW64(14), XG_SHADOW_RESYNC_FULL, { Q(0) } },
	{ SHADOW64(15), XG_SHADOW_RESYNC_ONLY, { Q(0) } },
	{ 0x00801001u, XG_PM_FREQ_CHANGE, { W(0), W(1) } },
	{ 0x00801002u, XG_PM_IDLE_ENTRY, { W(0), W(1), W(2), W(3) } },
	{ 0x00801003u, XG_PM_IDLE_EXIT, { W(0), W(1), W(2), W(3), W(4), W(5) } },
	{ 0x00802001u, XG_IRQ_MOVE_CLEANUP_DELAY, { W(0), W(1), W(2) } },
	{ 0x00802002u, XG_IRQ_MOVE_CLEANUP, { W(0), W(1), W(2) } },
	{ 0x00802003u, XG_IRQ_BIND_VECTOR, { W(0), W(1), W(2), W(3), W(4), W(5) } },
	{ 0x00802004u, XG_IRQ_CLEAR_VECTOR, { W(0), W(1), W(2), W(3), W(4), W(5) } },
	{ 0x00802005u, XG_IRQ_MOVE_FINISH, { W(0), W(1), W(2) } },
	{ 0x00802006u, XG_IRQ_ASSIGN_VECTOR, { W(0), W(1), W(2), W(3), W(4), W(5) } },
	{ 0x00802007u, XG_IRQ_UNMAPPED_VECTOR, { W(0) } },
	{ 0x00802008u, XG_IRQ_HANDLED, { W(0), W(1), W(2) } },
};

#define NR_DECODERS (sizeof(decoders) / sizeof(decoders[0]))

static const struct xen_decoder *decoder_find(uint32_t event)
{
	size_t lo = 0, hi = NR_DECODERS;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (decoders[mid].event == event)
			return &decoders[mid];
		if (decoders[mid].event < event)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int tv_xen_gen_event_of(uint32_t event)
{
	const struct xen_decoder *d = decoder_find(event);

	return d ? TV_XEN_EV_GEN_BASE + d->gen : -1;
}

const struct tv_xen_gen_event *tv_xen_gen_event(int id)
{
	if (id < TV_XEN_EV_GEN_BASE || id >= TV_XEN_EV_GEN_BASE + XG_COUNT)
		return NULL;
	return &gen_events[id - TV_XEN_EV_GEN_BASE];
}

int tv_xen_gen_count(void)
{
	return XG_COUNT;
}

static uint64_t xs_value(const struct xs *s, const struct tv_xen_rec *rec)
{
	/* A word past nr_extra reads as 0 (rec->extra is zero-filled): a short
	 * record from a hostile buffer gives zeros, never bytes of another. */
	uint32_t w = s->word < XT_EXTRA_MAX ? rec->extra[s->word] : 0;
	uint32_t v;

	switch (s->kind) {
	case XS_U32:
		return w;
	case XS_S32:
		return (uint64_t)(int64_t)(int32_t)w;
	case XS_U64:
		return w | (uint64_t)(s->word + 1 < XT_EXTRA_MAX ? rec->extra[s->word + 1] : 0) << 32;
	case XS_BITS:
	case XS_SBITS:
		v = (w >> s->shift) & (s->bits >= 32 ? 0xffffffffu : (1u << s->bits) - 1);
		if (s->kind == XS_SBITS && s->bits < 32 && (v >> (s->bits - 1)) & 1)
			return (uint64_t)(int64_t)(int32_t)(v | ~((1u << s->bits) - 1));
		return v;
	case XS_HAS:
		return rec->nr_extra > s->word;
	}
	return 0;
}

void tv_xen_gen_fill(uint64_t *vals, const struct tv_xen_rec *rec)
{
	const struct xen_decoder *d = decoder_find(rec->event);

	if (!d)
		return;
	for (unsigned int i = 0; i < TV_XEN_GEN_MAX_FIELDS && d->src[i].kind; i++)
		vals[i] = xs_value(&d->src[i], rec);
}

int tv_xen_gen_check(void)
{
	for (size_t i = 0; i < NR_DECODERS; i++) {
		const struct tv_xen_gen_event *g = &gen_events[decoders[i].gen];
		unsigned int nf = 0, ns = 0;

		if (i && decoders[i - 1].event >= decoders[i].event)
			return -(int)i - 1;
		while (nf < TV_XEN_GEN_MAX_FIELDS && g->fields[nf])
			nf++;
		while (ns < TV_XEN_GEN_MAX_FIELDS && decoders[i].src[ns].kind)
			ns++;
		if (nf != ns)
			return -(int)i - 1;
	}
	return 0;
}
