// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's traced processes (START key "ust"): one thread listens on
 * the registration socket (lib/ust/ust_abi.h), configures each process that
 * says HELLO in the session's clock, maps the memfd it registers, enables
 * the host's globs, and streams the process to the host beside the
 * kernel's pages: UST_PROC once, UST_META as its metadata grows, UST_DATA
 * with each complete sub-buffer, UST_END when it is gone (what it
 * committed recovered) or when the session stops (disabled, flushed,
 * copied).  The buffers are read with lib/ust/ust_consumer.c, so a process
 * that lies is cut off (said once, UST_END "truncated: ...") and the
 * others go on.
 *
 * A flight recorder (START's flight_bytes): each process is configured in
 * overwrite mode with the ring the host gives its own
 * (tv_ust_flight_policy()); UST_PROC and UST_META go out as above, no
 * UST_DATA while armed.  A snapshot (SNAP) sends, after the kernel's
 * SNAP_DATA and before SNAP_END, the newest sub-buffers of every buffer
 * of each mapped process not cut off, trimmed to a gap-free tail
 * (tv_ust_consumer_tail()), as SNAP_UST frames; a process that ended keeps
 * its mapping for the snapshots.  At the session's end the tails go out
 * as UST_DATA and UST_END into the session itself.
 *
 * Threads: the ust thread owns every process and the socket; the main
 * thread only sets ust_stop (release) and joins, or asks for a snapshot
 * (ust_snapshot()): it sets snap_asked under snap_lock and waits on
 * snap_cond until the ust thread has sent it (the thread takes requests at
 * every tick while snap_open); frames go out under the session's send_lock
 * (send_frame()), never held across the wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "agent.h"
#include "ust_consumer.h"
#include "ust_listen.h"

#define UST_TICK_MS 20
#define UST_FLUSH_WAIT_MS 1500
#define UST_META_CHUNK (512 * 1024)

struct ust_proc {
	struct tv_ust_conn conn;	/* its registration connection and mapping */
	unsigned int idx;		/* UST_* frames' process index */
	struct tv_ust_consumer c;
	int mapped;
	size_t meta_sent;		/* metadata bytes sent (whole entries) */
	unsigned char *buf;
	int done;
	int flight;			/* kept in overwrite mode for snapshots (nothing streamed) */
	int gone;			/* flight: its connection closed, its mapping kept */
};

static struct {
	struct session *s;
	int listen_fd;
	char sock_path[108];
	uint32_t clock;
	struct tv_ust_policy policy;	/* START's: what CONFIG asks */
	char *globs[64];
	int nr_globs;
	struct ust_proc *procs[TV_PROTO_MAX_UST];
	unsigned int nr_procs;
	pthread_t thread;
	int started;
	int stop;			/* atomic: release by main, acquire here */
	uint64_t flight_bytes;		/* START's: > 0 a flight recorder */
	pthread_mutex_t snap_lock;	/* below: main asks, the ust thread answers */
	pthread_cond_t snap_cond;
	int snap_asked;
	uint32_t snap_id;
	int snap_open;			/* the ust thread still takes requests */
} U = { .listen_fd = -1, .snap_lock = PTHREAD_MUTEX_INITIALIZER, .snap_cond = PTHREAD_COND_INITIALIZER };

/* New whole metadata entries to the host. */
static void send_ust_meta(struct ust_proc *p)
{
	if (tv_ust_consumer_meta_update(&p->c, NULL, 0) < 0)
		return;
	while (p->meta_sent < p->c.meta_parsed) {
		size_t n = p->c.meta_parsed - p->meta_sent;

		if (n > UST_META_CHUNK)
			n = UST_META_CHUNK;
		if (send_frame(U.s, TV_MSG_UST_META, p->idx, p->c.meta + p->meta_sent, n))
			return;
		p->meta_sent += n;
	}
}

/* Registered (its memfd mapped): its buffers checked, announced to the host, the globs enabled. */
static int proc_map(struct ust_proc *p)
{
	char text[400];

	if (tv_ust_consumer_init(&p->c, p->conn.map, p->conn.map_size))
		return -EBADMSG;
	p->buf = malloc(p->c.hdr.subbuf_size);
	if (!p->buf)
		return -ENOMEM;
	p->mapped = 1;
	p->flight = U.flight_bytes && p->c.hdr.mode == TV_UST_MODE_OVERWRITE;
	if (U.flight_bytes && !p->flight)
		say("Traced process not in overwrite mode, streamed whole instead of kept for snapshots: pid=%d, comm=\"%s\"",
		    p->conn.pid, p->conn.comm);
	snprintf(text, sizeof(text),
		 "pid=%d\ncomm=%s\nnr_bufs=%u\nsubbuf_size=%u\nnr_subbufs=%u\nclock=%s\nmode=%s\nper_thread=%u\n",
		 p->conn.pid, p->conn.comm, p->c.hdr.nr_bufs, p->c.hdr.subbuf_size, p->c.hdr.nr_subbufs,
		 p->c.hdr.clock == TV_UST_CLOCK_X86_TSC ? "x86-tsc" : "mono", tv_ust_mode_name(p->c.hdr.mode),
		 p->c.hdr.per_thread);
	if (send_frame(U.s, TV_MSG_UST_PROC, p->idx, text, strlen(text)))
		return -EPIPE;
	send_ust_meta(p);
	tv_ust_conn_rules(&p->conn, (const char *const *)U.globs, (size_t)U.nr_globs);
	return 0;
}

/* One message: 1 handled, 0 none, -1 ended or lied. */
static int proc_receive(struct ust_proc *p)
{
	int ret = tv_ust_conn_receive(&p->conn, U.clock, p->c.why, sizeof(p->c.why));

	if (ret == -EPIPE)
		return -1;
	if (ret < 0) {
		p->c.cut = 1;
		return -1;
	}
	if (ret == TV_UST_MSG_REGISTER && proc_map(p))
		return -1;
	return ret > 0;
}

static void proc_drain(struct ust_proc *p)
{
	if (!p->mapped || p->c.cut)
		return;
	send_ust_meta(p);
	/* at most four rings per buffer and tick: a writer as fast as we are does not hold the others */
	for (unsigned int b = 0; b < p->c.hdr.nr_bufs && !p->c.cut; b++)
		for (uint32_t n = 0; n < 4 * p->c.hdr.nr_subbufs && tv_ust_consumer_read(&p->c, b, p->buf) == 1; n++) {
			send_ust_meta(p);	/* events its records use were registered before them */
			if (send_frame(U.s, TV_MSG_UST_DATA, p->idx << 16 | b, p->buf, p->c.hdr.subbuf_size))
				return;
			if (p->c.cut)
				break;
		}
}

/*
 * The newest sub-buffers of every buffer of @p, at most @bytes (one
 * sub-buffer per buffer at least), trimmed to a gap-free tail, one frame
 * of @type each (arg: @id's for SNAP_UST, else UST_DATA's).
 * Return: -EPIPE the channel failed, else 0 (a lying buffer cuts @p off).
 */
static int proc_send_tail(struct ust_proc *p, uint16_t type, uint32_t id, uint64_t bytes)
{
	struct tv_ust_tail t = { 0 };
	size_t sb = p->c.hdr.subbuf_size;
	int ret = tv_ust_consumer_tail(&p->c, bytes, &t);

	for (unsigned int b = 0; (!ret || ret == -EBADMSG) && b < p->c.hdr.nr_bufs; b++)
		for (unsigned int i = 0; i < t.n[b]; i++) {
			size_t at = (size_t)b * t.max + i;
			uint32_t arg = type == TV_MSG_SNAP_UST ? TV_PROTO_SNAP_UST_ARG(id, p->idx, b)
								: p->idx << 16 | b;

			if (t.kept[at] && send_frame(U.s, type, arg, t.all + at * sb, sb)) {
				tv_ust_tail_release(&t);
				return -EPIPE;
			}
		}
	tv_ust_tail_release(&t);
	return 0;
}

static void proc_finish(struct ust_proc *p, int gone)
{
	char text[600];
	size_t len;

	if (p->done)
		return;
	p->done = 1;
	if (p->flight && !p->c.cut) {	/* the last snapshot, into the session itself */
		send_ust_meta(p);
		proc_send_tail(p, TV_MSG_UST_DATA, 0, U.flight_bytes);
		gone |= p->gone;
	} else {
		proc_drain(p);
	}
	for (unsigned int b = 0; p->mapped && !p->flight && !p->c.cut && b < p->c.hdr.nr_bufs; b++) {
		if (gone) {
			while (tv_ust_consumer_recover(&p->c, b, p->buf) == 1)
				send_frame(U.s, TV_MSG_UST_DATA, p->idx << 16 | b, p->buf, p->c.hdr.subbuf_size);
		} else if (tv_ust_consumer_copy_partial(&p->c, b, p->buf) == 1) {
			send_frame(U.s, TV_MSG_UST_DATA, p->idx << 16 | b, p->buf, p->c.hdr.subbuf_size);
		}
	}
	if (p->c.cut)
		say("Traced process cut off: pid=%d, comm=\"%s\": %s", p->conn.pid, p->conn.comm, p->c.why);
	if (!p->mapped)
		return;
	if (p->c.cut) {
		/* the text goes through the host's key=value check: printable only */
		len = (size_t)snprintf(text, sizeof(text), "status=truncated: %.200s\n", p->c.why);
		for (size_t i = 16; i < len - 1; i++)
			if (text[i] < ' ' || text[i] >= 0x7f)
				text[i] = '?';
	} else {
		len = (size_t)snprintf(text, sizeof(text), "status=%s\n", gone ? "ended" : "complete");
	}
	for (unsigned int b = 0; b < p->c.hdr.nr_bufs && len < sizeof(text) - 48; b++) {
		uint64_t lost = tv_ust_consumer_lost(&p->c, b);

		if (lost)
			len += (size_t)snprintf(text + len, sizeof(text) - len, "cpu%u.lost=%llu\n", b,
						(unsigned long long)lost);
	}
	send_frame(U.s, TV_MSG_UST_END, p->idx, text, len);
}

static void proc_poll(struct ust_proc *p)
{
	int r = 0;

	if (p->done)
		return;
	/* bounded: a process that never stops talking does not hold the others */
	for (int i = 0; i < 64 && p->conn.fd >= 0 && (r = proc_receive(p)) > 0; i++)
		;
	if (p->conn.fd >= 0 && r < 0) {
		tv_ust_conn_close(&p->conn);
		if (p->flight && !p->c.cut) {
			p->gone = 1;	/* its last events stay in the mapping for the snapshots */
			return;
		}
		proc_finish(p, 1);
		return;
	}
	if (p->flight) {
		send_ust_meta(p);	/* the host needs it; the events stay in the ring */
		return;
	}
	proc_drain(p);
	if (p->c.cut)
		proc_finish(p, 0);
}

static void accept_new(void)
{
	struct tv_ust_conn conn;

	while (!tv_ust_conn_accept(U.listen_fd, &conn)) {
		struct ust_proc *p;

		if (U.nr_procs == TV_PROTO_MAX_UST || !(p = calloc(1, sizeof(*p)))) {
			say("Too many traced processes, one refused (at most %d)", TV_PROTO_MAX_UST);
			tv_ust_conn_close(&conn);
			continue;
		}
		p->conn = conn;
		if (U.flight_bytes) {	/* the ring the host gives its own processes */
			tv_ust_flight_policy(U.flight_bytes, sysconf(_SC_NPROCESSORS_CONF),
					     &p->conn.cfg_subbuf_size, &p->conn.cfg_nr_subbufs);
			p->conn.cfg_mode = TV_UST_MODE_OVERWRITE + 1;
		} else {
			tv_ust_conn_set_policy(&p->conn, &U.policy);
		}
		p->idx = U.nr_procs;
		U.procs[U.nr_procs++] = p;
	}
}

static void quiesce(void)
{
	struct timespec t0, now;

	for (unsigned int i = 0; i < U.nr_procs; i++) {
		struct ust_proc *p = U.procs[i];

		if (p->done || !p->mapped || p->gone)
			continue;
		tv_ust_conn_quiesce(&p->conn);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int waiting = 0;

		for (unsigned int i = 0; i < U.nr_procs; i++) {
			struct ust_proc *p = U.procs[i];

			if (p->done || !p->mapped)
				continue;
			proc_poll(p);
			waiting |= !p->done && !p->gone && !tv_ust_conn_quiesced(&p->conn);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!waiting || (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
				UST_FLUSH_WAIT_MS)
			break;
		poll(NULL, 0, 5);
	}
	for (unsigned int i = 0; i < U.nr_procs; i++)
		proc_finish(U.procs[i], 0);
}

static int snap_eligible(const struct ust_proc *p)
{
	return p->mapped && p->flight && !p->done && !p->c.cut;
}

/*
 * SNAP @id: every mapped process's tail as SNAP_UST (the main thread
 * waits), SIZE shared evenly: the host keeps one SIZE for all of a
 * guest's processes (host/flight_guest.c), so that each keeps its newest
 * events rather than the first ones sent keeping all.
 */
static void snap_send(uint32_t id)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < U.nr_procs; i++)
		n += snap_eligible(U.procs[i]);
	for (unsigned int i = 0; i < U.nr_procs; i++) {
		struct ust_proc *p = U.procs[i];

		if (!snap_eligible(p))
			continue;
		send_ust_meta(p);	/* its records' events are known before them */
		if (proc_send_tail(p, TV_MSG_SNAP_UST, id, U.flight_bytes / n))
			return;
		if (p->c.cut)
			say("Traced process cut off: pid=%d, comm=\"%s\": %s", p->conn.pid, p->conn.comm, p->c.why);
	}
}

/* The main thread's request, if any: sent, answered. */
static void snap_serve(void)
{
	pthread_mutex_lock(&U.snap_lock);
	if (U.snap_asked) {
		snap_send(U.snap_id);
		U.snap_asked = 0;
		pthread_cond_broadcast(&U.snap_cond);
	}
	pthread_mutex_unlock(&U.snap_lock);
}

void ust_snapshot(uint32_t id)
{
	pthread_mutex_lock(&U.snap_lock);
	if (U.started && U.snap_open && U.flight_bytes) {
		U.snap_id = id;
		U.snap_asked = 1;
		while (U.snap_asked && U.snap_open)
			pthread_cond_wait(&U.snap_cond, &U.snap_lock);
	}
	pthread_mutex_unlock(&U.snap_lock);
}

static void *ust_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&U.stop, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd = { U.listen_fd, POLLIN, 0 };

		poll(&pfd, 1, UST_TICK_MS);
		accept_new();
		for (unsigned int i = 0; i < U.nr_procs; i++)
			proc_poll(U.procs[i]);
		snap_serve();
	}
	pthread_mutex_lock(&U.snap_lock);
	U.snap_open = 0;	/* a request still waiting is let go unanswered */
	pthread_cond_broadcast(&U.snap_cond);
	pthread_mutex_unlock(&U.snap_lock);
	accept_new();
	for (unsigned int i = 0; i < U.nr_procs; i++)
		proc_poll(U.procs[i]);
	quiesce();
	return NULL;
}

static int ust_listen(void)
{
	const char *path = getenv(TV_UST_SOCK_ENV);
	int ret;

	snprintf(U.sock_path, sizeof(U.sock_path), "%s", path && *path ? path : TV_UST_SOCK_DEFAULT);
	mkdir("/run", 0755);	/* a minimal guest may have none; the library makes only the socket's directory */
	ret = tv_ust_listen_open(U.sock_path, &U.listen_fd);
	if (ret == -EADDRINUSE)
		say("Cannot listen for traced processes: path=\"%s\": another consumer listens there",
		    U.sock_path);
	else if (ret)
		say("Cannot listen for traced processes: path=\"%s\", errno=%d (%s)", U.sock_path, -ret,
		    strerror(-ret));
	return ret;
}

int ust_start(struct session *s, const char *globs)
{
	char *copy, *save = NULL, why[160];
	int ret;

	U.s = s;
	U.flight_bytes = s->flight_bytes;
	/* a policy this agent cannot honour is said, not silently replaced */
	if (tv_ust_policy_parse(s->ust_mode, s->ust_subbuf_size, s->ust_nr_subbufs, &U.policy, why,
				sizeof(why))) {
		say("Bad traced processes' policy in START: %s", why);
		return -EINVAL;
	}
	U.clock = !strcmp(s->clock, "x86-tsc") ? TV_UST_CLOCK_X86_TSC : TV_UST_CLOCK_MONO;
	if (strcmp(s->clock, "x86-tsc") && strcmp(s->clock, "mono"))
		say("Traced processes use mono: the guest clock %s cannot be read from user space",
		    s->clock);
	copy = strdup(globs);
	for (char *g = copy ? strtok_r(copy, ",", &save) : NULL; g && U.nr_globs < 64;
	     g = strtok_r(NULL, ",", &save))
		U.globs[U.nr_globs++] = strdup(g);
	free(copy);
	ret = ust_listen();
	if (ret)
		return ret;
	U.snap_open = 1;
	ret = pthread_create(&U.thread, NULL, ust_thread, NULL);
	if (ret) {
		U.snap_open = 0;
		return -ret;
	}
	pthread_mutex_lock(&U.snap_lock);
	U.started = 1;
	pthread_mutex_unlock(&U.snap_lock);
	if (verbose)
		say("Listening for traced processes on %s", U.sock_path);
	return 0;
}

void ust_stop(void)
{
	if (U.started) {
		/* release: the thread's acquire load sees it; nothing else is shared */
		__atomic_store_n(&U.stop, 1, __ATOMIC_RELEASE);
		pthread_join(U.thread, NULL);
		pthread_mutex_lock(&U.snap_lock);
		U.started = 0;
		pthread_mutex_unlock(&U.snap_lock);
	}
	for (unsigned int i = 0; i < U.nr_procs; i++) {
		struct ust_proc *p = U.procs[i];

		tv_ust_conn_release(&p->conn);
		tv_ust_consumer_release(&p->c);
		free(p->buf);
		free(p);
	}
	U.nr_procs = 0;
	for (int i = 0; i < U.nr_globs; i++)
		free(U.globs[i]);
	U.nr_globs = 0;
	if (U.listen_fd >= 0) {
		close(U.listen_fd);
		unlink(U.sock_path);
		U.listen_fd = -1;
	}
	U.stop = 0;
	U.flight_bytes = 0;	/* the next session says again */
}
