// SPDX-License-Identifier: LGPL-2.1
/*
 * serve's libraries loaded on first use (serve_dl.h says why).  The
 * sonames are the ones the build's headers belong to (OpenSSL 3, libxcrypt
 * 1, libyaml 0.2, json-c 5).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#define SERVE_DL_IMPL
#include "tv_internal.h"
#include "serve_dl.h"

struct serve_dl_api serve_dl;

static pthread_once_t dl_once = PTHREAD_ONCE_INIT;
static int dl_loaded;

static void dl_load_once(void)
{
	static const char *const names[] = { "libssl.so.3", "libcrypt.so.1", "libyaml-0.so.2",
					     "libjson-c.so.5" };
	void *h[4];

	for (int i = 0; i < 4; i++) {
		h[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!h[i]) {
			tv_err("Cannot load %s for serve's web config and alerts: %s", names[i], dlerror());
			dl_loaded = -ENOENT;
			return;
		}
	}
	void *libssl = h[0], *libcrypt = h[1], *libyaml = h[2], *libjson = h[3];

	/* a function pointer from dlsym()'s object pointer: POSIX allows it */
#define SERVE_DL_SYM(lib, ret, name, args)                                                     \
	*(void **)&serve_dl.name = dlsym(lib, #name);                                         \
	if (!serve_dl.name) {                                                                 \
		tv_err("Cannot load %s from %s: %s", #name, #lib, dlerror());                  \
		dl_loaded = -ENOENT;                                                          \
		return;                                                                        \
	}
	SERVE_DL_FUNCS(SERVE_DL_SYM)
#undef SERVE_DL_SYM
}

int serve_dl_load(void)
{
	pthread_once(&dl_once, dl_load_once);
	return dl_loaded;
}
