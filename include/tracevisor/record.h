/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Recording a session: the host (tracefs), Xen and the guests started and
 * stopped in one order, as `tracevisor record` does, and the host
 * recorder's counters.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_RECORD_H
#define TRACEVISOR_RECORD_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/record.h>"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracevisor/guest.h>
#include <tracevisor/xen.h>

#pragma GCC visibility push(default)

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
	/*
	 * > 0: a flight recorder (record --flight-recorder SIZE): the
	 * instance keeps the last @flight_bytes in overwrite mode (split
	 * evenly over the CPUs: @buffer_kb is not used), nothing is written
	 * until a snapshot (tv_session_record_snapshot()) or the stop, which
	 * writes the last buffers into the session itself.
	 */
	uint64_t flight_bytes;
};

struct tv_record_cpu_stats {
	uint64_t bytes;		/* raw bytes written */
	uint64_t events;	/* events consumed by the reader ("read events") */
	uint64_t lost;		/* overrun + dropped + commit overrun */
};

/*
 * The host recorder of a session (tv_session_record_host()): its counters
 * for progress and summaries.  Threads: tv_recorder_bytes() is safe while
 * recording; the others from the thread that owns the session.
 */
struct tv_recorder;

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
 * Return: counters owned by @rec (final once tv_session_record_stop() returned), or NULL
 * for a CPU out of range.
 */
const struct tv_record_cpu_stats *tv_recorder_cpu_stats(const struct tv_recorder *rec, int cpu);

/**
 * tv_recorder_bytes - bytes captured so far over all CPUs (progress output)
 * @rec: the recorder
 *
 * Threads: safe while the capture threads run (a snapshot).
 */
uint64_t tv_recorder_bytes(const struct tv_recorder *rec);

/* Xen's recorder of a session (tv_session_record_xen()), when --xen. */
struct tv_xen_recorder;

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
	/* A trigger's snapshot (@detail: the rule): @name its directory, @err
	 * 0; or @name NULL, @err -errno: it could not be written (logged;
	 * the earlier snapshots stay, the recorder stays armed). */
	TV_SESSION_SNAPSHOT,
	/* Triggers that fired but were not taken (@err: how many; @detail:
	 * why: "busy" a snapshot pending or being written, "holdoff",
	 * "max-snapshots"). */
	TV_SESSION_TRIGGER_REFUSED,
	/* A trigger fired and its snapshot is being written now (@detail:
	 * the snapshot's trigger keys, "KEY=VALUE" separated by spaces;
	 * TV_SESSION_SNAPSHOT follows when it is done). */
	TV_SESSION_TRIGGER_FIRED,
	/* A guest is still not recording TV_SESSION_GUEST_WAIT_NOTE_MS after
	 * the start, said once per guest while the wait goes on (@name; @err:
	 * its channel's last connect error, -errno, or 0 when connected and
	 * its agent has not answered yet). */
	TV_SESSION_GUEST_WAITING,
};

#define TV_SESSION_MAX_EVENTS 256
#define TV_SESSION_GUEST_READY_TIMEOUT_MS 30000
#define TV_SESSION_GUEST_WAIT_NOTE_MS 5000

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
	/*
	 * The traced processes' buffer policy (record --ust-mode,
	 * --ust-buffer), asked of every process that registers: the host's,
	 * and the guests' through their agents.  @ust_mode "discard",
	 * "blocking" or "overwrite" (NULL: the process's default, discard);
	 * @ust_subbuf_size bytes (a power of two, 4 KiB ... 1 MiB) and
	 * @ust_nr_subbufs (a power of two, 2 ... 4096) per CPU (0: the
	 * process's default, 64 KiB and 8).  A process's own
	 * TRACEVISOR_UST_MODE, TRACEVISOR_UST_SUBBUF_SIZE and
	 * TRACEVISOR_UST_NR_SUBBUFS override them for that process; one that
	 * traced before it registered keeps the buffers it has.  Not with
	 * ust_flight_bytes (which sets its own).
	 */
	const char *ust_mode;
	uint32_t ust_subbuf_size, ust_nr_subbufs;
	/*
	 * A flight recorder's triggers (host.flight_bytes > 0), each
	 * "event=SYSTEM:EVENT[,filter=FILTER]" or
	 * "exit-latency>DURATION[,vm=NAME][,reason=REASON]": a snapshot,
	 * taken by tv_session_record_tick(), @trigger_post after the trigger
	 * (an exit's: after the exit's end), with the trigger's keys in its
	 * session.meta.  DURATIONs are "100ms", "1s", "500us"...; NULL: the
	 * defaults, 100 ms after, 10 s of holdoff; @max_snapshots 0: 10.
	 * Poll tv_session_record_wait_fd() with the caller's own waits.
	 */
	const char *const *triggers;
	size_t nr_triggers;
	const char *trigger_post;
	const char *trigger_holdoff;
	unsigned int max_snapshots;
};

struct tv_session_record;

/**
 * tv_session_record_start - start every recorder of a session
 * @opts: what to record (copied; the strings must outlive the session)
 * @out: the session (tv_session_record_destroy()); NULL on failure
 *
 * Order: the host recorder is created (when host events are recorded: no
 * --xen, or an explicit list), then Xen's; the host starts, then Xen; then
 * each guest, waiting until all trace (or the timeout); then the first
 * dom0/Xen probe burst.  Nothing of the workload runs before this returns.
 * Threads: the guests run their own threads; the session itself belongs
 * to the calling thread.
 * Return: 0, or -errno (logged; what was started is stopped and removed).
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

/**
 * tv_session_record_wait_fd - a descriptor to poll (POLLIN) beside the caller's own
 * @s: the session
 *
 * Readable when a trigger fired: call tv_session_record_tick() then (it
 * reads it).  Owned by @s.  Return: the fd, or -1 without triggers.
 */
int tv_session_record_wait_fd(const struct tv_session_record *s);

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
 * @s: a session started with host.flight_bytes or ust_flight_bytes
 * @path: filled with the new snapshot's directory, DIR/snapshot-N (N from 1)
 * @size: bytes at @path
 *
 * Freezes the host kernel's ring first (host.flight_bytes: the instance's
 * snapshot buffer swapped in, or tracing stopped while it is read), then
 * writes it into host/ and the last ust_flight_bytes of every traced
 * process (a gap-free tail of each: see host/ust_record.c) into a new
 * session directory that report, stat, sync and export read like any other
 * (session.meta written last); the recording goes on.  A snapshot that
 * cannot be written whole is removed (its number is used again).  Call
 * from the thread that owns @s.
 * Return: 0, -EINVAL (not a flight recorder), -ENODATA (processes only, and
 * none registered yet: nothing written), -errno (logged).
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

#pragma GCC visibility pop

#endif /* TRACEVISOR_RECORD_H */
