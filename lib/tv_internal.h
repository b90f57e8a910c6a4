/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The library's internal API for its upper layers (kvm/, xen/, sync/,
 * host/): what they may use of lib/ beyond the public header.  Not
 * installed, not exported from libtracevisor.so (doc/architecture.md).
 * lib/'s own private internals (domains, stream sources) are in internal.h.
 */
#ifndef TV_LIB_TV_INTERNAL_H
#define TV_LIB_TV_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tracevisor/tracevisor.h"
#include "session_writer.h"

/* ------------------------------------------------------------------ log */

/*
 * Emit one message through the callback of tv_log_set_callback() (lib/log.c).
 * Threads: callable from any thread.
 */
void tv_log(enum tv_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define tv_err(...)   tv_log(TV_LOG_ERROR, __VA_ARGS__)
#define tv_warn(...)  tv_log(TV_LOG_WARN, __VA_ARGS__)
#define tv_info(...)  tv_log(TV_LOG_INFO, __VA_ARGS__)
#define tv_debug(...) tv_log(TV_LOG_DEBUG, __VA_ARGS__)

/* ------------------------------------------------ writes from mappings */

struct iovec;
/* Per output file: whether its writes go through a copy, and the copy's buffer. */
struct tv_bounce {
	int on;		/* a write from the mapping failed with EFAULT once */
	char *buf;	/* malloc'd on first use; tv_bounce_free() */
};
#define TV_WRITE_MAPPED_MAX_IOV 8
/*
 * tv_write_mapped - write @n (at most 8) pieces of memory, maybe a foreign
 * or device mapping, to @fd whole (lib/write_mapped.c)
 * @b: the file's state, zeroed at its open
 *
 * One writev from the memory itself; where the file system cannot take
 * that (EFAULT: 9p, NFS direct I/O cannot pin VM_PFNMAP pages), the bytes
 * go through a copy, for this file from then on, silently.
 * Threads: one thread per @b.  Return: 0 or -errno (nothing logged).
 */
int tv_write_mapped(int fd, const struct iovec *iov, int n, struct tv_bounce *b);
/* @len bytes at @buf to @fd whole, short writes and EINTR resumed: 0 or -errno. */
int tv_write_all(int fd, const void *buf, size_t len);
void tv_bounce_free(struct tv_bounce *b);

/*
 * Errors logged by this thread between tv_log_capture_begin() and
 * tv_log_capture_end() do not reach the callback: the first is kept in
 * @first and all are counted, so that a caller that turns a failure into
 * something else (a guest domain quarantined, a guest rejected) says it in
 * one line of its own.  Captures nest; other threads log as usual.
 */
struct tv_log_capture {
	char first[512];
	unsigned int errors;
	struct tv_log_capture *prev;
};
void tv_log_capture_begin(struct tv_log_capture *c);
void tv_log_capture_end(struct tv_log_capture *c);

/* --------------------------------------------------------------- arrays */

/* The TSC now, as the x86-tsc trace clock reads it (0 off x86). */
static inline uint64_t tv_tsc_read(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	/* lfence: the TSC is read after what comes before it */
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
#else
	return 0;
#endif
}

/*
 * Room for one more element in the array whose address is @arrp (a T **
 * holding @n of @cap elements of @size bytes), doubling from @first.
 * Return 0, or -ENOMEM with the array and *@cap unchanged.
 */
static inline int tv_array_grow(void *arrp, size_t *cap, size_t n, size_t size, size_t first)
{
	void *old, *grown;
	size_t want;

	if (n < *cap)
		return 0;
	want = *cap ? *cap * 2 : first;
	memcpy(&old, arrp, sizeof(old));
	grown = realloc(old, want * size);
	if (!grown)
		return -ENOMEM;
	memcpy(arrp, &grown, sizeof(grown));
	*cap = want;
	return 0;
}

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/*
 * A kvm_exit reason as the analyses name it: "io", "EPT_VIOLATION", or
 * "svm:0x3ff" when unknown (lib/exit_reasons.c).
 */
void tv_kvm_exit_reason_label(enum tv_kvm_isa isa, uint64_t code, char *buf, size_t size);

/* ------------------------------------------------------ session files */

/* The entry of thread @tid in @map, added (vcpu -1) if new; NULL: no memory. */
struct tv_vcpu_thread *tv_vcpu_map_slot(struct tv_vcpu_map *map, pid_t tid);

/*
 * tv_domain_check - would the session reader decode domain directory @dir?
 * @dir: SESSION/SUBDIR, with its header_page and events/ (lib/domain.c)
 * @meta: its meta as it will be written (ncpus, subbuf_size, long_size,
 *        kind), or NULL to read @dir/meta; stays the caller's
 * @why: room for the reason, the reader's own one-line error
 *
 * The reader's own checks and parser (formats in a child process first),
 * so that a recorder says at once what the reader would refuse.  Nothing
 * is logged.  Return: 0, -ENOMEM, or another -errno with @why set.
 */
int tv_domain_check(const char *dir, const struct tv_meta *meta, char *why, size_t size);

/**
 * tv_file_create_at - create a file for writing inside a session, never
 *   through a link planted there (lib/session_file.c)
 * @dfd: the directory @path is relative to, or AT_FDCWD
 * @path: the file; a regular file already there is removed first, a
 *   symbolic link (or a directory, FIFO...) refused
 * @shown: @path as the error says it (the whole path when @dfd is a directory)
 * @flags: more open(2) flags (O_APPEND...), or 0
 * @what: what the file is, for the error ("metadata file", "stream file")
 *
 * Opened O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode 0644:
 * always a new file of this process, so neither a symlink nor a hard link
 * at @path makes it write elsewhere.  Return: the fd (the caller closes
 * it), or -errno with one line logged naming @what and @shown (-ELOOP: a
 * symbolic link is there).
 */
int tv_file_create_at(int dfd, const char *path, const char *shown, int flags, const char *what);
/* tv_file_create_at() of @path relative to the working directory. */
int tv_file_create(const char *path, int flags, const char *what);
/* The same as a stdio stream for writing (fclose() it); NULL with errno set, logged. */
FILE *tv_file_fcreate(const char *path, const char *what);

/* rm -r of a directory tree this process created (lib/session_dir.c). */
int tv_session_remove_tree(const char *path);

/*
 * Following a temporary session (tv_reader_open_follow()): give back the
 * disk space of what the reader is done with in every stream file, so that
 * a live view running for hours takes no more disk than an interval's
 * worth (lib/reader.c).  The files keep their size; the reader reads on at
 * its offsets.  Best effort: a file system without hole punching keeps the
 * data (said at debug level).
 */
void tv_reader_follow_release_read(const struct tv_reader *rd);
/*
 * A reader of domain @subdir of the session alone, in the reference clock
 * when synchronised (a second look at one domain, e.g. where its trace
 * ends).  Return: 0, -ENOENT (no such domain, logged) or -errno.
 */
int tv_reader_open_domain(const char *dir, const char *subdir, struct tv_reader **out);

/* ------------------------------------------------------ sync markers */

struct tv_sync_marker;
/* tv_sync_marker_decode() of an ftrace:raw_data event's record (lib/wall_clock.c). */
int tv_sync_marker_of_event(const struct tv_event *ev, struct tv_sync_marker *m);


/* ------------------------------------------- user-space tracer domains */

/*
 * A traced process's domain directory ust-PARENT-PID/ of kind "ust"
 * (lib/ust_session.c, doc/session-format.md), written by the thread that
 * consumes the process (lib/ust_consumer.h).
 */
struct tv_ust_domain;
struct tv_ust_consumer;
struct tv_ust_shm_header;
/*
 * tv_ust_domain_create - make SESSION/ust-@parent-PID/ (header_page, events/)
 * @hdr: the process's checked header (tv_ust_consumer.hdr)
 * Return: 0 with *@out (free with tv_ust_domain_free()), or -errno (logged).
 */
int tv_ust_domain_create(const char *session_dir, const char *parent,
			 const struct tv_ust_shm_header *hdr, struct tv_ust_domain **out);
/* Write the format file of every event of @c not written yet: 0 or -errno (logged). */
int tv_ust_domain_add_events(struct tv_ust_domain *d, const struct tv_ust_consumer *c);
/*
 * Append one sub-buffer (hdr.subbuf_size bytes, records checked) of buffer
 * @b.  A domain holds at most TV_UST_DOMAIN_MAX_FDS stream files open at
 * once (a process with 1024 buffers does not take 1024 descriptors): past
 * that, its open ones are closed and reopened for appending when written
 * again.
 */
#define TV_UST_DOMAIN_MAX_FDS 16
int tv_ust_domain_write(struct tv_ust_domain *d, unsigned int b, const void *subbuf);
/* Close its open stream files (reopened for appending by the next write). */
void tv_ust_domain_close_files(struct tv_ust_domain *d);
/*
 * tv_ust_domain_finish - close the stream files, write saved_cmdlines,
 * saved_tgids and meta
 * @lost: per buffer, events the writer discarded (NULL: none known)
 * @status: "complete", "recovered" (the process died first) or "truncated: WHY"
 * @local: the process runs on this machine (thread names from /proc)
 */
int tv_ust_domain_finish(struct tv_ust_domain *d, const struct tv_ust_consumer *c,
			 const uint64_t *lost, const char *status, int local);
const char *tv_ust_domain_subdir(const struct tv_ust_domain *d);
void tv_ust_domain_free(struct tv_ust_domain *d);

/*
 * Xen's common time line (lib/xen_line.c, doc/sync-probes.md): a reader of
 * a Xen session whose pCPUs' system times differ stamps Xen's records with
 * pCPU 0's system time at their TSC.  tv_reader_xen_line() is that line
 * (NULL: none, nothing moved; owned by the reader);
 * tv_xen_line_pcpu_offset() is pCPU @cpu's system time minus the line's at
 * the TSC where the line reads @common_ns (0 for pCPU 0 or an unknown one).
 * tv_reader_open_on_line() opens @dir raw (no clock maps) but with each
 * pvclock domain of @res that has xen_line set moved to the line by its
 * pvclock_ns; the caller closes it.
 */
struct tv_xen_line;
const struct tv_xen_line *tv_reader_xen_line(const struct tv_reader *rd);
int64_t tv_xen_line_pcpu_offset(const struct tv_xen_line *l, int cpu, uint64_t common_ns);
int tv_reader_open_on_line(const char *dir, const struct tv_sync_result *res,
			   struct tv_reader **out);
/*
 * tv_reader_open_raw(), or tv_reader_open_on_line() when @line is not NULL,
 * without the traced processes' domains (ust-*): they hold no clock probes
 * and read their parent's clock, so a sync estimate can do without them.
 */
int tv_reader_open_probes(const char *dir, const struct tv_sync_result *line,
			  struct tv_reader **out);

#endif
