// SPDX-License-Identifier: LGPL-2.1
/*
 * The library's messages: one line each to the application's callback, or
 * to stderr when TRACEVISOR_UST_LOG=1, otherwise nowhere (a tracer must not
 * write into its application's output).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ust_internal.h"

/* Set before tracing starts; read with atomics as a pair that may tear only
 * between two messages. */
static tv_ust_log_fn ust_log_fn;
static void *ust_log_ctx;

void tv_ust_log_set_callback(tv_ust_log_fn fn, void *ctx)
{
	__atomic_store_n(&ust_log_ctx, ctx, __ATOMIC_RELAXED);
	/* release: the context before the function that uses it */
	__atomic_store_n(&ust_log_fn, fn, __ATOMIC_RELEASE);
}

void ust_log(const char *fmt, ...)
{
	/* acquire: pairs with the release above (its context is the one set with it) */
	tv_ust_log_fn fn = __atomic_load_n(&ust_log_fn, __ATOMIC_ACQUIRE);
	const char *env;
	char line[512];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (fn) {
		fn(line, __atomic_load_n(&ust_log_ctx, __ATOMIC_RELAXED));
	} else {
		env = getenv("TRACEVISOR_UST_LOG");
		if (env && !strcmp(env, "1"))
			fprintf(stderr, "libtracevisor-ust: %s\n", line);
	}
	errno = saved;
}
