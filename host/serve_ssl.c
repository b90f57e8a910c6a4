// SPDX-License-Identifier: LGPL-2.1
/*
 * OpenSSL and libcrypt loaded on first use (serve_ssl.h says why).  The
 * sonames are the ones the build's headers belong to (OpenSSL 3,
 * libxcrypt 1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#define SERVE_SSL_IMPL
#include "tv_internal.h"
#include "serve_ssl.h"

struct serve_ssl_api serve_ssl;

static pthread_once_t ssl_once = PTHREAD_ONCE_INIT;
static int ssl_loaded;

static void ssl_load_once(void)
{
	void *libssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
	void *libcrypt = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!libssl || !libcrypt) {
		tv_err("Cannot load %s for the web config (TLS, auth): %s", libssl ? "libcrypt.so.1" : "libssl.so.3",
		       dlerror());
		ssl_loaded = -ENOENT;
		return;
	}
	/* a function pointer from dlsym()'s object pointer: POSIX allows it */
#define SERVE_SSL_SYM(lib, ret, name, args)                                                     \
	*(void **)&serve_ssl.name = dlsym(lib, #name);                                         \
	if (!serve_ssl.name) {                                                                 \
		tv_err("Cannot load %s from %s: %s", #name, #lib, dlerror());                  \
		ssl_loaded = -ENOENT;                                                          \
		return;                                                                        \
	}
	SERVE_SSL_FUNCS(SERVE_SSL_SYM)
#undef SERVE_SSL_SYM
}

int serve_ssl_load(void)
{
	pthread_once(&ssl_once, ssl_load_once);
	return ssl_loaded;
}
