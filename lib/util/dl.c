// SPDX-License-Identifier: LGPL-2.1
/*
 * Libraries only some commands use, loaded with dlopen() by the first use
 * (tv_dl_load, lib/tv_internal.h): host/serve_dl.h (serve's web config and
 * alerts), kvm/bpf_dl.h (libbpf), lib/format/compress.c (libzstd).
 * Linked, every command loaded them: `record --xen` in a PV dom0 paid for
 * their mappings and symbol lookups before recording anything
 * (bench/xen-bench, startup row).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "tv_internal.h"

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;

static int dl_fill(const char *what, const struct tv_dl_sym *syms, size_t n)
{
	const char *lib = NULL;
	void *h = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!lib || strcmp(lib, syms[i].lib)) {
			lib = syms[i].lib;
			h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
			if (!h) {
				tv_err("Cannot load %s for %s: %s", lib, what, dlerror());
				return -ENOENT;
			}
		}
		/* a function pointer from dlsym()'s object pointer: POSIX allows it */
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			tv_err("Cannot load %s from %s for %s: %s", syms[i].name, lib, what, dlerror());
			return -ENOENT;
		}
	}
	return 0;
}

int tv_dl_load(struct tv_dl_once *once, const char *what, const struct tv_dl_sym *syms, size_t n)
{
	if (!__atomic_load_n(&once->done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&dl_lock);
		if (!once->done) {
			once->ret = dl_fill(what, syms, n);
			/* the slots and ret before done, for the lock-free check above */
			__atomic_store_n(&once->done, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&dl_lock);
	}
	return once->ret;
}
