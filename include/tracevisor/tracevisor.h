/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * tracevisor — tracing virtualised systems across host, hypervisor and guests.
 *
 * This is the one public header of libtracevisor (lib/, kvm/, host/).
 * Library functions never print or exit: they return 0 or a negative errno
 * (or NULL with errno set) and report details through the log callback
 * (tv_log_set_callback()).  Only the command-line tools in tools/ exit.
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
void tv_log_set_level(enum tv_log_level max_level);
void tv_log(enum tv_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define tv_err(...)   tv_log(TV_LOG_ERROR, __VA_ARGS__)
#define tv_warn(...)  tv_log(TV_LOG_WARN, __VA_ARGS__)
#define tv_info(...)  tv_log(TV_LOG_INFO, __VA_ARGS__)
#define tv_debug(...) tv_log(TV_LOG_DEBUG, __VA_ARGS__)

/* --------------------------------------------------------- session meta */

/* key=value metadata files (DIR/session.meta, DIR/DOMAIN/meta). */
struct tv_meta;

struct tv_meta *tv_meta_new(void);
void tv_meta_free(struct tv_meta *meta);
int tv_meta_set(struct tv_meta *meta, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *tv_meta_get(const struct tv_meta *meta, const char *key);
long long tv_meta_get_ll(const struct tv_meta *meta, const char *key, long long def);
/* Writes atomically (temporary file + rename). */
int tv_meta_write(const struct tv_meta *meta, const char *path);
int tv_meta_read(const char *path, struct tv_meta **out);
/**
 * tv_session_write_meta - write DIR/session.meta; written last, its presence
 * marks a complete session
 * @session_dir: the session
 * @domains: comma-separated domain subdirectories, in order
 * @reference: the domain whose clock is the reference
 */
int tv_session_write_meta(const char *session_dir, const char *domains, const char *reference);

/* ----------------------------------------------------------- recording */

#define TV_RECORD_DEFAULT_BUFFER_KB 4096
#define TV_RECORD_DEFAULT_EVENTS "kvm"

struct tv_record_opts {
	const char *outdir;
	const char *const *events;	/* "system", "system:event" or globs */
	size_t nr_events;		/* 0: TV_RECORD_DEFAULT_EVENTS */
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
 * one thread, except tv_recorder_write_marker(), tv_recorder_add_vcpu(),
 * tv_recorder_set_vm_name() and tv_recorder_add_domain(), which the guest
 * threads call too (an internal lock covers the vCPU map, VM names and
 * the domain list; a marker is one write(), atomic in the kernel).
 */
struct tv_recorder;

/**
 * tv_recorder_create - prepare a recording: tracefs instance, events, output
 * @opts: what to record and where
 * @out: the new recorder
 *
 * Cleans up stale instances of killed runs, creates this run's own tracefs
 * instance, enables the events and writes the static part of the session
 * (formats, header_page).  Nothing is traced until tv_recorder_start().
 * Return: 0, or -errno (the instance and the output directory are removed).
 */
int tv_recorder_create(const struct tv_record_opts *opts, struct tv_recorder **out);
int tv_recorder_start(struct tv_recorder *rec);
/* Stops tracing, flushes every CPU, writes the metadata and counts losses. */
int tv_recorder_stop(struct tv_recorder *rec);
/* Removes the tracefs instance; safe on a recorder that never started. */
void tv_recorder_destroy(struct tv_recorder *rec);
int tv_recorder_nr_cpus(const struct tv_recorder *rec);
const struct tv_record_cpu_stats *tv_recorder_cpu_stats(const struct tv_recorder *rec, int cpu);
/* Rescan /proc for VM processes while recording (VMs started after start). */
int tv_recorder_scan_vcpus(struct tv_recorder *rec);
/* Bytes captured so far over all CPUs (for progress output). */
uint64_t tv_recorder_bytes(const struct tv_recorder *rec);
/* Remove tracefs instances left by tracevisor processes that no longer run. */
int tv_tracefs_cleanup_stale(void);

/**
 * tv_recorder_write_marker - write a raw marker into the recording's trace
 * @rec: a started recorder
 * @buf: payload; its first 4 bytes are the marker id (trace_marker_raw)
 * @len: bytes, 8..4096
 *
 * The record lands in the instance's own buffer as an ftrace:raw_data
 * event, timestamped in the trace clock.  Safe from any thread.
 * Return: 0 or -errno.
 */
int tv_recorder_write_marker(struct tv_recorder *rec, const void *buf, size_t len);
/* Label the vCPU threads of process @vm_pid with @name in host/vcpus. */
int tv_recorder_set_vm_name(struct tv_recorder *rec, pid_t vm_pid, const char *name);
/*
 * Thread @tid of process @vm_pid runs vCPU @vcpu (known from the VMM, e.g.
 * QMP query-cpus-fast): listed in host/vcpus even when the process holds
 * no KVM fds (a TCG QEMU).  Call before tv_recorder_stop().
 */
int tv_recorder_add_vcpu(struct tv_recorder *rec, pid_t tid, pid_t vm_pid, int vcpu);
/* List the domain subdirectory @subdir (e.g. "guest-vm1") in session.meta. */
int tv_recorder_add_domain(struct tv_recorder *rec, const char *subdir);
const char *tv_recorder_outdir(const struct tv_recorder *rec);

/* ------------------------------------------------------------- guests */

#define TV_GUEST_DEFAULT_LIMIT_MB 2048
#define TV_GUEST_DEFAULT_SYNC_INTERVAL 1.0
#define TV_GUEST_NAME_MAX 32
#define TV_GUEST_MAX_VCPUS 256

/*
 * Where a guest's agent is and which host process runs it
 * (tracevisor-record(1), --guest):
 *   NAME                           a libvirt domain on qemu:///system
 *   vsock:CID[:PORT],pid:PID,name:NAME   or   serial:PATH,pid:PID,name:NAME
 */
struct tv_guest_spec {
	char name[TV_GUEST_NAME_MAX + 1];	/* [A-Za-z0-9_.-], not starting with '.' */
	char libvirt[128];		/* libvirt domain name, or "" */
	unsigned int vsock_cid;		/* 0: no vsock */
	unsigned int vsock_port;	/* 0: the agent's default, 7476 */
	char serial[256];		/* host end of the virtio-serial port, or "" */
	pid_t qemu_pid;			/* 0: unknown (no vCPU attribution) */
	unsigned int nr_vcpus;		/* vCPU threads known from libvirt (QMP) */
	pid_t vcpu_tid[TV_GUEST_MAX_VCPUS];	/* [cpu-index] = thread id, 0: unknown */
};

/* Return: 0, or -EINVAL with the reason logged. */
int tv_guest_spec_parse(const char *text, struct tv_guest_spec *spec);
/*
 * Fill a libvirt SPEC's pid, vsock CID / serial path and vCPU threads from
 * libvirt (qemu:///system).  Return: 0, -ENOTSUP when built without
 * libvirt, or -errno.  A no-op for vsock:/serial: specs.
 */
int tv_guest_spec_resolve(struct tv_guest_spec *spec);

struct tv_guest_opts {
	const char *events;	/* comma list for the agent, NULL: its default */
	const char *clock;	/* guest trace clock, NULL: "local" */
	unsigned int buffer_kb;	/* guest ring buffer per CPU, 0: 2048 */
	double sync_interval;	/* seconds between probe rounds, 0: default */
	uint64_t max_bytes;	/* accepted from the guest, 0: default limit */
	unsigned int index;	/* the guest's number in the session (markers) */
};

struct tv_guest_stats {
	uint64_t bytes, events, lost;
	unsigned int pings, pongs, hcalls_asked, hcalls_done;
	int listed;		/* the guest's domain is in the session */
	int counts_known;	/* events/lost came with the agent's END */
	char status[300];	/* "complete", "truncated: ...", "failed: ..." */
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
 * @spec: the guest
 * @opts: guest-side options
 * @out: the guest handle
 *
 * Creates DIR/guest-NAME and a thread that connects to the agent, streams
 * its data into that directory and runs the sync probes.  Never blocks on
 * the guest.  Return: 0 or -errno (nothing was started).
 */
int tv_guest_start(struct tv_recorder *rec, const struct tv_guest_spec *spec,
		   const struct tv_guest_opts *opts, struct tv_guest **out);
/* Wait until the guest traces. Return: 0, -ETIMEDOUT, or its failure. */
int tv_guest_wait_ready(struct tv_guest *g, int timeout_ms);
/*
 * Final probes, STOP, drain, guest-NAME/meta.  Call before
 * tv_recorder_stop() (the probes need host tracing).  Return: 0 when the
 * guest's domain is decodable and listed, else -errno (logged).
 */
int tv_guest_stop(struct tv_guest *g);
/* Start the end sequence without waiting: stop many guests in parallel. */
void tv_guest_request_stop(struct tv_guest *g);
void tv_guest_get_stats(const struct tv_guest *g, struct tv_guest_stats *st);
const char *tv_guest_name(const struct tv_guest *g);
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

/* Scan /proc (or @proc_root) for processes holding KVM VM fds; merge into @map. */
int tv_vcpu_map_scan(struct tv_vcpu_map *map, const char *proc_root);
/* Add (or update) thread @tid as vCPU @vcpu of @vm_pid. Return: 0 or -ENOMEM. */
int tv_vcpu_map_add(struct tv_vcpu_map *map, pid_t tid, pid_t vm_pid, int vcpu);
int tv_vcpu_map_write(const struct tv_vcpu_map *map, const char *path);
int tv_vcpu_map_read(struct tv_vcpu_map *map, const char *path);
const struct tv_vcpu_thread *tv_vcpu_map_find(const struct tv_vcpu_map *map, pid_t tid);
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

/* Map @ts (domain clock) to the reference clock; saturates at 0 and INT64_MAX. */
uint64_t tv_clock_map_apply(const struct tv_clock_map *map, uint64_t ts);
/* @outer after @inner: dom --inner--> mid --outer--> ref. */
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

struct tv_sync_hull *tv_sync_hull_new(void);
void tv_sync_hull_free(struct tv_sync_hull *h);
/* Return: 0, -ERANGE (coordinates too far apart), -EINVAL (x decreasing), -ENOMEM. */
int tv_sync_hull_add_below(struct tv_sync_hull *h, int64_t x, int64_t y);
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

uint64_t tv_tsc_guest_from_host(const struct tv_tsc_params *p, uint64_t host_tsc);
/* The smallest host TSC whose guest TSC is >= @guest_tsc: an exact inverse. */
uint64_t tv_tsc_host_from_guest(const struct tv_tsc_params *p, uint64_t guest_tsc);

/*
 * A TSC offset of vCPU @vcpu in force from host TSC @from_host on
 * (kvm_write_tsc_offset; from_host 0: the offset in force when the trace
 * began).  KVM rewrites a vCPU's offset at every vCPU load when the host's
 * TSC is unstable, thousands of times a second, so there is no fixed limit.
 */
struct tv_tsc_segment {
	uint64_t from_host;
	uint64_t offset;
	uint32_t vcpu;
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
};

struct tv_sync_result {
	struct tv_sync_domain *domains;
	size_t nr;
	char reference[80];
};

/**
 * tv_sync_session - estimate every domain's clock against the reference
 * @dir: session directory
 * @out: results, one per domain (the reference first)
 *
 * Reads the probes (doc/sync-probes.md) with the domains' own clocks,
 * estimates, composes and checks causality.  Does not write anything.
 */
int tv_sync_session(const char *dir, struct tv_sync_result *out);
/*
 * After tv_sync_session(): also count guest events that, once mapped, fall
 * where their vCPU was out of guest mode (host kvm_exit .. kvm_entry).
 * tv_sync_session() calls it; exposed for results read back from a file.
 */
int tv_sync_check_vcpus(const char *dir, struct tv_sync_result *res);
/* @ts of domain @d in the reference clock (map or TSC relation). */
uint64_t tv_sync_domain_apply(const struct tv_sync_domain *d, uint64_t ts);
/*
 * The same for an event of guest CPU @cpu: with the TSC relation, each vCPU
 * has its own offset history (a CPU without one uses the lowest vCPU's).
 */
uint64_t tv_sync_domain_apply_cpu(const struct tv_sync_domain *d, int cpu, uint64_t ts);
/* Deep copy (TSC segments, pieces); 0 or -ENOMEM.  Release frees the copy's. */
int tv_sync_domain_copy(struct tv_sync_domain *dst, const struct tv_sync_domain *src);
void tv_sync_domain_release(struct tv_sync_domain *d);
/* Whether the result is good enough to merge by (exact, accurate, approximate). */
bool tv_sync_domain_usable(const struct tv_sync_domain *d);
/* Write @res as DIR/sync/transforms (doc/session-format.md). */
int tv_sync_write(const char *dir, const struct tv_sync_result *res);
/* Read DIR/sync/transforms; -ENOENT when the session was never synced. */
int tv_sync_read(const char *dir, struct tv_sync_result *out);
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
 * @out: the reader
 *
 * Streams each CPU file page by page and merges them with a heap: memory
 * does not depend on the trace size.  Return: 0 or -errno (logged).
 */
int tv_reader_open(const char *dir, struct tv_reader **out);
/*
 * tv_reader_open() maps every domain to the reference clock when the
 * session holds DIR/sync/transforms (usable quality only); this one keeps
 * each domain's own clock (what the sync estimation reads).
 */
int tv_reader_open_raw(const char *dir, struct tv_reader **out);
struct tv_sync_result;
/* With the transforms of @res (usable domains only) instead of the stored ones. */
int tv_reader_open_synced(const char *dir, const struct tv_sync_result *res,
			  struct tv_reader **out);
/* Return: 1 with @ev filled, 0 at the end, -errno on a corrupt file (logged). */
int tv_reader_next(struct tv_reader *rd, struct tv_event *ev);
void tv_reader_close(struct tv_reader *rd);
size_t tv_reader_nr_domains(const struct tv_reader *rd);
const struct tv_domain_info *tv_reader_domain(const struct tv_reader *rd, size_t i);
const struct tv_domain_info *tv_reader_event_domain(const struct tv_reader *rd,
						    const struct tv_event *ev);

/* Field access that never reads outside the record. */
int tv_event_field_u64(const struct tv_event *ev, const char *name, uint64_t *val);
/* Appends the event's fields to @buf as a JSON object. */
struct tv_strbuf;
int tv_event_fields_json(const struct tv_event *ev, struct tv_strbuf *buf);

/* -------------------------------------------------------- string buffer */

struct tv_strbuf {
	char *data;
	size_t len;
	size_t cap;
};

/**
 * tv_event_append_info() - append an event's text, as its print format says
 * @ev: an event from tv_reader_next()
 * @sb: where the text goes (no newline)
 *
 * The same characters as libtraceevent's tep_print_event() with
 * TEP_PRINT_INFO, but each event type's print format is compiled once and
 * numbers are formatted without printf where printf's rules are simple;
 * formats it does not compile are printed by libtraceevent.  Not
 * thread-safe: the compiled formats are cached in @ev's domain.
 *
 * Return: 0, or -ENOMEM.
 */
int tv_event_append_info(const struct tv_event *ev, struct tv_strbuf *sb);
/* 1 if @ev's type is printed by the compiled renderer, 0 if by libtraceevent. */
int tv_event_info_compiled(const struct tv_event *ev);

int tv_strbuf_append(struct tv_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int tv_strbuf_append_json_string(struct tv_strbuf *sb, const char *s, size_t n);
/* Fast paths for per-event output: raw bytes, decimal integers. */
/*
 * Writes @v in decimal at @out, zero-padded to at least @min_digits (at most
 * 20): room for 24 bytes is enough.  Returns the end; no NUL is written.
 */
char *tv_put_u64(char *out, uint64_t v, int min_digits);
/* Room for @extra more bytes (and a NUL): 0 or -ENOMEM. */
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
int tv_strbuf_append_u64(struct tv_strbuf *sb, uint64_t v);
int tv_strbuf_append_i64(struct tv_strbuf *sb, int64_t v);
void tv_strbuf_reset(struct tv_strbuf *sb);
void tv_strbuf_free(struct tv_strbuf *sb);

/* --------------------------------------------------------- KVM analysis */

enum tv_kvm_isa {
	TV_KVM_ISA_UNKNOWN = 0,
	TV_KVM_ISA_VMX = 1,	/* values of kvm_exit's isa field */
	TV_KVM_ISA_SVM = 2,
};

/* Name of a kvm_exit reason, or NULL when the code is not known. */
const char *tv_kvm_exit_reason_name(enum tv_kvm_isa isa, uint64_t code);
/* Name of a KVM_EXIT_* user-space exit reason, or NULL. */
const char *tv_kvm_userspace_exit_name(uint64_t reason);

struct tv_kvm_stat_row {
	char vm[80];
	char vcpu[24];
	char reason[48];
	uint64_t count;
	uint64_t min_ns, p50_ns, p99_ns, max_ns, total_ns;
	bool has_latency;
	uint64_t hist[64];	/* log2(ns) buckets */
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
 * @out: rows sorted by total time, then count
 */
int tv_kvm_stat_compute(const char *dir, struct tv_kvm_stat *out);
void tv_kvm_stat_free(struct tv_kvm_stat *st);

/* ------------------------------------------------------------------ Xen */

/* Xen's trace buffers, from dom0: session domain xen/, kind xen-trace. */
#define TV_XEN_DEFAULT_PAGES 32		/* per CPU, as xentrace */
#define TV_XEN_DEFAULT_MASK 0x0ffff000u	/* TRC_ALL, as xentrace */

struct tv_xen_record_opts {
	const char *outdir;	/* the session directory */
	uint32_t evt_mask;	/* 0: TV_XEN_DEFAULT_MASK */
	const char *cpus;	/* physical CPU list "0-3,6"; NULL: all */
	unsigned int pages;	/* per CPU buffer; 0: default (used if Xen has none yet) */
	bool in_session;	/* outdir made by the host recorder: only add xen/ */
};

/*
 * Threads: a Xen recorder runs one drain thread between its start and
 * stop; call the tv_xen_recorder_* functions from one thread.
 */
struct tv_xen_recorder;

/**
 * tv_xen_recorder_create - map Xen's trace buffers for recording
 * @opts: what to record and where
 * @out: the recorder
 *
 * Opens libxenctrl, libxenforeignmemory and libxenevtchn, allocates the
 * buffers if Xen has none, maps t_info and every CPU's buffer, binds
 * VIRQ_TBUF and creates DIR/xen/.  Tracing starts with
 * tv_xen_recorder_start().  Return: 0 or -errno; -ENODEV when this is not
 * a Xen dom0 (logged on one line).
 */
int tv_xen_recorder_create(const struct tv_xen_record_opts *opts, struct tv_xen_recorder **out);
int tv_xen_recorder_start(struct tv_xen_recorder *rec);
/* Disables tracing, drains every CPU, restores the masks, writes xen/meta. */
int tv_xen_recorder_stop(struct tv_xen_recorder *rec);
/* Restores the hypervisor's trace state if still changed, unmaps, frees. */
void tv_xen_recorder_destroy(struct tv_xen_recorder *rec);
int tv_xen_recorder_nr_cpus(const struct tv_xen_recorder *rec);
uint64_t tv_xen_recorder_bytes(const struct tv_xen_recorder *rec);

/* "sched,hvm,pv" (class names), "all" or a hex mask → Xen event mask; 0 if invalid. */
uint32_t tv_xen_parse_events(const char *spec);
/* Is @cpu in the list "0-3,6"? */
bool tv_xen_cpu_in_list(const char *list, int cpu);
/* xc_physinfo's cpu_khz, 0 when not on a Xen dom0. */
uint64_t tv_xen_host_cpu_khz(void);

/**
 * tv_xen_import_xentrace - convert a file written by Xen's xentrace
 * @file: the xentrace output
 * @outdir: the session directory to create
 * @cpu_khz: TSC frequency; 0: xc_physinfo's when on Xen, else 2.4 GHz (warned)
 */
int tv_xen_import_xentrace(const char *file, const char *outdir, uint64_t cpu_khz);

/**
 * tv_xen_inject - write a TRC_GUEST record into Xen's trace (HVMOP_xentrace)
 * @event: 0..4095, ORed into TRC_GUEST (0x0800f000)
 * @data: up to 7 words
 * @nr: number of words
 * @mono: NULL, or filled with dom0's CLOCK_MONOTONIC (ns) just before and
 *        just after the hypercall
 *
 * A sync point: on the patched hypervisor the record carries Xen's TSC.
 */
int tv_xen_inject(unsigned int event, const uint32_t *data, unsigned int nr, uint64_t mono[2]);

/**
 * tv_xen_sync_probe - one dom0/Xen clock-sync probe (doc/sync-probes.md)
 * @rec: the host (dom0) recorder of the same session
 * @seq: probe sequence number
 *
 * Writes the XEN_BEFORE marker into dom0's trace, injects the Xen record
 * TRC_GUEST | 0x476 { magic, seq low, seq high }, then the XEN_AFTER marker.
 * Return: 0 or -errno (logged).
 */
int tv_xen_sync_probe(struct tv_recorder *rec, uint64_t seq);

/* Write DIR/session.meta listing @domains (comma list); written last. */
int tv_session_write_domains(const char *dir, const char *domains, const char *reference);

/**
 * tv_xen_stat_compute - Xen analysis of a session's xen/ domain
 * @dir: session directory
 * @out: rows (vm "dN", vcpu, reason): runstate times per domain and vCPU,
 *       HVM exit reasons timed exit→entry, hypercalls and other records
 *       counted.  Return: 0, -ENOENT when the session has no Xen domain.
 */
int tv_xen_stat_compute(const char *dir, struct tv_kvm_stat *out);

/* ---------------------------------------------------------- compress */

struct tv_compress_stats {
	uint64_t files;		/* stream files compressed */
	uint64_t bytes_in;	/* their raw size */
	uint64_t bytes_out;	/* and compressed */
};

/**
 * tv_session_compress - compress every cpuN.raw of session @dir to cpuN.raw.zst
 * @dir: a complete session (its session.meta lists the domains)
 * @st: what was compressed
 *
 * Each file is written aside, synced and renamed before its raw file is
 * removed: an interrupted run leaves every stream readable, once.  Readers
 * take either form.  Return: 0 or -errno (logged).
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

/* Ticks per second of a reference domain's trace clock: 1e9, or the TSC's. */
uint64_t tv_reference_clock_hz(const struct tv_domain_info *ref);
/* @ev is the reference domain's CLOCK_REALTIME marker: 0 with @wc set, else -ENOMSG. */
int tv_wall_clock_of_event(const struct tv_event *ev, struct tv_wall_clock *wc);
/**
 * tv_wall_clock_find - the wall-clock marker at the start of session @dir
 * Reads the session's first events (its own reader).
 * Return: 0, -ENOENT (logged) when there is none, or -errno.
 */
int tv_wall_clock_find(const char *dir, struct tv_wall_clock *wc);
/* Reference time stamp @ts as ns since 1970. */
uint64_t tv_wall_clock_ns(const struct tv_wall_clock *wc, uint64_t ts);
/* @ns as "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (UTC) in @out[TV_WALL_CLOCK_LEN]. */
char *tv_wall_clock_format(uint64_t ns, char *out);

/* ------------------------------------------------------------- export */

struct tv_export_stats {
	uint64_t events;
	uint64_t streams;	/* CTF streams, or Perfetto tracks */
	uint64_t slices;	/* Perfetto: VM exit slices */
};

/**
 * tv_export_ctf - write a session as one CTF 1.8 trace in the reference clock
 * @rd: the session, open for reading (consumed to its end)
 * @session_dir: its directory (for metadata)
 * @out: the CTF trace directory to create
 * @st: counts of what was written
 */
int tv_export_ctf(struct tv_reader *rd, const char *session_dir, const char *out,
		  struct tv_export_stats *st);
/**
 * tv_export_perfetto - write Chrome/Perfetto trace-event JSON: a track per
 * CPU and per vCPU, VM exits (kvm_exit -> kvm_entry) as slices
 */
int tv_export_perfetto(struct tv_reader *rd, const char *out, struct tv_export_stats *st);

#endif /* TRACEVISOR_H */
