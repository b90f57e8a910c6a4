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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
int tv_vcpu_map_write(const struct tv_vcpu_map *map, const char *path);
int tv_vcpu_map_read(struct tv_vcpu_map *map, const char *path);
const struct tv_vcpu_thread *tv_vcpu_map_find(const struct tv_vcpu_map *map, pid_t tid);
void tv_vcpu_map_free(struct tv_vcpu_map *map);

/* ------------------------------------------------------------- reading */

/* One decoded event, valid until the next tv_reader_next(). */
struct tv_event {
	uint64_t ts;			/* ns in the domain's trace clock */
	int cpu;
	int pid;
	const char *domain;		/* "host", "guest:NAME", ... */
	struct tep_handle *tep;
	struct tep_event *format;
	struct tep_record *record;
	long long missed_before;	/* >0: events lost just before this one */
};

struct tv_domain_info {
	const char *name;
	const char *dir;
	struct tep_handle *tep;
	const struct tv_meta *meta;
	const struct tv_vcpu_map *vcpus;
	pid_t (*tgid_of)(const struct tv_domain_info *dom, pid_t tid);
};

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

int tv_strbuf_append(struct tv_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int tv_strbuf_append_json_string(struct tv_strbuf *sb, const char *s, size_t n);
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

#endif /* TRACEVISOR_H */
