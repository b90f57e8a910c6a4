// SPDX-License-Identifier: LGPL-2.1
/*
 * `record --ust`: the host's traced processes (libtracevisor-ust) into the
 * session.  One thread listens on the registration socket (lib/ust/ust_abi.h),
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
 * Flight recorder (opts.flight_bytes): each process is configured in
 * overwrite mode with a ring of about flight_bytes, and nothing is read
 * while it runs; a snapshot copies the newest sub-buffers of every buffer
 * (at most flight_bytes per process), without taking them, into a new
 * session directory, and the end of the recording writes one more into the
 * session itself.  A snapshot is a gap-free tail: when a buffer's oldest
 * events were overwritten, the events older than the first one it still
 * holds are dropped from every buffer of that process, so no thread's
 * sequence has a hole (a thread that moved between CPUs leaves its older
 * events in several buffers).
 *
 * Threads: the listener thread owns every process and the socket; the
 * caller's thread only sets @stop (atomic) and joins, or asks for a
 * snapshot under @snap_lock and waits on @snap_cond for the thread to
 * take it (the thread is the only one that touches the processes).
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
#include "../kvm/kvm_recorder.h"

/*
 * The host's own traced processes recorded at once: each holds its
 * registration socket, the shared memory of its buffers and up to
 * TV_UST_DOMAIN_MAX_FDS stream files.  (It once left room for the kernels
 * in the reader's 64 domains; the reader has no domain limit now, and sync
 * gives at most 64 domains a line of their own, reading the ust-* ones
 * beyond in their parent's clock: sync/sync_session.h.)  A guest's traced
 * processes are bounded apart, per guest (TV_PROTO_MAX_UST).
 */
#define UST_MAX_PROCS 48
#define UST_TICK_MS 20
#define UST_FLUSH_WAIT_MS 1500
/* The metadata all the host's traced processes may make the recorder hold (4 MiB each at most). */
#define UST_META_POOL (64ull << 20)

struct ust_proc {
	struct tv_ust_conn conn;	/* its registration connection and mapping */
	struct tv_ust_consumer c;
	struct tv_ust_domain *dom;	/* NULL until it registered */
	unsigned char *buf;		/* one sub-buffer */
	int done;			/* finished: its domain is written */
	int flight;			/* kept in overwrite mode for snapshots (not streamed) */
	int gone;			/* flight recorder: its connection closed, its mapping kept */
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
	struct tv_ust_meta_pool meta_pool;	/* their metadata, in all */
	pthread_t thread;
	int started;
	int stop;			/* atomic: the caller asks the thread to end */
	uint64_t flight_bytes;		/* > 0: flight recorder */
	struct tv_ust_policy policy;	/* what CONFIG asks (else the flight recorder's) */
	/* a snapshot request: the caller fills it and waits; the thread takes it */
	pthread_mutex_t snap_lock;
	pthread_cond_t snap_cond;
	const char *snap_dir;		/* non-NULL: asked, not yet taken */
	char *snap_domains;		/* out: comma list of what was written */
	size_t snap_domains_size;
	int snap_ret;
	int snap_open;			/* the thread still takes requests */
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
	p->c.pool = &u->meta_pool;
	p->buf = malloc(p->c.hdr.subbuf_size);
	if (!p->buf)
		return -ENOMEM;
	if (tv_ust_consumer_meta_update(&p->c, NULL, 0) < 0)
		return -EBADMSG;
	if (tv_ust_domain_create(u->dir, "host", &p->c.hdr, &p->dom))
		return -EIO;
	if (tv_ust_domain_add_events(p->dom, &p->c))
		return -EIO;
	p->flight = u->flight_bytes && p->c.hdr.mode == TV_UST_MODE_OVERWRITE;
	if (u->flight_bytes && !p->flight)
		tv_warn("Traced process not in overwrite mode, recorded whole instead of kept for snapshots: pid=%d, comm=\"%s\" (it traced before the recorder configured it: TRACEVISOR_UST without TRACEVISOR_UST_MODE=overwrite)",
			p->conn.pid, p->conn.comm);
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

/*
 * The newest sub-buffers of every buffer of @p (at most flight_bytes in
 * all), trimmed to a gap-free tail, into domain *@d, finished with @status.
 * *@d NULL: created in @dir only if a record is kept (a process that has
 * not traced yet is left out of a snapshot).
 */
static int flight_write(struct tv_ust_recorder *u, struct ust_proc *p, const char *dir,
			struct tv_ust_domain **d, const char *status, uint64_t *events)
{
	uint32_t sb = p->c.hdr.subbuf_size;
	struct tv_ust_tail t = { 0 };
	int ret = tv_ust_consumer_tail(&p->c, u->flight_bytes, &t);

	if (ret == -EBADMSG)
		ret = 0;	/* cut: its valid records are written, said below */
	if (!ret && *d)	/* the session's own domain: its formats even without a record */
		ret = tv_ust_domain_add_events(*d, &p->c);
	for (uint32_t b = 0; b < p->c.hdr.nr_bufs && !ret; b++)
		for (unsigned int i = 0; i < t.n[b] && !ret; i++) {
			size_t at = (size_t)b * t.max + i;

			if (!t.kept[at])
				continue;
			if (!*d)
				ret = tv_ust_domain_create(dir, "host", &p->c.hdr, d);
			if (!ret)
				ret = tv_ust_domain_add_events(*d, &p->c) ?: tv_ust_domain_write(*d, b, t.all + at * sb);
			*events += t.kept[at];
		}
	tv_ust_tail_release(&t);
	if (!*d)
		return ret;	/* nothing kept: no domain */
	if (p->c.cut)
		tv_err("Traced process cut off: pid=%d, comm=\"%s\": %s", p->conn.pid, p->conn.comm, p->c.why);
	return tv_ust_domain_finish(*d, &p->c, NULL, p->c.cut ? "truncated" : status, 1) ?: ret;
}

/* A snapshot of every registered process into @dir (the caller's thread waits). */
static int flight_snapshot(struct tv_ust_recorder *u, const char *dir, char *domains, size_t size)
{
	size_t len = 0;
	int ret = 0, any = 0;

	domains[0] = '\0';
	for (size_t i = 0; i < u->nr_procs && !ret; i++) {
		struct ust_proc *p = u->procs[i];
		struct tv_ust_domain *d = NULL;
		uint64_t events = 0;
		int n;

		if (!p->flight || p->done || p->c.cut)
			continue;
		if (tv_ust_consumer_meta_update(&p->c, NULL, 0) < 0)
			continue;
		ret = flight_write(u, p, dir, &d, p->gone ? "ended" : "snapshot", &events);
		if (!d)
			continue;
		n = snprintf(domains + len, size - len, "%s%s", any ? "," : "", tv_ust_domain_subdir(d));
		tv_ust_domain_free(d);
		if (n < 0 || (size_t)n >= size - len)
			return -ENAMETOOLONG;
		len += (size_t)n;
		any = 1;
	}
	return ret ? ret : any ? 0 : -ENODATA;
}

/* The caller's request, if any: taken and answered. */
static void flight_serve(struct tv_ust_recorder *u)
{
	pthread_mutex_lock(&u->snap_lock);
	if (u->snap_dir) {
		u->snap_ret = flight_snapshot(u, u->snap_dir, u->snap_domains, u->snap_domains_size);
		u->snap_dir = NULL;
		pthread_cond_broadcast(&u->snap_cond);
	}
	pthread_mutex_unlock(&u->snap_lock);
}

static void proc_finish(struct tv_ust_recorder *u, struct ust_proc *p, int gone)
{
	uint64_t *lost;
	char status[300];

	if (p->done)
		return;
	p->done = 1;
	if (p->flight) {	/* the last snapshot, into the session itself */
		uint64_t events = 0;

		flight_write(u, p, NULL, &p->dom, gone || p->gone ? "ended" : "complete", &events);
		u->events += events;
		return;
	}
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

/* Overwrite mode with a ring of about flight_bytes (tv_ust_flight_policy()). */
static void flight_config(const struct tv_ust_recorder *u, struct tv_ust_conn *conn)
{
	tv_ust_flight_policy(u->flight_bytes, sysconf(_SC_NPROCESSORS_CONF), &conn->cfg_subbuf_size,
			     &conn->cfg_nr_subbufs);
	conn->cfg_mode = TV_UST_MODE_OVERWRITE + 1;
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
		if (u->flight_bytes)
			flight_config(u, &p->conn);
		else
			tv_ust_conn_set_policy(&p->conn, &u->policy);
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
		if (p->flight && !p->c.cut) {
			p->gone = 1;	/* its last events stay in the mapping for the snapshots */
			return;
		}
		proc_finish(u, p, 1);
		return;
	}
	if (p->flight)
		return;	/* nothing is read until a snapshot */
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
		if (u->flight_bytes)
			flight_serve(u);
	}
	accept_new(u);
	for (size_t i = 0; i < u->nr_procs; i++)
		proc_poll(u, u->procs[i]);
	procs_quiesce(u);
	/* a request that came in while we stopped: refused (the recording is over) */
	pthread_mutex_lock(&u->snap_lock);
	if (u->snap_dir) {
		u->snap_ret = -ESHUTDOWN;
		u->snap_dir = NULL;
		pthread_cond_broadcast(&u->snap_cond);
	}
	u->snap_open = 0;
	pthread_mutex_unlock(&u->snap_lock);
	return NULL;
}

int tv_ust_recorder_policy(const struct tv_ust_record_opts *opts, struct tv_ust_policy *out)
{
	char why[160];

	if (opts->flight_bytes && (opts->mode || opts->subbuf_size || opts->nr_subbufs)) {
		tv_err("--ust-mode and --ust-buffer do not go with --flight-recorder (overwrite mode, its own sizes)");
		return -EINVAL;
	}
	if (tv_ust_policy_parse(opts->mode, opts->subbuf_size, opts->nr_subbufs, out, why, sizeof(why))) {
		tv_err("Invalid traced processes' policy: %s", why);
		return -EINVAL;
	}
	return 0;
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
	u->meta_pool.max = UST_META_POOL;
	u->meta_pool.owner = "recorder";
	pthread_mutex_init(&u->snap_lock, NULL);
	pthread_cond_init(&u->snap_cond, NULL);
	snprintf(u->dir, sizeof(u->dir), "%s", tv_session_writer_dir(opts->session));
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
	u->flight_bytes = opts->flight_bytes;
	ret = tv_ust_recorder_policy(opts, &u->policy);
	if (ret)
		return ret;
	u->patterns = opts->patterns;
	u->nr_patterns = opts->nr_patterns;
	ret = listen_socket(u);
	if (ret)
		return ret;
	u->snap_open = 1;
	ret = pthread_create(&u->thread, NULL, ust_thread, u);
	if (ret) {
		tv_err("Cannot start the user-space tracing thread: errno=%d (%s)", ret, strerror(ret));
		return -ret;
	}
	u->started = 1;
	return 0;
}

int tv_ust_recorder_stop(struct tv_ust_recorder *u, struct tv_session_writer *session)
{
	int ret = 0;

	if (!u || !u->started)
		return 0;
	/* release: pairs with the thread's acquire load; nothing else is shared */
	__atomic_store_n(&u->stop, 1, __ATOMIC_RELEASE);
	pthread_join(u->thread, NULL);
	u->started = 0;
	for (size_t i = 0; i < u->nr_procs; i++)
		if (u->procs[i]->dom && session &&
		    tv_session_writer_add_domain(session, tv_ust_domain_subdir(u->procs[i]->dom)))
			ret = -1;
	return ret;
}

int tv_ust_recorder_snapshot(struct tv_ust_recorder *u, const char *dir, char *domains,
			     size_t domains_size)
{
	int ret;

	if (!u || !u->flight_bytes)
		return -EINVAL;
	pthread_mutex_lock(&u->snap_lock);
	if (!u->snap_open) {
		pthread_mutex_unlock(&u->snap_lock);
		return -ESHUTDOWN;
	}
	u->snap_dir = dir;
	u->snap_domains = domains;
	u->snap_domains_size = domains_size;
	while (u->snap_dir)
		pthread_cond_wait(&u->snap_cond, &u->snap_lock);
	ret = u->snap_ret;
	pthread_mutex_unlock(&u->snap_lock);
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
