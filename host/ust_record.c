// SPDX-License-Identifier: LGPL-2.1
/*
 * `record --ust`: the host's traced processes (libtracevisor-ust) into the
 * session.  One thread listens on the registration socket (lib/ust_abi.h),
 * configures each process that says HELLO (the session's clock), maps the
 * memfd it REGISTERs, enables the patterns, and from then on moves its
 * complete sub-buffers into ust-host-PID/ every tick.  A process whose
 * socket closes (exit, crash, SIGKILL) has its last sub-buffers recovered
 * from the mapping it can no longer touch; at the end every live process
 * is disabled and flushed, and what it committed is copied without taking
 * its buffers from it (it may trace again for another consumer).
 *
 * Processes are untrusted: a bad message, a memfd that can shrink, or a
 * buffer that lies cuts that process off with one message (logged), and
 * the others go on.
 *
 * Threads: the listener thread owns every process and the socket; the
 * caller's thread only sets @stop (atomic) and joins.
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

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "ust_consumer.h"
#include "ust_listen.h"
#include "ust_record.h"

/* a session is read with at most 64 domains (lib/reader.c): leave room for the kernels */
#define UST_MAX_PROCS 48
#define UST_TICK_MS 20
#define UST_FLUSH_WAIT_MS 1500

struct ust_proc {
	struct tv_ust_conn conn;	/* its registration connection and mapping */
	struct tv_ust_consumer c;
	struct tv_ust_domain *dom;	/* NULL until it registered */
	unsigned char *buf;		/* one sub-buffer */
	int done;			/* finished: its domain is written */
};

struct tv_ust_recorder {
	char dir[4096];
	char sock_path[108];
	int listen_fd;
	uint32_t clock;			/* enum tv_ust_clock */
	const char *const *patterns;
	size_t nr_patterns;
	struct ust_proc *procs[UST_MAX_PROCS];
	size_t nr_procs;
	pthread_t thread;
	int started;
	int stop;			/* atomic: the caller asks the thread to end */
	/* for the caller once joined */
	char **subdirs;
	size_t nr_subdirs;
	uint64_t events, lost;
};

static void proc_cut(struct ust_proc *p, const char *why)
{
	if (!p->c.cut) {
		snprintf(p->c.why, sizeof(p->c.why), "%s", why);
		p->c.cut = 1;
	}
}

/* Registered (its memfd mapped): its buffers checked, its domain created, the patterns enabled. */
static int proc_map(struct tv_ust_recorder *u, struct ust_proc *p)
{
	if (tv_ust_consumer_init(&p->c, p->conn.map, p->conn.map_size))
		return -EBADMSG;
	p->buf = malloc(p->c.hdr.subbuf_size);
	if (!p->buf)
		return -ENOMEM;
	if (tv_ust_consumer_meta_update(&p->c, NULL, 0) < 0)
		return -EBADMSG;
	if (tv_ust_domain_create(u->dir, "host", &p->c.hdr, &p->dom))
		return -EIO;
	if (tv_ust_domain_add_events(p->dom, &p->c))
		return -EIO;
	tv_ust_conn_rules(&p->conn, u->patterns, u->nr_patterns);
	return 0;
}

/* One message from @p (non-blocking): 1 handled, 0 none, -1 the connection ended or lied. */
static int proc_receive(struct tv_ust_recorder *u, struct ust_proc *p)
{
	char why[sizeof(p->c.why)];
	int ret = tv_ust_conn_receive(&p->conn, u->clock, why, sizeof(why));

	if (ret == -EPIPE)
		return -1;
	if (ret < 0) {
		proc_cut(p, why);
		return -1;
	}
	if (ret == TV_UST_MSG_REGISTER && proc_map(u, p))
		return -1;
	return ret > 0;
}

/* Every complete sub-buffer of every buffer into the session. */
static void proc_drain(struct ust_proc *p)
{
	if (!p->dom || p->c.cut)
		return;
	if (tv_ust_consumer_meta_update(&p->c, NULL, 0) < 0 || tv_ust_domain_add_events(p->dom, &p->c))
		return;
	for (unsigned int b = 0; b < p->c.hdr.nr_bufs; b++) {
		int ret = 0;

		/* at most four rings per tick: a writer as fast as we are does not hold the others */
		for (uint32_t n = 0; n < 4 * p->c.hdr.nr_subbufs &&
				     (ret = tv_ust_consumer_read(&p->c, b, p->buf)) == 1; n++) {
			if (tv_ust_domain_write(p->dom, b, p->buf))
				return;
			if (p->c.cut)	/* its valid records are kept */
				return;
		}
		if (ret < 0)
			return;
	}
}

/* The last, partial sub-buffers: @gone (a dead process) takes them; a live one keeps them. */
static void proc_tails(struct ust_proc *p, int gone)
{
	if (!p->dom || p->c.cut)
		return;
	tv_ust_domain_add_events(p->dom, &p->c);
	for (unsigned int b = 0; b < p->c.hdr.nr_bufs; b++) {
		int ret;

		if (gone) {
			while ((ret = tv_ust_consumer_recover(&p->c, b, p->buf)) == 1)
				if (tv_ust_domain_write(p->dom, b, p->buf) || p->c.cut)
					return;
		} else if (tv_ust_consumer_copy_partial(&p->c, b, p->buf) == 1) {
			if (tv_ust_domain_write(p->dom, b, p->buf))
				return;
		}
	}
}

static void proc_finish(struct tv_ust_recorder *u, struct ust_proc *p, int gone)
{
	uint64_t *lost;
	char status[300];

	if (p->done)
		return;
	p->done = 1;
	proc_drain(p);
	proc_tails(p, gone);
	if (p->c.cut)
		tv_err("Traced process cut off: pid=%d, comm=\"%s\": %s", p->conn.pid, p->conn.comm, p->c.why);
	if (!p->dom)
		return;
	lost = calloc(p->c.hdr.nr_bufs, sizeof(*lost));
	for (unsigned int b = 0; lost && b < p->c.hdr.nr_bufs; b++) {
		lost[b] = tv_ust_consumer_lost(&p->c, b);
		u->lost += lost[b];
	}
	for (unsigned int b = 0; b < p->c.hdr.nr_bufs; b++)
		u->events += p->c.bufs[b].records;
	if (p->c.cut)
		snprintf(status, sizeof(status), "truncated: %s", p->c.why);
	else
		snprintf(status, sizeof(status), "%s", gone ? "ended" : "complete");
	tv_ust_domain_finish(p->dom, &p->c, lost, status, 1);
	free(lost);
}

static void proc_free(struct ust_proc *p)
{
	tv_ust_conn_release(&p->conn);
	tv_ust_domain_free(p->dom);
	tv_ust_consumer_release(&p->c);
	free(p->buf);
	free(p);
}

static void accept_new(struct tv_ust_recorder *u)
{
	struct tv_ust_conn conn;

	while (!tv_ust_conn_accept(u->listen_fd, &conn)) {
		struct ust_proc *p;

		if (u->nr_procs == UST_MAX_PROCS || !(p = calloc(1, sizeof(*p)))) {
			tv_warn("Too many traced processes, one refused: at most %d per session", UST_MAX_PROCS);
			tv_ust_conn_close(&conn);
			continue;
		}
		p->conn = conn;
		u->procs[u->nr_procs++] = p;
	}
}

static void proc_poll(struct tv_ust_recorder *u, struct ust_proc *p)
{
	int r;

	if (p->done)
		return;
	/* bounded: a process that never stops talking does not hold the others */
	for (int i = 0; i < 64 && p->conn.fd >= 0 && (r = proc_receive(u, p)) > 0; i++)
		;
	if (p->conn.fd >= 0 && r < 0) {	/* gone (or lied): what it committed is in the mapping */
		tv_ust_conn_close(&p->conn);
		proc_finish(u, p, 1);
		return;
	}
	proc_drain(p);
	if (p->c.cut)
		proc_finish(u, p, 0);
}

/* At the end: events off, every reservation committed, then the last copy. */
static void procs_quiesce(struct tv_ust_recorder *u)
{
	struct timespec t0, now;

	for (size_t i = 0; i < u->nr_procs; i++) {
		struct ust_proc *p = u->procs[i];

		if (p->done || !p->dom)
			continue;
		tv_ust_conn_quiesce(&p->conn);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int waiting = 0;

		for (size_t i = 0; i < u->nr_procs; i++) {
			struct ust_proc *p = u->procs[i];

			if (p->done || !p->dom)
				continue;
			proc_poll(u, p);
			waiting |= !p->done && !tv_ust_conn_quiesced(&p->conn);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!waiting || (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
				UST_FLUSH_WAIT_MS)
			break;
		poll(NULL, 0, 5);
	}
	for (size_t i = 0; i < u->nr_procs; i++)
		proc_finish(u, u->procs[i], 0);
}

static void *ust_thread(void *arg)
{
	struct tv_ust_recorder *u = arg;

	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd = { u->listen_fd, POLLIN, 0 };

		poll(&pfd, 1, UST_TICK_MS);
		accept_new(u);
		for (size_t i = 0; i < u->nr_procs; i++)
			proc_poll(u, u->procs[i]);
	}
	accept_new(u);
	for (size_t i = 0; i < u->nr_procs; i++)
		proc_poll(u, u->procs[i]);
	procs_quiesce(u);
	return NULL;
}

static int listen_socket(struct tv_ust_recorder *u)
{
	int ret = tv_ust_listen_open(u->sock_path, &u->listen_fd);

	if (ret == -EADDRINUSE)
		tv_err("Cannot listen for traced processes: path=\"%s\": another consumer listens there",
		       u->sock_path);
	else if (ret)
		tv_err("Cannot listen for traced processes: path=\"%s\", errno=%d (%s)", u->sock_path,
		       -ret, strerror(-ret));
	return ret;
}

int tv_ust_recorder_start(const struct tv_ust_record_opts *opts, struct tv_ust_recorder **out)
{
	struct tv_ust_recorder *u = calloc(1, sizeof(*u));
	const char *path = opts->socket ? opts->socket : getenv(TV_UST_SOCK_ENV);
	int ret;

	*out = u;
	if (!u)
		return -ENOMEM;
	u->listen_fd = -1;
	snprintf(u->dir, sizeof(u->dir), "%s", opts->outdir);
	if (!path || !*path)
		path = TV_UST_SOCK_DEFAULT;
	if (strlen(path) >= sizeof(u->sock_path)) {
		tv_err("Socket path too long: path=\"%s\" (at most %zu bytes)", path, sizeof(u->sock_path) - 1);
		return -ENAMETOOLONG;
	}
	snprintf(u->sock_path, sizeof(u->sock_path), "%s", path);
	if (!opts->clock || !strcmp(opts->clock, "mono")) {
		u->clock = TV_UST_CLOCK_MONO;
	} else if (!strcmp(opts->clock, "x86-tsc")) {
		u->clock = TV_UST_CLOCK_X86_TSC;
	} else {
		tv_err("--ust needs the trace clock mono or x86-tsc, which user space can read: clock=\"%s\"",
		       opts->clock);
		return -EINVAL;
	}
	u->patterns = opts->patterns;
	u->nr_patterns = opts->nr_patterns;
	ret = listen_socket(u);
	if (ret)
		return ret;
	ret = pthread_create(&u->thread, NULL, ust_thread, u);
	if (ret) {
		tv_err("Cannot start the user-space tracing thread: errno=%d (%s)", ret, strerror(ret));
		return -ret;
	}
	u->started = 1;
	return 0;
}

int tv_ust_recorder_stop(struct tv_ust_recorder *u, struct tv_recorder *host)
{
	int ret = 0;

	if (!u || !u->started)
		return 0;
	/* release: pairs with the thread's acquire load; nothing else is shared */
	__atomic_store_n(&u->stop, 1, __ATOMIC_RELEASE);
	pthread_join(u->thread, NULL);
	u->started = 0;
	for (size_t i = 0; i < u->nr_procs; i++)
		if (u->procs[i]->dom && host &&
		    tv_recorder_add_domain(host, tv_ust_domain_subdir(u->procs[i]->dom)))
			ret = -1;
	return ret;
}

void tv_ust_recorder_summary(const struct tv_ust_recorder *u, size_t *procs, uint64_t *events,
			     uint64_t *lost)
{
	size_t n = 0;

	for (size_t i = 0; u && i < u->nr_procs; i++)
		n += u->procs[i]->dom != NULL;
	*procs = n;
	*events = u ? u->events : 0;
	*lost = u ? u->lost : 0;
}

void tv_ust_recorder_destroy(struct tv_ust_recorder *u)
{
	if (!u)
		return;
	if (u->started)
		tv_ust_recorder_stop(u, NULL);
	for (size_t i = 0; i < u->nr_procs; i++)
		proc_free(u->procs[i]);
	if (u->listen_fd >= 0) {
		close(u->listen_fd);
		unlink(u->sock_path);
	}
	free(u);
}
