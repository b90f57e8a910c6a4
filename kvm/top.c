// SPDX-License-Identifier: LGPL-2.1
/*
 * The live view's engine (tracevisor top): the VM exit analysis of
 * kvm/kvm_stat.c cut into intervals, so that each interval's table has the
 * numbers `stat` would give for that stretch of time.
 *
 * Live: the host recorder writes a session (kept with opts->outdir, else a
 * temporary one removed at the end); at each interval's end the engine
 * takes the time (the trace clock is "mono", CLOCK_MONOTONIC, so user space
 * can read it), flushes every CPU's buffer, and reads the session in time
 * order up to that time (tv_reader_next_before()): every event before it
 * is written by then, so exits pair with their entries exactly as in stat.
 * Replay: a recorded session read the same way, the intervals cut in its
 * own time stamps, at a chosen speed.
 *
 * Threads: a top belongs to the thread that calls it (the recorder's
 * capture threads are the recorder's own), unless tv_top_start() gave the
 * intervals a thread of their own (the full-screen view, which must answer
 * keys while an interval is being read).  Then that thread alone calls
 * tv_top_next() and owns everything but @latest, @interval_ns and the two
 * eventfds; it publishes each interval as a new snapshot through RCU
 * (urcu-bp: the flavour for libraries, readers need no registration), so
 * the display reads the latest one lock-free and never waits for the
 * reading (tv_top_latest()).  @interval_ns is an atomic word the display
 * may change; the eventfds are written by one side, read by the other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <urcu/urcu-bp.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "kvm_stat.h"
#include "top_bpf.h"
#include "top_hooks.h"
#include "kvm_recorder.h"

#define TOP_DEFAULT_INTERVAL_NS 1000000000ULL
#define TOP_FLUSH_TIMEOUT_MS 2000
#define TOP_MIN_LIVE_INTERVAL_NS 10000000ULL

/* What the exit analysis reads, on VMX/SVM hosts and on PVM ones. */
const char *const tv_top_default_events[TV_TOP_NR_DEFAULT_EVENTS] = {
	"kvm:kvm_exit", "kvm:kvm_entry", "kvm:kvm_userspace_exit", "kvm:kvm_pio",
	"kvm:kvm_mmio", "kvm:kvm_cpuid", "kvm:kvm_emulate_insn", "kvm:kvm_hypercall",
};

struct tv_top {
	struct tv_top_opts opts;
	struct tv_recorder *rec;	/* live, from tracefs */
	struct tv_top_bpf *bpf;		/* live, aggregated in the kernel (opts.bpf) */
	char outdir[4096];
	int remove_outdir;		/* a temporary session of our own */
	struct tv_reader *rd;
	struct tv_exit_stat totals;	/* the pass's running totals */
	struct tv_kvm_stat_pass *pass;
	uint64_t interval_ns;
	uint64_t t_start;		/* the first interval's start (trace clock) */
	uint64_t t_begin, t_end;	/* the current interval (trace clock) */
	uint64_t lost;			/* events lost, seen by the reader */
	struct timespec wall_next;	/* replay at a speed: when to give the next */
	int pending;			/* replay: ev is read, not yet counted */
	int ended;
	struct tv_event ev;
	struct tv_top_hooks hooks;	/* top --guest, top --xen (host/), or zeroes */
	bool source;			/* live from hooks.live_start's recording */
	uint64_t nr_intervals;		/* given so far (opts.count) */
	/* hooks.tsc_clock: the trace clock is the TSC; ns from CLOCK_MONOTONIC */
	uint64_t tsc0, mono0;		/* at the start */
	uint64_t mono_end;		/* the current interval's end, in ns */
	/* tv_top_start()'s thread and what it shares (see the top comment) */
	pthread_t thread;
	bool running;
	int thread_ret;			/* read after pthread_join() */
	int stop_efd;			/* written by tv_top_stop(), polled by the thread */
	int publish_efd;		/* written by the thread per interval: tv_top_fd() */
	struct tv_top_interval *latest;	/* RCU-published, NULL until the first */
};

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Now in the trace clock, and the limit of what may be read (the lag). */
static uint64_t trace_now(const struct tv_top *top)
{
	return top->hooks.tsc_clock ? tv_tsc_read() : mono_now();
}

/* TSC cycles per ns since the start (1 when the trace clock is in ns). */
static double trace_per_ns(const struct tv_top *top)
{
	if (!top->hooks.tsc_clock || top->mono_end <= top->mono0)
		return 1.0;
	return (double)(tv_tsc_read() - top->tsc0) / (double)(mono_now() - top->mono0);
}

/*
 * Sleep until @deadline (CLOCK_MONOTONIC ns) unless the caller's stop fd or
 * tv_top_stop()'s becomes readable.  Return: 1 if stop was asked, 0 at the
 * deadline.
 */
static int wait_until(const struct tv_top *top, uint64_t deadline)
{
	struct pollfd pfd[2] = {
		{ .fd = top->opts.stop_fd, .events = POLLIN },
		{ .fd = top->stop_efd, .events = POLLIN },
	};

	for (;;) {
		uint64_t now = mono_now();
		int ms;

		if (now >= deadline)
			return 0;
		ms = (int)((deadline - now + 999999) / 1000000);
		if (poll(pfd, 2, ms) > 0)	/* poll ignores fds < 0 */
			return 1;
	}
}

static uint64_t top_interval(const struct tv_top *top)
{
	return __atomic_load_n(&top->interval_ns, __ATOMIC_RELAXED);
}

static int top_start_live(struct tv_top *top)
{
	struct tv_record_opts ro = {
		.events = top->opts.nr_events ? top->opts.events : tv_top_default_events,
		.nr_events = top->opts.nr_events ? top->opts.nr_events : TV_TOP_NR_DEFAULT_EVENTS,
		.filter = top->opts.filter,
		.time_functions = top->opts.time_functions,
		.nr_time_functions = top->opts.nr_time_functions,
		.buffer_kb = top->opts.buffer_kb,
		/* readable from user space: the interval limits */
		.clock = top->hooks.tsc_clock ? "x86-tsc" : "mono",
	};
	int ret;

	if (top->hooks.tsc_clock && !tv_tsc_read()) {
		tv_err("The live view with guests needs the x86-tsc trace clock: not on this machine");
		return -EOPNOTSUPP;
	}
	if (top->opts.outdir) {
		snprintf(top->outdir, sizeof(top->outdir), "%s", top->opts.outdir);
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(top->outdir, sizeof(top->outdir), "%s/tracevisor-top.%d",
			 tmp && *tmp ? tmp : "/tmp", (int)getpid());
		top->remove_outdir = 1;
	}
	ro.outdir = top->outdir;
	if (top->hooks.live_start) {
		top->source = true;
		top->mono0 = top->mono_end = mono_now();
		ret = top->hooks.live_start(top->hooks.ctx, top->outdir, &top->t_start);
		top->t_end = top->t_start;
		if (!ret)
			ret = tv_reader_open_follow(top->outdir, &top->rd);
		if (!ret && top->hooks.opened)
			ret = top->hooks.opened(top->hooks.ctx, top->rd);
		return ret;
	}
	/* the first interval starts with the recording (guests start after it) */
	top->tsc0 = tv_tsc_read();
	top->mono0 = top->mono_end = mono_now();
	top->t_start = trace_now(top);
	top->t_end = top->t_start;
	ret = tv_recorder_create(&ro, &top->rec);
	if (!ret)
		ret = tv_recorder_start(top->rec);
	if (!ret && top->hooks.started)
		ret = top->hooks.started(top->hooks.ctx, top->rec);
	if (!ret)
		ret = tv_recorder_checkpoint(top->rec);
	if (!ret)
		ret = tv_reader_open_follow(top->outdir, &top->rd);
	if (!ret && top->hooks.opened)
		ret = top->hooks.opened(top->hooks.ctx, top->rd);
	return ret;
}

static int top_start_bpf(struct tv_top *top)
{
	int ret = tv_top_bpf_open(top->opts.filter, top->opts.time_functions,
				  top->opts.nr_time_functions, &top->bpf);

	top->t_start = top->t_end = mono_now();
	return ret;
}

int tv_top_open(const struct tv_top_opts *opts, struct tv_top **out)
{
	return tv_top_open_hooked(opts, NULL, out);
}

/* The options that do not go together; -EINVAL, logged. */
static int top_check_opts(const struct tv_top_opts *opts, const struct tv_top_hooks *hooks,
			  uint64_t interval_ns)
{
	if (hooks && hooks->started && (opts->replay_dir || opts->bpf)) {
		tv_err("Guests are joined with the live view recorded from tracefs: no --replay or --bpf with them");
		return -EINVAL;
	}
	if (hooks && hooks->live_start && opts->bpf) {
		tv_err("The in-kernel aggregation (--bpf) is for KVM's exits: not with a live source of its own");
		return -EINVAL;
	}
	if (!opts->replay_dir && interval_ns < TOP_MIN_LIVE_INTERVAL_NS) {
		tv_err("Interval too short for the live view: %.6f s (at least %.2f s: each one flushes every CPU)",
		       (double)interval_ns / 1e9, (double)TOP_MIN_LIVE_INTERVAL_NS / 1e9);
		return -EINVAL;
	}
	if (opts->bpf && (opts->replay_dir || opts->outdir || opts->nr_events)) {
		tv_err("The in-kernel aggregation (--bpf) records nothing: no --replay, -o or -e with it");
		return -EINVAL;
	}
	return 0;
}

int tv_top_open_hooked(const struct tv_top_opts *opts, const struct tv_top_hooks *hooks,
		       struct tv_top **out)
{
	struct tv_top *top = calloc(1, sizeof(*top));
	int ret;

	*out = NULL;
	if (!top) {
		if (hooks && hooks->close)
			hooks->close(hooks->ctx);
		if (hooks)
			free(hooks->owned);
		return -ENOMEM;
	}
	top->stop_efd = top->publish_efd = -1;
	top->opts = *opts;
	if (hooks)
		top->hooks = *hooks;
	top->interval_ns = opts->interval_ns ? opts->interval_ns : TOP_DEFAULT_INTERVAL_NS;
	ret = top_check_opts(opts, hooks, top->interval_ns);
	if (ret)
		goto err;
	if (opts->replay_dir) {
		if (top->hooks.replay_domain)
			ret = tv_reader_open_domain(opts->replay_dir, top->hooks.replay_domain, &top->rd);
		else
			ret = tv_reader_open(opts->replay_dir, &top->rd);
		if (!ret && top->hooks.opened)
			ret = top->hooks.opened(top->hooks.ctx, top->rd);
	} else if (opts->bpf)
		ret = top_start_bpf(top);
	else
		ret = top_start_live(top);
	if (!ret && !top->bpf)
		ret = tv_kvm_stat_pass_new(top->rd, &top->totals, &top->pass);
	if (!ret && top->hooks.guest_of)
		tv_kvm_stat_pass_set_guest(top->pass, top->hooks.guest_of, top->hooks.ctx);
	if (ret)
		goto err;
	clock_gettime(CLOCK_MONOTONIC, &top->wall_next);
	*out = top;
	return 0;
err:
	tv_top_close(top);
	return ret;
}

static int top_count(struct tv_top *top, const struct tv_event *ev)
{
	if (ev->missed_before > 0)
		top->lost += (uint64_t)ev->missed_before;
	if (top->hooks.event) {
		int ret = top->hooks.event(top->hooks.ctx, ev);

		if (ret)
			return ret < 0 ? ret : 0;
	}
	return tv_kvm_stat_pass_event(top->pass, ev);
}

/* Live: everything traced before now, then the interval's table. */
static int top_read_live(struct tv_top *top)
{
	struct tv_event ev;
	uint64_t limit;
	int ret;

	do {	/* the lag's first seconds have nothing to show yet */
		if (wait_until(top, top->mono_end + top_interval(top)))
			return 0;
		top->mono_end = mono_now();
		limit = trace_now(top);
		if (top->hooks.lag_ns)	/* in the trace clock's units */
			limit -= (uint64_t)((double)top->hooks.lag_ns * trace_per_ns(top));
	} while (limit <= top->t_end);
	top->t_begin = top->t_end;
	ret = tv_recorder_checkpoint(top->rec);
	if (!ret)
		ret = tv_recorder_flush(top->rec, TOP_FLUSH_TIMEOUT_MS);
	if (!ret)
		ret = tv_reader_follow_refresh(top->rd);
	while (!ret && (ret = tv_reader_next_before(top->rd, limit, &ev)) > 0)
		ret = top_count(top, &ev);
	top->t_end = limit;
	if (!ret && top->remove_outdir)	/* read once: give its space back */
		tv_reader_follow_release_read(top->rd);
	return ret ? ret : 1;
}

/*
 * Live from a source of a layer above (hooks.live_*): everything stamped
 * before now once it is on disk.  The last interval (stop asked, or the
 * opts.count-th) stops the recording first and reads it to its end, so
 * that summed, the intervals are the analysis of the whole session kept.
 */
static int top_read_source(struct tv_top *top)
{
	bool last = wait_until(top, top->mono_end + top_interval(top));
	struct tv_event ev;
	uint64_t limit = 0;
	int ret;

	top->mono_end = mono_now();
	if (top->opts.count && ++top->nr_intervals >= top->opts.count)
		last = true;
	top->t_begin = top->t_end;
	if (last)
		ret = top->hooks.live_end(top->hooks.ctx, &limit);
	else
		ret = top->hooks.live_flush(top->hooks.ctx, &limit);
	if (!ret)
		ret = tv_reader_follow_refresh(top->rd);
	while (!ret && (ret = tv_reader_next_before(top->rd, last ? UINT64_MAX : limit, &ev)) > 0)
		ret = top_count(top, &ev);
	if (limit > top->t_end)
		top->t_end = limit;
	if (!ret && top->remove_outdir)
		tv_reader_follow_release_read(top->rd);
	if (last)
		__atomic_store_n(&top->ended, 1, __ATOMIC_RELAXED);	/* tv_top_running() */
	return ret ? ret : 1;
}

/* Replay: the session's events up to the interval's end, in its own time. */
static int top_read_replay(struct tv_top *top)
{
	int ret = 1;

	if (!top->pending) {
		ret = tv_reader_next(top->rd, &top->ev);
		if (ret <= 0)
			return ret;
		top->pending = 1;
		top->t_start = top->t_end = top->ev.ts;
	}
	top->t_begin = top->t_end;
	top->t_end += top_interval(top);
	while (top->pending && top->ev.ts < top->t_end) {
		ret = top_count(top, &top->ev);
		if (!ret)
			ret = tv_reader_next(top->rd, &top->ev);
		if (ret < 0)
			return ret;
		top->pending = ret > 0;
	}
	__atomic_store_n(&top->ended, !top->pending, __ATOMIC_RELAXED);	/* tv_top_running() */
	if (top->opts.speed > 0) {
		uint64_t wall = (uint64_t)((double)top_interval(top) / top->opts.speed);
		uint64_t next = (uint64_t)top->wall_next.tv_sec * 1000000000ULL +
				(uint64_t)top->wall_next.tv_nsec + wall;

		top->wall_next.tv_sec = (time_t)(next / 1000000000ULL);
		top->wall_next.tv_nsec = (long)(next % 1000000000ULL);
		if (wait_until(top, next))
			return 0;
	}
	return 1;
}

/* Does row VM label "NAME[PID]" (or "pidPID") match --vm @want? */
static int vm_matches(const char *label, const char *want)
{
	const char *br = strrchr(label, '[');
	char name[80], pid[24];

	if (!fnmatch(want, label, 0))
		return 1;
	snprintf(name, sizeof(name), "%.*s", br ? (int)(br - label) : (int)strlen(label), label);
	snprintf(pid, sizeof(pid), "%s", br ? br + 1 : !strncmp(label, "pid", 3) ? label + 3 : "");
	pid[strcspn(pid, "]")] = '\0';
	return !fnmatch(want, name, 0) || (*pid && !strcmp(pid, want));
}

static void top_filter_vms(const struct tv_top *top, struct tv_exit_stat *st)
{
	size_t kept = 0;

	if (!top->opts.nr_vms)
		return;
	for (size_t i = 0; i < st->nr_rows; i++) {
		for (size_t v = 0; v < top->opts.nr_vms; v++) {
			if (vm_matches(st->rows[i].vm, top->opts.vms[v])) {
				st->rows[kept++] = st->rows[i];
				break;
			}
		}
	}
	st->nr_rows = kept;
}

static int top_finish_interval(struct tv_top *top, struct tv_top_interval *out);

/* In-kernel aggregation: the rows the BPF maps gained in the interval. */
static int top_read_bpf(struct tv_top *top, struct tv_top_interval *out)
{
	uint64_t lost = 0;
	int ret;

	if (wait_until(top, top->t_end + top_interval(top)))
		return 0;
	top->t_begin = top->t_end;
	top->t_end = mono_now();
	ret = tv_top_bpf_interval(top->bpf, &out->stat, &lost);
	if (ret)
		return ret;
	top->lost += lost;
	return top_finish_interval(top, out);
}

int tv_top_next(struct tv_top *top, struct tv_top_interval *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	if (top->ended)
		return 0;
	if (top->bpf)
		return top_read_bpf(top, out);
	ret = top->source ? top_read_source(top) : top->rec ? top_read_live(top) : top_read_replay(top);
	if (ret <= 0)
		return ret;
	if (top->hooks.interval)
		ret = top->hooks.interval(top->hooks.ctx, top->t_begin, top->t_end, &out->stat);
	else
		ret = tv_kvm_stat_pass_interval(top->pass, &out->stat);
	if (ret)
		return ret;
	return top_finish_interval(top, out);
}

/* A TSC trace clock's rows in ns (the histograms stay in cycles). */
static void top_rows_to_ns(struct tv_top *top, struct tv_exit_stat *st)
{
	double k = trace_per_ns(top);

	for (size_t i = 0; i < st->nr_rows && k > 0; i++) {
		struct tv_exit_stat_row *r = &st->rows[i];

		r->min_ns = (uint64_t)((double)r->min_ns / k);
		r->p50_ns = (uint64_t)((double)r->p50_ns / k);
		r->p99_ns = (uint64_t)((double)r->p99_ns / k);
		r->max_ns = (uint64_t)((double)r->max_ns / k);
		r->total_ns = (uint64_t)((double)r->total_ns / k);
	}
}

/* Filter, sort and time an interval's rows. */
static int top_finish_interval(struct tv_top *top, struct tv_top_interval *out)
{
	top_filter_vms(top, &out->stat);
	if (top->hooks.tsc_clock)
		top_rows_to_ns(top, &out->stat);
	tv_top_sort(&out->stat, top->opts.sort);
	out->t_ns = top->t_end;
	out->interval_ns = top->t_end - top->t_begin;
	if (top->hooks.tsc_clock) {
		/* CLOCK_MONOTONIC, as the "mono" trace clock would say */
		double k = trace_per_ns(top);

		out->t_ns = top->mono0 + (uint64_t)((double)(top->t_end - top->t_start) / k);
		out->interval_ns = (uint64_t)((double)(top->t_end - top->t_begin) / k);
	}
	out->lost = top->lost;
	top->lost = 0;
	return 1;
}

static int cmp_by_key(const void *x, const void *y, void *arg)
{
	const struct tv_exit_stat_row *a = x, *b = y;
	enum tv_top_sort key = *(const enum tv_top_sort *)arg;
	uint64_t ka, kb;

	switch (key) {
	case TV_TOP_SORT_COUNT:
	case TV_TOP_SORT_RATE:	/* one interval: the same order */
		ka = a->count, kb = b->count;
		break;
	case TV_TOP_SORT_P99:
		ka = a->p99_ns, kb = b->p99_ns;
		break;
	default:
		ka = a->total_ns, kb = b->total_ns;
		break;
	}
	if (ka != kb)
		return ka < kb ? 1 : -1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return strcmp(a->vm, b->vm) ?: strcmp(a->vcpu, b->vcpu) ?: strcmp(a->reason, b->reason);
}

void tv_top_sort(struct tv_exit_stat *st, enum tv_top_sort key)
{
	qsort_r(st->rows, st->nr_rows, sizeof(*st->rows), cmp_by_key, &key);
}

int tv_top_sort_parse(const char *name, enum tv_top_sort *key)
{
	static const char *const names[] = { "total", "count", "rate", "p99" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i])) {
			*key = (enum tv_top_sort)i;
			return 0;
		}
	}
	tv_err("Unknown sort key: \"%s\" (total, count, rate or p99)", name);
	return -EINVAL;
}

void tv_top_interval_free(struct tv_top_interval *iv)
{
	tv_exit_stat_free(&iv->stat);
}

const char *tv_top_session_dir(const struct tv_top *top)
{
	return top->opts.replay_dir ? top->opts.replay_dir : top->outdir;
}

int tv_top_close(struct tv_top *top)
{
	int ret = 0;

	if (!top)
		return 0;
	if (top->running)
		tv_top_stop(top);
	if (top->latest)
		tv_top_interval_free(top->latest);
	free(top->latest);
	if (top->stop_efd >= 0)
		close(top->stop_efd);
	if (top->publish_efd >= 0)
		close(top->publish_efd);
	tv_kvm_stat_pass_free(top->pass);
	tv_reader_close(top->rd);
	tv_top_bpf_close(top->bpf);
	if (top->hooks.close)
		top->hooks.close(top->hooks.ctx);	/* guests stop while the host records */
	if (top->rec) {
		ret = tv_recorder_stop(top->rec);
		tv_recorder_destroy(top->rec);
	}
	/* a recorder that failed to start removed what it had made */
	if (top->remove_outdir && access(top->outdir, F_OK) == 0 && tv_session_remove_tree(top->outdir))
		tv_warn("Cannot remove the live view's session: path=\"%s\"", top->outdir);
	tv_exit_stat_free(&top->totals);
	free(top->hooks.owned);
	free(top);
	return ret;
}

/* ---------------------------------------------- the intervals' own thread */

static int interval_copy(struct tv_top_interval *dst, const struct tv_top_interval *src)
{
	*dst = *src;
	dst->stat.rows = malloc((src->stat.nr_rows ? src->stat.nr_rows : 1) * sizeof(*dst->stat.rows));
	if (!dst->stat.rows)
		return -ENOMEM;
	memcpy(dst->stat.rows, src->stat.rows, src->stat.nr_rows * sizeof(*dst->stat.rows));
	return 0;
}

/* Make @iv (taken over) the latest interval; free the one it replaces. */
static void top_publish(struct tv_top *top, struct tv_top_interval *iv)
{
	struct tv_top_interval *old;
	uint64_t one = 1;

	/* rcu_xchg_pointer orders @iv's contents before the pointer, for readers */
	old = rcu_xchg_pointer(&top->latest, iv);
	/* a reader that found @old has left its read-side section after this */
	urcu_bp_synchronize_rcu();
	if (old) {
		tv_top_interval_free(old);
		free(old);
	}
	if (write(top->publish_efd, &one, sizeof(one)) != sizeof(one))
		tv_debug("Cannot signal a new interval: errno=%d", errno);
}

static void *top_thread(void *arg)
{
	struct tv_top *top = arg;
	int ret;

	for (;;) {
		struct tv_top_interval *iv = calloc(1, sizeof(*iv));

		if (!iv) {
			ret = -ENOMEM;
			break;
		}
		ret = tv_top_next(top, iv);
		if (ret <= 0) {
			free(iv);
			break;
		}
		top_publish(top, iv);
	}
	top->thread_ret = ret;
	return NULL;
}

int tv_top_start(struct tv_top *top)
{
	int ret;

	top->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	top->publish_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (top->stop_efd < 0 || top->publish_efd < 0) {
		ret = -errno;
		tv_err("Cannot create eventfd for the live view: errno=%d (%s)", -ret, strerror(-ret));
		return ret;
	}
	ret = pthread_create(&top->thread, NULL, top_thread, top);
	if (ret) {
		tv_err("Cannot start the live view's thread: errno=%d (%s)", ret, strerror(ret));
		return -ret;
	}
	top->running = true;
	return 0;
}

int tv_top_fd(const struct tv_top *top)
{
	return top->publish_efd;
}

int tv_top_latest(struct tv_top *top, struct tv_top_interval *out)
{
	struct tv_top_interval *iv;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	urcu_bp_read_lock();
	iv = rcu_dereference(top->latest);
	if (iv)
		ret = interval_copy(out, iv) ?: 1;
	urcu_bp_read_unlock();
	return ret;
}

void tv_top_set_interval(struct tv_top *top, uint64_t interval_ns)
{
	uint64_t min = top->rec || top->bpf || top->source ? TOP_MIN_LIVE_INTERVAL_NS : 1;

	__atomic_store_n(&top->interval_ns, interval_ns < min ? min : interval_ns, __ATOMIC_RELAXED);
}

uint64_t tv_top_get_interval(const struct tv_top *top)
{
	return top_interval(top);
}

bool tv_top_running(const struct tv_top *top)
{
	return top->running && !__atomic_load_n(&top->ended, __ATOMIC_RELAXED);
}

int tv_top_stop(struct tv_top *top)
{
	uint64_t one = 1;

	if (!top->running)
		return 0;
	if (write(top->stop_efd, &one, sizeof(one)) != sizeof(one))
		tv_debug("Cannot ask the live view's thread to stop: errno=%d", errno);
	pthread_join(top->thread, NULL);
	top->running = false;
	return top->thread_ret;
}
