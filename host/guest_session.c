// SPDX-License-Identifier: LGPL-2.1
/*
 * One guest's session with its agent, without I/O: the clock-sync probe
 * bookkeeping (doc/sync-probes.md: message ping/pong with markers in the
 * host trace, hypercall probe requests) and the phases from START to the
 * end with their deadlines.  host/guest.c's thread gives it the channel's
 * bytes and the time; everything it sends goes through ops->send.  Kept
 * apart so that tests/fuzz/fuzz_guest_session.c runs this very code as a
 * state machine, on a fake clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "guest_session.h"
#include "../kvm/kvm_recorder.h"

uint64_t tv_guest_probe_seq_base(void)
{
	uint64_t r;

	/*
	 * A guest recorded without pid: or libvirt has no known vCPU threads:
	 * its hypercall probes are told apart from another guest's only by
	 * their seqs, so they must not be guessable (doc/sync-probes.md).
	 */
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)(tv_probe_sched_now() * 1e9) * 0x9e3779b97f4a7c15ULL ^
		    (uint64_t)getpid() << 20;
	/* below 2^48: exact in a JSON double; 2^47 rounds from the top */
	return (r & ((1ULL << (TV_GUEST_SEQ_BITS - 1)) - 1)) | 1ULL << (TV_GUEST_SEQ_BITS - 1);
}

void tv_guest_session_init(struct tv_guest_session *s, struct tv_guest_stream *gs,
			   const struct tv_guest_session_ops *ops, void *ctx,
			   struct tv_recorder *rec, uint16_t index, double sync_interval,
			   uint64_t seq_base)
{
	memset(s, 0, sizeof(*s));
	s->gs = gs;
	s->ops = ops;
	s->ctx = ctx;
	s->phase = TV_GUEST_PHASE_CONNECT;
	s->probes.rec = rec;
	s->probes.index = index;
	s->probes.next_seq = seq_base ? seq_base : tv_guest_probe_seq_base();
	tv_probe_sched_init(&s->sched, sync_interval, TV_GUEST_PROBE_BURST);
	gs->on_pong = tv_guest_session_on_pong;
	gs->on_hcall_done = tv_guest_session_on_hcall_done;
	gs->ctx = s;
}

void tv_guest_session_stop(struct tv_guest_session *s, double deadline)
{
	if (s->stop_asked)
		return;
	s->stop_deadline = deadline;
	s->stop_asked = 1;
}

static void session_ready(struct tv_guest_session *s, int state)
{
	if (s->ready)
		return;
	s->ready = state;
	s->ops->set_ready(s->ctx, state);
}

void tv_guest_session_end(struct tv_guest_session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->status[0]) {
		va_start(ap, fmt);
		vsnprintf(s->status, sizeof(s->status), fmt, ap);
		va_end(ap);
	}
	s->phase = TV_GUEST_PHASE_DONE;
	/* -ECANCELED: the agent refused (tv_guest_wait_ready() says so) */
	session_ready(s, s->gs->failed == -ECANCELED ? -ECANCELED : -EPIPE);
}

/* ---------------------------------------------------------- sync probes */

static void host_marker(struct tv_guest_probes *p, uint16_t type, uint64_t seq)
{
	unsigned char m[TV_SYNC_MARKER_SIZE];

	tv_sync_marker_encode(m, type, p->index, seq, 0);
	tv_recorder_write_marker(p->rec, m, sizeof(m));
}

static int send_ping(struct tv_guest_session *s, double now)
{
	struct tv_guest_probes *p = &s->probes;
	unsigned char b[8];
	uint64_t seq = p->next_seq++;

	tv_proto_put_u64(b, seq);
	host_marker(p, TV_SYNC_PING_SEND, seq);
	p->ping_outstanding = 1;
	p->ping_seq = seq;
	p->ping_answered = 0;
	p->ping_sent_at = now;
	p->pings++;
	return s->ops->send(s->ctx, TV_MSG_PING, b, sizeof(b));
}

static int ask_hcalls(struct tv_guest_session *s, uint32_t count)
{
	struct tv_guest_probes *p = &s->probes;
	unsigned char b[12];

	tv_proto_put_u64(b, p->next_seq);
	tv_proto_put_u32(b + 8, count);
	/* a guest that never answers: its oldest request expires */
	if (p->hcall_pending == TV_GUEST_HCALL_OUTSTANDING) {
		memmove(p->hcall_req, p->hcall_req + 1,
			(TV_GUEST_HCALL_OUTSTANDING - 1) * sizeof(p->hcall_req[0]));
		p->hcall_pending--;
		p->hcall_expired++;
	}
	p->hcall_req[p->hcall_pending++] = (struct tv_guest_hcall_req){ p->next_seq, count };
	p->next_seq += count;
	p->hcalls_asked += count;
	return s->ops->send(s->ctx, TV_MSG_HCALL, b, sizeof(b));
}

/*
 * The guest's PONG: the host's PONG_RECV marker goes into the host's own
 * trace, so only the answer to the last ping, once, gets one; any other
 * PONG (unsolicited, a forged or repeated seq) is dropped and counted.
 * The host's markers for a guest are thus at most two per ping it sent.
 */
void tv_guest_session_on_pong(void *ctx, uint64_t seq)
{
	struct tv_guest_probes *p = &((struct tv_guest_session *)ctx)->probes;

	if (!p->pings || p->ping_answered || seq != p->ping_seq) {
		p->pongs_dropped++;
		return;
	}
	host_marker(p, TV_SYNC_PONG_RECV, seq);
	p->pongs++;
	p->ping_answered = 1;
	p->ping_outstanding = 0;
}

/* An HCALL_DONE counts only for an outstanding request, (first, count) as sent. */
void tv_guest_session_on_hcall_done(void *ctx, uint64_t first, uint32_t count, uint32_t done)
{
	struct tv_guest_probes *p = &((struct tv_guest_session *)ctx)->probes;

	for (unsigned int i = 0; i < p->hcall_pending; i++) {
		if (p->hcall_req[i].first != first || p->hcall_req[i].count != count)
			continue;
		memmove(p->hcall_req + i, p->hcall_req + i + 1,
			(p->hcall_pending - i - 1) * sizeof(p->hcall_req[0]));
		p->hcall_pending--;
		p->hcalls_done += done < count ? done : count;
		return;
	}
	p->hcalls_dropped++;
}

/* One more ping when the last one is answered (or lost). */
static int run_pings(struct tv_guest_session *s, double now)
{
	struct tv_guest_probes *p = &s->probes;

	if (p->ping_outstanding && now - p->ping_sent_at > TV_GUEST_PING_TIMEOUT_S)
		p->ping_outstanding = 0;
	if (p->ping_outstanding || !p->burst_left)
		return 0;
	p->burst_left--;
	return send_ping(s, now);
}

static int probe_round(struct tv_guest_session *s, unsigned n)
{
	s->probes.burst_left += n;
	return ask_hcalls(s, n);
}

/* ------------------------------------------------------------- phases */

static void save_tsc(struct tv_guest_session *s)
{
	if (s->ops->save_tsc)
		s->ops->save_tsc(s->ctx);
}

/* Probes while running, and the start of the end sequence once stopping. */
static int tick_run(struct tv_guest_session *s, double now)
{
	int ret = 0;

	if (s->phase == TV_GUEST_PHASE_RUN && s->gs->ready && s->ready == 0) {
		session_ready(s, 1);
		save_tsc(s);
		ret = probe_round(s, tv_probe_sched_begin(&s->sched, now));
	}
	if (s->phase == TV_GUEST_PHASE_RUN && s->stop_asked) {
		unsigned int n = tv_probe_sched_end(&s->sched);

		if (s->gs->ready && !ret)
			ret = probe_round(s, n);
		s->phase = TV_GUEST_PHASE_ENDING;
		s->deadline = s->stop_deadline - TV_GUEST_STOP_MAX_S + TV_GUEST_END_PROBES_TIMEOUT_S;
	}
	if (s->phase == TV_GUEST_PHASE_RUN && s->ready == 1 && tv_probe_sched_due(&s->sched, now))
		ret = probe_round(s, 1);
	if (!ret && (s->phase == TV_GUEST_PHASE_RUN || s->phase == TV_GUEST_PHASE_ENDING))
		ret = run_pings(s, now);
	if (!ret && s->phase == TV_GUEST_PHASE_ENDING &&
	    ((!s->probes.burst_left && !s->probes.ping_outstanding && !s->probes.hcall_pending) ||
	     now > s->deadline)) {
		save_tsc(s);
		ret = s->ops->send(s->ctx, TV_MSG_STOP, NULL, 0);
		s->phase = TV_GUEST_PHASE_STOPPED;
		/* no wait restarts with what still arrives: a slow channel is cut here */
		s->deadline = s->stop_deadline;
		/* nothing of this session came (no HELLO): no END to wait for */
		if (!s->gs->synced)
			s->deadline = now;
	}
	return ret;
}

int tv_guest_session_tick(struct tv_guest_session *s, double now)
{
	int stop_asked = s->stop_asked;
	int ret = tick_run(s, now);
	struct tv_guest_stream *gs = s->gs;

	if (ret && s->phase != TV_GUEST_PHASE_DRAIN) {
		/* A dead guest often shows first as a failed send: keep what it sent. */
		s->send_err = -ret;
		s->phase = TV_GUEST_PHASE_DRAIN;
		s->deadline = now + TV_GUEST_DRAIN_TIMEOUT_S;
		if (stop_asked && s->deadline > s->stop_deadline)
			s->deadline = s->stop_deadline;
	} else if (s->phase == TV_GUEST_PHASE_DRAIN && now > s->deadline)
		tv_guest_session_end(s, "truncated: cannot send to the agent: errno=%d", s->send_err);
	else if (s->phase == TV_GUEST_PHASE_STOPPED && gs->ended)
		tv_guest_session_end(s, "complete");
	else if (s->phase == TV_GUEST_PHASE_STOPPED && now >= s->deadline && !gs->synced)
		/* nothing it sent was this session's: no agent, or not one of ours */
		tv_guest_session_end(s, "failed: no reply to START from the agent (no HELLO echoing its nonce in %llu bytes received)",
				     (unsigned long long)gs->stale_bytes + gs->len);
	else if (s->phase == TV_GUEST_PHASE_STOPPED && now > s->deadline)
		tv_guest_session_end(s, "truncated: no END from the agent within %.0f s of the stop (%llu bytes came after STOP)",
				     TV_GUEST_STOP_MAX_S, (unsigned long long)s->bytes_after_stop);
	else if (stop_asked && now > s->stop_deadline)
		tv_guest_session_end(s, "truncated: the agent did not end within %.0f s of the stop",
				     TV_GUEST_STOP_MAX_S);
	return ret;
}

void tv_guest_session_input(struct tv_guest_session *s, const void *buf, ssize_t n)
{
	if (n <= 0) {
		tv_guest_session_end(s, "truncated: guest channel closed%s%s (guest died or agent crashed)",
				     n < 0 ? ": " : "", n < 0 ? strerror((int)-n) : "");
		return;
	}
	/*
	 * A slow channel (a Xen PV console through QEMU: tens of KB/s under
	 * TCG) may still be flushing the guest's buffers at STOP: what comes
	 * before the stop's deadline is kept, and counted for the status.
	 */
	if (s->phase == TV_GUEST_PHASE_STOPPED)
		s->bytes_after_stop += (uint64_t)n;
	if (tv_guest_stream_feed(s->gs, buf, (size_t)n)) {
		tv_guest_session_end(s, "truncated: %s", s->gs->error);
		return;
	}
	if (s->gs->ended && s->phase != TV_GUEST_PHASE_STOPPED)
		tv_guest_session_end(s, "truncated: the agent ended the stream on its own");
}
