/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * A session directory on disk (doc/session-format.md): its key=value
 * metadata files, salvaging a killed recorder's session, compressing one.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_SESSION_H
#define TRACEVISOR_SESSION_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/session.h>"
#endif

#include <stdint.h>

#pragma GCC visibility push(default)

/* key=value metadata files (DIR/session.meta, DIR/DOMAIN/meta). */
struct tv_meta;

/**
 * tv_meta_new - an empty key=value set
 *
 * Return: the set, owned by the caller (tv_meta_free()), or NULL (ENOMEM).
 */
struct tv_meta *tv_meta_new(void);

/**
 * tv_meta_free - free @meta and every string tv_meta_get() returned from it
 * @meta: a set, or NULL
 */
void tv_meta_free(struct tv_meta *meta);

/**
 * tv_meta_set - set @key to a printf-formatted value, replacing any old one
 * @meta: the set
 * @key: key name (copied)
 * @fmt: value format (the value is copied)
 *
 * Return: 0 or -ENOMEM.
 */
int tv_meta_set(struct tv_meta *meta, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * tv_meta_get - the value of @key
 * @meta: the set
 * @key: key name
 *
 * Return: a string owned by @meta, valid until @key is set again or @meta
 * is freed; NULL when absent.
 */
const char *tv_meta_get(const struct tv_meta *meta, const char *key);

/**
 * tv_meta_get_ll - the value of @key as an integer
 * @meta: the set
 * @key: key name
 * @def: returned when @key is absent or not a number
 */
long long tv_meta_get_ll(const struct tv_meta *meta, const char *key, long long def);

/**
 * tv_meta_write - write @meta to @path atomically (temporary file + rename)
 * @meta: the set
 * @path: file to create or replace
 *
 * @path.tmp is created new (O_EXCL | O_NOFOLLOW, a regular file left
 * there removed first), synced, and renamed over @path: neither a symlink
 * at @path.tmp nor one at @path makes it write elsewhere.
 * Return: 0 or -errno (logged; -ELOOP: a symbolic link at @path.tmp).
 */
int tv_meta_write(const struct tv_meta *meta, const char *path);

/**
 * tv_meta_read - read a key=value file
 * @path: the file
 * @out: the new set, owned by the caller (tv_meta_free())
 *
 * Return: 0, or -errno (logged; -ENOENT for a missing file).
 */
int tv_meta_read(const char *path, struct tv_meta **out);

/* What tv_session_recover() salvaged. */
struct tv_recover_stats {
	int pid;			/* the killed recorder's */
	char instance[64];		/* its tracefs instance, now removed */
	int ncpus;
	uint64_t bytes;			/* appended to DIR/host/cpuN.raw */
	uint64_t salvaged_events;	/* of @events, those the recovery read */
	uint64_t events;		/* the kernel's count of events read from the buffers */
	uint64_t lost;			/* the kernel's overrun + dropped counts */
};

/**
 * tv_session_recover - salvage a killed recorder's trace into its session
 * @dir: the session directory a host recorder was writing when killed
 * @st: filled with what was salvaged (caller-owned)
 *
 * The session's DIR/recorder file names the recorder (pid, start time,
 * boot) and its tracefs instance.  Once the recorder is known dead, tracing
 * in the instance is turned off, what its per-CPU buffers still hold is
 * appended to DIR/host/cpuN.raw in whole sub-buffers, DIR/host/meta is
 * rewritten with status=recovered and the kernel's counts, and the
 * instance is removed.  The session stays without session.meta: readers
 * still say it is incomplete.  Needs root.
 * Return: 0; -ENOENT (not a recording with a recorder file, or its
 * instance is gone), -EBUSY (the recorder still runs, or another process
 * is salvaging it), -EEXIST (the session is complete), -EALREADY (already
 * recovered), or another -errno; every failure logged in one line.
 */
int tv_session_recover(const char *dir, struct tv_recover_stats *st);

struct tv_compress_stats {
	uint64_t files;		/* stream files compressed */
	uint64_t bytes_in;	/* their raw size */
	uint64_t bytes_out;	/* and compressed */
};

/**
 * tv_session_compress - compress every cpuN.raw of session @dir to cpuN.raw.zst
 * @dir: a complete session (its session.meta lists the domains)
 * @st: what was compressed (caller's storage)
 *
 * Each file is written aside, synced and renamed before its raw file is
 * removed: an interrupted run leaves every stream readable, once.  Readers
 * take either form.  Threads: no reader of @dir may run meanwhile.
 * Return: 0 or -errno (logged).
 */
int tv_session_compress(const char *dir, struct tv_compress_stats *st);

#pragma GCC visibility pop

#endif /* TRACEVISOR_SESSION_H */
