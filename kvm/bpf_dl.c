// SPDX-License-Identifier: LGPL-2.1
/* libbpf loaded on first use (bpf_dl.h says why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#define TV_BPF_DL_IMPL
#include "tv_internal.h"
#include "bpf_dl.h"

struct tv_bpf_api tv_bpf;

static pthread_once_t bpf_once = PTHREAD_ONCE_INIT;
static int bpf_loaded;

static void bpf_load_once(void)
{
	void *h = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		tv_err("Cannot load libbpf.so.1 for the BPF programs: %s", dlerror());
		bpf_loaded = -ENOENT;
		return;
	}
	/* a function pointer from dlsym()'s object pointer: POSIX allows it */
#define TV_BPF_SYM(ret, name, args)                                             \
	*(void **)&tv_bpf.name = dlsym(h, #name);                                      \
	if (!tv_bpf.name) {                                                            \
		tv_err("Cannot load %s from libbpf.so.1: %s", #name, dlerror());       \
		bpf_loaded = -ENOENT;                                                  \
		return;                                                                \
	}
	TV_BPF_FUNCS(TV_BPF_SYM)
#undef TV_BPF_SYM
}

int tv_bpf_load(void)
{
	pthread_once(&bpf_once, bpf_load_once);
	return bpf_loaded;
}
