/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The live view (`tracevisor top`): a recording, or a replay, read one
 * interval at a time into the rows of the stat analysis.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_TOP_H
#define TRACEVISOR_TOP_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/top.h>"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracevisor/stat.h>
#include <tracevisor/guest.h>

#pragma GCC visibility push(default)

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
	struct tv_exit_stat stat;	/* its rows: the stat analysis of the
					 * interval, sorted and filtered */
};

struct tv_top;

/* top --guest reads what is this old: a guest's events arrive within a second or so. */
#define TV_TOP_GUEST_LAG_NS 2000000000ULL

/**
 * tv_top_guest_open - the live view with each exit joined to its guest's task
 * @opts: what to show (copied; its strings must outlive @out); with guests,
 *        live and without @bpf
 * @guests: the guests (as record --guest; read while opening only)
 * @nr_guests: how many; 0: the host alone, live or a replay of
 *             opts->replay_dir
 * @out: the view, owned by the caller (tv_top_close(), which stops the guests
 *       first: the session kept with opts->outdir lists them)
 *
 * Live, the host is recorded (a tracefs instance of its own, as record
 * does) with the "mono" trace clock, or x86-tsc with guests; live needs
 * root, a replay none.  Each guest's agent streams its scheduler, IRQ and syscall events (its
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
 * @opts: as tv_top_guest_open(), without @bpf, @events, @filter, @time_functions
 *        (copied; its strings must outlive @out); @vms: domain names
 *        (globs) or domids
 * @out: the view, owned by the caller (tv_top_close(), which stops Xen's
 *       tracing, puts back its masks and releases the buffers)
 *
 * Live (dom0, root), Xen's per-CPU trace buffers are recorded as by
 * record --xen (classes gen, sched, hvm and pv) into a session
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
 * tv_stat_compute_opts() on the same recording.
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
static inline double tv_top_row_rate(const struct tv_top_interval *iv, const struct tv_exit_stat_row *r)
{
	return iv->interval_ns ? (double)r->count * 1e9 / (double)iv->interval_ns : 0;
}

/* Sort @st's rows by @key (descending; ties by count, then name). */
void tv_top_sort(struct tv_exit_stat *st, enum tv_top_sort key);

/* "total", "count", "rate" or "p99" into *@key: 0, or -EINVAL (logged). */
int tv_top_sort_parse(const char *name, enum tv_top_sort *key);

/* The session the view reads (the live recording's, or the replayed one). */
const char *tv_top_session_dir(const struct tv_top *top);

/**
 * tv_top_start - read the intervals in a thread of the view's own
 * @top: a view from tv_top_guest_open() or tv_top_xen_open(), not read with
 *       tv_top_next() since
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

#pragma GCC visibility pop

#endif /* TRACEVISOR_TOP_H */
