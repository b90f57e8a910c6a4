// SPDX-License-Identifier: LGPL-2.1
/*
 * Library logging: one replaceable callback, so that library code never
 * writes to stderr itself (the CLI installs a callback that does).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

static tv_log_fn log_fn;
static void *log_ctx;
static enum tv_log_level log_max = TV_LOG_WARN;

void tv_log_set_callback(tv_log_fn fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

void tv_log_set_level(enum tv_log_level max_level)
{
	log_max = max_level;
}

void tv_log(enum tv_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_fn || level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg, log_ctx);
}
