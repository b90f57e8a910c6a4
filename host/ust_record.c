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
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "ust_consumer.h"
#include "ust_record.h"

/* a session is read with at most 64 domains (lib/reader.c): leave room for the kernels */
#define UST_MAX_PROCS 48
#define UST_TICK_MS 20
#define UST_MAX_SHM (1ull << 32)
#define UST_FLUSH_WAIT_MS 1500

struct ust_proc {
	int fd;				/* its registration connection, -1 once closed */
	int pid;
	char comm[17];
	unsigned char *map;
	size_t map_size;
	struct tv_ust_consumer c;
	struct tv_ust_domain *dom;	/* NULL until it registered */
	unsigned char *buf;		/* one sub-buffer */
	int replies;			/* REPLY messages received */
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

static int send_msg(struct ust_proc *p, uint16_t type, const char *arg, uint32_t clock)
{
	struct tv_ust_msg m = { .magic = TV_UST_MAGIC, .version = TV_UST_VERSION, .type = type };

	if (type == TV_UST_MSG_CONFIG)
		m.clock = clock + 1;
	if (arg)
		snprintf(m.arg, sizeof(m.arg), "%s", arg);
	if (p->fd < 0 || send(p->fd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(m))
		return -EIO;
	return 0;
}

/* memfd: sealed against shrinking, so a mapped page can never vanish (SIGBUS). */
static int proc_map(struct tv_ust_recorder *u, struct ust_proc *p, int memfd)
{
	struct stat st;
	int seals;
	void *m;

	if (fstat(memfd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct tv_ust_shm_header) ||
	    (uint64_t)st.st_size > UST_MAX_SHM) {
		proc_cut(p, "the registered fd is not a memfd of a sensible size");
		return -EBADMSG;
	}
	fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK);
	seals = fcntl(memfd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		proc_cut(p, "its memfd cannot be sealed against shrinking (create it with MFD_ALLOW_SEALING)");
		return -EBADMSG;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m == MAP_FAILED) {
		int err = errno;

		proc_cut(p, "its memfd cannot be mapped");
		return -err;
	}
	p->map = m;
	p->map_size = (size_t)st.st_size;
	if (tv_ust_consumer_init(&p->c, p->map, p->map_size))
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
	for (size_t i = 0; i < u->nr_patterns; i++)
		send_msg(p, TV_UST_MSG_ENABLE, u->patterns[i], 0);
	send_msg(p, TV_UST_MSG_READY, NULL, 0);	/* its first events follow these rules */
	return 0;
}

/* One message from @p (non-blocking): 1 handled, 0 none, -1 the connection ended or lied. */
static int proc_receive(struct tv_ust_recorder *u, struct ust_proc *p)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct tv_ust_msg m;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fds[4], nfds = 0, ret = 1;
	ssize_t n;

	n = recvmsg(p->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	for (cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) && nfds < 4; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	if (n <= 0)
		ret = -1;
	else if (n != sizeof(m) || m.magic != TV_UST_MAGIC || m.version != TV_UST_VERSION ||
		 (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		proc_cut(p, "a registration message of the wrong size, magic or version");
		ret = -1;
	} else if (m.type == TV_UST_MSG_HELLO && !p->pid) {
		p->pid = m.pid;
		m.arg[sizeof(m.arg) - 1] = '\0';
		snprintf(p->comm, sizeof(p->comm), "%s", m.arg);
		send_msg(p, TV_UST_MSG_CONFIG, NULL, u->clock);
	} else if (m.type == TV_UST_MSG_REGISTER && !p->map && nfds == 1 && p->pid) {
		if (proc_map(u, p, fds[0]))
			ret = -1;
	} else if (m.type == TV_UST_MSG_REPLY) {
		p->replies++;
	} else {
		proc_cut(p, "an unexpected registration message");
		ret = -1;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return ret;
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
		tv_err("Traced process cut off: pid=%d, comm=\"%s\": %s", p->pid, p->comm, p->c.why);
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
	if (p->fd >= 0)
		close(p->fd);
	if (p->map)
		munmap(p->map, p->map_size);
	tv_ust_domain_free(p->dom);
	tv_ust_consumer_release(&p->c);
	free(p->buf);
	free(p);
}

static void accept_new(struct tv_ust_recorder *u)
{
	for (;;) {
		int fd = accept4(u->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ust_proc *p;

		if (fd < 0)
			return;
		if (u->nr_procs == UST_MAX_PROCS || !(p = calloc(1, sizeof(*p)))) {
			tv_warn("Too many traced processes, one refused: at most %d per session", UST_MAX_PROCS);
			close(fd);
			continue;
		}
		p->fd = fd;
		u->procs[u->nr_procs++] = p;
	}
}

static void proc_poll(struct tv_ust_recorder *u, struct ust_proc *p)
{
	int r;

	if (p->done)
		return;
	/* bounded: a process that never stops talking does not hold the others */
	for (int i = 0; i < 64 && p->fd >= 0 && (r = proc_receive(u, p)) > 0; i++)
		;
	if (p->fd >= 0 && r < 0) {	/* gone (or lied): what it committed is in the mapping */
		close(p->fd);
		p->fd = -1;
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
		p->replies = 0;
		send_msg(p, TV_UST_MSG_DISABLE, "*", 0);
		send_msg(p, TV_UST_MSG_FLUSH, NULL, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int waiting = 0;

		for (size_t i = 0; i < u->nr_procs; i++) {
			struct ust_proc *p = u->procs[i];

			if (p->done || !p->dom)
				continue;
			proc_poll(u, p);
			waiting |= !p->done && p->replies < 2;
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
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(u->sock_path)], *slash;
	int fd, probe;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", u->sock_path);
	snprintf(dir, sizeof(dir), "%s", u->sock_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	/* someone listening already is another consumer: do not steal its processes */
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
		close(probe);
		tv_err("Cannot listen for traced processes: path=\"%s\": another consumer listens there",
		       u->sock_path);
		return -EADDRINUSE;
	}
	if (probe >= 0)
		close(probe);
	unlink(u->sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		tv_err("Cannot listen for traced processes: path=\"%s\", errno=%d (%s)", u->sock_path,
		       err, strerror(err));
		return -err;
	}
	/* any user's process may register; what it sends is checked */
	chmod(u->sock_path, 0777);
	u->listen_fd = fd;
	return 0;
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
