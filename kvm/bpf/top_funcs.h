/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * What kvm/bpf/top_funcs.bpf.c (in the kernel) and kvm/top_bpf.c share
 * beyond kvm/bpf/top_exits.h: a function's row has the exits' key and
 * value (struct top_key, struct top_val), so one reading and one
 * difference serve both; its key says "function" by its isa.
 */
#ifndef TV_KVM_BPF_TOP_FUNCS_H
#define TV_KVM_BPF_TOP_FUNCS_H

/*
 * struct top_key of a function row: tgid the process, vcpu 0, reason the
 * function's index in top's list, isa TOP_KEY_FUNC (never an exit's isa,
 * 1 VMX or 2 SVM).
 */
#define TOP_KEY_FUNC 0x66756e63u	/* "func" */

/* Rows (process, function); each holds a histogram of about 8 KB. */
#define TOP_FN_MAX_ROWS 1024

/* Functions timed at once: the cookie / cfg_func values 0..TOP_FN_MAX-1. */
#define TOP_FN_MAX 64

#endif
