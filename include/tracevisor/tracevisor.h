/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * tracevisor — tracing virtualised systems across host, hypervisor and guests.
 *
 * This is the one public header of libtracevisor (lib/, kvm/, xen/, sync/,
 * host/; doc/architecture.md): libtracevisor.so exports exactly the
 * functions declared here.  Library functions never print or exit: they
 * return 0 or a negative errno (or NULL with errno set) and report details
 * through the log callback (tv_log_set_callback()).  Only the command-line
 * tools in tools/ exit.
 *
 * Ownership: an object a *_new(), *_create(), *_open() or *_start() function
 * hands out belongs to the caller, who releases it with the matching
 * *_free(), *_destroy() or *_close() (each takes NULL).  A function that
 * hands it out through an @out pointer sets *out to NULL first and to the
 * object only on success: on failure there is nothing to release
 * (CONTRIBUTING.md, "Out-pointers").  Structs the caller passes in (a
 * tv_strbuf, tv_vcpu_map, tv_sync_result, tv_kvm_stat) stay the caller's,
 * and their *_free() / *_release() frees only what the library put in
 * them.  Strings and pointers a function returns point into the object
 * they come from and live as long as it, unless the function says
 * "static" or otherwise.  Input strings are copied unless a function says
 * they must outlive the object.
 *
 * Threads: an object (recorder, guest, reader, meta, hull, strbuf) is used
 * by one thread at a time; distinct objects may be used in different
 * threads at once.  Functions that may be called from any thread say so
 * ("Threads:" in their comment); the log settings are process-wide.
 *
 * A *session* is a directory (doc/session-format.md):
 *   DIR/session.meta            written last: a session without it is incomplete
 *   DIR/host/                   one subdirectory per traced domain
 *       meta                    key=value: clock, ncpus, kernel, tsc_khz, lost...
 *       header_page, header_event
 *       events/SYSTEM/EVENT/format
 *       saved_cmdlines, saved_tgids, vcpus
 *       cpuN.raw                raw ring-buffer sub-buffers, as spliced
 * Later domains (guest-NAME/, xen/) use the same layout beside host/.
 */
#ifndef TRACEVISOR_H
#define TRACEVISOR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

struct tep_handle;
struct tep_event;
struct tep_record;

/*
 * Everything declared below is libtracevisor's exported API; the library is
 * built with -fvisibility=hidden, so what no public declaration names stays
 * inside it (lib/libtracevisor.map lists the same set, with a version).
 */
#pragma GCC visibility push(default)

/* ------------------------------------------------------------------ log */

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

/* --------------------------------------------------------- session meta */

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

/* ----------------------------------------------------------- recording */

#define TV_RECORD_DEFAULT_BUFFER_KB 4096
#define TV_RECORD_DEFAULT_EVENTS "kvm"

struct tv_record_opts {
	const char *outdir;
	const char *const *events;	/* "system", "system:event" or globs, or a
					 * dynamic probe: "kprobe:NAME=SYMBOL[+OFFS]
					 * [ARGS]", "kretprobe:NAME=SYMBOL [$retval]",
					 * "uprobe:NAME=PATH:SYMBOL|OFFSET [ARGS]",
					 * "uretprobe:..." (stored as system "probes") */
	size_t nr_events;		/* 0: TV_RECORD_DEFAULT_EVENTS */
	const char *const *event_filters;	/* NULL, or one per event: the
					 * ftrace filter of events[i] (NULL: @filter) */
	const char *const *time_functions;	/* SYMBOL or PATH:SYMBOL: entry and
					 * return probes, system "func" (stat times them) */
	size_t nr_time_functions;
	const char *filter;		/* ftrace filter expression, or NULL */
	unsigned int buffer_kb;		/* per CPU; 0: default */
	const char *clock;		/* trace clock, NULL: "local" */
	unsigned int wakeup_percent;	/* buffer_percent; 0: default 50 */
};

struct tv_record_cpu_stats {
	uint64_t bytes;		/* raw bytes written */
	uint64_t events;	/* events consumed by the reader ("read events") */
	uint64_t lost;		/* overrun + dropped + commit overrun */
};

/*
 * Threads: a recorder runs one capture thread per CPU between
 * tv_recorder_start() and _stop(); call every tv_recorder_* function from
 * one thread, except tv_recorder_write_marker(), tv_recorder_add_vcpu()
 * and tv_recorder_set_vm_name(), which the guest threads call too (an
 * internal lock covers the vCPU map and VM names; a marker is one write(),
 * atomic in the kernel).  The session directory and session.meta are the
 * session writer's (doc/session-format.md, "who writes what").
 */
struct tv_recorder;

/**
 * tv_recorder_create - prepare a recording: tracefs instance, events, output
 * @opts: what to record and where (copied; the strings must outlive @out)
 * @out: the new recorder, owned by the caller (tv_recorder_destroy())
 *
 * Cleans up stale instances of killed runs, creates this run's own tracefs
 * instance, enables the events and writes the static part of the session
 * (formats, header_page).  Nothing is traced until tv_recorder_start().
 * Threads: create, start, stop and destroy from one thread; the recorder
 * runs one capture thread per CPU of its own between start and stop.
 * Return: 0, or -errno (the instance and the output directory are removed).
 */
int tv_recorder_create(const struct tv_record_opts *opts, struct tv_recorder **out);
/**
 * tv_recorder_start - start tracing and the per-CPU capture threads
 * @rec: a created recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_recorder_start(struct tv_recorder *rec);
/**
 * tv_recorder_stop - stop tracing, flush every CPU, write the metadata
 * @rec: a started recorder
 *
 * Joins the capture threads, writes DIR/host/meta, vcpus, task maps and
 * DIR/session.meta, and counts losses (tv_recorder_cpu_stats()).
 * Return: 0 or -errno (logged).
 */
int tv_recorder_stop(struct tv_recorder *rec);
/**
 * tv_recorder_flush - write everything traced so far into the session
 * @rec: a started recorder
 * @timeout_ms: how long to wait for the capture threads
 *
 * Every capture thread writes what its CPU buffer holds, the partly filled
 * sub-buffer included, so that a reader following the session
 * (tv_reader_open_follow()) sees every event traced before the call.
 * Return: 0, -EINVAL (not recording) or -ETIMEDOUT (logged).
 */
int tv_recorder_flush(struct tv_recorder *rec, int timeout_ms);
/**
 * tv_recorder_checkpoint - write the vCPU map and task maps as they are now
 * @rec: a created recorder
 *
 * tv_recorder_stop() writes them at the end; a live view calls this so that
 * a following reader can name the VMs and vCPUs while the recording runs.
 * Return: 0 or -errno (logged).
 */
int tv_recorder_checkpoint(struct tv_recorder *rec);
/**
 * tv_recorder_destroy - remove the tracefs instance and free @rec
 * @rec: a recorder, started or not, or NULL
 *
 * The session directory stays.
 */
void tv_recorder_destroy(struct tv_recorder *rec);
/**
 * tv_recorder_nr_cpus - the number of CPUs recorded
 * @rec: the recorder
 */
int tv_recorder_nr_cpus(const struct tv_recorder *rec);
/**
 * tv_recorder_cpu_stats - what CPU @cpu's capture wrote and lost
 * @rec: the recorder
 * @cpu: 0 .. tv_recorder_nr_cpus() - 1
 *
 * Return: counters owned by @rec (final after tv_recorder_stop()), or NULL
 * for a CPU out of range.
 */
const struct tv_record_cpu_stats *tv_recorder_cpu_stats(const struct tv_recorder *rec, int cpu);
/**
 * tv_recorder_scan_vcpus - rescan /proc for VM processes while recording
 * @rec: a started recorder
 *
 * VMs started after tv_recorder_start() are added to host/vcpus.
 * Threads: from the thread that drives @rec.
 * Return: 0 or -errno.
 */
int tv_recorder_scan_vcpus(struct tv_recorder *rec);
/**
 * tv_recorder_bytes - bytes captured so far over all CPUs (progress output)
 * @rec: the recorder
 *
 * Threads: safe while the capture threads run (a snapshot).
 */
uint64_t tv_recorder_bytes(const struct tv_recorder *rec);
/**
 * tv_tracefs_cleanup_stale - remove tracefs instances of dead tracevisor runs
 *
 * An instance whose recorder was killed (its pid gone, or reused: the
 * process start time differs) and whose session directory still exists
 * and is incomplete is first salvaged into that session, as
 * tv_session_recover() does (one info line); the others are removed.
 * Instances of running recorders are left alone.
 * Return: the number of instances removed.
 */
int tv_tracefs_cleanup_stale(void);

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

/**
 * tv_recorder_write_marker - write a raw marker into the recording's trace
 * @rec: a started recorder
 * @buf: payload (copied); its first 4 bytes are the marker id (trace_marker_raw)
 * @len: bytes, 8..4096
 *
 * The record lands in the instance's own buffer as an ftrace:raw_data
 * event, timestamped in the trace clock.  Threads: safe from any thread.
 * Return: 0 or -errno.
 */
int tv_recorder_write_marker(struct tv_recorder *rec, const void *buf, size_t len);
/**
 * tv_recorder_set_vm_name - label the vCPU threads of @vm_pid with @name in host/vcpus
 * @rec: the recorder
 * @vm_pid: the VMM process
 * @name: label (copied)
 *
 * Threads: safe from guest threads while recording.
 * Return: 0 or -errno.
 */
int tv_recorder_set_vm_name(struct tv_recorder *rec, pid_t vm_pid, const char *name);
/**
 * tv_recorder_add_vcpu - thread @tid of process @vm_pid runs vCPU @vcpu
 * @rec: the recorder
 * @tid: the vCPU thread
 * @vm_pid: its process
 * @vcpu: vCPU index
 *
 * Known from the VMM (e.g. QMP query-cpus-fast): listed in host/vcpus even
 * when the process holds no KVM fds (a TCG QEMU).  Call before
 * tv_recorder_stop().  Threads: safe from guest threads while recording.
 * Return: 0 or -ENOMEM.
 */
int tv_recorder_add_vcpu(struct tv_recorder *rec, pid_t tid, pid_t vm_pid, int vcpu);

/* ------------------------------------------------------------- guests */

#define TV_GUEST_DEFAULT_LIMIT_MB 2048
/* Items of a guest event list that may carry a filter (the agent's limit). */
#define TV_GUEST_MAX_FILTERED_ITEMS 64
#define TV_GUEST_DEFAULT_SYNC_INTERVAL 1.0
#define TV_GUEST_NAME_MAX 32
#define TV_GUEST_MAX_VCPUS 256

/*
 * Where a guest's agent is and which host process runs it
 * (tracevisor-record(1), --guest):
 *   NAME                           a libvirt domain on qemu:///system
 *   vsock:CID[:PORT],pid:PID,name:NAME   or   serial:PATH,pid:PID,name:NAME
 *   xen:NAME                       a Xen domU (from dom0): domid, vCPUs and the
 *                                  dom0 end of its org.tracevisor.0 console
 *                                  channel come from xenstore
 */
struct tv_guest_spec {
	char name[TV_GUEST_NAME_MAX + 1];	/* [A-Za-z0-9_.-], not starting with '.' */
	char libvirt[128];		/* libvirt domain name, or "" */
	unsigned int vsock_cid;		/* 0: no vsock */
	unsigned int vsock_port;	/* 0: the agent's default, 7476 */
	char serial[256];		/* host end of the virtio-serial port, or "" */
	pid_t qemu_pid;			/* 0: unknown (no vCPU attribution) */
	unsigned int nr_vcpus;		/* vCPU threads known from libvirt (QMP), or a Xen domain's vCPUs */
	pid_t vcpu_tid[TV_GUEST_MAX_VCPUS];	/* [cpu-index] = thread id, 0: unknown */
	char xen[TV_GUEST_NAME_MAX + 1];	/* Xen domain name (xen:NAME), or "" */
	int xen_domid;			/* from xenstore; -1: not a Xen domain */
};

/**
 * tv_guest_spec_parse - parse a --guest SPEC
 * @text: the SPEC (see struct tv_guest_spec)
 * @spec: filled in (caller's storage)
 *
 * Return: 0, or -EINVAL with the reason logged.
 */
int tv_guest_spec_parse(const char *text, struct tv_guest_spec *spec);
/**
 * tv_guest_spec_resolve - fill a libvirt or Xen SPEC from where it is known
 * @spec: a parsed spec.  libvirt (qemu:///system): its pid, vsock CID /
 *        serial path and vCPU threads are set; xen:NAME (xenstore): its
 *        domid, vCPU count and serial path (the channel's unix socket)
 *
 * A no-op for vsock:/serial: specs.  libvirt is dlopen()ed on first use.
 * Return: 0, -ENOTSUP when built without libvirt (or Xen), or -errno
 * (logged).
 */
int tv_guest_spec_resolve(struct tv_guest_spec *spec);

struct tv_guest_opts {
	const char *events;	/* comma list for the agent, NULL: its default */
	/*
	 * event_filters[i] (NULL: none) is the ftrace filter of item i of
	 * @events (items counted with empty ones), written by the agent to
	 * each of that item's events (doc/agent-protocol.md); at most 64
	 * items, each filter printable ASCII up to 1023 bytes.
	 */
	const char *const *event_filters;
	size_t nr_event_filters;
	const char *clock;	/* guest trace clock, NULL: "local" */
	unsigned int buffer_kb;	/* guest ring buffer per CPU, 0: 2048 */
	double sync_interval;	/* seconds between probe rounds, 0: default */
	uint64_t max_bytes;	/* accepted from the guest, 0: default limit */
	unsigned int index;	/* the guest's number in the session (markers) */
	/* record --guest ... --ust: comma list of globs on PROVIDER:EVENT the
	 * agent enables in the guest's traced processes; NULL: none traced */
	const char *ust;
};

struct tv_guest_stats {
	uint64_t bytes, events, lost;
	unsigned int pings, pongs, hcalls_asked, hcalls_done;
	int listed;		/* the guest's domain is in the session */
	/* 1: events and lost came with the agent's END; 2: lost only, from the
	 * LOSS frame the agent sends before its last drain (no END came) */
	int counts_known;
	char status[300];	/* "complete", "truncated: ...", "failed: ..." */
	/* --ust: the guest's traced processes, their events and the events
	 * they discarded; known once the guest is stopped (0 before) */
	unsigned int ust_procs;
	uint64_t ust_events, ust_lost;
	/* of ust_procs, the ones not complete: cut off by the host (past a
	 * limit, a record that lied: status truncated), rejected (a domain the
	 * readers would refuse), not ended by the agent (no UST_END), or ended
	 * by the agent with another status than complete */
	unsigned int ust_cut, ust_rejected, ust_unended, ust_other;
	/* PONGs and HCALL_DONEs that answered no outstanding request: dropped
	 * (pongs <= pings and hcalls_done <= hcalls_asked always hold) */
	uint64_t pongs_dropped, hcalls_dropped;
};

/*
 * Threads: each guest recording runs its own thread (tv_guest_start() to
 * tv_guest_stop()); call the tv_guest_* functions from one thread.  The
 * guest thread adds to the host recorder through its locked functions.
 */
struct tv_guest;

/**
 * tv_guest_start - start recording one guest beside the host
 * @rec: the host recorder (started): sync markers go into its trace
 * @spec: the guest (copied)
 * @opts: guest-side options (copied; its strings must outlive @out)
 * @out: the guest handle, owned by the caller (tv_guest_destroy())
 *
 * Creates DIR/guest-NAME and a thread that connects to the agent, streams
 * its data into that directory and runs the sync probes.  Never blocks on
 * the guest.  Threads: the other tv_guest_* functions are called from the
 * thread that started the guest; the guest's own thread uses @rec through
 * its thread-safe functions only.
 * Return: 0 or -errno (nothing was started).
 */
int tv_guest_start(struct tv_recorder *rec, const struct tv_guest_spec *spec,
		   const struct tv_guest_opts *opts, struct tv_guest **out);
/**
 * tv_guest_wait_ready - wait until the guest traces
 * @g: the guest
 * @timeout_ms: how long at most
 *
 * A guest that fails before tracing is not logged again by tv_guest_stop():
 * its status (tv_guest_get_stats()) says why, for the caller to tell.
 * Return: 0, -ETIMEDOUT, -ECANCELED (its agent refused what it was asked,
 * e.g. an event filter its kernel rejects), or another failure.
 */
int tv_guest_wait_ready(struct tv_guest *g, int timeout_ms);
/**
 * tv_guest_stop - final probes, STOP, drain, guest-NAME/meta; joins its thread
 * @g: the guest
 *
 * Call before tv_recorder_stop() (the probes need host tracing).
 * Return: 0 when the guest's domain is decodable and listed, else -errno (logged).
 */
int tv_guest_stop(struct tv_guest *g);
/**
 * tv_guest_request_stop - start the end sequence without waiting
 * @g: the guest
 *
 * To stop many guests in parallel; tv_guest_stop() then waits.
 */
void tv_guest_request_stop(struct tv_guest *g);
/**
 * tv_guest_get_stats - a snapshot of the guest's counters and status
 * @g: the guest
 * @st: filled in (caller's storage)
 *
 * Threads: safe while the guest's thread runs.
 */
void tv_guest_get_stats(const struct tv_guest *g, struct tv_guest_stats *st);
/**
 * tv_guest_name - the guest's NAME
 * @g: the guest
 *
 * Return: a string owned by @g.
 */
const char *tv_guest_name(const struct tv_guest *g);
/**
 * tv_guest_destroy - stop the guest's thread if still running, free @g
 * @g: a guest, or NULL
 */
void tv_guest_destroy(struct tv_guest *g);

/* ------------------------------------------------------ vCPU discovery */

struct tv_vcpu_thread {
	pid_t tid;		/* host thread that runs the vCPU */
	pid_t vm_pid;		/* the VMM process */
	int vcpu;		/* vCPU index, -1 when unknown */
	char vm_name[64];
};

struct tv_vcpu_map {
	struct tv_vcpu_thread *threads;
	size_t nr;
};

/**
 * tv_vcpu_map_scan - find the vCPU threads of KVM VMs in /proc
 * @map: merged into; the caller owns its storage (tv_vcpu_map_free())
 * @proc_root: NULL for /proc (tests pass a fake tree)
 *
 * Processes holding KVM VM fds; threads named "CPU N/KVM" run vCPU N.
 * Return: 0 or -errno.
 */
int tv_vcpu_map_scan(struct tv_vcpu_map *map, const char *proc_root);
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

/* ---------------------------------------------------- clock sync (sync/) */

/*
 * A domain's clock mapped to the reference clock (the host's):
 *   ref = base_ref + floor((dom - base_dom) * slope_q48 / 2^48)
 * computed in 128-bit integers.  slope_q48 = 2^48 is a pure offset.
 */
struct tv_clock_map {
	int64_t base_dom;
	int64_t base_ref;
	int64_t slope_q48;
};

#define TV_SLOPE_ONE ((int64_t)1 << 48)

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

enum tv_sync_quality {
	TV_SYNC_EXACT,		/* exact arithmetic relation (same TSC) */
	TV_SYNC_ACCURATE,	/* two bounding lines, bound <= TV_SYNC_ACCURATE_NS */
	TV_SYNC_APPROXIMATE,	/* a line fits, but the bound is loose or one-sided */
	TV_SYNC_INSUFFICIENT,	/* not enough probes in both directions */
	TV_SYNC_FAILED,		/* no line fits the probes */
};

#define TV_SYNC_ACCURATE_NS 100000

/**
 * tv_sync_quality_name - "exact", "accurate", ... for @q
 * @q: a quality
 *
 * Return: a static string ("unknown" for a value out of range).
 */
const char *tv_sync_quality_name(enum tv_sync_quality q);

struct tv_sync_estimate {
	enum tv_sync_quality quality;
	struct tv_clock_map map;
	int64_t bound_ns;		/* guaranteed |error| over [span_lo, span_hi]; -1: none */
	int64_t span_lo, span_hi;	/* domain-clock range the bound covers */
	double slope_min, slope_max;	/* the two bounding slopes (informative) */
	size_t nr_above, nr_below;	/* points kept on each hull */
	char message[200];		/* why, when not exact/accurate */
};

/*
 * Convex-hull clock estimator (Duda; Poirier and Jabbarifar's fully
 * incremental form).  x is the domain's clock, y the reference's.
 * "below" points (x, y) must lie on or below the true line (e.g. a message
 * sent by the reference at y and received by the domain at x); "above"
 * points on or above it.  Points must come in non-decreasing x per set.
 */
struct tv_sync_hull;

/**
 * tv_sync_hull_new - an empty convex-hull estimator
 *
 * Return: the hull, owned by the caller (tv_sync_hull_free()), or NULL.
 */
struct tv_sync_hull *tv_sync_hull_new(void);
/**
 * tv_sync_hull_free - free @h
 * @h: a hull, or NULL
 */
void tv_sync_hull_free(struct tv_sync_hull *h);
/**
 * tv_sync_hull_add_below - add a point on or below the true line
 * @h: the hull
 * @x: domain time (non-decreasing per set)
 * @y: reference time
 *
 * Return: 0, -ERANGE (coordinates too far apart), -EINVAL (x decreasing), -ENOMEM.
 */
int tv_sync_hull_add_below(struct tv_sync_hull *h, int64_t x, int64_t y);
/**
 * tv_sync_hull_add_above - add a point on or above the true line
 * @h: the hull
 * @x: domain time (non-decreasing per set)
 * @y: reference time
 *
 * Return: as tv_sync_hull_add_below().
 */
int tv_sync_hull_add_above(struct tv_sync_hull *h, int64_t x, int64_t y);

/**
 * tv_sync_hull_estimate - the middle line and its guaranteed error bound
 * @h: the hull
 * @span_lo: first domain timestamp the transform is used on
 * @span_hi: last one
 * @out: filled in every case; quality says how far it can be trusted
 *
 * Return: 0 (even when the quality is failed or insufficient).
 */
int tv_sync_hull_estimate(const struct tv_sync_hull *h, int64_t span_lo, int64_t span_hi,
			  struct tv_sync_estimate *out);

/* KVM x86 TSC scaling: guest = offset + (host * ratio >> frac_bits). */
struct tv_tsc_params {
	uint64_t offset;
	uint64_t ratio;
	unsigned int frac_bits;	/* 48 on VMX, 32 on SVM */
};

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

/*
 * A TSC offset of vCPU @vcpu in force from host TSC @from_host on
 * (kvm_write_tsc_offset; from_host 0: the offset in force when the trace
 * began).  KVM rewrites a vCPU's offset at every vCPU load when the host's
 * TSC is unstable, thousands of times a second, so there is no fixed limit.
 * Such a write restarts the guest TSC where it stopped; @moved_back marks one
 * that set it below times the guest had already reached (the vCPU entered
 * guest mode after the point it was set back to): guest times of the two
 * segments then overlap, and only the order of events tells them apart.
 */
struct tv_tsc_segment {
	uint64_t from_host;
	uint64_t offset;
	uint32_t vcpu;
	uint32_t moved_back;	/* the write moved a running guest's TSC back */
};

/*
 * One piece of a clock that is linear only piecewise (it jumped, or changed
 * rate): the map and bound from domain time @from_dom on, until the next
 * piece's.  The first piece also maps anything before its @from_dom.
 */
struct tv_sync_piece {
	int64_t from_dom;
	struct tv_clock_map map;	/* to the reference */
	int64_t bound_ns;		/* guaranteed |error| inside the piece */
	enum tv_sync_quality quality;
};

/* Per-domain result of tv_sync_session(); also what DIR/sync/transforms holds. */
struct tv_sync_domain {
	char domain[80];		/* subdirectory name: guest-vm1 */
	char via[80];			/* domain it was synchronised against */
	char method[16];		/* reference, tsc, hull, none */
	struct tv_sync_estimate est;	/* composed to the reference */
	struct tv_tsc_params tsc;	/* method tsc: ratio, frac_bits, first offset */
	struct tv_tsc_segment *tsc_segments;	/* by vcpu, then from_host (owned) */
	size_t nr_tsc_segments;		/* 0: tsc.offset always, on every vCPU */
	struct tv_sync_piece *pieces;	/* method hull, no line over the whole trace (owned) */
	size_t nr_pieces;		/* 0: est.map everywhere */
	int64_t hull_tsc_diff;		/* method tsc: largest |hull - TSC| at a probe, -1: none */
	int64_t hull_bound;		/* method tsc: the hull's own bound, -1: no hull */
	size_t nr_probes;		/* matched probe pairs */
	size_t nr_pairs_checked;	/* send/receive pairs checked for causality */
	size_t causality_violations;	/* probe pairs + vCPU events below */
	size_t nr_vcpu_checked;		/* guest events checked against their vCPU's runs */
	size_t vcpu_violations;		/* of those, seen while the vCPU was out of the guest */
	/*
	 * A Xen domU: its events checked against its vCPUs' running intervals
	 * in Xen's runstate records (tv_sync_check_runstates()), and those
	 * outside every interval by more than its bound plus Xen's.
	 */
	size_t nr_runstate_checked;
	size_t runstate_violations;
	/*
	 * The best path not taken: its first hop (a domain synchronised via Xen
	 * could also be via the host, by message probes) and its bound composed
	 * to the reference; "" and -1 when there is none.
	 */
	char alt_via[80];
	int64_t alt_bound_ns;
	/*
	 * Of causality_violations, those of message-probe pairs (ping/pong
	 * with the peer over a channel), and the probe rounds left out
	 * because the domain's clock held still across a hypercall bracket
	 * (a pvclock returning the highest value read so far).
	 */
	size_t message_violations;
	size_t held_rounds;
	/*
	 * Hypercall rounds left out because, moved to Xen's common time line,
	 * the domain's markers missed Xen's record of the hypercall: the
	 * walk put them on a pCPU other than the one that ran them
	 * (sync/xen_line.c).
	 */
	size_t misplaced_rounds;
	/*
	 * Xen only: the largest difference between two physical CPUs' system
	 * times at one TSC, from Xen's time-scale records (the patched Xen's
	 * TRC_TRACE_TSCALE); -1: not known.  Xen stamps its records, and a
	 * domain's pvclock reads, the system time of the CPU that runs it, so
	 * events of a vCPU that moved between CPUs may be off by up to this
	 * much beyond their bound.
	 */
	int64_t pcpu_skew_ns;
	/*
	 * A pvclock domain of a Xen session put on Xen's common time line
	 * (dom0, a domU: doc/sync-probes.md): its events were moved from the
	 * system time of the pCPU their vCPU ran on to pCPU 0's, @pvclock_ns
	 * being that system time minus the domain's clock (estimated from its
	 * hypercall brackets), before @est applies.  0: not moved.
	 */
	int xen_line;
	int64_t pvclock_ns;
	/*
	 * Sync records in this domain's own stream that were not its to write
	 * (markers naming another guest's index, a prober's markers in a
	 * guest, its vCPU's hypercall probe naming another guest): ignored, so
	 * that a guest's forged probes move no other domain's clock.
	 */
	size_t foreign_probes;
};

struct tv_sync_result {
	struct tv_sync_domain *domains;
	size_t nr;
	char reference[80];
};

/**
 * tv_sync_session - estimate every domain's clock against the reference
 * @dir: session directory
 * @out: results, one per domain (the reference first); owned by the caller
 *       (tv_sync_result_free()), also on failure
 *
 * Reads the probes (doc/sync-probes.md) with the domains' own clocks,
 * estimates, composes and checks causality.  Does not write anything.
 * Return: 0 or -errno (logged).
 */
int tv_sync_session(const char *dir, struct tv_sync_result *out);
/**
 * tv_sync_check_vcpus - count guest events mapped where their vCPU was out of guest mode
 * @dir: session directory
 * @res: results to check; nr_vcpu_checked and vcpu_violations are set
 *
 * tv_sync_session() calls it; exposed for results read back from a file.
 * Return: 0 or -errno.
 */
int tv_sync_check_vcpus(const char *dir, struct tv_sync_result *res);
/**
 * tv_sync_check_runstates - count Xen domU events outside their vCPU's running intervals
 * @dir: session directory (with a xen/ domain and guest-NAME/meta xen_domid)
 * @res: results to check; nr_runstate_checked and runstate_violations are
 *       set for each synchronised guest domain of a Xen domU
 *
 * A domU's code runs only while Xen has its vCPU running: after the
 * transforms, every event of guest CPU N must lie inside an interval that
 * xen:xen_runstate_change records of (xen_domid, N) open (new state 0,
 * running) and close (old state 0), up to the guest's bound plus Xen's.
 * A vCPU is checked from its first runstate record on.  tv_sync_session()
 * calls it.  Return: 0 or -errno.  Without Xen runstate records, nothing
 * is checked.
 */
int tv_sync_check_runstates(const char *dir, struct tv_sync_result *res);
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
 * tv_sync_domain_usable - whether @d is good enough to merge by
 * @d: a domain's result
 *
 * Return: true for exact, accurate and approximate.
 */
bool tv_sync_domain_usable(const struct tv_sync_domain *d);
/**
 * tv_sync_write - write @res as DIR/sync/transforms (doc/session-format.md)
 * @dir: session directory
 * @res: the results
 *
 * Return: 0 or -errno (logged).
 */
int tv_sync_write(const char *dir, const struct tv_sync_result *res);
/**
 * tv_sync_read - read DIR/sync/transforms
 * @dir: session directory
 * @out: the results, owned by the caller (tv_sync_result_free())
 *
 * Return: 0, -ENOENT when the session was never synced, or -errno.
 */
int tv_sync_read(const char *dir, struct tv_sync_result *out);
/**
 * tv_sync_result_free - free every domain's result and empty @res
 * @res: results; the struct itself is the caller's
 */
void tv_sync_result_free(struct tv_sync_result *res);

/* ------------------------------------------------------------- reading */

/* One decoded event, valid until the next tv_reader_next(). */
struct tv_event {
	uint64_t ts;			/* in the reference clock when synced */
	int cpu;
	int pid;
	const char *domain;		/* "host", "guest:NAME", ... */
	struct tep_handle *tep;
	struct tep_event *format;
	struct tep_record *record;
	long long missed_before;	/* >0: events lost just before this one */
	uint64_t ts_raw;		/* in the domain's own trace clock */
	int domain_index;		/* index for tv_reader_domain() */
	const struct tv_domain_info *domain_info;
};

struct tv_domain_info {
	const char *name;		/* display name: host, guest:NAME */
	const char *subdir;		/* directory in the session: host, guest-NAME */
	const char *dir;
	struct tep_handle *tep;
	const struct tv_meta *meta;
	const struct tv_vcpu_map *vcpus;
	pid_t (*tgid_of)(const struct tv_domain_info *dom, pid_t tid);
};

/*
 * Threads: a reader has no threads and no locks: one thread at a time per
 * reader (readers of the same or different sessions may run in parallel;
 * the library keeps no shared state but the log callback).
 */
struct tv_reader;

/**
 * tv_reader_open - open a session for time-ordered reading of every domain
 * @dir: session directory
 * @out: the reader, owned by the caller (tv_reader_close())
 *
 * Streams each CPU file page by page and merges them with a heap: memory
 * does not depend on the trace size.  Maps every domain to the reference
 * clock when the session holds DIR/sync/transforms (usable quality only).
 * Threads: a reader, and the events and domain info it returns, belong to
 * one thread at a time; readers of the same session in different threads
 * are independent.
 *
 * A guest's domain (guest-NAME, and its traced processes ust-guest-NAME-PID)
 * that its recorder rejected (meta status=rejected: WHY) or that cannot be
 * decoded (formats, header page, sizes) is quarantined: left out with one
 * warning naming it, the other domains read as usual; its sub-buffers that
 * fail validation are skipped and counted (one warning when the reader is
 * closed).  The host's and Xen's domains are never left out: damage there
 * is an error.
 * Return: 0 or -errno (logged).
 */
int tv_reader_open(const char *dir, struct tv_reader **out);
/*
 * tv_reader_select_domain - read only the chosen domains (repeatable)
 * @name: a domain as the session lists it (host, xen, guest-NAME,
 *        ust-PARENT-PID) or as reports show it (guest:NAME); its traced
 *        processes (ust-NAME-PID) come with it.  NULL: all domains again.
 *
 * Every reader opened afterwards reads the chosen domains only, and fails
 * with -ENOENT (logged) when one of them is not in its session.
 * Process-wide (a command reads its session through several readers),
 * like the log settings: call it before opening readers, from one thread.
 * Return: 0, -EINVAL (a name with '/' or ',', logged) or -ENOMEM.
 */
int tv_reader_select_domain(const char *name);
/**
 * tv_reader_open_raw - tv_reader_open() keeping each domain's own clock
 * @dir: session directory
 * @out: the reader, owned by the caller (tv_reader_close())
 *
 * What the sync estimation reads.  Return: as tv_reader_open().
 */
int tv_reader_open_raw(const char *dir, struct tv_reader **out);
struct tv_sync_result;
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
 * tv_reader_next - the next event in time order
 * @rd: the reader
 * @ev: filled in; it points into @rd and is valid until the next call
 *
 * Return: 1 with @ev filled, 0 at the end, -errno on a corrupt file (logged).
 */
int tv_reader_next(struct tv_reader *rd, struct tv_event *ev);
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
 * tv_reader_close - close every stream and free @rd (and its domain info)
 * @rd: a reader, or NULL
 */
void tv_reader_close(struct tv_reader *rd);
/**
 * tv_reader_nr_domains - the number of domains of the session
 * @rd: the reader
 */
size_t tv_reader_nr_domains(const struct tv_reader *rd);
/**
 * tv_reader_domain - domain @i of the session
 * @rd: the reader
 * @i: 0 .. tv_reader_nr_domains() - 1
 *
 * Return: info owned by @rd (valid until tv_reader_close()), or NULL.
 */
const struct tv_domain_info *tv_reader_domain(const struct tv_reader *rd, size_t i);
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
/* Appends the event's fields to @buf as a JSON object. */
struct tv_strbuf;
/**
 * tv_event_fields_json - append the event's fields to @buf as a JSON object
 * @ev: an event from tv_reader_next()
 * @buf: appended to (caller's buffer)
 *
 * Threads: as tv_event_append_info() (layouts cached in the domain).
 * Return: 0 or -ENOMEM.
 */
int tv_event_fields_json(const struct tv_event *ev, struct tv_strbuf *buf);

/* -------------------------------------------------------- string buffer */

/*
 * A growable text buffer the caller owns (zero-initialise it; free with
 * tv_strbuf_free()).  Its fields are public on purpose, like libtraceevent's
 * struct trace_seq: @data holds @len bytes and a NUL, and a writer may
 * reserve room (tv_strbuf_reserve()) and write at @data + @len itself, as
 * the report writer does on its hot path.  Threads: one thread at a time.
 */
struct tv_strbuf {
	char *data;	/* NUL-terminated once anything was appended; NULL before */
	size_t len;	/* bytes of text, without the NUL */
	size_t cap;	/* bytes allocated at @data */
};

/**
 * tv_event_append_info - append an event's text, as its print format says
 * @ev: an event from tv_reader_next()
 * @sb: where the text goes (no newline)
 *
 * The same characters as libtraceevent's tep_print_event() with
 * TEP_PRINT_INFO, but each event type's print format is compiled once and
 * numbers are formatted without printf where printf's rules are simple;
 * formats it does not compile are printed by libtraceevent.  Threads: not
 * thread-safe: the compiled formats are cached in @ev's domain (its reader's).
 *
 * Return: 0, or -ENOMEM.
 */
int tv_event_append_info(const struct tv_event *ev, struct tv_strbuf *sb);
/**
 * tv_event_info_compiled - whether @ev's type is printed by the compiled renderer
 * @ev: an event from tv_reader_next()
 *
 * Return: 1 compiled, 0 printed by libtraceevent.
 */
int tv_event_info_compiled(const struct tv_event *ev);

/**
 * tv_strbuf_append - append printf-formatted text
 * @sb: the buffer (the caller owns it and frees it with tv_strbuf_free())
 * @fmt: format
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append(struct tv_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/**
 * tv_strbuf_append_json_string - append @n bytes of @s as a quoted, escaped JSON string
 * @sb: the buffer
 * @s: the bytes
 * @n: their number
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_json_string(struct tv_strbuf *sb, const char *s, size_t n);
/**
 * tv_strbuf_append_text - append @n bytes of @s, escaped for a terminal
 * @sb: the buffer
 * @s: the bytes (a recorded string: a comm, a field, a meta value)
 * @n: their number (a NUL among them is escaped too)
 *
 * Printable ASCII and valid UTF-8 of printable characters are copied; C0
 * controls become \n, \t, \r or \xNN, and so do DEL, C1 controls (raw
 * or as UTF-8), the bidirectional overrides and isolates and each byte of
 * invalid UTF-8.  A backslash is kept as is: the text is for reading (the
 * exact bytes are in --json).  Clean text costs a scan of 8 bytes a step.
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_text(struct tv_strbuf *sb, const char *s, size_t n);
/**
 * tv_strbuf_escape_from - escape, as tv_strbuf_append_text(), what @sb holds past @from
 * @sb: the buffer
 * @from: the offset of the text to escape (an event's info, just appended)
 *
 * Return: 0 or -ENOMEM (the text is then cut at @from).
 */
int tv_strbuf_escape_from(struct tv_strbuf *sb, size_t from);
/**
 * tv_text_escape - NUL-terminated @s escaped as tv_strbuf_append_text() does, into @out
 * @out: the caller's buffer
 * @size: its size; the text is cut before an escape or character that does not fit
 * @s: a NUL-terminated string
 *
 * Return: @out.
 */
const char *tv_text_escape(char *out, size_t size, const char *s);
/* Fast paths for per-event output: raw bytes, decimal integers. */
/**
 * tv_put_u64 - write @v in decimal at @out, zero-padded to @min_digits
 * @out: room for 24 bytes is enough
 * @v: the value
 * @min_digits: at most 20
 *
 * Return: the end; no NUL is written.
 */
char *tv_put_u64(char *out, uint64_t v, int min_digits);
/**
 * tv_strbuf_reserve - room for @extra more bytes and a NUL
 * @sb: the buffer (may move sb->data)
 * @extra: bytes
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_reserve(struct tv_strbuf *sb, size_t extra);
/*
 * The hot path of the text and JSON writers: no format string to parse, and
 * inline, since most appends are a few bytes.
 */
static inline int tv_strbuf_append_mem(struct tv_strbuf *sb, const char *s, size_t n)
{
	if (sb->len + n + 1 > sb->cap && tv_strbuf_reserve(sb, n))
		return -ENOMEM;
	memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
	return 0;
}
/**
 * tv_strbuf_append_u64 - append @v in decimal
 * @sb: the buffer
 * @v: the value
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_u64(struct tv_strbuf *sb, uint64_t v);
/**
 * tv_strbuf_append_i64 - append @v in decimal
 * @sb: the buffer
 * @v: the value
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_i64(struct tv_strbuf *sb, int64_t v);
/**
 * tv_strbuf_reset - empty @sb, keeping its memory
 * @sb: the buffer
 */
void tv_strbuf_reset(struct tv_strbuf *sb);
/**
 * tv_strbuf_free - free the buffer's memory and empty it
 * @sb: the buffer; the struct itself is the caller's
 */
void tv_strbuf_free(struct tv_strbuf *sb);

/* --------------------------------------------------------- KVM analysis */

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

struct tv_kvm_stat_row {
	char vm[80];
	char vcpu[24];
	char reason[48];
	/* stat --by guest-task: what the guest ran on that vCPU at the exit */
	char guest_task[24];		/* its comm; "" when not asked or unknown */
	int guest_pid;			/* -1 when unknown */
	char guest_context[32];		/* "syscall:N", "irq:N", "softirq:N" or "" */
	uint64_t count;
	uint64_t min_ns, p50_ns, p99_ns, max_ns, total_ns;
	bool has_latency;
	uint64_t hist[64];	/* log2(ns) buckets */
	/* top --xen (tv_top_xen_open()): "" elsewhere */
	char kind[16];			/* "exit", "runstate", "hypercall", "pv", "hvm" */
	int domid;			/* the Xen domid; -1: Xen itself (idle) or unknown */
	double share;			/* runstate rows: the share of the interval the
					 * vCPU spent in that state (0..1); -1 others */
};

struct tv_kvm_stat {
	struct tv_kvm_stat_row *rows;
	size_t nr_rows;
	bool have_exit_entry;	/* kvm_exit/kvm_entry were recorded */
	char mode[32];		/* "exits" or "pvm" (no kvm_exit/kvm_entry) */
	uint64_t events;
	uint64_t lost;
	uint64_t unmatched_exits;
};

/**
 * tv_kvm_stat_compute - VM exit analysis of a session
 * @dir: session directory
 * @out: rows sorted by total time, then count; owned by the caller
 *       (tv_kvm_stat_free())
 *
 * Return: 0 or -errno (logged).
 */
int tv_kvm_stat_compute(const char *dir, struct tv_kvm_stat *out);
/**
 * tv_kvm_stat_free - free the rows of @st
 * @st: the analysis; the struct itself is the caller's
 */
void tv_kvm_stat_free(struct tv_kvm_stat *st);

/* ------------------------------------------------------------- live view */

/* What an interval's rows are sorted by (all descending). */
enum tv_top_sort {
	TV_TOP_SORT_TOTAL,	/* total exit->entry time (the default) */
	TV_TOP_SORT_COUNT,
	TV_TOP_SORT_RATE,	/* exits per second: in one interval, as count */
	TV_TOP_SORT_P99,
};

struct tv_top_opts {
	const char *replay_dir;		/* a recorded session to play; NULL: live */
	const char *outdir;		/* live: keep the recording here (a new
					 * directory); NULL: a temporary session
					 * in $TMPDIR, removed by tv_top_close() */
	uint64_t interval_ns;		/* 0: one second */
	double speed;			/* replay: 1 real time, 2 twice as fast,
					 * 0 as fast as the session can be read */
	const char *const *vms;		/* keep rows of these VMs only: a name
					 * (glob) or a VMM pid; none: every VM */
	size_t nr_vms;
	const char *const *events;	/* live: as record's -e; none: the events
					 * the exit analysis reads */
	size_t nr_events;
	const char *filter;		/* live: ftrace filter, or NULL */
	const char *const *time_functions;	/* live: as record's; rows func:NAME
						 * per process (with bpf: timed in the
						 * kernel, vcpu "-") */
	size_t nr_time_functions;
	unsigned int buffer_kb;		/* live: per CPU; 0: default */
	enum tv_top_sort sort;
	bool bpf;			/* live: aggregate in the kernel (a BPF
					 * program on kvm_exit/kvm_entry, and on
					 * the time_functions' entries and returns):
					 * no event crosses to user space; p50/p99
					 * within 3.1%; VMX/SVM hosts (PVM fires
					 * neither) */
	int stop_fd;			/* readable: tv_top_next() returns 0 at
					 * once (e.g. a signalfd); -1: none */
	uint64_t count;			/* live top --xen: the count-th interval is the
					 * last (it ends the recording and reads it to
					 * its end); 0: until stopped */
};

/* One interval of the live view. */
struct tv_top_interval {
	uint64_t t_ns;			/* its end, in the trace clock */
	uint64_t interval_ns;		/* its length */
	uint64_t lost;			/* events lost in it (ring buffer full) */
	struct tv_kvm_stat stat;	/* its rows: the stat analysis of the
					 * interval, sorted and filtered */
};

struct tv_top;

/**
 * tv_top_open - start the live view, or a replay of a session
 * @opts: what to show (copied; its strings must outlive @out)
 * @out: the view, owned by the caller (tv_top_close())
 *
 * Live, it records the host (a tracefs instance, as tv_recorder_create())
 * with the "mono" trace clock.  Needs root for live; a replay needs none.
 * Return: 0 or -errno (logged).
 */
int tv_top_open(const struct tv_top_opts *opts, struct tv_top **out);

/* top --guest reads what is this old: a guest's events arrive within a second or so. */
#define TV_TOP_GUEST_LAG_NS 2000000000ULL

/**
 * tv_top_guest_open - the live view with each exit joined to its guest's task
 * @opts: as tv_top_open(), live and without @bpf (copied; its strings must outlive @out)
 * @guests: the guests (as record --guest; read while opening only)
 * @nr_guests: how many; 0: tv_top_open()
 * @out: the view, owned by the caller (tv_top_close(), which stops the guests
 *       first: the session kept with opts->outdir lists them)
 *
 * Each guest's agent streams its scheduler, IRQ and syscall events (its
 * default list) with the sync probes of record --guest; host and guests
 * record with the x86-tsc trace clock, and each timed exit is attributed
 * to what its guest ran on that vCPU then (the guest_task, guest_pid and
 * guest_context of the rows; "?" before the guest's TSC offset is known),
 * as tv_stat_compute_opts() by_guest_task does on the recorded session.
 * The intervals end TV_TOP_GUEST_LAG_NS before now.  x86 KVM hosts only.
 * Return: 0 or -errno (logged: a guest that does not get ready says why).
 */
int tv_top_guest_open(const struct tv_top_opts *opts, const struct tv_guest_spec *guests,
		      size_t nr_guests, struct tv_top **out);
/**
 * tv_top_xen_open - the live view of Xen (top --xen), or a replay of a Xen session
 * @opts: as tv_top_open(), without @bpf, @events, @filter, @time_functions
 *        (copied; its strings must outlive @out); @vms: domain names
 *        (globs) or domids
 * @out: the view, owned by the caller (tv_top_close(), which stops Xen's
 *       tracing, puts back its masks and releases the buffers)
 *
 * Live (dom0, root), Xen's per-CPU trace buffers are recorded as by
 * tv_xen_recorder_create() (classes gen, sched, hvm and pv) into a session
 * (opts->outdir, else a temporary one) read as it grows.  Each interval's
 * rows are those of the Xen analysis of `tracevisor stat` for that stretch
 * of time: per domain and vCPU, HVM exits by reason (count, latency
 * percentiles, total), hypercalls by name, PV entries, and runstates
 * (timed when they end, as stat; plus @share, the part of the interval in
 * that state).  Rows' vm is "NAME[DOMID]" (the name from xenstore; in a
 * replay, the session's guest domains, else dDOMID), "xen" for Xen's idle
 * vCPUs; kind, domid and share are set.  The last interval (the stop fd,
 * tv_top_stop() or opts->count) stops Xen's tracing and reads the session
 * to its end: summed, the intervals are stat of the session kept.
 * Return: 0 or -errno with one line logged: not root (-EPERM), not on
 * Xen or not dom0 (-ENODEV), Xen's tracing in use by another consumer
 * such as xentrace (its VIRQ_TBUF bound: -EEXIST), a --vm name that no domain has (-ENOENT), built without Xen
 * (-ENOTSUP).
 */
int tv_top_xen_open(const struct tv_top_opts *opts, struct tv_top **out);
/**
 * tv_top_next - wait for the end of the next interval and give its table
 * @top: the view
 * @out: the interval; free it with tv_top_interval_free()
 *
 * An exit is counted in the interval of its exit event and timed in the
 * interval of its entry; summed over the intervals, the rows are those of
 * tv_kvm_stat_compute() on the same recording.
 * Return: 1 with @out filled, 0 at the end of a replay or when
 * opts->stop_fd became readable, -errno (logged).
 */
int tv_top_next(struct tv_top *top, struct tv_top_interval *out);
/**
 * tv_top_close - stop recording (the kept session is complete) and free @top
 * @top: a view, or NULL
 *
 * Return: 0, or -errno of the recorder's stop (logged).
 */
int tv_top_close(struct tv_top *top);
/* Free @iv's rows (the struct is the caller's). */
void tv_top_interval_free(struct tv_top_interval *iv);
/* Exits per second of row @r in interval @iv. */
double tv_top_row_rate(const struct tv_top_interval *iv, const struct tv_kvm_stat_row *r);
/* Sort @st's rows by @key (descending; ties by count, then name). */
void tv_top_sort(struct tv_kvm_stat *st, enum tv_top_sort key);
/* "total", "count", "rate" or "p99" into *@key: 0, or -EINVAL (logged). */
int tv_top_sort_parse(const char *name, enum tv_top_sort *key);
/* The session the view reads (the live recording's, or the replayed one). */
const char *tv_top_session_dir(const struct tv_top *top);
/**
 * tv_top_start - read the intervals in a thread of the view's own
 * @top: a view from tv_top_open(), not read with tv_top_next() since
 *
 * For a display that must stay responsive (keys, redraws) while an
 * interval is read: the thread calls tv_top_next() and publishes each
 * interval; tv_top_fd() becomes readable, tv_top_latest() copies it.
 * From then on, call only tv_top_fd(), _latest(), _set_interval(),
 * _get_interval(), _running(), _stop() and _close() on @top.
 * Return: 0 or -errno (logged).
 */
int tv_top_start(struct tv_top *top);
/* An eventfd, readable when an interval was published (read it to reset). */
int tv_top_fd(const struct tv_top *top);
/**
 * tv_top_latest - a copy of the latest published interval
 * @top: a started view
 * @out: the copy, the caller's (tv_top_interval_free())
 *
 * Lock-free: the thread publishes through RCU and never waits for this.
 * Return: 1 with @out filled, 0 if none was published yet, -ENOMEM.
 */
int tv_top_latest(struct tv_top *top, struct tv_top_interval *out);
/* Change the interval (from the next one on; live: at least 10 ms). */
void tv_top_set_interval(struct tv_top *top, uint64_t interval_ns);
uint64_t tv_top_get_interval(const struct tv_top *top);
/* Is the started view still reading (false once a replay ended)? */
bool tv_top_running(const struct tv_top *top);
/**
 * tv_top_stop - end the started view's thread
 * @top: a view; not started: nothing to do
 *
 * Return: 0, or -errno the thread ended with (logged).
 */
int tv_top_stop(struct tv_top *top);

/* ------------------------------------------------------------------ Xen */

/* Xen's trace buffers, from dom0: session domain xen/, kind xen-trace. */
#define TV_XEN_DEFAULT_PAGES 32		/* per CPU, as xentrace */
#define TV_XEN_DEFAULT_MASK 0x0ffff000u	/* TRC_ALL, as xentrace */
#define TV_XEN_GEN_CLASS 0x0001f000u	/* TRC_GEN: always recorded (its time scales) */

struct tv_xen_record_opts {
	const char *outdir;	/* the session directory */
	uint32_t evt_mask;	/* 0: TV_XEN_DEFAULT_MASK */
	const char *cpus;	/* physical CPU list "0-3,6"; NULL: all */
	unsigned int pages;	/* per CPU buffer; 0: default (used if Xen has none yet) */
};

/*
 * Threads: a Xen recorder runs one drain thread between its start and
 * stop; call the tv_xen_recorder_* functions from one thread.
 */
struct tv_xen_recorder;

/**
 * tv_xen_recorder_create - map Xen's trace buffers for recording
 * @opts: what to record and where (copied; its strings must outlive @out)
 * @out: the recorder, owned by the caller (tv_xen_recorder_destroy())
 *
 * Opens libxenctrl, libxenforeignmemory and libxenevtchn, allocates the
 * buffers if Xen has none, maps t_info and every CPU's buffer, binds
 * VIRQ_TBUF and creates DIR/xen/.  Tracing starts with
 * tv_xen_recorder_start().  Threads: one caller thread; the recorder
 * drains in a thread of its own between start and stop.
 * Return: 0 or -errno; -ENODEV when this is not a Xen dom0, -ENOTSUP when
 * built without Xen (both logged on one line).
 */
int tv_xen_recorder_create(const struct tv_xen_record_opts *opts, struct tv_xen_recorder **out);
/**
 * tv_xen_recorder_start - set the masks, enable tracing, start the drain thread
 * @rec: the recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_recorder_start(struct tv_xen_recorder *rec);
/**
 * tv_xen_recorder_stop - disable tracing, drain every CPU, restore the masks, write xen/meta
 * @rec: a started recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_recorder_stop(struct tv_xen_recorder *rec);
/**
 * tv_xen_recorder_destroy - restore the hypervisor's trace state if still changed, unmap, free
 * @rec: a recorder, or NULL
 */
void tv_xen_recorder_destroy(struct tv_xen_recorder *rec);
/**
 * tv_xen_recorder_nr_cpus - the number of physical CPUs recorded
 * @rec: the recorder
 */
int tv_xen_recorder_nr_cpus(const struct tv_xen_recorder *rec);
/**
 * tv_xen_recorder_bytes - bytes written so far (progress output)
 * @rec: the recorder
 *
 * Threads: safe while the drain thread runs (a snapshot).
 */
uint64_t tv_xen_recorder_bytes(const struct tv_xen_recorder *rec);

/**
 * tv_xen_parse_events - "sched,hvm,pv" (class names), "all" or a hex mask to a Xen event mask
 * @spec: the text
 *
 * Return: the mask, 0 if invalid.
 */
uint32_t tv_xen_parse_events(const char *spec);
/**
 * tv_xen_cpu_in_list - whether @cpu is in the list "0-3,6"
 * @list: the list
 * @cpu: the CPU
 */
bool tv_xen_cpu_in_list(const char *list, int cpu);
/**
 * tv_xen_host_cpu_khz - xc_physinfo's cpu_khz
 *
 * Return: kHz, or 0 when not on a Xen dom0 (or built without Xen).
 */
uint64_t tv_xen_host_cpu_khz(void);

/**
 * tv_xen_import_xentrace - convert a file written by Xen's xentrace
 * @file: the xentrace output
 * @outdir: the session directory to create
 * @cpu_khz: TSC frequency; 0: xc_physinfo's when on Xen, else 2.4 GHz (warned)
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_import_xentrace(const char *file, const char *outdir, uint64_t cpu_khz);

/**
 * tv_xen_inject - write a TRC_GUEST record into Xen's trace (HVMOP_xentrace)
 * @event: 0..4095, ORed into TRC_GUEST (0x0800f000)
 * @data: up to 7 words (copied)
 * @nr: number of words
 * @mono: NULL, or filled with dom0's CLOCK_MONOTONIC (ns) just before and
 *        just after the hypercall
 *
 * A sync point: on the patched hypervisor the record carries Xen's TSC.
 * Threads: safe from any thread.
 * Return: 0 or -errno (logged; -ENOTSUP when built without Xen).
 */
int tv_xen_inject(unsigned int event, const uint32_t *data, unsigned int nr, uint64_t mono[2]);

/**
 * tv_xen_sync_probe - one dom0/Xen clock-sync probe (doc/sync-probes.md)
 * @rec: the host (dom0) recorder of the same session
 * @seq: probe sequence number
 *
 * Writes the XEN_BEFORE marker into dom0's trace, injects the Xen record
 * TRC_GUEST | 0x476 { magic, seq low, seq high }, then the XEN_AFTER marker.
 * Threads: as tv_recorder_write_marker(), safe from any thread.
 * Return: 0 or -errno (logged).
 */
int tv_xen_sync_probe(struct tv_recorder *rec, uint64_t seq);

/**
 * tv_session_write_domains - write DIR/session.meta listing @domains; written last
 * @dir: session directory
 * @domains: comma-separated domain subdirectories
 * @reference: the reference domain
 *
 * Return: 0 or -errno (logged).
 */
int tv_session_write_domains(const char *dir, const char *domains, const char *reference);

/**
 * tv_xen_stat_compute - Xen analysis of a session's xen/ domain
 * @dir: session directory
 * @out: rows (vm "dN", vcpu, reason): runstate times per domain and vCPU,
 *       HVM exit reasons timed exit→entry, hypercalls and other records
 *       counted; owned by the caller (tv_kvm_stat_free())
 *
 * Return: 0, -ENOENT when the session has no Xen domain, or -errno.
 */
int tv_xen_stat_compute(const char *dir, struct tv_kvm_stat *out);

/**
 * tv_stat_compute - every analysis of `stat` in one merged read of a session
 * @dir: session directory
 * @kvm: the VM exit analysis, as tv_kvm_stat_compute() gives it
 * @xen: the Xen analysis, as tv_xen_stat_compute() gives it, when the
 *       session has a Xen domain (then *@have_xen is true)
 * @have_xen: whether @xen was computed
 *
 * The session is read once.  The caller owns both results and frees them
 * with tv_kvm_stat_free() (also when !*@have_xen: @xen is then empty).
 * Threads: none shared; call from any one thread.
 * Return: 0, or -errno (nothing to free).
 */
int tv_stat_compute(const char *dir, struct tv_kvm_stat *kvm, struct tv_kvm_stat *xen,
		    bool *have_xen);

/**
 * tv_ust_stat_compute - the traced processes' events of a session (record --ust)
 * @dir: session directory
 * @out: rows owned by the caller (tv_kvm_stat_free()), sorted by domain,
 *       process and name: @vm the domain (host, guest:NAME), @vcpu the
 *       process id, @reason PROVIDER:EVENT with its count and no latency,
 *       or PROVIDER:NAME (PROVIDER:NAME() for _entry/_exit) with the count
 *       and latencies of its begin/end pairs: PROVIDER:NAME_begin then
 *       PROVIDER:NAME_end (or NAME_entry, NAME_exit) in one thread, an end
 *       closing the latest open begin.  @events: the processes' events,
 *       @lost: the events they discarded, @unmatched_exits: ends without
 *       a begin, @mode "ust".
 *
 * Return: 0, -ENOENT (no traced process in the session, not logged), or
 * -errno (logged).
 */
int tv_ust_stat_compute(const char *dir, struct tv_kvm_stat *out);

struct tv_stat_opts {
	/*
	 * Attribute every timed VM exit to what the guest ran on that vCPU
	 * at that moment (its task, pid, and syscall, IRQ or softirq): rows
	 * gain guest_task, guest_pid and guest_context.  Needs the guest's
	 * sched_switch (and for the context raw_syscalls, irq and softirq
	 * events), recorded through its agent, and a synchronised session
	 * (tracevisor sync) for the two clocks to be one.
	 */
	bool by_guest_task;
};

/**
 * tv_stat_compute_opts - tv_stat_compute() with options
 * @dir: session directory
 * @opts: NULL for tv_stat_compute()'s analysis
 * @kvm, @xen, @have_xen: as tv_stat_compute()
 *
 * Return: 0 or -errno (logged).
 */
int tv_stat_compute_opts(const char *dir, const struct tv_stat_opts *opts, struct tv_kvm_stat *kvm,
			 struct tv_kvm_stat *xen, bool *have_xen);

/* ------------------------------------------------- session recording */

/*
 * One recording session (host/recorder.c): the host recorder, Xen's and the
 * guests, started and stopped in the one order that keeps every clock-sync
 * probe inside the recorded traces, with one probe schedule for the guests
 * and for dom0/Xen.  A front end (tracevisor record) parses options, calls
 * tv_session_record_start(), tv_session_record_tick() while it waits, and
 * tv_session_record_stop(); the library prints nothing: what a user should
 * hear arrives through @notify.
 */

enum tv_session_note {
	/* A guest is not recording yet when the workload starts (@name; @err
	 * -ETIMEDOUT: no answer within guest_ready_timeout_ms, else failed;
	 * @detail: its status, e.g. "failed: guest agent: Cannot set filter: ...",
	 * or NULL). */
	TV_SESSION_GUEST_NOT_READY,
	/* A dom0/Xen sync probe failed: none will follow (@name NULL). */
	TV_SESSION_XEN_PROBES_FAILED,
};

#define TV_SESSION_MAX_EVENTS 256
#define TV_SESSION_GUEST_READY_TIMEOUT_MS 30000

struct tv_session_record_opts {
	/*
	 * Host events and the session directory.  With guests and an explicit
	 * event list, the sync probes' events (kvm:kvm_hypercall,
	 * kvm:kvm_write_tsc_offset) are added when this kernel has them.
	 */
	struct tv_record_opts host;
	bool xen;			/* Xen's trace buffers too (in a dom0) */
	struct tv_xen_record_opts xen_opts;	/* outdir: host.outdir */
	const struct tv_guest_spec *guests;	/* parsed and resolved */
	size_t nr_guests;
	struct tv_guest_opts guest_opts;	/* index set per guest */
	int guest_ready_timeout_ms;	/* for all guests; 0: TV_SESSION_GUEST_READY_TIMEOUT_MS */
	/* @detail: NULL or more words for the note (valid during the call) */
	void (*notify)(void *ctx, enum tv_session_note note, const char *name, int err,
		       const char *detail);
	void *notify_ctx;
	/*
	 * Interruptions (record: its signalfd).  When @cancel is set, the
	 * waits for the guests (at start, until they trace; at stop, until
	 * they end) also watch @cancel_fd and, each time it is readable, call
	 * @cancel(@notify_ctx): 1 gives up waiting, 0 waits on.  At start,
	 * tv_session_record_start() then returns 0 at once, with the guests
	 * not tracing yet still unanswered (stop the session next); at stop,
	 * every guest's end is cut short (status truncated, what it sent
	 * kept) and the stop goes on with the host.  Without an interruption
	 * the stop ends the guests in parallel, each within 7 s of the request.
	 */
	int (*cancel)(void *ctx);
	int cancel_fd;
	/*
	 * User-space tracing on the host (record --ust): listen on the
	 * registration socket (@ust_socket; NULL: $TRACEVISOR_UST_SOCK, else
	 * /run/tracevisor/ust.sock) and enable these globs on PROVIDER:EVENT
	 * in every process that registers (libtracevisor-ust), each into
	 * ust-host-PID/.  Needs the host recorder and its clock mono or
	 * x86-tsc (no host.clock: mono).
	 */
	bool ust;
	const char *const *ust_patterns;	/* none: "*" */
	size_t nr_ust_patterns;
	const char *ust_socket;
	/*
	 * > 0: the host's traced processes as a flight recorder (overwrite
	 * mode, nothing written while it runs): the last this many bytes of
	 * each process, written by tv_session_record_snapshot() and once more
	 * into the session at the end.
	 */
	uint64_t ust_flight_bytes;
};

struct tv_session_record;

/**
 * tv_session_record_start - start every recorder of a session
 * @opts: what to record (copied; the strings must outlive the session)
 * @out: the session, also on failure when non-NULL (destroy it)
 *
 * Order: the host recorder is created (when host events are recorded: no
 * --xen, or an explicit list), then Xen's; the host starts, then Xen; then
 * each guest, waiting until all trace (or the timeout); then the first
 * dom0/Xen probe burst.  Nothing of the workload runs before this returns.
 * Threads: the guests run their own threads; the session itself belongs
 * to the calling thread.
 * Return: 0, or -errno (logged; call tv_session_record_destroy()).
 */
int tv_session_record_start(const struct tv_session_record_opts *opts,
			    struct tv_session_record **out);
/*
 * Periodic work while recording: dom0/Xen probes when due, vCPU rescans
 * (VMs started since the last scan).  Call at least every
 * tv_session_record_tick_ms() milliseconds.
 */
void tv_session_record_tick(struct tv_session_record *s);
int tv_session_record_tick_ms(const struct tv_session_record *s);
/*
 * Stop in order: the guests (all at once: a dead one does not hold the
 * others; each ends within 7 s, or at once after an interruption through
 * opts.cancel), the last dom0/Xen probes, Xen's recorder, xen/ listed in
 * session.meta, the host recorder.  Return: 0 or -1 (logged).
 */
int tv_session_record_stop(struct tv_session_record *s);
/* Frees everything; restores tracefs and Xen if still changed.  NULL-safe. */
void tv_session_record_destroy(struct tv_session_record *s);
/* The parts, for progress and summaries (NULL when not recorded). */
struct tv_recorder *tv_session_record_host(const struct tv_session_record *s);
struct tv_xen_recorder *tv_session_record_xen(const struct tv_session_record *s);
size_t tv_session_record_nr_guests(const struct tv_session_record *s);
/* Guest @i (NULL if it was never started). */
struct tv_guest *tv_session_record_guest(const struct tv_session_record *s, size_t i);
/**
 * tv_session_record_snapshot - a flight recorder's snapshot, while recording
 * @s: a session started with ust_flight_bytes
 * @path: filled with the new snapshot's directory, DIR/snapshot-N (N from 1)
 * @size: bytes at @path
 *
 * Writes the last ust_flight_bytes of every traced process (a gap-free
 * tail of each: see host/ust_record.c) into a new session directory that
 * report, stat and export read like any other (session.meta written last);
 * the recording goes on.  Call from the thread that owns @s.
 * Return: 0, -EINVAL (not a flight recorder), -ENODATA (no traced process
 * registered yet: nothing written), -errno (logged).
 */
int tv_session_record_snapshot(struct tv_session_record *s, char *path, size_t size);
/**
 * tv_session_record_ust_summary - what record --ust recorded, once stopped
 * @procs: traced processes with a domain in the session
 * @events: their events recorded
 * @lost: events they counted as discarded (buffers full, discard mode)
 * All zero without --ust.
 */
void tv_session_record_ust_summary(const struct tv_session_record *s, size_t *procs,
				   uint64_t *events, uint64_t *lost);

/* ---------------------------------------------------------- compress */

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

/* --------------------------------------------------------- wall clock */

/*
 * The reference clock tied to the wall clock by the recorder's
 * CLOCK_REALTIME marker (doc/sync-probes.md, type 16).
 */
struct tv_wall_clock {
	uint64_t ref_ts;	/* the marker's time stamp, reference clock */
	uint64_t realtime_ns;	/* CLOCK_REALTIME it carries, ns since 1970 */
	uint64_t hz;		/* reference clock ticks per second */
};

#define TV_WALL_CLOCK_LEN 32	/* "2026-11-22T21:39:16.186612899Z" and NUL */

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
/**
 * tv_wall_clock_find - the wall-clock marker at the start of session @dir
 * @dir: session directory
 * @wc: set (caller's storage)
 *
 * Reads the session's first events (its own reader).
 * Return: 0, -ENOENT (logged) when there is none, or -errno.
 */
int tv_wall_clock_find(const char *dir, struct tv_wall_clock *wc);
/**
 * tv_wall_clock_ns - reference time stamp @ts as ns since 1970
 * @wc: the wall clock of the session
 * @ts: reference time
 */
uint64_t tv_wall_clock_ns(const struct tv_wall_clock *wc, uint64_t ts);
/**
 * tv_wall_clock_format - @ns as "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (UTC)
 * @ns: ns since 1970
 * @out: TV_WALL_CLOCK_LEN bytes of the caller's
 *
 * Return: @out.
 */
char *tv_wall_clock_format(uint64_t ns, char *out);

/* ------------------------------------------------------------- export */

struct tv_export_stats {
	uint64_t events;
	uint64_t streams;	/* CTF streams, or Perfetto tracks */
	uint64_t slices;	/* Perfetto: VM exit slices (KVM and Xen HVM) */
	uint64_t unpaired_exits;	/* Perfetto: exits with no entry (no slice) */
	uint64_t runstate_slices;	/* Perfetto: Xen vCPU runstate intervals */
};

/**
 * tv_export_ctf - write a session as one CTF 1.8 trace in the reference clock
 * @rd: the session, open for reading (consumed to its end; still the caller's)
 * @session_dir: its directory (for metadata)
 * @out: the CTF trace directory to create
 * @st: counts of what was written (caller's storage)
 *
 * Return: 0 or -errno (logged).
 */
int tv_export_ctf(struct tv_reader *rd, const char *session_dir, const char *out,
		  struct tv_export_stats *st);
/**
 * tv_export_perfetto - write Chrome/Perfetto trace-event JSON
 * @rd: the session, open for reading (consumed to its end; still the caller's)
 * @out: the JSON file to create
 * @st: counts of what was written (caller's storage)
 *
 * A track per CPU and per vCPU, VM exits (kvm_exit -> kvm_entry) as slices.
 * Return: 0 or -errno (logged).
 */
int tv_export_perfetto(struct tv_reader *rd, const char *out, struct tv_export_stats *st);

#pragma GCC visibility pop

#endif /* TRACEVISOR_H */
