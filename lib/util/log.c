// SPDX-License-Identifier: LGPL-2.1
/*
 * Library logging: one replaceable callback, so that library code never
 * writes to stderr itself (the CLI installs a callback that does).
 *
 * Threads: tv_log() is called from any thread (capture threads, the guest
 * stream threads, the Xen drain thread), so the callback, its context and
 * the level are C11 atomics: a reader sees either the old or the new value
 * of each, never a torn one.  The callback and its context are two stores:
 * a caller that changes both while library threads run may see one message
 * go to the new function with the old context; set the callback before
 * recording starts (the CLI does it first thing in main()).
 *
 * errno: tv_log() saves errno before formatting and restores it after the
 * callback returns (as libbpf's libbpf_print() does), so that a callback
 * that touches errno (stdio, a logging framework) cannot change the
 * diagnosis of the caller, which may still read errno after logging.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

static _Atomic(tv_log_fn) log_fn;
static void *_Atomic log_ctx;
static _Atomic int log_max = TV_LOG_WARN;
/* This thread's capture of errors (tv_log_capture_begin()), or NULL. */
static __thread struct tv_log_capture *log_capture;

void tv_log_capture_begin(struct tv_log_capture *c)
{
	c->first[0] = '\0';
	c->errors = 0;
	c->prev = log_capture;
	log_capture = c;
}

void tv_log_capture_end(struct tv_log_capture *c)
{
	log_capture = c->prev;
}

void tv_log_set_callback(tv_log_fn fn, void *ctx)
{
	/* Context first: a thread that sees the new function sees its context
	 * (release store of fn, acquire load in tv_log()). */
	atomic_store_explicit(&log_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&log_fn, fn, memory_order_release);
}

void tv_log_set_level(enum tv_log_level max_level)
{
	atomic_store_explicit(&log_max, (int)max_level, memory_order_relaxed);
}

void tv_log(enum tv_log_level level, const char *fmt, ...)
{
	int saved_errno = errno;
	tv_log_fn fn = atomic_load_explicit(&log_fn, memory_order_acquire);
	char msg[1024];
	va_list ap;

	if (level == TV_LOG_ERROR && log_capture) {
		/* kept for the caller, who says it its own way (one line) */
		if (!log_capture->errors++) {
			va_start(ap, fmt);
			vsnprintf(log_capture->first, sizeof(log_capture->first), fmt, ap);
			va_end(ap);
		}
		errno = saved_errno;
		return;
	}
	if (!fn || (int)level > atomic_load_explicit(&log_max, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(level, msg, atomic_load_explicit(&log_ctx, memory_order_relaxed));
	errno = saved_errno;
}
