// SPDX-License-Identifier: LGPL-2.1
/*
 * serve's libraries loaded on first use (serve_dl.h says why).  The sonames
 * are the ones the build's headers belong to (OpenSSL 3, libxcrypt 1,
 * libyaml 0.2, json-c 5).
 */
#define _GNU_SOURCE
#define SERVE_DL_IMPL
#include "tv_internal.h"
#include "serve_dl.h"

#define libssl "libssl.so.3"
#define libcrypt "libcrypt.so.1"
#define libyaml "libyaml-0.so.2"
#define libjson "libjson-c.so.5"

struct serve_dl_api serve_dl;

#define SERVE_DL_SYM(lib, ret, name, args) { lib, #name, (void **)&serve_dl.name },
static const struct tv_dl_sym serve_syms[] = { SERVE_DL_FUNCS(SERVE_DL_SYM) };
#undef SERVE_DL_SYM

int serve_dl_load(void)
{
	static struct tv_dl_once once;

	return tv_dl_load(&once, "serve's web config and alerts", serve_syms,
			  sizeof(serve_syms) / sizeof(serve_syms[0]));
}
