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
#include "write_all.h"

/* ------------------------------------------------------------------ log */

/*
 * Emit one message through the callback of tv_log_set_callback() (lib/util/log.c).
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

/* One function of a library loaded at run time: dlsym(@lib, @name) into *@slot. */
struct tv_dl_sym {
	const char *lib;	/* its soname, e.g. "libzstd.so.1" */
	const char *name;
	void **slot;		/* the caller's pointer (a function pointer's storage) */
};
/* Whether a set of symbols is loaded: zero-initialised, static. */
struct tv_dl_once {
	int done;	/* atomic: ret is set */
	int ret;
};
/*
 * tv_dl_load - dlopen() each @syms[i].lib (RTLD_NOW, RTLD_LOCAL; they stay
 * loaded until exit) and fill every slot, the first time for @once; later
 * calls return the first one's result.  @what names the use for errors.
 * Threads: any.  Return: 0, or -ENOENT when a library or a name is missing
 * (logged once, naming which).
 */
int tv_dl_load(struct tv_dl_once *once, const char *what, const struct tv_dl_sym *syms, size_t n);
/*
 * tv_write_mapped - write @n (at most 8) pieces of memory, maybe a foreign
 * or device mapping, to @fd whole (lib/util/write_mapped.c)
 * @b: the file's state, zeroed at its open
 *
 * One writev from the memory itself; where the file system cannot take
 * that (EFAULT: 9p, NFS direct I/O cannot pin VM_PFNMAP pages), the bytes
 * go through a copy, for this file from then on, silently.
 * Threads: one thread per @b.  Return: 0 or -errno (nothing logged).
 */
int tv_write_mapped(int fd, const struct iovec *iov, int n, struct tv_bounce *b);
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

/* ------------------------------------------------------ exit reasons */

enum tv_kvm_isa {
	TV_KVM_ISA_UNKNOWN = 0,
	TV_KVM_ISA_VMX = 1,	/* values of kvm_exit's isa field */
	TV_KVM_ISA_SVM = 2,
};

/**
 * tv_kvm_exit_reason_name - name of a kvm_exit reason
 * @isa: VMX or SVM
 * @code: exit code
 *
 * Return: a static string, or NULL when the code is not known.
 */
const char *tv_kvm_exit_reason_name(enum tv_kvm_isa isa, uint64_t code);

/**
 * tv_kvm_userspace_exit_name - name of a KVM_EXIT_* user-space exit reason
 * @reason: the reason
 *
 * Return: a static string, or NULL.
 */
const char *tv_kvm_userspace_exit_name(uint64_t reason);

/*
 * A kvm_exit reason as the analyses name it: "io", "EPT_VIOLATION", or
 * "svm:0x3ff" when unknown (lib/format/exit_reasons.c).
 */
void tv_kvm_exit_reason_label(enum tv_kvm_isa isa, uint64_t code, char *buf, size_t size);

/* ------------------------------------------------------ session files */

/* The entry of thread @tid in @map, added (vcpu -1) if new; NULL: no memory. */
struct tv_vcpu_thread *tv_vcpu_map_slot(struct tv_vcpu_map *map, pid_t tid);

/*
 * tv_domain_check - would the session reader decode domain directory @dir?
 * @dir: SESSION/SUBDIR, with its header_page and events/ (lib/reader/domain.c)
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
 *   through a link planted there (lib/format/session_file.c)
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

/* rm -r of a directory tree this process created (lib/format/session_dir.c). */
int tv_session_remove_tree(const char *path);

/*
 * Following a temporary session (tv_reader_open_follow()): give back the
 * disk space of what the reader is done with in every stream file, so that
 * a live view running for hours takes no more disk than an interval's
 * worth (lib/reader/reader.c).  The files keep their size; the reader reads on at
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
/* tv_sync_marker_decode() of an ftrace:raw_data event's record (lib/reader/wall_clock.c). */
int tv_sync_marker_of_event(const struct tv_event *ev, struct tv_sync_marker *m);


/* ------------------------------------------- user-space tracer domains */

/*
 * A traced process's domain directory ust-PARENT-PID/ of kind "ust"
 * (lib/ust/ust_session.c, doc/session-format.md), written by the thread that
 * consumes the process (lib/ust/ust_consumer.h).
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
 * Xen's common time line (lib/reader/xen_line.c, doc/sync-probes.md): a reader of
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
/*
 * tv_reader_open_on_line() (@no_ust: without the ust-* domains, as
 * tv_reader_open_probes()) that does not read the xen/ domain's records:
 * the line moves only the pvclock domains, so Xen's records are what a
 * raw reader of the same session gave, and sync's second scan keeps those
 * of its first instead of decoding them again (sync/sync_session.c).  The
 * xen/ domain stays in the reader (its index, meta and line), eventless.
 */
int tv_reader_open_moved(const char *dir, const struct tv_sync_result *line, int no_ust,
			 struct tv_reader **out);

/* ------------------------------------------- beyond the public header
 *
 * lib/'s functions its upper layers and unit tests use that no client
 * program needs (tests/unit/check-exports.sh): hidden in libtracevisor.so,
 * reachable through the static library.
 */

/**
 * tv_session_write_meta - write DIR/session.meta; written last, its presence
 * marks a complete session
 * @session_dir: the session
 * @domains: comma-separated domain subdirectories, in order
 * @reference: the domain whose clock is the reference
 *
 * Return: 0 or -errno (logged).
 */
int tv_session_write_meta(const char *session_dir, const char *domains, const char *reference);
/* The same with @extra, "key=value\n" lines (or NULL), after the standard keys. */
int tv_session_write_meta_extra(const char *session_dir, const char *domains, const char *reference,
				const char *extra);

/**
 * tv_vcpu_map_add - add (or update) thread @tid as vCPU @vcpu of @vm_pid
 * @map: the map (may reallocate map->threads)
 * @tid: the thread
 * @vm_pid: its VMM process
 * @vcpu: vCPU index, -1 when unknown
 *
 * Return: 0 or -ENOMEM.
 */
int tv_vcpu_map_add(struct tv_vcpu_map *map, pid_t tid, pid_t vm_pid, int vcpu);

/**
 * tv_vcpu_map_write - write @map as a vcpus file (doc/session-format.md)
 * @map: the map
 * @path: the file
 *
 * Return: 0 or -errno (logged).
 */
int tv_vcpu_map_write(const struct tv_vcpu_map *map, const char *path);

/**
 * tv_vcpu_map_read - read a vcpus file into @map
 * @map: merged into; the caller owns its storage (tv_vcpu_map_free())
 * @path: the file
 *
 * Malformed lines are skipped with a warning.
 * Return: 0, -errno (-ENOENT: no file) or -ENOMEM.
 */
int tv_vcpu_map_read(struct tv_vcpu_map *map, const char *path);

/**
 * tv_vcpu_map_find - the entry of thread @tid
 * @map: the map, or NULL
 * @tid: the thread
 *
 * Return: an entry owned by @map (valid until it changes), or NULL.
 */
const struct tv_vcpu_thread *tv_vcpu_map_find(const struct tv_vcpu_map *map, pid_t tid);

/**
 * tv_vcpu_map_free - free the map's threads and empty it
 * @map: the map (the struct itself is the caller's)
 */
void tv_vcpu_map_free(struct tv_vcpu_map *map);

/**
 * tv_clock_map_apply - map @ts of a domain's clock to the reference clock
 * @map: the map
 * @ts: domain time
 *
 * Return: the reference time, saturated at 0 and INT64_MAX.
 */
uint64_t tv_clock_map_apply(const struct tv_clock_map *map, uint64_t ts);

/**
 * tv_clock_map_compose - @outer after @inner: dom --inner--> mid --outer--> ref
 * @outer: mid to ref
 * @inner: dom to mid
 * @out: the composition (may not alias the inputs)
 */
void tv_clock_map_compose(const struct tv_clock_map *outer, const struct tv_clock_map *inner,
			  struct tv_clock_map *out);

/**
 * tv_tsc_guest_from_host - the guest TSC for host TSC @host_tsc
 * @p: the vCPU's offset and scaling
 * @host_tsc: host TSC
 */
uint64_t tv_tsc_guest_from_host(const struct tv_tsc_params *p, uint64_t host_tsc);

/**
 * tv_tsc_host_from_guest - the smallest host TSC whose guest TSC is >= @guest_tsc
 * @p: the vCPU's offset and scaling
 * @guest_tsc: guest TSC
 *
 * An exact inverse of tv_tsc_guest_from_host().
 */
uint64_t tv_tsc_host_from_guest(const struct tv_tsc_params *p, uint64_t guest_tsc);

/**
 * tv_sync_domain_apply - @ts of domain @d in the reference clock
 * @d: a domain's result (map, pieces or TSC relation)
 * @ts: domain time
 */
uint64_t tv_sync_domain_apply(const struct tv_sync_domain *d, uint64_t ts);

/**
 * tv_sync_domain_apply_cpu - the same for an event of guest CPU @cpu
 * @d: a domain's result
 * @cpu: the guest CPU, -1 when unknown
 * @ts: domain time
 *
 * With the TSC relation each vCPU has its own offset history (a CPU
 * without one uses the lowest vCPU's).
 */
uint64_t tv_sync_domain_apply_cpu(const struct tv_sync_domain *d, int cpu, uint64_t ts);

/*
 * Where one guest CPU's stream of events is in its vCPU's TSC offset
 * history.  KVM may move a vCPU's TSC back (an offset written from a stale
 * guest TSC, a host-initiated TSC write), so that guest times of two
 * segments overlap: which offset applies then depends on the events before.
 * Zero-initialise one per guest CPU stream; owned by its caller, one thread.
 */
struct tv_tsc_cursor {
	size_t lo, hi;		/* the segments the stream can be in now */
	uint64_t last_ts;	/* the last event's domain time, 0 after a step back */
	unsigned int backs;	/* steps back so far */
	int valid;		/* lo and hi are set */
};

/**
 * tv_sync_domain_apply_stream - tv_sync_domain_apply_cpu() for events read in order
 * @d: a domain's result
 * @cpu: the guest CPU, -1 when unknown
 * @ts: domain time of the CPU's next event, in the CPU's own order
 * @cur: that CPU's cursor, updated
 *
 * The same map, but with the TSC relation the segments that moved the
 * guest's TSC back split the vCPU's history into regions, and a stream
 * moves to the next region only where its guest clock goes back (@ts below
 * the previous event's).  Its first event's region is the one the search
 * finds.  Other methods ignore @cur.
 */
uint64_t tv_sync_domain_apply_stream(const struct tv_sync_domain *d, int cpu, uint64_t ts,
				     struct tv_tsc_cursor *cur);

/**
 * tv_tsc_cursor_step_back - the stream's guest clock went back here
 * @d: a domain's result
 * @cpu: the guest CPU
 * @cur: its cursor, started by a tv_sync_domain_apply_stream() call
 *
 * For callers that map only some events of a stream (sync's probes) and
 * counted where it went back: moves @cur to the next region; the next
 * time passed is not compared with the last one.
 */
void tv_tsc_cursor_step_back(const struct tv_sync_domain *d, int cpu, struct tv_tsc_cursor *cur);

/**
 * tv_sync_domain_copy - deep copy (TSC segments, pieces)
 * @dst: the copy; release it with tv_sync_domain_release()
 * @src: the original
 *
 * Return: 0 or -ENOMEM (nothing to release then).
 */
int tv_sync_domain_copy(struct tv_sync_domain *dst, const struct tv_sync_domain *src);

/**
 * tv_sync_domain_release - free what @d owns (TSC segments, pieces)
 * @d: a domain's result; the struct itself is the caller's
 */
void tv_sync_domain_release(struct tv_sync_domain *d);

/**
 * tv_sync_read - read DIR/sync/transforms
 * @dir: session directory
 * @out: the results, owned by the caller (tv_sync_result_free())
 *
 * Return: 0, -ENOENT when the session was never synced, or -errno.
 */
int tv_sync_read(const char *dir, struct tv_sync_result *out);

/**
 * tv_reader_open_raw - tv_reader_open() keeping each domain's own clock
 * @dir: session directory
 * @out: the reader, owned by the caller (tv_reader_close())
 *
 * What the sync estimation reads.  Return: as tv_reader_open().
 */
int tv_reader_open_raw(const char *dir, struct tv_reader **out);

/**
 * tv_reader_open_synced - tv_reader_open() with the transforms of @res
 * @dir: session directory
 * @res: results to map by (usable domains only; copied)
 * @out: the reader, owned by the caller (tv_reader_close())
 *
 * Return: as tv_reader_open().
 */
int tv_reader_open_synced(const char *dir, const struct tv_sync_result *res,
			  struct tv_reader **out);

/**
 * tv_reader_open_follow - read a session while it is being recorded
 * @dir: the session directory a recorder writes (tv_recorder_flush())
 * @out: the reader, owned by the caller (tv_reader_close())
 *
 * Events come in time order up to a limit the caller knows to be complete
 * (tv_reader_next_before()); streams that reach the end of what is written
 * wait for tv_reader_follow_refresh().  Domains of host ftrace kind only;
 * the session is read raw (never synchronised).
 * Return: 0 or -errno (logged).
 */
int tv_reader_open_follow(const char *dir, struct tv_reader **out);

/**
 * tv_reader_follow_refresh - take in what the recorder wrote since
 * @rd: a reader from tv_reader_open_follow()
 *
 * Call it after every flush: every stream sees its file's new length, and
 * the vCPU and task maps are read again (tv_recorder_checkpoint()).
 * Return: 0, -EINVAL (not following), or -errno on a corrupt file (logged).
 */
int tv_reader_follow_refresh(struct tv_reader *rd);

/**
 * tv_reader_next_before - the next event in time order, if before @limit
 * @rd: the reader
 * @limit: events at or after it stay for a later call
 * @ev: as tv_reader_next()
 *
 * For a followed session, @limit is a time up to which every CPU's events
 * are known to be written (a flush after it), so the order stays exact.
 * Return: 1 with @ev filled, 0 when no event before @limit is left,
 * -errno on a corrupt file (logged).
 */
int tv_reader_next_before(struct tv_reader *rd, uint64_t limit, struct tv_event *ev);

/**
 * tv_reader_event_domain - the domain of @ev
 * @rd: the reader
 * @ev: an event from @rd
 *
 * Return: info owned by @rd, or NULL.  (ev->domain_info is the same.)
 */
const struct tv_domain_info *tv_reader_event_domain(const struct tv_reader *rd,
						    const struct tv_event *ev);

/**
 * tv_event_field_u64 - field @name of @ev as an unsigned integer
 * @ev: an event from tv_reader_next()
 * @name: field name
 * @val: the value
 *
 * Never reads outside the record.
 * Return: 0, or -errno (-ENOENT: no such field in the record).
 */
int tv_event_field_u64(const struct tv_event *ev, const char *name, uint64_t *val);

/**
 * tv_event_info_compiled - whether @ev's type is printed by the compiled renderer
 * @ev: an event from tv_reader_next()
 *
 * Return: 1 compiled, 0 printed by libtraceevent.
 */
int tv_event_info_compiled(const struct tv_event *ev);

/**
 * tv_reference_clock_hz - ticks per second of a reference domain's trace clock
 * @ref: the reference domain (tv_reader_domain())
 *
 * Return: 1e9, or the TSC's frequency.
 */
uint64_t tv_reference_clock_hz(const struct tv_domain_info *ref);

/**
 * tv_wall_clock_of_event - the wall clock of a CLOCK_REALTIME marker event
 * @ev: an event of the reference domain
 * @wc: set when @ev is the marker
 *
 * Return: 0, or -ENOMSG when @ev is not the marker.
 */
int tv_wall_clock_of_event(const struct tv_event *ev, struct tv_wall_clock *wc);

#endif
