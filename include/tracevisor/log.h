/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Library messages: where they go and how many (process-wide settings).
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_LOG_H
#define TRACEVISOR_LOG_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/log.h>"
#endif

#pragma GCC visibility push(default)

enum tv_log_level {
	TV_LOG_ERROR,
	TV_LOG_WARN,
	TV_LOG_INFO,
	TV_LOG_DEBUG,
};

typedef void (*tv_log_fn)(enum tv_log_level level, const char *msg, void *ctx);

/**
 * tv_log_set_callback - route library messages to @fn
 * @fn: receives one formatted line (no trailing newline); NULL silences
 * @ctx: passed back to @fn
 *
 * errno: tv_log() keeps errno across the callback (saved before, restored
 * after), so @fn may call anything that touches errno.
 *
 * Threads: @fn is called from whichever thread logs, including the
 * library's own threads (capture, guest stream, Xen drain): it must be
 * thread-safe.  The function, its context and the level are atomics; set
 * them before recording starts, as a pair that changes while library
 * threads run may deliver one message to the new @fn with the old @ctx.
 */
void tv_log_set_callback(tv_log_fn fn, void *ctx);

/**
 * tv_log_set_level - drop messages less severe than @max_level
 * @max_level: TV_LOG_ERROR shows errors only, TV_LOG_DEBUG everything
 *
 * Threads: process-wide, as tv_log_set_callback().
 */
void tv_log_set_level(enum tv_log_level max_level);

#pragma GCC visibility pop

#endif /* TRACEVISOR_LOG_H */
