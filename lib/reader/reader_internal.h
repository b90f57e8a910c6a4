/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Internals shared by the session reader's files (lib/reader/): domains,
 * stream cursors, stream sources.  Used in lib/ only; the session files
 * below it are lib/format/format_io.h's.
 */
#ifndef TV_LIB_INTERNAL_H
#define TV_LIB_INTERNAL_H

#include <limits.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/types.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "format_io.h"

struct tep_handle;

struct tid_tgid {
	pid_t tid;
	pid_t tgid;
};

/* Bounds known per event id, so a record is checked before it is read. */
struct event_bounds {
	int checked;
	struct tep_event *event;
	int pid_off, pid_size;	/* common_pid; size 0 if the format has none */
	int min_size;		/* end of the last static field */
	int nr_dynamic;
	struct tep_format_field *dynamic[16];
	struct json_layout *json;	/* compiled by event_fields.c on first use */
};

struct tv_domain;
struct tv_cpu_stream;

/*
 * A stream source: how the cpuN.* files of a domain of one meta `kind` are
 * decoded into records for the merge.  The reader knows sources only
 * through these three operations; lib/reader/stream_source.c lists them.
 */
struct tv_stream_source {
	const char *kind;	/* meta `kind` value */
	/* Open CPU @cpu's stream of @dom: 0 or -errno (logged). */
	int (*open)(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu);
	/* 1 with st->rec set, 0 at end of file, -errno (logged) on corruption. */
	int (*next)(struct tv_cpu_stream *st);
	/* Release what open made; safe after a failed open. */
	void (*close)(struct tv_cpu_stream *st);
	/*
	 * Following a session being written (NULL: this kind cannot be
	 * followed): see how far the file has grown, so that next() reads on
	 * past the end it returned 0 at.  0 or -errno (logged).
	 */
	int (*refresh)(struct tv_cpu_stream *st);
	/*
	 * Following: the bytes at the head of the stream's file that next()
	 * will never read again (NULL: unknown, nothing is released).
	 */
	uint64_t (*done_bytes)(const struct tv_cpu_stream *st);
};

/* linux-ftrace: cpuN.raw ring-buffer sub-buffers, or cpuN.raw.zst (cpu_stream.c). */
extern const struct tv_stream_source tv_ftrace_source;
/* xen-trace: cpuN.xen Xen t_rec streams (xen_stream.c). */
extern const struct tv_stream_source tv_xen_source;
/* ust: cpuN.ust sub-buffers of a traced process (ust_stream.c, lib/ust/ust_abi.h). */
extern const struct tv_stream_source tv_ust_source;
/* The source of meta kind @kind (NULL: linux-ftrace), or NULL if unknown. */
const struct tv_stream_source *tv_stream_source_find(const char *kind);

struct json_layout;
void tv_json_layout_free(struct json_layout *l);
/* Make room for @extra more bytes (strbuf.c). */

struct tv_domain {
	struct tv_domain_info info;
	const struct tv_stream_source *source;	/* decodes its cpuN.* files */
	char name[80];
	char subdir[80];
	/* kind ust: the domain whose clock this one reads (its parent), "" otherwise */
	char clock_of[80];
	int mapped;			/* timestamps go through @sync */
	struct tv_sync_domain sync;
	char dir[PATH_MAX];
	struct tep_handle *tep;
	struct tv_meta *meta;
	struct tv_vcpu_map vcpus;
	struct tid_tgid *tgids;	/* sorted by tid */
	size_t nr_tgids;
	size_t subbuf_size;
	int long_size;
	int swap;		/* the session's byte order is not this machine's */
	int nr_cpus;
	int incomplete;		/* its recorder never finished: no meta, maybe a short tail */
	int follow;		/* being recorded: its streams' ends are not final */
	/*
	 * A guest's domain: a sub-buffer that fails validation is skipped and
	 * counted in its stream (tv_cpu_stream.bad_pages), not an error
	 * (lib/reader/reader.c says how many when it closes).
	 */
	int skip_bad_pages;
	/* by event id: 256 blocks of 256, each made when an id in it is seen
	 * (a session of hundreds of small domains would take 12 MB each) */
	struct event_bounds **bounds;
	/*
	 * Xen's common time line (lib/reader/xen_line.c), the reader's: the xen/
	 * domain stamps its records on it; a pvclock domain (dom0, a domU)
	 * with @line_moved has its events moved to it, its vCPU N being Xen's
	 * @line_domid.N and its clock @pvclock_ns behind its pCPU's system time.
	 */
	const struct tv_xen_line *line;
	int no_streams;		/* its records are not read (tv_reader_open_moved: xen/, loaded without formats) */
	int line_moved;
	uint32_t line_domid;
	int64_t pvclock_ns;
	struct tv_info_cache *info_cache;	/* print_info.c, made on first use */
};

/*
 * Load domain @subdir of the session: its meta (or @dom->meta when the
 * caller set it; then @dom owns it), header page, formats and task maps.
 * Return: 0, or -errno with the reason logged; tv_domain_unload() either way.
 */
int tv_domain_load(struct tv_domain *dom, const char *session_dir, const char *subdir);
/* Read the vCPU map and task maps again (a session being recorded). */
void tv_domain_reload_task_maps(struct tv_domain *dom);

/* The same inside @dom's session (the parent of its directory). */
int tv_domain_open_file(const struct tv_domain *dom, const char *path);
void tv_domain_unload(struct tv_domain *dom);
/* The bounds of event @id (< 65536) of @dom, made on first use; NULL: no memory. */
struct event_bounds *tv_domain_bounds(struct tv_domain *dom, unsigned int id);
/* The event of @rec if its id is known and the record holds its fields. */
struct tep_event *tv_domain_checked_event(struct tv_domain *dom, struct tep_record *rec, int *pid,
					  const char **why);

/* print_info.c: compiled print formats of one domain. */
struct tv_info_cache;
struct trace_seq;
struct tep_record;
struct tep_event;
void tv_info_cache_free(struct tv_info_cache *cache);
/* kvm_userspace_exit's text, the way the kernel means it: 0 or -ENOMEM. */
int tv_append_userspace_exit(struct tv_strbuf *sb, uint64_t reason, uint64_t err);
int tv_domain_print_userspace_exit(struct trace_seq *s, struct tep_record *record,
				   struct tep_event *event, void *context);

/* Where a stream is in its vCPU's runs (lib/reader/xen_line.c). */
struct tv_xen_line_cursor {
	int valid;
	uint32_t key;		/* domid << 16 | vcpu */
	size_t lo, hi, i;	/* its runs, and the current one */
	int ambiguous;		/* the last time moved fit two runs (line_walk) */
};

struct tv_cpu_stream {
	struct tv_domain *dom;
	int cpu;
	int fd;
	char path[PATH_MAX];
	uint64_t file_size;
	uint64_t page_off;	/* offset of the loaded sub-buffer */
	unsigned char *page;
	size_t data_len;	/* bytes of events in the loaded sub-buffer */
	size_t rec_off;		/* next record, from the start of the data */
	uint64_t cur_ts;	/* time stamp of the last record decoded */
	struct tep_record rec;	/* current event, ts in the reference clock */
	struct tep_event *event;	/* its format, from tv_domain_checked_event() */
	int pid;		/* its common_pid */
	uint64_t raw_ts;	/* its ts in the domain's own clock */
	uint64_t raw_from, raw_to;	/* events outside [raw_from, raw_to) are another cursor's */
	struct tv_tsc_cursor tsc_cursor;	/* where the TSC relation's offsets are */
	struct tv_xen_line_cursor line_cursor;	/* which run of its vCPU (xen_line.c) */
	long long missed;	/* events lost before the current one */
	int done;
	int page_bad;		/* the loaded sub-buffer failed validation: left */
	uint64_t bad_pages;	/* sub-buffers skipped (dom->skip_bad_pages) */
	uint64_t bad_off;	/* where the first one failed, */
	const char *bad_why;	/* and why (a static string) */
	struct tv_xen_stream *xen;	/* kind xen-trace only */
	struct tv_zstream *zs;		/* cpuN.raw.zst: decompressed in order */
};

int tv_cpu_stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu);
/* Return: 1 with st->rec set, 0 at end of file, -errno (logged) on corruption. */
int tv_cpu_stream_next(struct tv_cpu_stream *st);
void tv_cpu_stream_close(struct tv_cpu_stream *st);
/* The file's whole sub-buffers written so far (following a recording). */
int tv_cpu_stream_refresh(struct tv_cpu_stream *st);
/* Following: the whole sub-buffers before the loaded one. */
uint64_t tv_cpu_stream_done_bytes(const struct tv_cpu_stream *st);

/* The same three for a domain of kind xen-trace (lib/reader/xen_stream.c). */
struct tv_xen_stream;
int tv_xen_stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu);
int tv_xen_stream_next(struct tv_cpu_stream *st);
/*
 * tv_xen_stream_next() without making the event: the next record whose
 * event id @want takes (tv_xen_stream_last()) and its time (st->rec.ts)
 * only, for a reader of the raw records (Xen's line:
 * lib/reader/xen_line.c); the others are passed over by their header.
 * Return: 1, 0 at the end, -errno.
 */
int tv_xen_stream_next_record(struct tv_cpu_stream *st, bool (*want)(uint32_t event));
void tv_xen_stream_close(struct tv_cpu_stream *st);
struct tv_xen_rec;
/* The Xen record behind the stream's current event. */
const struct tv_xen_rec *tv_xen_stream_last(const struct tv_cpu_stream *st);

/*
 * Xen's common time line (lib/reader/xen_line.c).  tv_xen_line_load() reads it from
 * the xen/ domain @xen: 0 with *out NULL when there is nothing to correct
 * (stock Xen, one pCPU, no time-scale record), else the caller frees *out
 * with tv_xen_line_free() (a reference: readers of the same unchanged
 * session in one process share one line, built once).  tv_xen_line_move() moves time stamp @ts of vCPU @key (domid << 16 |
 * vcpu), whose clock is @pvclock_ns behind the system time of its pCPU, to
 * the line, @cur walking the vCPU's runs in the order of its stream.
 */
int tv_xen_line_load(struct tv_domain *xen, struct tv_xen_line **out);
void tv_xen_line_free(struct tv_xen_line *l);
/*
 * The line's time is pCPU 0's system time, by pCPU 0's scale in force
 * at the TSC.  That scale over TSCs [lo, hi): a Xen stream keeps the one
 * its last record fell in and maps its records with it directly, asking
 * tv_xen_line_span_at() again only when a TSC leaves it (once a second
 * of trace; a search per record was 12% of a patched-Xen session's sync).
 */
struct tv_xen_line_span {
	uint64_t lo, hi;
	uint64_t tsc0, stime0;
	uint32_t mul;
	int8_t shift;
};
void tv_xen_line_span_at(const struct tv_xen_line *l, uint64_t tsc, struct tv_xen_line_span *span);
uint64_t tv_xen_line_move(const struct tv_xen_line *l, uint32_t key, int64_t pvclock_ns,
			  uint64_t ts, struct tv_xen_line_cursor *cur);

#endif
