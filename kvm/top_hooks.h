/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * What a layer above kvm/ adds to the live view (host/top_guest.c: top
 * --guest): work at fixed points of a live top's life, each event read,
 * and the rows' guest columns.  kvm/ knows nothing of guests: it calls
 * these where they are set.
 *
 * Threads: the hooks run on the thread that reads the intervals
 * (tv_top_next(): the caller's, or tv_top_start()'s), @close on the one
 * that calls tv_top_close(), after that thread was joined.
 */
#ifndef TV_KVM_TOP_HOOKS_H
#define TV_KVM_TOP_HOOKS_H

#include "kvm_stat.h"

/* What the exit analysis reads, on VMX/SVM hosts and on PVM ones (no -e). */
#define TV_TOP_NR_DEFAULT_EVENTS 8
extern const char *const tv_top_default_events[TV_TOP_NR_DEFAULT_EVENTS];

struct tv_top_hooks {
	void *ctx;
	/* The host records; the session is not read yet (guests start here). */
	int (*started)(void *ctx, struct tv_recorder *rec);
	/* The session's following reader is open. */
	int (*opened)(void *ctx, struct tv_reader *rd);
	/* Each event read, in order, before the analysis: 1 keeps it from the
	 * analysis, 0 gives it, <0 fails the interval. */
	int (*event)(void *ctx, const struct tv_event *ev);
	/* Rows by guest task too (kvm_stat.h), with @ctx. */
	tv_exit_guest_fn guest_of;
	/* The view closes: the host still records (guests stop); free @ctx. */
	void (*close)(void *ctx);
	/* Record with the x86-tsc trace clock (the exact KVM relation to the
	 * guests' TSC); the rows and intervals are still given in ns. */
	bool tsc_clock;
	/* Read only up to this long before now: what others deliver late. */
	uint64_t lag_ns;
	/*
	 * A live source of its own instead of the host's tracefs (top --xen:
	 * Xen's trace buffers).  @live_start records a new session in @outdir
	 * that a following reader can open when it returns, *@t0 its start in
	 * the session's clock; @live_flush puts on disk every record stamped
	 * before *@limit, now in that clock; @live_end stops recording (the
	 * last interval reads the session to its end), *@t_end now.  All three
	 * set, or none; @close then stops what is still recording.
	 */
	int (*live_start)(void *ctx, const char *outdir, uint64_t *t0);
	int (*live_flush)(void *ctx, uint64_t *limit);
	int (*live_end)(void *ctx, uint64_t *t_end);
	/*
	 * The interval's rows instead of the VM exit analysis' (@event then
	 * takes every event for an analysis of its own): the events read since
	 * the last call, the interval [@t_begin, @t_end) in the session's clock.
	 */
	int (*interval)(void *ctx, uint64_t t_begin, uint64_t t_end, struct tv_exit_stat *out);
	/* A replay reads this session domain alone (top --xen: "xen"), in
	 * its own clock when the session is not synchronised; NULL: all. */
	const char *replay_domain;
	/* free()d at the very end of tv_top_close() (what opts point into) */
	void *owned;
};

/*
 * tv_top_open() with @hooks (copied): live, or a replay when the hooks have
 * no @started (that of top --guest needs the live recording).  @hooks->close is always
 * called: by tv_top_close(), or here when it fails.
 */
int tv_top_open_hooked(const struct tv_top_opts *opts, const struct tv_top_hooks *hooks,
		       struct tv_top **out);

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

#endif
