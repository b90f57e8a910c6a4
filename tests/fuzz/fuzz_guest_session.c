// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: one guest's session on the host as a state machine -
 * host/guest_session.c (the phases from START to the end, their deadlines,
 * the clock-sync probe bookkeeping and its host-trace markers) over
 * host/guest_stream.c (the frame parser), the very code host/guest.c's
 * thread runs, with their real limits, on a fake clock and a fake channel.
 *
 * The input is a list of steps, each an opcode byte and its operands: host
 * actions (START with a nonce, the stop request, a second Ctrl-C, time
 * passing, sends starting or ceasing to fail, the channel closing) and
 * guest bytes (frames made valid-looking from the input: HELLO, META,
 * FILE, DATA, READY, PONG and HCALL_DONE naming what the host asked or
 * not, END, ERROR, any frame, raw bytes).  After each step, as the guest's
 * thread does after each poll, the session's tick runs; then the
 * invariants are checked (abort() when one fails):
 *   - answers never exceed requests: pongs <= pings, hcalls done <= asked;
 *     each answer counted or dropped: pongs + dropped = PONGs parsed, and
 *     HCALL_DONEs likewise against the requests answered;
 *   - host-trace markers (tv_recorder_write_marker, stubbed here and
 *     counted) as the probe rule allows: one PING_SEND per ping, at most one
 *     PONG_RECV per ping and only for the last ping's seq, all naming the
 *     guest's own index; seqs never reused, from the session's base;
 *   - probes only once the guest is ready, nothing sent after STOP or once
 *     done, set_ready said at most once;
 *   - nothing accepted after END (no file, byte or answer);
 *   - phases only move forward; once past its deadline (stop, drain) a
 *     tick ends the session; after the input, a stop request ends it within
 *     TV_GUEST_STOP_MAX_S of fake time, 50 ms a tick, whatever came before;
 *   - the final status is set and printable (no control character);
 *   - nothing is written outside the guest's directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "guest_stream.h"
#include "guest_session.h"
#include "fuzz_dir.h"

#define CHECK(cond, ...)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "invariant broken: %s: ", #cond);        \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			abort();                                                 \
		}                                                                \
	} while (0)

#define SEQ_BASE 0x0000812345678000ull	/* fixed: inputs replay */
#define TICK_S 0.05			/* guest.c's poll */
#define MAX_SENT 4096

/* What the fake world saw, for the invariants. */
static struct world {
	struct tv_guest_session s;
	struct tv_guest_stream gs;
	double now;
	uint64_t nonce;
	int send_fail;			/* -errno every send returns, or 0 */
	unsigned set_ready_calls;
	/* frames the host sent */
	unsigned sent_stop, sent_after_stop, probes_before_ready;
	uint64_t next_seq;		/* the next seq a probe may use */
	uint64_t last_ping_seq;
	unsigned hcall_reqs;		/* HCALL frames (requests) made */
	uint64_t hcall_first[MAX_SENT];
	uint32_t hcall_count[MAX_SENT];
	/* markers in the host trace */
	unsigned m_ping_send, m_pong_recv, m_other;
	uint64_t last_pong_marker_seq;
	int pong_marked;		/* the last ping got its PONG_RECV */
	/* answers the parser gave the session */
	uint64_t pong_calls, hcall_calls;
	/* after END */
	int end_seen;
	uint64_t end_bytes, end_pong_calls, end_hcall_calls;
	unsigned end_files;
	enum tv_guest_phase last_phase;
} w;

/* ------------------------------------------------------------- stubs */

/* The recorder's marker writer: each call is a record in the host trace. */
int tv_recorder_write_marker(struct tv_recorder *rec, const void *buf, size_t len)
{
	struct tv_sync_marker m;
	const unsigned char *b = buf;

	CHECK(rec == (struct tv_recorder *)&w && len == TV_SYNC_MARKER_SIZE, "marker of %zu bytes", len);
	m.magic = tv_proto_get_u32(b);
	m.type = (uint16_t)(b[4] | b[5] << 8);
	m.guest = (uint16_t)(b[6] | b[7] << 8);
	m.seq = tv_proto_get_u64(b + 8);
	CHECK(m.magic == TV_SYNC_MAGIC && m.guest == 3, "marker magic %x guest %u", m.magic, m.guest);
	if (m.type == TV_SYNC_PING_SEND) {
		CHECK(m.seq >= w.next_seq, "PING_SEND seq %llu reused (next %llu)",
		      (unsigned long long)m.seq, (unsigned long long)w.next_seq);
		w.next_seq = m.seq + 1;
		w.last_ping_seq = m.seq;
		w.pong_marked = 0;
		w.m_ping_send++;
	} else if (m.type == TV_SYNC_PONG_RECV) {
		CHECK(w.m_ping_send && m.seq == w.last_ping_seq && !w.pong_marked,
		      "PONG_RECV for seq %llu (last ping %llu, answered %d)", (unsigned long long)m.seq,
		      (unsigned long long)w.last_ping_seq, w.pong_marked);
		w.pong_marked = 1;
		w.m_pong_recv++;
	} else {
		w.m_other++;
	}
	return 0;
}

static int fake_send(void *ctx, uint16_t type, const void *payload, size_t len)
{
	const unsigned char *p = payload;

	CHECK(ctx == &w, "send ctx");
	CHECK(w.s.phase != TV_GUEST_PHASE_DONE && w.s.phase != TV_GUEST_PHASE_DRAIN,
	      "frame %u sent in phase %d", type, w.s.phase);
	if (w.sent_stop)
		w.sent_after_stop++;
	if (type == TV_MSG_STOP) {
		w.sent_stop = 1;
	} else if (type == TV_MSG_PING) {
		CHECK(len == 8 && tv_proto_get_u64(p) == w.last_ping_seq, "PING frame");
		w.probes_before_ready += !w.gs.ready;
	} else if (type == TV_MSG_HCALL) {
		uint64_t first = tv_proto_get_u64(p);
		uint32_t count = tv_proto_get_u32(p + 8);

		CHECK(len == 12 && first >= w.next_seq && first >= SEQ_BASE, "HCALL first %llu, next %llu",
		      (unsigned long long)first, (unsigned long long)w.next_seq);
		w.next_seq = first + count;
		w.probes_before_ready += !w.gs.ready;
		if (w.hcall_reqs < MAX_SENT) {
			w.hcall_first[w.hcall_reqs] = first;
			w.hcall_count[w.hcall_reqs] = count;
		}
		w.hcall_reqs++;
	} else {
		CHECK(0, "host sent frame type %u", type);
	}
	return w.send_fail;
}

static void fake_set_ready(void *ctx, int state)
{
	CHECK(ctx == &w && state != 0, "set_ready(%d)", state);
	w.set_ready_calls++;
}

static void count_pong(void *ctx, uint64_t seq)
{
	w.pong_calls++;
	tv_guest_session_on_pong(ctx, seq);
}

static void count_hcall_done(void *ctx, uint64_t first, uint32_t count, uint32_t done)
{
	w.hcall_calls++;
	tv_guest_session_on_hcall_done(ctx, first, count, done);
}

static const struct tv_guest_session_ops ops = { .send = fake_send, .set_ready = fake_set_ready };

/* ------------------------------------------------------------- input */

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t take_u64(struct in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)take(in) << (8 * i);
	return v;
}

/* Up to @max bytes of input as they are (fewer at its end). */
static size_t take_bytes(struct in *in, size_t want, const uint8_t **out)
{
	size_t n = want < in->n ? want : in->n;

	*out = in->p;
	in->p += n;
	in->n -= n;
	return n;
}

/* ---------------------------------------------------------- the guest */

static void deliver(const void *buf, size_t len)
{
	if (w.s.phase == TV_GUEST_PHASE_DONE)
		return;
	if (len)
		tv_guest_session_input(&w.s, buf, (ssize_t)len);
}

static void guest_frame(uint16_t type, uint32_t arg, const void *payload, size_t len)
{
	unsigned char *f = malloc(TV_PROTO_HDR_SIZE + len + 1);

	tv_proto_hdr_encode(f, type, arg, (uint32_t)len);
	if (len)
		memcpy(f + TV_PROTO_HDR_SIZE, payload, len);
	deliver(f, TV_PROTO_HDR_SIZE + len);
	free(f);
}

/* A seq a guest might answer with: the last ping's, near it, or anything. */
static uint64_t pick_seq(struct in *in, uint64_t right)
{
	unsigned how = take(in);

	switch (how % 4) {
	case 0:
		return right;
	case 1:
		return right + (uint64_t)(int8_t)take(in);
	case 2:
		return (uint64_t)take(in);		/* a guessed small seq */
	}
	return take_u64(in);
}

static void guest_pong(struct in *in)
{
	unsigned char b[8];

	tv_proto_put_u64(b, pick_seq(in, w.last_ping_seq));
	guest_frame(TV_MSG_PONG, 0, b, sizeof(b));
}

static void guest_hcall_done(struct in *in)
{
	unsigned char b[16];
	unsigned k = take(in);
	uint64_t first = 0;
	uint32_t count = 0;

	/* one of the last requests, as sent (most often), or forged */
	if (w.hcall_reqs) {
		unsigned i = (w.hcall_reqs - 1 - k % 8 % w.hcall_reqs) % MAX_SENT;

		first = w.hcall_first[i];
		count = w.hcall_count[i];
	}
	if (k & 0x80)
		first = pick_seq(in, first);
	if (k & 0x40)
		count = take(in);
	tv_proto_put_u64(b, first);
	tv_proto_put_u32(b + 8, count);
	tv_proto_put_u32(b + 12, (k & 0x20) ? (uint32_t)take_u64(in) : count);
	guest_frame(TV_MSG_HCALL_DONE, 0, b, sizeof(b));
}

static void guest_meta(struct in *in)
{
	static const unsigned ncpus[] = { 1, 2, 4, 1024, 1025, 0 };
	char text[200];
	unsigned k = take(in);
	int n = snprintf(text, sizeof(text), "ncpus=%u\nsubbuf_size=%u\nlong_size=%u\nclock=local\n",
			 ncpus[k % 6], (k & 8) ? 4096 : 1u << (k >> 4),
			 (k & 0x40) ? 4 : 8);

	guest_frame(TV_MSG_META, 0, text, (size_t)n);
}

static void guest_file(struct in *in)
{
	static const char *const paths[] = {
		"header_page", "events/sched/sched_switch/format", "events/../x/format",
		"/etc/passwd", "events/a/b/format", "kallsyms",
	};
	const char *path = paths[take(in) % 6];
	const uint8_t *body;
	size_t blen = take_bytes(in, take(in), &body), plen = strlen(path);
	unsigned char *p = malloc(2 + plen + blen + 1);

	p[0] = (unsigned char)plen;
	p[1] = (unsigned char)(plen >> 8);
	memcpy(p + 2, path, plen);
	if (blen)
		memcpy(p + 2 + plen, body, blen);
	guest_frame(TV_MSG_FILE, 0, p, 2 + plen + blen);
	free(p);
}

static void guest_data(struct in *in)
{
	unsigned char page[4096] = { 0 };
	unsigned cpu = take(in);
	const uint8_t *b;
	size_t n = take_bytes(in, take(in), &b);

	if (n)
		memcpy(page + 16, b, n);
	tv_proto_put_u64(page + 8, n);	/* the commit: what was given */
	guest_frame(TV_MSG_DATA, cpu % 5, page, (cpu & 0x80) ? 2048 : sizeof(page));
}

/* Any frame type with payload from the input. */
static void guest_any(struct in *in)
{
	unsigned type = take(in), arg = take(in);
	const uint8_t *b;
	size_t n = take_bytes(in, take(in), &b);

	guest_frame((uint16_t)(type % 0x20), arg, b, n);
}

static void guest_raw(struct in *in)
{
	const uint8_t *b;
	size_t n = take_bytes(in, take(in), &b);

	deliver(b, n);
}

/* ---------------------------------------------------------- the host */

static void host_start(struct in *in)
{
	if (w.s.phase != TV_GUEST_PHASE_CONNECT)
		return;
	/* as guest_connect(): the nonce expected before START is sent */
	w.nonce = take_u64(in) | 1;
	tv_guest_stream_expect_hello(&w.gs, w.nonce);
	w.gs.ust_asked = take(in) & 1;
	if (w.send_fail)
		tv_guest_session_end(&w.s, "failed: cannot send START to the agent");
	else
		w.s.phase = TV_GUEST_PHASE_RUN;
}

/* tv_guest_request_stop(), seen by the thread (guest_check_requests()). */
static void host_stop(void)
{
	tv_guest_session_stop(&w.s, w.now + TV_GUEST_STOP_MAX_S);
	/* guest_connect() gives up once asked to stop */
	if (w.s.phase == TV_GUEST_PHASE_CONNECT)
		tv_guest_session_end(&w.s, "failed: cannot connect to the agent at serial %s: errno=%d (%s)",
				     "/fuzz", ECONNREFUSED, strerror(ECONNREFUSED));
}

/* ---------------------------------------------------------- invariants */

static int phase_rank(enum tv_guest_phase p)
{
	switch (p) {
	case TV_GUEST_PHASE_CONNECT:
		return 0;
	case TV_GUEST_PHASE_RUN:
		return 1;
	case TV_GUEST_PHASE_ENDING:
		return 2;
	case TV_GUEST_PHASE_STOPPED:
		return 3;
	case TV_GUEST_PHASE_DRAIN:
		return 4;
	case TV_GUEST_PHASE_DONE:
		return 5;
	}
	return -1;
}

static uint64_t stream_bytes(void)
{
	uint64_t n = 0;

	for (int cpu = 0; w.gs.cpu_bytes && cpu < w.gs.ncpus; cpu++)
		n += w.gs.cpu_bytes[cpu];
	return n;
}

static void check(const char *after)
{
	const struct tv_guest_probes *p = &w.s.probes;
	uint64_t answered;

	CHECK(p->pongs <= p->pings && p->hcalls_done <= p->hcalls_asked,
	      "after %s: %u/%u pings, %u/%u hcalls", after, p->pongs, p->pings, p->hcalls_done,
	      p->hcalls_asked);
	CHECK(w.m_ping_send == p->pings && w.m_pong_recv == p->pongs && !w.m_other,
	      "after %s: markers %u PING_SEND %u PONG_RECV %u other, for %u pings %u pongs", after,
	      w.m_ping_send, w.m_pong_recv, w.m_other, p->pings, p->pongs);
	CHECK(p->pongs + p->pongs_dropped == w.pong_calls, "after %s: %u pongs + %llu dropped != %llu PONGs",
	      after, p->pongs, (unsigned long long)p->pongs_dropped, (unsigned long long)w.pong_calls);
	CHECK(p->hcall_pending <= TV_GUEST_HCALL_OUTSTANDING && p->hcall_pending + p->hcall_expired <= w.hcall_reqs,
	      "after %s: %u pending + %llu expired of %u requests", after, p->hcall_pending,
	      (unsigned long long)p->hcall_expired, w.hcall_reqs);
	answered = w.hcall_reqs - p->hcall_pending - p->hcall_expired;
	CHECK(answered + p->hcalls_dropped == w.hcall_calls,
	      "after %s: %llu answered + %llu dropped != %llu HCALL_DONEs", after,
	      (unsigned long long)answered, (unsigned long long)p->hcalls_dropped,
	      (unsigned long long)w.hcall_calls);
	CHECK(!w.probes_before_ready && !w.sent_after_stop && w.set_ready_calls <= 1,
	      "after %s: %u probes before READY, %u frames after STOP, set_ready x%u", after,
	      w.probes_before_ready, w.sent_after_stop, w.set_ready_calls);
	CHECK(phase_rank(w.s.phase) >= phase_rank(w.last_phase), "after %s: phase %d after %d", after,
	      w.s.phase, w.last_phase);
	w.last_phase = w.s.phase;
	if (w.end_seen)
		CHECK(stream_bytes() == w.end_bytes && w.gs.nr_files == w.end_files &&
		      w.pong_calls == w.end_pong_calls && w.hcall_calls == w.end_hcall_calls,
		      "after %s: data accepted after END", after);
	else if (w.gs.ended) {
		w.end_seen = 1;
		w.end_bytes = stream_bytes();
		w.end_files = w.gs.nr_files;
		w.end_pong_calls = w.pong_calls;
		w.end_hcall_calls = w.hcall_calls;
	}
	if (w.s.phase == TV_GUEST_PHASE_DONE) {
		CHECK(w.s.status[0], "after %s: done without a status", after);
		for (const char *c = w.s.status; *c; c++)
			CHECK(*c >= 0x20 && *c < 0x7f, "after %s: status byte 0x%02x: %s", after,
			      (unsigned char)*c, w.s.status);
	}
}

/* guest_loop(): after each poll the tick, unless done; then its deadlines must hold. */
static void tick(const char *after)
{
	if (w.s.phase != TV_GUEST_PHASE_DONE && w.s.phase != TV_GUEST_PHASE_CONNECT) {
		int drain = w.s.phase == TV_GUEST_PHASE_DRAIN;
		double drain_deadline = w.s.deadline;

		tv_guest_session_tick(&w.s, w.now);
		CHECK(!(w.s.stop_asked && w.now > w.s.stop_deadline) || w.s.phase == TV_GUEST_PHASE_DONE,
		      "after %s: phase %d past the stop's deadline", after, w.s.phase);
		CHECK(!(drain && w.now > drain_deadline) || w.s.phase == TV_GUEST_PHASE_DONE,
		      "after %s: still draining past its deadline", after);
	}
	check(after);
}

/* ---------------------------------------------------------- the run */

static void step(struct in *in)
{
	unsigned op = take(in);

	switch (op % 16) {
	case 0:
		host_start(in);
		return tick("START");
	case 1:	{	/* the agent's HELLO echoing the nonce (or not) */
		unsigned char hello[TV_PROTO_HELLO_SIZE];

		tv_proto_hello_encode(hello, (op & 0x80) ? take_u64(in) : w.nonce);
		deliver(hello, sizeof(hello));
		return tick("HELLO");
	}
	case 2:
		guest_meta(in);
		return tick("META");
	case 3:
		guest_frame(TV_MSG_READY, 0, NULL, 0);
		return tick("READY");
	case 4:
		guest_pong(in);
		return tick("PONG");
	case 5:
		guest_hcall_done(in);
		return tick("HCALL_DONE");
	case 6:
		guest_frame(TV_MSG_END, 0, (op & 0x80) ? "lost_total=3\n" : "", (op & 0x80) ? 13 : 0);
		return tick("END");
	case 7:
		guest_raw(in);
		return tick("raw bytes");
	case 8:
		guest_any(in);
		return tick("a frame");
	case 9:	/* time passes: up to 12.75 s, in polls */
		for (unsigned i = take(in); i > 0 && w.s.phase != TV_GUEST_PHASE_DONE; i--) {
			w.now += TICK_S;
			tick("time");
		}
		return;
	case 10:
		host_stop();
		return tick("stop");
	case 11:	/* a second Ctrl-C: guest_loop() cuts the stop short */
		if (w.s.phase == TV_GUEST_PHASE_CONNECT)
			return;
		tv_guest_session_stop(&w.s, w.now);
		tv_guest_session_end(&w.s, "truncated: the stop was cut short (interrupted) before the agent's END");
		return check("abort");
	case 12:	/* the channel closes, or a read fails */
		if (w.s.phase != TV_GUEST_PHASE_DONE && w.s.phase != TV_GUEST_PHASE_CONNECT)
			tv_guest_session_input(&w.s, NULL, (op & 0x80) ? -ECONNRESET : 0);
		return check("close");
	case 13:	/* sends start failing (a guest that reads nothing), or work again */
		w.send_fail = (op & 0x80) ? 0 : (op & 0x40) ? -ETIMEDOUT : -EPIPE;
		return tick("send failure");
	case 14:
		guest_file(in);
		return tick("FILE");
	case 15:
		guest_data(in);
		return tick("DATA");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	char dir[96];
	unsigned steps = 0, max_steps;

	fuzz_dir_make("tv-fuzz-session", dir, sizeof(dir));
	memset(&w, 0, sizeof(w));
	w.now = 1000.0;
	w.next_seq = SEQ_BASE;
	tv_guest_stream_init(&w.gs, dir, 256 * 1024);
	tv_guest_session_init(&w.s, &w.gs, &ops, &w, (struct tv_recorder *)&w, 3, 0.5, SEQ_BASE);
	w.gs.on_pong = count_pong;
	w.gs.on_hcall_done = count_hcall_done;
	while (in.n && w.s.phase != TV_GUEST_PHASE_DONE) {
		step(&in);
		w.now += 0.001;	/* each step takes a little time */
	}
	/* the stop, with a guest now silent: done by its deadline, in bounded ticks */
	if (w.s.phase != TV_GUEST_PHASE_DONE)
		host_stop();
	max_steps = w.s.phase == TV_GUEST_PHASE_DONE ? 0
		  : (unsigned)((w.s.stop_deadline - w.now) / TICK_S) + 2;
	while (w.s.phase != TV_GUEST_PHASE_DONE) {
		CHECK(steps++ <= max_steps, "no end %u ticks after the stop (phase %d)", steps, w.s.phase);
		tick("the stop");
		w.now += TICK_S;
	}
	check("the end");
	if (getenv("TV_FUZZ_VERBOSE"))	/* to see what a seed reaches */
		fprintf(stderr, "status=%s; %u/%u pings, %u/%u hcalls, dropped %llu+%llu, %u requests, %u ticks after the stop\n",
			w.s.status, w.s.probes.pongs, w.s.probes.pings, w.s.probes.hcalls_done,
			w.s.probes.hcalls_asked, (unsigned long long)w.s.probes.pongs_dropped,
			(unsigned long long)w.s.probes.hcalls_dropped, w.hcall_reqs, steps);
	tv_guest_stream_fini(&w.gs);
	fuzz_dir_check_clean();
	return 0;
}
