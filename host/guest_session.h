/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * One guest's session with its agent, without I/O (host/guest_session.c):
 * the clock-sync probe bookkeeping (which answers count, the host-trace
 * markers) and the phases from START to the end, with their deadlines, on
 * a clock the caller passes in.  host/guest.c's thread owns one and gives
 * it what the channel delivered and the time; the libFuzzer target
 * tests/fuzz/fuzz_guest_session.c drives the same code with a fake clock
 * and a fake channel.
 *
 * Threads: a session belongs to the thread that drives it (the guest's).
 */
#ifndef TV_HOST_GUEST_SESSION_H
#define TV_HOST_GUEST_SESSION_H

#include <stdint.h>
#include <sys/types.h>

#include "guest_stream.h"
#include "probe_sched.h"

struct tv_recorder;

#define TV_GUEST_PING_TIMEOUT_S 2.0
#define TV_GUEST_END_PROBES_TIMEOUT_S 3.0	/* after the stop request: the last probes, then STOP */
/*
 * After the stop request, the whole end sequence (last probes, STOP, the
 * agent's drain, END) at most: the session's stop must end in 10 s whatever
 * a guest does (doc/agent-protocol.md), and the host still drains after.
 */
#define TV_GUEST_STOP_MAX_S 7.0
#define TV_GUEST_DRAIN_TIMEOUT_S 2.0
#define TV_GUEST_PROBE_BURST 5		/* rounds when the guest is ready and when it stops */
#define TV_GUEST_HCALL_OUTSTANDING 64	/* HCALL requests awaiting their HCALL_DONE; older ones expire */
/* A guest's probe seqs start at a random base below 2^48 (doc/sync-probes.md). */
#define TV_GUEST_SEQ_BITS 48

/* PHASE_DRAIN: a send failed; what the agent sent before is still read. */
enum tv_guest_phase {
	TV_GUEST_PHASE_CONNECT, TV_GUEST_PHASE_RUN, TV_GUEST_PHASE_ENDING, TV_GUEST_PHASE_STOPPED,
	TV_GUEST_PHASE_DRAIN, TV_GUEST_PHASE_DONE
};

/* What a session does outside itself; @ctx is tv_guest_session.ctx. */
struct tv_guest_session_ops {
	/* Send a frame to the agent: 0 or -errno (the session then drains). */
	int (*send)(void *ctx, uint16_t type, const void *payload, size_t len);
	/* The guest is ready (1) or failed (-errno), said once. */
	void (*set_ready)(void *ctx, int state);
	/* Save the VM's TSC parameters (at READY and at STOP); may be NULL. */
	void (*save_tsc)(void *ctx);
};

struct tv_guest_probes {
	struct tv_recorder *rec;	/* the host trace the markers go to */
	uint16_t index;			/* the guest's sync index, in every marker */
	uint64_t next_seq;		/* from a random base: another guest cannot guess it */
	unsigned burst_left;
	int ping_outstanding;
	double ping_sent_at;
	uint64_t ping_seq;		/* the last ping's: the only PONG accepted */
	int ping_answered;		/* its PONG came: any other is dropped */
	struct tv_guest_hcall_req {	/* HCALL requests not answered yet, oldest first */
		uint64_t first;
		uint32_t count;
	} hcall_req[TV_GUEST_HCALL_OUTSTANDING];
	unsigned pings, pongs, hcalls_asked, hcalls_done, hcall_pending;
	/* answers without an outstanding request (unsolicited, forged seq): dropped */
	uint64_t pongs_dropped, hcalls_dropped;
	uint64_t hcall_expired;		/* requests dropped unanswered (table full) */
};

struct tv_guest_session {
	struct tv_guest_stream *gs;	/* the guest's parsed stream (the caller's) */
	const struct tv_guest_session_ops *ops;
	void *ctx;
	enum tv_guest_phase phase;
	int ready;			/* what set_ready said: 1, <0, or 0 not yet */
	int stop_asked;			/* the caller asked to stop: stop_deadline is valid */
	double stop_deadline;		/* stop request + TV_GUEST_STOP_MAX_S */
	double deadline;		/* the current phase's */
	uint64_t bytes_after_stop;	/* read after STOP was sent */
	int send_err;			/* PHASE_DRAIN: the failed send's errno */
	struct tv_probe_sched sched;	/* this guest's probe rounds */
	struct tv_guest_probes probes;
	char status[300];		/* "complete", "truncated: ...", "failed: ..." */
};

/*
 * tv_guest_session_init - a session in PHASE_CONNECT for stream @gs (the
 * caller's, set up; its on_pong/on_hcall_done/ctx are set here), probes
 * every @sync_interval s into @rec's trace naming guest @index, its seqs
 * from @seq_base (0: a random base from getrandom(), the recorder's case).
 */
void tv_guest_session_init(struct tv_guest_session *s, struct tv_guest_stream *gs,
			   const struct tv_guest_session_ops *ops, void *ctx,
			   struct tv_recorder *rec, uint16_t index, double sync_interval,
			   uint64_t seq_base);
/* A random probe seq base: in [2^47, 2^48), never 0. */
uint64_t tv_guest_probe_seq_base(void);
/* The caller asked to stop (once): every phase ends by @deadline. */
void tv_guest_session_stop(struct tv_guest_session *s, double deadline);
/*
 * tv_guest_session_end - the session is over: @fmt gives the status unless
 * one was set; the phase becomes DONE and set_ready says -EPIPE (or
 * -ECANCELED when the agent refused) unless the guest was ready.
 */
void tv_guest_session_end(struct tv_guest_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * tv_guest_session_input - what a read of the channel gave: @n bytes of
 * @buf, 0 when it closed, -errno when it failed (not -EAGAIN/-EINTR).
 */
void tv_guest_session_input(struct tv_guest_session *s, const void *buf, ssize_t n);
/*
 * tv_guest_session_tick - the timed work at @now: probes, the end sequence,
 * deadlines.  Once stopping, every phase ends by stop_deadline whatever the
 * guest sends or withholds.  Return: 0 or the failed send's -errno.
 */
int tv_guest_session_tick(struct tv_guest_session *s, double now);

/* The stream's callbacks (ctx: the session): an answer counts only for its request. */
void tv_guest_session_on_pong(void *ctx, uint64_t seq);
void tv_guest_session_on_hcall_done(void *ctx, uint64_t first, uint32_t count, uint32_t done);

#endif
