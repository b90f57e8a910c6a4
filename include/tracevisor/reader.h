/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Reading a session: every domain's events merged in time order (in the
 * reference clock once synchronised), the domains, an event's fields and
 * text, and the wall clock of the session.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_READER_H
#define TRACEVISOR_READER_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/reader.h>"
#endif

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include <tracevisor/session.h>
#include <tracevisor/strbuf.h>

struct tep_handle;
struct tep_event;
struct tep_record;

#pragma GCC visibility push(default)

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
	/*
	 * 1: a pvclock domain's event moved to Xen's common time line whose
	 * time fits two runs of its vCPU on pCPUs whose times differ (a move
	 * between them just before or after it): @ts is the first run's
	 * reading, and may be off by the pCPUs' difference.
	 */
	int time_ambiguous;
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
 * tv_reader_next - the next event in time order
 * @rd: the reader
 * @ev: filled in; it points into @rd and is valid until the next call
 *
 * Return: 1 with @ev filled, 0 at the end, -errno on a corrupt file (logged).
 */
int tv_reader_next(struct tv_reader *rd, struct tv_event *ev);

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
 * tv_event_fields_json - append the event's fields to @buf as a JSON object
 * @ev: an event from tv_reader_next()
 * @buf: appended to (caller's buffer)
 *
 * Threads: as tv_event_append_info() (layouts cached in the domain).
 * Return: 0 or -ENOMEM.
 */
int tv_event_fields_json(const struct tv_event *ev, struct tv_strbuf *buf);

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

#pragma GCC visibility pop

#endif /* TRACEVISOR_READER_H */
