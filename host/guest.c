// SPDX-License-Identifier: LGPL-2.1
/*
 * Recording a guest beside the host: one thread per guest connects to its
 * tracevisor-agent (vsock or virtio-serial), sends START, feeds everything
 * the agent sends through the checked stream parser (guest_stream.c) into
 * DIR/guest-NAME/, and runs the clock-sync probes (doc/sync-probes.md):
 * message ping/pong with markers in the host trace, and hypercall probes
 * that the host trace sees as kvm_hypercall.
 *
 * The guest can only hurt its own stream: the host's recording and the
 * other guests never wait for it (own thread, non-blocking channel, every
 * wait bounded), and any failure ends with guest-NAME/meta saying why.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "proto.h"
#include "guest_stream.h"
#include "guest_libvirt.h"
#include "probe_sched.h"
#include "guest_stop.h"
#include "guest_session.h"
#include "../xen/xen_recorder.h"
#include "../kvm/recorder_session.h"
#include "guest.h"
#include "flight_guest.h"
#include "../kvm/kvm_recorder.h"

#define CONNECT_TIMEOUT_S 30.0
#define SEND_TIMEOUT_MS 2000
#define READ_CHUNK (256 * 1024)
#define TV_GUEST_XEN_DEFAULT_EVENTS "sched:sched_switch,sched:sched_wakeup"

/*
 * Threads: each guest has its own thread (from tv_guest_start() to the
 * pthread_join() in tv_guest_stop()/_destroy()) beside the caller's.
 *   ready          under lock; cond signals its change (tv_guest_start
 *                  waits on it for the guest's first answer)
 *   finished       under lock: the thread is about to return
 *   stop_req, abort_req, stop_deadline
 *                  set by the caller (atomics; the deadline before the
 *                  release store of stop_req), then stop_fd written
 *   stop_fd        an eventfd that wakes the thread: the flags say why
 *   rec            shared host recorder: its own lock covers what the
 *                  thread adds (vCPUs, VM names, domains), see kvm/kvm_recorder.c
 *   everything else (fd, gs, sess: phase, probes, counts, status) belongs to the
 *                  thread while it runs; the caller reads it after the join
 */
struct tv_guest {
	struct tv_recorder *rec;
	struct tv_session_writer *session;	/* gives DIR/guest-NAME; lists it (its lock) */
	struct tv_guest_spec spec;
	struct tv_guest_opts opts;
	char events[1024], clock[32];
	char *filters_start;		/* the "filter.N=...\n" lines of START, or NULL */
	unsigned nr_filters;
	char subdir[48];
	char dir[PATH_MAX];
	int fd, stop_fd;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready;			/* 1 ready, <0 failed, 0 not yet */
	int finished;			/* the thread ends (under lock) */
	int stop_req, abort_req;	/* atomics, set by the caller */
	double stop_deadline;		/* stop request + TV_GUEST_STOP_MAX_S */
	struct tv_guest_stream gs;
	/* phases, deadlines, probes, status (host/guest_session.c); stop_asked: the thread saw stop_req */
	struct tv_guest_session sess;
	int listed;
	struct tv_guest_flight *flight;	/* a flight recorder's guest (host/flight_guest.c), or NULL */
	int connect_err;		/* atomic: the last connect attempt's -errno, 0 connected */
};

static double now_s(void)
{
	return tv_probe_sched_now();
}

/* -------------------------------------------------------------- specs */

static int valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > TV_GUEST_NAME_MAX || s[0] == '.')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return 0;
	return 1;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || end == s || *end || *out > max || s[0] == '-') ? -EINVAL : 0;
}

static int spec_item(struct tv_guest_spec *spec, char *item)
{
	char *val = strchr(item, ':');
	unsigned long v;

	if (!val)
		return -EINVAL;
	*val++ = '\0';
	if (!strcmp(item, "vsock")) {
		char *port = strchr(val, ':');

		if (port) {
			*port++ = '\0';
			if (parse_uint(port, 0xffffffffUL, &v) || !v)
				return -EINVAL;
			spec->vsock_port = (unsigned)v;
		}
		if (parse_uint(val, 0xfffffffeUL, &v) || v < 3)
			return -EINVAL;
		spec->vsock_cid = (unsigned)v;
	} else if (!strcmp(item, "serial")) {
		if (!*val || strlen(val) >= sizeof(spec->serial))
			return -EINVAL;
		snprintf(spec->serial, sizeof(spec->serial), "%s", val);
	} else if (!strcmp(item, "xen")) {
		if (!valid_name(val))
			return -EINVAL;
		snprintf(spec->xen, sizeof(spec->xen), "%s", val);
	} else if (!strcmp(item, "pid")) {
		if (parse_uint(val, 0x7fffffffUL, &v) || !v)
			return -EINVAL;
		spec->qemu_pid = (pid_t)v;
	} else if (!strcmp(item, "name")) {
		if (!valid_name(val))
			return -EINVAL;
		snprintf(spec->name, sizeof(spec->name), "%s", val);
	} else {
		return -EINVAL;
	}
	return 0;
}

int tv_guest_spec_parse(const char *text, struct tv_guest_spec *spec)
{
	char *copy, *save = NULL;
	int ret = 0;

	memset(spec, 0, sizeof(*spec));
	spec->xen_domid = -1;
	if (!strchr(text, ':')) {
		/* A libvirt domain name: it also names the guest's directory. */
		if (!valid_name(text) || strlen(text) >= sizeof(spec->libvirt)) {
			tv_err("Invalid guest: \"%s\" (a libvirt domain name is [A-Za-z0-9_.-], at most %d characters)",
			       text, TV_GUEST_NAME_MAX);
			return -EINVAL;
		}
		snprintf(spec->libvirt, sizeof(spec->libvirt), "%s", text);
		snprintf(spec->name, sizeof(spec->name), "%s", text);
		return 0;
	}
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	for (char *it = strtok_r(copy, ",", &save); it && !ret; it = strtok_r(NULL, ",", &save))
		ret = spec_item(spec, it);
	free(copy);
	/* exactly one channel: vsock, serial, or a Xen domain's (from xenstore) */
	if (!ret && !!spec->vsock_cid + !!spec->serial[0] + !!spec->xen[0] != 1)
		ret = -EINVAL;
	if (!ret && spec->xen[0] && spec->qemu_pid)
		ret = -EINVAL;
	if (ret) {
		tv_err("Invalid guest: \"%s\" (expected vsock:CID[:PORT] or serial:PATH, with optional pid:QEMU_PID and name:NAME, or xen:DOMAIN with optional name:NAME, comma-separated; NAMEs are [A-Za-z0-9_.-])",
		       text);
		return ret;
	}
	if (!spec->name[0]) {
		if (spec->xen[0])
			snprintf(spec->name, sizeof(spec->name), "%s", spec->xen);
		else if (spec->vsock_cid)
			snprintf(spec->name, sizeof(spec->name), "cid%u", spec->vsock_cid);
		else
			snprintf(spec->name, sizeof(spec->name), "serial");
	}
	return 0;
}

int tv_guest_spec_resolve(struct tv_guest_spec *spec)
{
	struct tv_xen_domain dom;
	int ret;

	if (!spec->xen[0])
		return tv_guest_libvirt_resolve(spec);
	ret = tv_xen_domain_find(spec->xen, &dom);
	if (ret)
		return ret;
	spec->xen_domid = (int)dom.domid;
	spec->nr_vcpus = dom.nr_vcpus;
	snprintf(spec->serial, sizeof(spec->serial), "%s", dom.channel);
	return 0;
}

/* ------------------------------------------------------------ channel */

static int connect_vsock(const struct tv_guest_spec *spec)
{
	struct sockaddr_vm addr = {
		.svm_family = AF_VSOCK,
		.svm_cid = spec->vsock_cid,
		.svm_port = spec->vsock_port ? spec->vsock_port : TV_AGENT_VSOCK_PORT,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

/* The host end of a virtio-serial port: a chardev unix socket or a pty. */
static int connect_serial(const struct tv_guest_spec *spec)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (stat(spec->serial, &st))
		return -errno;
	if (S_ISSOCK(st.st_mode)) {
		if (strlen(spec->serial) >= sizeof(addr.sun_path))
			return -ENAMETOOLONG;
		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", spec->serial);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
			int err = errno;

			close(fd);
			return -err;
		}
		return fd;
	}
	fd = open(spec->serial, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (isatty(fd)) {
		struct termios tio;

		/* A pty must pass bytes through untouched. */
		if (tcgetattr(fd, &tio) == 0) {
			cfmakeraw(&tio);
			tcsetattr(fd, TCSANOW, &tio);
		}
	}
	return fd;
}

/* The wake-up from the caller: emptied; the flags below say why. */
static void guest_take_wakeup(struct tv_guest *g)
{
	uint64_t v;

	if (read(g->stop_fd, &v, sizeof(v)) < 0 && errno != EAGAIN && errno != EINTR)
		tv_warn("Cannot read the guest thread's eventfd: name=\"%s\", errno=%d (%s)",
			g->spec.name, errno, strerror(errno));
}

/*
 * The caller's requests (tv_guest_request_stop(), tv_guest_abort()), read
 * from the flags: the eventfd only wakes the thread, so a lost wake-up
 * delays a request by one poll (50 ms) at most, never loses it.
 * Return: 1 when the stop is to be cut short, else 0.
 */
static int guest_check_requests(struct tv_guest *g)
{
	if (!g->sess.stop_asked && __atomic_load_n(&g->stop_req, __ATOMIC_ACQUIRE))
		tv_guest_session_stop(&g->sess, g->stop_deadline);	/* now valid */
	return __atomic_load_n(&g->abort_req, __ATOMIC_ACQUIRE);
}

/* How long a wait may last: @cap_ms, less once stopping (the stop's deadline). */
static int guest_wait_ms(struct tv_guest *g, int cap_ms)
{
	double left;

	if (!g->sess.stop_asked)
		return cap_ms;
	left = (g->sess.stop_deadline - now_s()) * 1000.0;
	return left <= 0 ? 0 : left < cap_ms ? (int)left + 1 : cap_ms;
}

static int guest_send_arg(struct tv_guest *g, uint16_t type, uint32_t arg, const void *payload,
			  size_t len)
{
	unsigned char frame[TV_PROTO_HDR_SIZE + 512];
	size_t n = TV_PROTO_HDR_SIZE + len, off = 0;

	if (len > sizeof(frame) - TV_PROTO_HDR_SIZE)
		return -EMSGSIZE;
	tv_proto_hdr_encode(frame, type, arg, (uint32_t)len);
	memcpy(frame + TV_PROTO_HDR_SIZE, payload, len);
	while (off < n) {
		ssize_t w = send(g->fd, frame + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == ENOTSOCK)
			w = write(g->fd, frame + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* a guest that reads nothing: bounded, and an abort cuts it short */
			struct pollfd pfd[2] = { { .fd = g->fd, .events = POLLOUT },
						 { .fd = g->stop_fd, .events = POLLIN } };
			int n = poll(pfd, 2, guest_wait_ms(g, SEND_TIMEOUT_MS));

			if (n < 0 && errno != EINTR)
				return -errno;
			if (n > 0 && (pfd[1].revents & POLLIN)) {
				guest_take_wakeup(g);
				if (guest_check_requests(g))
					return -ECANCELED;
			} else if (n == 0) {
				return -ETIMEDOUT;
			}
			continue;
		}
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	return 0;
}

static int guest_send(struct tv_guest *g, uint16_t type, const void *payload, size_t len)
{
	return guest_send_arg(g, type, 0, payload, len);
}

/* ------------------------------------------------------------ TSC files */

/* debugfs kvm/PID-FD/vcpuN/tsc-*: "vcpu offset ratio frac_bits" lines. */
static void save_tsc(struct tv_guest *g)
{
	char pattern[96], path[PATH_MAX + 16], val[3][64];
	static const char *const files[] = { "tsc-offset", "tsc-scaling-ratio",
					     "tsc-scaling-ratio-frac-bits" };
	glob_t gl;
	FILE *out;

	if (!g->spec.qemu_pid)
		return;
	snprintf(pattern, sizeof(pattern), "/sys/kernel/debug/kvm/%d-*/vcpu*",
		 (int)g->spec.qemu_pid);
	if (glob(pattern, 0, NULL, &gl))
		return;
	snprintf(path, sizeof(path), "%s/tsc", g->dir);
	out = tv_file_fcreate(path, "TSC file");
	for (size_t i = 0; out && i < gl.gl_pathc; i++) {
		const char *vcpu = strrchr(gl.gl_pathv[i], '/') + 5;

		for (int f = 0; f < 3; f++) {
			char file[PATH_MAX + 64];
			FILE *in;

			snprintf(file, sizeof(file), "%s/%s", gl.gl_pathv[i], files[f]);
			snprintf(val[f], sizeof(val[f]), "-");
			in = fopen(file, "re");
			if (in && fgets(val[f], sizeof(val[f]), in))
				val[f][strcspn(val[f], "\n")] = '\0';
			if (in)
				fclose(in);
		}
		fprintf(out, "%s %s %s %s\n", vcpu, val[0], val[1], val[2]);
	}
	if (out)
		fclose(out);
	globfree(&gl);
}

/* -------------------------------------------------------------- thread */

static void set_ready(struct tv_guest *g, int state)
{
	pthread_mutex_lock(&g->lock);
	if (!g->ready)
		g->ready = state;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static int session_send(void *ctx, uint16_t type, const void *payload, size_t len)
{
	return guest_send(ctx, type, payload, len);
}

static void session_set_ready(void *ctx, int state)
{
	set_ready(ctx, state);
}

static void session_save_tsc(void *ctx)
{
	save_tsc(ctx);
}

static const struct tv_guest_session_ops guest_session_ops = {
	.send = session_send,
	.set_ready = session_set_ready,
	.save_tsc = session_save_tsc,
};

/* The guest's session is over: @... give its status (unless set). */
#define guest_end(g, ...) tv_guest_session_end(&(g)->sess, __VA_ARGS__)

/*
 * START's keys for the processes' buffer policy (record --ust-mode,
 * --ust-buffer; checked by the recorder), "" when none is asked.  An agent
 * that does not know them ignores them: its processes keep their defaults,
 * which the summary then says (ust-guest-*'s meta has what was in force).
 */
static void guest_ust_policy_keys(const struct tv_guest *g, char *out, size_t size)
{
	int n = 0;

	out[0] = '\0';
	if (!g->opts.ust)
		return;
	if (g->opts.ust_mode && *g->opts.ust_mode)
		n = snprintf(out, size, "ust_mode=%s\n", g->opts.ust_mode);
	if (g->opts.ust_subbuf_size && n >= 0 && (size_t)n < size)
		n += snprintf(out + n, size - (size_t)n, "ust_subbuf_size=%u\n", g->opts.ust_subbuf_size);
	if (g->opts.ust_nr_subbufs && n >= 0 && (size_t)n < size)
		snprintf(out + n, size - (size_t)n, "ust_nr_subbufs=%u\n", g->opts.ust_nr_subbufs);
}

static int guest_connect(struct tv_guest *g)
{
	double give_up = now_s() + CONNECT_TIMEOUT_S;
	char ust_policy[96];
	uint64_t nonce;
	char *start;
	int fd, ret, n;

	for (;;) {
		struct pollfd pfd = { .fd = g->stop_fd, .events = POLLIN };

		fd = g->spec.vsock_cid ? connect_vsock(&g->spec) : connect_serial(&g->spec);
		/* relaxed: a report for the waiting caller, it orders nothing */
		__atomic_store_n(&g->connect_err, fd < 0 ? fd : 0, __ATOMIC_RELAXED);
		if (fd >= 0)
			break;
		/* The agent may not listen yet: retry until stopped or too late. */
		guest_check_requests(g);
		if (now_s() > give_up || g->sess.stop_asked) {
			char where[PATH_MAX + 32];

			if (g->spec.vsock_cid)
				snprintf(where, sizeof(where), "vsock CID %u", g->spec.vsock_cid);
			else
				snprintf(where, sizeof(where), "serial %s", g->spec.serial);
			guest_end(g, "failed: cannot connect to the agent at %s: errno=%d (%s)",
				  where, -fd, strerror(-fd));
			return fd;
		}
		/* 200 ms, or less when the caller stops the recording */
		n = poll(&pfd, 1, 200);
		if (n > 0)
			guest_take_wakeup(g);
		else if (n < 0 && errno != EINTR)
			usleep(200000);	/* the flags are read at the next try */
	}
	g->fd = fd;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/*
	 * A serial channel (Xen PV console, virtio-serial) outlives sessions:
	 * it may still hold an earlier session's bytes, from either side.  The
	 * agent answers with HELLO echoing this nonce; what comes before it is
	 * counted as stale and never parsed (guest_stream.c).
	 */
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		nonce = (uint64_t)now_s() * 1000003u ^ (uint64_t)getpid() << 32;
	nonce |= 1;	/* 0 would mean none */
	tv_guest_stream_expect_hello(&g->gs, nonce);
	guest_ust_policy_keys(g, ust_policy, sizeof(ust_policy));
	if (asprintf(&start, "guest=%u\nnonce=%016llx\nclock=%s\nbuffer_kb=%u\n%s%s%s%s%s%s%s%s%s",
		     g->opts.index, (unsigned long long)nonce,
		     g->clock, g->opts.buffer_kb ? g->opts.buffer_kb : 2048,
		     g->events[0] ? "events=" : "", g->events, g->events[0] ? "\n" : "",
		     g->filters_start ? g->filters_start : "",
		     g->opts.ust ? "ust=" : "", g->opts.ust ? g->opts.ust : "", g->opts.ust ? "\n" : "",
		     ust_policy, g->flight ? tv_guest_flight_start_keys(g->flight) : "") < 0) {
		guest_end(g, "failed: out of memory");
		return -ENOMEM;
	}
	g->gs.filters_sent = g->nr_filters;
	g->gs.ust_asked = g->opts.ust != NULL;
	ret = guest_send(g, TV_MSG_START, start, strlen(start));
	free(start);
	if (ret) {
		guest_end(g, "failed: cannot send START to the agent");
		return -EPIPE;
	}
	g->sess.phase = TV_GUEST_PHASE_RUN;
	return 0;
}

static void guest_read(struct tv_guest *g, unsigned char *buf)
{
	ssize_t n = read(g->fd, buf, READ_CHUNK);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	tv_guest_session_input(&g->sess, buf, n < 0 ? -errno : n);
}

/* The thread's last act: tv_guest_finished() may now say so. */
static void guest_thread_done(struct tv_guest *g)
{
	pthread_mutex_lock(&g->lock);
	g->finished = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* A flight recorder's turn: snapshots only while the guest traces and no stop began. */
static void guest_flight_turn(struct tv_guest *g)
{
	if (!g->flight)
		return;
	tv_guest_flight_set_running(g->flight, g->gs.ready && !g->gs.failed && !g->sess.stop_asked &&
					       g->sess.phase == TV_GUEST_PHASE_RUN);
	tv_guest_flight_poll(g->flight, now_s());
}

static void guest_loop(struct tv_guest *g, unsigned char *buf)
{
	while (g->sess.phase != TV_GUEST_PHASE_DONE) {
		struct pollfd pfd[2] = { { .fd = g->fd, .events = POLLIN },
					 { .fd = g->stop_fd, .events = POLLIN } };
		int n = poll(pfd, 2, 50);

		if (n < 0 && errno != EINTR) {
			guest_end(g, "truncated: poll failed: errno=%d (%s)", errno, strerror(errno));
			break;
		}
		if (n > 0 && (pfd[1].revents & POLLIN))
			guest_take_wakeup(g);
		if (guest_check_requests(g)) {
			/* a second interrupt: what the agent sent so far is kept */
			guest_end(g, "truncated: the stop was cut short (interrupted) before the agent's END");
			break;
		}
		if (n > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			guest_read(g, buf);
		if (g->sess.phase != TV_GUEST_PHASE_DONE)
			tv_guest_session_tick(&g->sess, now_s());
		guest_flight_turn(g);
	}
	if (g->flight)
		tv_guest_flight_set_running(g->flight, 0);
}

static void *guest_thread(void *arg)
{
	struct tv_guest *g = arg;
	unsigned char *buf = malloc(READ_CHUNK);

	if (!buf)
		guest_end(g, "failed: out of memory");
	else if (!guest_connect(g))
		guest_loop(g, buf);
	free(buf);
	guest_thread_done(g);
	return NULL;
}

/* ---------------------------------------------------------------- API */

/* Items of a comma list, empty ones counted (as the agent counts them). */
static size_t list_items(const char *list)
{
	size_t n = 1;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

/*
 * START's "filter.N=FILTER" lines for opts->event_filters, checked here so
 * that a filter the protocol cannot carry is said before anything starts
 * (the guest kernel judges the rest).  Return: 0 or -EINVAL/-ENOMEM.
 */
static int guest_filters_start(struct tv_guest *g, const struct tv_guest_opts *opts)
{
	size_t items = list_items(g->events), len = 0;
	char *lines = NULL;
	FILE *f;
	int ret = -EINVAL;

	if (!opts->nr_event_filters)
		return 0;
	if (!g->events[0] || opts->nr_event_filters > items || items > TV_GUEST_MAX_FILTERED_ITEMS) {
		tv_err("Invalid guest event filters: %zu for a list of %zu items (at most %d, and an explicit list)",
		       opts->nr_event_filters, g->events[0] ? items : 0, TV_GUEST_MAX_FILTERED_ITEMS);
		return -EINVAL;
	}
	f = open_memstream(&lines, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < opts->nr_event_filters; i++) {
		const char *flt = opts->event_filters[i];
		size_t n = flt ? strlen(flt) : 0;

		if (!flt)
			continue;
		for (size_t k = 0; k < n && n; k++)
			if ((unsigned char)flt[k] < 0x20 || (unsigned char)flt[k] > 0x7e)
				n = 0;
		if (!n || n > 1023) {
			tv_err("Invalid guest event filter: filter=\"%s\" (printable ASCII, 1 to 1023 bytes)",
			       flt);
			goto err;
		}
		fprintf(f, "filter.%zu=%s\n", i, flt);
		g->nr_filters++;
	}
	ret = fclose(f) ? -ENOMEM : 0;
	f = NULL;
	if (ret)
		goto err;
	g->filters_start = lines;
	return 0;
err:
	if (f)
		fclose(f);
	free(lines);
	return ret;
}

/* A guest set from @spec and @opts, nothing started yet (tv_guest_destroy()). */
static struct tv_guest *guest_new(struct tv_recorder *rec, const struct tv_guest_spec *spec,
				  const struct tv_guest_opts *opts)
{
	struct tv_guest *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->rec = rec;
	g->session = tv_recorder_session(rec);
	g->spec = *spec;
	g->opts = *opts;
	g->fd = g->stop_fd = -1;
	g->ready = 0;
	if (g->opts.sync_interval <= 0)
		g->opts.sync_interval = TV_GUEST_DEFAULT_SYNC_INTERVAL;
	/*
	 * A Xen domU's channel is its PV console, through QEMU in dom0: tens of
	 * KB/s under TCG, too little for the agent's default set (system
	 * calls, interrupts), whose backlog then takes longer to drain at STOP
	 * than the END wait.  Its default is the scheduler's switches and
	 * wake-ups; --guest-events asks for more.
	 */
	if (!opts->events && spec->xen[0])
		snprintf(g->events, sizeof(g->events), "%s", TV_GUEST_XEN_DEFAULT_EVENTS);
	else
		snprintf(g->events, sizeof(g->events), "%s", opts->events ? opts->events : "");
	snprintf(g->clock, sizeof(g->clock), "%s", opts->clock ? opts->clock : "local");
	snprintf(g->subdir, sizeof(g->subdir), "guest-%s", spec->name);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	return g;
}

static void guest_meta_base(void *ctx, struct tv_meta *m);

static int flight_send(void *ctx, uint16_t type, uint32_t arg)
{
	return guest_send_arg(ctx, type, arg, NULL, 0);
}

/* A flight recorder's guest: its state, and its stream expects an agent that keeps its ring. */
static int guest_flight_new(struct tv_guest *g, const struct tv_guest_opts *opts)
{
	struct tv_guest_flight_io io = {
		.send = flight_send, .base_meta = guest_meta_base, .ctx = g,
		.name = g->spec.name, .src_dir = g->dir, .gs = &g->gs,
	};
	int ret = tv_guest_flight_new(&io, opts->flight_bytes, opts->triggers, opts->nr_triggers, &g->flight);

	g->gs.flight_asked = !ret;
	g->gs.on_flight = tv_guest_flight_frame;
	g->gs.flight_ctx = g->flight;
	return ret;
}

int tv_guest_start(struct tv_recorder *rec, const struct tv_guest_spec *spec,
		   const struct tv_guest_opts *opts, struct tv_guest **out)
{
	struct tv_guest *g;
	int ret;

	*out = NULL;
	g = guest_new(rec, spec, opts);
	if (!g)
		return -ENOMEM;
	if (!valid_name(spec->name) ||
	    (opts->events && strlen(g->events) != strlen(opts->events))) {
		tv_err("Invalid guest: name=\"%s\" (or guest event list longer than 1023 bytes)",
		       spec->name);
		ret = -EINVAL;
		goto err;
	}
	ret = guest_filters_start(g, opts);
	if (ret)
		goto err;
	ret = tv_session_writer_domain_dir(g->session, g->subdir, g->dir, sizeof(g->dir));
	if (ret)
		goto err;
	ret = tv_guest_stream_init(&g->gs, g->dir,
				   opts->max_bytes ? opts->max_bytes
						   : (uint64_t)TV_GUEST_DEFAULT_LIMIT_MB << 20);
	g->gs.check_domain = tv_domain_check;
	if (!ret && opts->flight_bytes)
		ret = guest_flight_new(g, opts);
	tv_guest_session_init(&g->sess, &g->gs, &guest_session_ops, g, rec, (uint16_t)g->opts.index,
			      g->opts.sync_interval, 0);
	g->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!ret && g->stop_fd < 0)
		ret = -errno;
	if (!ret && spec->qemu_pid)
		ret = tv_recorder_set_vm_name(rec, spec->qemu_pid, spec->name);
	for (unsigned int i = 0; !ret && spec->qemu_pid && i < spec->nr_vcpus; i++)
		if (spec->vcpu_tid[i] > 0)
			ret = tv_recorder_add_vcpu(rec, spec->vcpu_tid[i], spec->qemu_pid, (int)i);
	if (!ret) {
		ret = -pthread_create(&g->thread, NULL, guest_thread, g);
		g->started = !ret;
	}
	if (ret) {
		tv_err("Cannot start guest recording: name=\"%s\", errno=%d (%s)", spec->name, -ret, strerror(-ret));
		goto err;
	}
	*out = g;
	return 0;
err:
	tv_guest_destroy(g);
	return ret;
}

int tv_guest_wait_ready(struct tv_guest *g, int timeout_ms)
{
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&g->lock);
	while (!g->ready && !ret)
		ret = pthread_cond_timedwait(&g->cond, &g->lock, &until);
	ret = g->ready == 1 ? 0 : g->ready < 0 ? g->ready : -ETIMEDOUT;
	pthread_mutex_unlock(&g->lock);
	return ret;
}

int tv_guest_connect_error(struct tv_guest *g)
{
	return __atomic_load_n(&g->connect_err, __ATOMIC_RELAXED);
}

static void put_counts(struct tv_meta *m, struct tv_guest *g)
{
	uint64_t bytes = 0;
	char key[48];

	for (int cpu = 0; cpu < g->gs.ncpus; cpu++) {
		snprintf(key, sizeof(key), "cpu%d.bytes", cpu);
		tv_meta_set(m, key, "%llu", (unsigned long long)g->gs.cpu_bytes[cpu]);
		bytes += g->gs.cpu_bytes[cpu];
	}
	tv_meta_set(m, "bytes_total", "%llu", (unsigned long long)bytes);
	tv_meta_set(m, "sync_pings", "%u", g->sess.probes.pings);
	tv_meta_set(m, "sync_pongs", "%u", g->sess.probes.pongs);
	tv_meta_set(m, "sync_hcalls_asked", "%u", g->sess.probes.hcalls_asked);
	tv_meta_set(m, "sync_hcalls_done", "%u", g->sess.probes.hcalls_done);
	tv_meta_set(m, "sync_pongs_dropped", "%llu", (unsigned long long)g->sess.probes.pongs_dropped);
	tv_meta_set(m, "sync_hcalls_dropped", "%llu", (unsigned long long)g->sess.probes.hcalls_dropped);
	tv_meta_set(m, "sync_index", "%u", g->opts.index);
	tv_meta_set(m, "stale_bytes", "%llu", (unsigned long long)g->gs.stale_bytes);
	if (g->flight)
		tv_guest_flight_counts(g->flight, m);
}

/* The keys a guest's domain has whatever it sent: the session's and a snapshot's. */
static void guest_meta_base(void *ctx, struct tv_meta *m)
{
	struct tv_guest *g = ctx;

	tv_meta_set(m, "domain", "guest:%s", g->spec.name);
	tv_meta_set(m, "kind", "linux-ftrace");
	tv_meta_set(m, "sync_index", "%u", g->opts.index);
	if (g->spec.vsock_cid)
		tv_meta_set(m, "transport", "vsock:%u:%u", g->spec.vsock_cid,
			    g->spec.vsock_port ? g->spec.vsock_port : TV_AGENT_VSOCK_PORT);
	else
		tv_meta_set(m, "transport", "serial:%s", g->spec.serial);
	if (g->spec.libvirt[0])
		tv_meta_set(m, "libvirt_domain", "%s", g->spec.libvirt);
	if (g->spec.xen[0]) {
		tv_meta_set(m, "xen_domain", "%s", g->spec.xen);
		tv_meta_set(m, "xen_domid", "%d", g->spec.xen_domid);
		tv_meta_set(m, "xen_vcpus", "%u", g->spec.nr_vcpus);
	}
	if (g->spec.qemu_pid)
		tv_meta_set(m, "qemu_pid", "%d", (int)g->spec.qemu_pid);
}

static int guest_write_meta(struct tv_guest *g)
{
	struct tv_meta *m = g->gs.guest_meta;
	char path[PATH_MAX + 8];

	guest_meta_base(g, m);
	tv_meta_set(m, "status", "%s", g->sess.status);
	put_counts(m, g);
	snprintf(path, sizeof(path), "%s/meta", g->dir);
	return tv_meta_write(m, path);
}

/* Wake the thread; it reads the flags every 50 ms anyway (a failure only delays). */
static void guest_wake(struct tv_guest *g)
{
	uint64_t one = 1;

	if (write(g->stop_fd, &one, sizeof(one)) != sizeof(one))
		tv_warn("Cannot signal guest thread: name=\"%s\", errno=%d (%s)", g->spec.name, errno, strerror(errno));
}

/* The stop's deadline is set once, by the first request (stop or abort). */
static void guest_set_stop(struct tv_guest *g, double deadline)
{
	if (__atomic_load_n(&g->stop_req, __ATOMIC_RELAXED))
		return;
	g->stop_deadline = deadline;
	__atomic_store_n(&g->stop_req, 1, __ATOMIC_RELEASE);
}

void tv_guest_request_stop(struct tv_guest *g)
{
	if (!g->started)
		return;
	guest_set_stop(g, now_s() + TV_GUEST_STOP_MAX_S);
	guest_wake(g);
}

void tv_guest_abort(struct tv_guest *g)
{
	if (!g->started)
		return;
	guest_set_stop(g, now_s());
	__atomic_store_n(&g->abort_req, 1, __ATOMIC_RELEASE);
	guest_wake(g);
}

bool tv_guest_finished(struct tv_guest *g)
{
	bool done;

	if (!g->started)
		return true;
	pthread_mutex_lock(&g->lock);
	done = g->finished;
	pthread_mutex_unlock(&g->lock);
	return done;
}

int tv_guest_stop(struct tv_guest *g)
{
	int ret;

	if (g->started) {
		tv_guest_request_stop(g);
		pthread_join(g->thread, NULL);
		g->started = 0;
	}
	if (g->fd >= 0) {
		close(g->fd);
		g->fd = -1;
	}
	tv_guest_stream_close_files(&g->gs);
	/* Decodable: the guest described itself and sent its header page and formats. */
	if (g->gs.ncpus && strncmp(g->sess.status, "failed", 6)) {
		char hp[PATH_MAX + 16], ev[PATH_MAX + 16];

		snprintf(hp, sizeof(hp), "%s/header_page", g->dir);
		snprintf(ev, sizeof(ev), "%s/events", g->dir);
		if ((access(hp, R_OK) || access(ev, R_OK)) && !strncmp(g->sess.status, "truncated: ", 11)) {
			/* what cut it short is the reason, not the missing file
			 * (lab xen-domu-view: a backlog on d2's PV console held
			 * its formats past the stop, said as "rejected: Cannot
			 * open event formats") */
			char why[300];

			snprintf(why, sizeof(why), "%s", g->sess.status + 11);
			snprintf(g->sess.status, sizeof(g->sess.status), "failed: %s (before the %s)", why,
				 access(hp, R_OK) ? "header_page" : "event formats");
		} else if (access(hp, R_OK)) {
			snprintf(g->sess.status, sizeof(g->sess.status), "failed: the agent sent no header_page");
		}
	} else if (!strncmp(g->sess.status, "truncated", 9)) {
		char why[300];

		snprintf(why, sizeof(why), "%s", g->sess.status + 11);
		snprintf(g->sess.status, sizeof(g->sess.status), "failed: %s", why);
	}
	/* what the reader would refuse: listed, but quarantined (status=rejected) */
	if (strncmp(g->sess.status, "failed", 6) && !tv_guest_stream_check(&g->gs) && g->gs.rejected[0])
		snprintf(g->sess.status, sizeof(g->sess.status), "rejected: %s", g->gs.rejected);
	/* an earlier session's bytes left in the channel: said, never taken as data */
	if (g->gs.stale_bytes && g->gs.synced)
		tv_warn("Guest %s: %llu stale bytes of an earlier session discarded before the agent's HELLO",
			g->spec.name, (unsigned long long)g->gs.stale_bytes);
	ret = guest_write_meta(g);
	if (!ret && strncmp(g->sess.status, "failed", 6)) {
		const char *ust[TV_PROTO_MAX_UST];
		size_t n = tv_guest_ust_finish(&g->gs, ust, TV_PROTO_MAX_UST);

		ret = tv_session_writer_add_domain(g->session, g->subdir);
		g->listed = !ret;
		/* its traced processes after it: their parent is listed first */
		for (size_t i = 0; i < n && !ret; i++)
			ret = tv_session_writer_add_domain(g->session, ust[i]);
	}
	/* one that failed before tracing gave its failure to tv_guest_wait_ready() */
	if (strcmp(g->sess.status, "complete") && g->ready >= 0)
		tv_warn("Guest %s: %s", g->spec.name, g->sess.status);
	return g->listed ? 0 : (ret ? ret : -EPIPE);
}

void tv_guest_get_stats(const struct tv_guest *g, struct tv_guest_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int cpu = 0; g->gs.cpu_bytes && cpu < g->gs.ncpus; cpu++)
		st->bytes += g->gs.cpu_bytes[cpu];
	if (g->gs.guest_meta) {
		st->counts_known = tv_meta_get(g->gs.guest_meta, "events_total") ? 1
				 : tv_meta_get(g->gs.guest_meta, "lost_total") ? 2 : 0;
		st->events = (uint64_t)tv_meta_get_ll(g->gs.guest_meta, "events_total", 0);
		st->lost = (uint64_t)tv_meta_get_ll(g->gs.guest_meta, "lost_total", 0);
	}
	st->pings = g->sess.probes.pings;
	st->pongs = g->sess.probes.pongs;
	st->hcalls_asked = g->sess.probes.hcalls_asked;
	st->hcalls_done = g->sess.probes.hcalls_done;
	st->pongs_dropped = g->sess.probes.pongs_dropped;
	st->hcalls_dropped = g->sess.probes.hcalls_dropped;
	st->stream_bytes = g->gs.total;
	st->listed = g->listed;
	snprintf(st->status, sizeof(st->status), "%s", g->sess.status);
	/* the guest's thread writes them until it is joined */
	if (!g->started)
		tv_guest_ust_counts(&g->gs, st);
}

const char *tv_guest_name(const struct tv_guest *g)
{
	return g->spec.name;
}

struct tv_guest_flight *tv_guest_flight_of(const struct tv_guest *g)
{
	return g->flight;
}

void tv_guest_wake(struct tv_guest *g)
{
	if (g->started)
		guest_wake(g);
}

void tv_guest_destroy(struct tv_guest *g)
{
	if (!g)
		return;
	if (g->started) {
		/* not stopped (an error path): nobody will read its end, no END wait */
		tv_guest_abort(g);
		pthread_join(g->thread, NULL);
	}
	if (g->fd >= 0)
		close(g->fd);
	if (g->stop_fd >= 0)
		close(g->stop_fd);
	tv_guest_flight_free(g->flight);
	tv_guest_stream_fini(&g->gs);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g->filters_start);
	free(g);
}
