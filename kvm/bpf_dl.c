// SPDX-License-Identifier: LGPL-2.1
/* libbpf loaded on first use (bpf_dl.h says why). */
#define _GNU_SOURCE
#define TV_BPF_DL_IMPL
#include "tv_internal.h"
#include "bpf_dl.h"

struct tv_bpf_api tv_bpf;

#define TV_BPF_SYM(ret, name, args) { "libbpf.so.1", #name, (void **)&tv_bpf.name },
static const struct tv_dl_sym bpf_syms[] = { TV_BPF_FUNCS(TV_BPF_SYM) };
#undef TV_BPF_SYM

int tv_bpf_load(void)
{
	static struct tv_dl_once once;

	return tv_dl_load(&once, "the BPF programs", bpf_syms, sizeof(bpf_syms) / sizeof(bpf_syms[0]));
}
