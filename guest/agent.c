// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor-agent: the guest side of host + guest recording.
 *
 * Runs as root in a Linux guest with nothing but libc (built static).
 * Waits for the host on AF_VSOCK (port 7476) and on the virtio-serial
 * port named org.tracevisor.0 (or tracevisor.0); on START it creates its
 * own tracefs instance, enables the requested events and streams the raw
 * per-CPU sub-buffers, header and format files to the host, answers sync
 * probes, and on STOP drains everything and reports its losses
 * (doc/agent-protocol.md, doc/sync-probes.md).
 *
 * The guest workload is never blocked: only our reader threads wait on the
 * channel; while they wait, the instance's ring buffer overwrites its
 * oldest pages, and the kernel counts those events in per_cpu/cpuN/stats.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "proto.h"

#define AGENT_VERSION "1"
#define MAX_EVENTS 64
#define SEND_TIMEOUT_MS 10000
#define DEFAULT_EVENTS "sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry," \
	"irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit," \
	"raw_syscalls:sys_enter,raw_syscalls:sys_exit"

static int verbose;
static int no_hcalls;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("tracevisor-agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

struct agent_cpu {
	struct session *s;
	int cpu;
	int fd;
	int pipe[2];		/* trace_pipe_raw -> pipe -> channel (splice) */
	size_t chunk;		/* bytes per splice: whole sub-buffers */
	int no_splice;		/* splice unsupported: read() + write() */
	pthread_t thread;
	int started;
	unsigned long long bytes;
};

/*
 * Threads: one reader thread per CPU (cpu_thread) and the main thread (the
 * host channel's receiver, probes, stop) share a session.
 *   fd, and every frame written to it   send_lock (a frame is never split)
 *   dead                                 send_lock, read and written under it
 *   stop                                 atomic: set once by stop_cpus() on
 *                                        the main thread, polled by readers;
 *                                        release/acquire so that a reader
 *                                        that sees it sees what the main
 *                                        thread wrote before (the end order)
 *   cpus[i] (but .bytes)                 set before the threads start,
 *                                        read-only while they run
 *   cpus[i].bytes                        its reader thread only, read by
 *                                        main after pthread_join()
 *   the rest                             set before the threads start
 */
struct session {
	int fd;			/* the channel: socket or virtio-serial port */
	pthread_mutex_t send_lock;
	int dead;		/* the channel failed: drop further output */
	atomic_int stop;
	char tracing[64];	/* tracefs mount point */
	char inst[192];		/* our instance directory */
	int marker_fd;
	int ncpus;
	size_t subbuf_size;
	unsigned buffer_kb;
	uint16_t guest;
	char clock[32];
	char events_spec[256];		/* the host's list, or empty: default */
	char *events[MAX_EVENTS];	/* "sys/event" that are enabled */
	int nr_events;
	struct agent_cpu *cpus;
};

/* ------------------------------------------------------------ channel */

/* The channel is full: wait for the host to read, but not for ever. */
static int wait_writable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	/* A host that reads nothing for SEND_TIMEOUT_MS is gone. */
	int r = poll(&pfd, 1, SEND_TIMEOUT_MS / 5);

	if (r == 0) {
		/* Said on the guest console: tells a stalled channel from a stalled guest. */
		if (verbose)
			say("Host channel full for %d ms: waiting for the host to read",
			    SEND_TIMEOUT_MS / 5);
		r = poll(&pfd, 1, SEND_TIMEOUT_MS - SEND_TIMEOUT_MS / 5);
	}
	if (r < 0 && errno == EINTR)
		return 0;	/* the caller writes again, and waits again if full */
	if (r <= 0)
		return r < 0 ? -errno : -ETIMEDOUT;
	/* virtio-serial: POLLHUP while no host is connected. */
	return (pfd.revents & POLLOUT) ? 0 : -EPIPE;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int ret = wait_writable(fd);

			if (ret)
				return ret;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_frame(struct session *s, uint16_t type, uint32_t arg, const void *payload,
		      size_t len)
{
	unsigned char hdr[TV_PROTO_HDR_SIZE];
	int ret = -EPIPE;

	tv_proto_hdr_encode(hdr, type, arg, (uint32_t)len);
	pthread_mutex_lock(&s->send_lock);
	if (!s->dead) {
		ret = write_all(s->fd, hdr, sizeof(hdr));
		if (!ret && len)
			ret = write_all(s->fd, payload, len);
		if (ret) {
			s->dead = 1;
			say("Cannot send to host: type=%s, errno=%d", tv_proto_type_name(type), -ret);
		}
	}
	pthread_mutex_unlock(&s->send_lock);
	return ret;
}

static int send_text(struct session *s, uint16_t type, const char *text)
{
	return send_frame(s, type, 0, text, strlen(text));
}

static int read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&pfd, 1, timeout_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One command from the host; *payload is malloc'ed (NULL when empty). */
static int recv_frame(int fd, struct tv_proto_hdr *hdr, unsigned char **payload, int timeout_ms)
{
	unsigned char raw[TV_PROTO_HDR_SIZE];
	int ret = read_all(fd, raw, sizeof(raw), timeout_ms);

	*payload = NULL;
	if (ret)
		return ret;
	ret = tv_proto_hdr_decode(raw, hdr);
	if (ret)
		return ret;
	if (hdr->len > 65536)	/* commands are small */
		return -EMSGSIZE;
	if (!hdr->len)
		return 0;
	*payload = malloc(hdr->len + 1);
	if (!*payload)
		return -ENOMEM;
	ret = read_all(fd, *payload, hdr->len, 5000);
	if (ret) {
		free(*payload);
		*payload = NULL;
		return ret;
	}
	(*payload)[hdr->len] = '\0';
	return 0;
}

/* ------------------------------------------------------------ tracefs */

static char *read_file(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *grown = cap < (8u << 20) ? realloc(buf, cap * 2 + 1) : NULL;

			if (!grown)
				break;
			buf = grown;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int inst_write(struct session *s, const char *file, const char *val)
{
	char path[320];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", s->inst, file);
	ret = write_file(path, val);
	if (ret)
		say("Cannot write tracefs file: path=\"%s\", value=\"%s\", errno=%d", path, val, -ret);
	return ret;
}

static int find_tracefs(struct session *s)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[128];

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/instances", dirs[i]);
			if (access(path, W_OK) == 0) {
				snprintf(s->tracing, sizeof(s->tracing), "%s", dirs[i]);
				return 0;
			}
		}
		/* Not mounted: mount it ourselves, once. */
		if (pass == 0 && mount("tracefs", dirs[0], "tracefs", 0, NULL) && verbose)
			say("Cannot mount tracefs: path=\"%s\", errno=%d", dirs[0], errno);
	}
	return -ENOENT;
}

/* Instances of agents that no longer run are removed (a crashed agent). */
static void remove_stale_instances(const char *tracing)
{
	char path[192];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/instances", tracing);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		int pid;

		if (sscanf(de->d_name, "tracevisor-agent-%d", &pid) != 1)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/instances/%s", tracing, de->d_name);
		rmdir(path);
	}
	closedir(d);
}

static int enable_one(struct session *s, const char *sys, const char *ev)
{
	char path[400];

	if (s->nr_events == MAX_EVENTS)
		return -E2BIG;
	snprintf(path, sizeof(path), "%s/events/%s/%s/enable", s->inst, sys, ev);
	if (write_file(path, "1"))
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", sys, ev);
	s->events[s->nr_events++] = strdup(path);
	return 0;
}

/* "sys:event" or "sys": events that do not exist here are skipped. */
static void enable_spec(struct session *s, const char *spec)
{
	char sys[64], path[400];
	const char *colon = strchr(spec, ':');
	struct dirent *de;
	DIR *d;

	if (colon) {
		snprintf(sys, sizeof(sys), "%.*s", (int)(colon - spec), spec);
		if (enable_one(s, sys, colon + 1) && verbose)
			say("Event not available: name=\"%s\"", spec);
		return;
	}
	snprintf(path, sizeof(path), "%s/events/%s", s->inst, spec);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.')
			enable_one(s, spec, de->d_name);
	closedir(d);
}

static int clean_spec_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ':';
}

static void enable_events(struct session *s, const char *list)
{
	char *copy = strdup(list && *list ? list : DEFAULT_EVENTS), *save = NULL;

	for (char *spec = strtok_r(copy, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
		int ok = 1;

		/* Names only: no path can be built from the host's words. */
		for (const char *p = spec; *p; p++)
			ok &= clean_spec_char(*p);
		if (ok)
			enable_spec(s, spec);
	}
	free(copy);
}

static int setup_instance(struct session *s)
{
	char val[32];
	int ret;

	ret = find_tracefs(s);
	if (ret)
		return ret;
	remove_stale_instances(s->tracing);
	snprintf(s->inst, sizeof(s->inst), "%s/instances/tracevisor-agent-%d", s->tracing,
		 (int)getpid());
	if (mkdir(s->inst, 0755) && errno != EEXIST)
		return -errno;
	ret = inst_write(s, "tracing_on", "0");
	snprintf(val, sizeof(val), "%u", s->buffer_kb);
	if (!ret)
		ret = inst_write(s, "buffer_size_kb", val);
	if (!ret)
		ret = inst_write(s, "trace_clock", s->clock);
	if (!ret)
		inst_write(s, "buffer_percent", "50");
	/* Overwrite mode: a slow host loses old events, the guest never waits. */
	if (!ret)
		inst_write(s, "options/overwrite", "1");
	if (!ret)
		inst_write(s, "options/record-tgid", "1");
	return ret;
}

static size_t subbuf_size(struct session *s)
{
	char path[320], *v;
	size_t size = (size_t)sysconf(_SC_PAGESIZE);

	snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", s->inst);
	v = read_file(path, NULL);
	if (v && atoi(v) > 0)
		size = (size_t)atoi(v) * 1024;
	free(v);
	return size;
}

/* ------------------------------------------------------- sending files */

static int send_file(struct session *s, const char *src, const char *name)
{
	size_t len, nlen = strlen(name);
	char *data = read_file(src, &len);
	unsigned char *msg;
	int ret;

	if (!data)
		return -errno;
	if (len + nlen + 2 > TV_PROTO_MAX_PAYLOAD)
		len = TV_PROTO_MAX_PAYLOAD - nlen - 2;	/* saved_cmdlines can be big */
	msg = malloc(len + nlen + 2);
	if (!msg) {
		free(data);
		return -ENOMEM;
	}
	msg[0] = (unsigned char)nlen;
	msg[1] = (unsigned char)(nlen >> 8);
	memcpy(msg + 2, name, nlen);
	memcpy(msg + 2 + nlen, data, len);
	ret = send_frame(s, TV_MSG_FILE, 0, msg, len + nlen + 2);
	free(msg);
	free(data);
	return ret;
}

static int send_formats(struct session *s)
{
	char src[400], name[200];
	int ret = 0;

	snprintf(src, sizeof(src), "%s/events/header_page", s->tracing);
	ret = send_file(s, src, "header_page");
	snprintf(src, sizeof(src), "%s/events/header_event", s->tracing);
	if (!ret)
		ret = send_file(s, src, "header_event");
	for (int i = 0; i < s->nr_events && !ret; i++) {
		snprintf(src, sizeof(src), "%s/events/%s/format", s->tracing, s->events[i]);
		snprintf(name, sizeof(name), "events/%s/format", s->events[i]);
		ret = send_file(s, src, name);
	}
	/* The marker formats decode the sync probes. */
	snprintf(src, sizeof(src), "%s/events/ftrace/raw_data/format", s->tracing);
	if (!ret && access(src, R_OK) == 0)
		ret = send_file(s, src, "events/ftrace/raw_data/format");
	snprintf(src, sizeof(src), "%s/events/ftrace/print/format", s->tracing);
	if (!ret && access(src, R_OK) == 0)
		ret = send_file(s, src, "events/ftrace/print/format");
	return ret;
}

static int send_meta(struct session *s)
{
	char text[4096], events[2048] = "";
	struct utsname uts;
	size_t off = 0;

	uname(&uts);
	for (int i = 0; i < s->nr_events; i++) {
		char *slash = strchr(s->events[i], '/');

		off += (size_t)snprintf(events + off, sizeof(events) - off, "%s%.*s:%s",
					i ? "," : "", (int)(slash - s->events[i]), s->events[i],
					slash + 1);
		if (off >= sizeof(events))
			break;
	}
	snprintf(text, sizeof(text),
		 "kernel_release=%s\nhostname=%s\nmachine=%s\nclock=%s\nncpus=%d\n"
		 "subbuf_size=%zu\nlong_size=%zu\nendian=little\nbuffer_kb=%u\n"
		 "events=%s\nagent_version=" AGENT_VERSION "\n",
		 uts.release, uts.nodename, uts.machine, s->clock, s->ncpus, s->subbuf_size,
		 sizeof(long), s->buffer_kb, events);
	return send_text(s, TV_MSG_META, text);
}

/* ------------------------------------------------------ per-CPU readers */

/* Bytes of events in a sub-buffer: its header is u64 time stamp, long commit. */
static size_t page_data_len(const unsigned char *page)
{
	unsigned long commit;

	memcpy(&commit, page + 8, sizeof(commit));
	return (size_t)(commit & 0x0fffffffUL);	/* high bits: missed-events flags */
}

/* Read every sub-buffer available now and send them; 0 when none left. */
static int cpu_drain(struct agent_cpu *c, unsigned char *buf, size_t cap)
{
	size_t sb = c->s->subbuf_size, n = 0;

	while (n + sb <= cap) {
		ssize_t r = read(c->fd, buf + n, sb);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		memset(buf + n + r, 0, sb - (size_t)r);
		n += sb;
		/*
		 * A less than half full page is the one the writer was on: stop
		 * until the next wake-up, or we would send a nearly empty page
		 * per read() while events trickle in.
		 */
		if (page_data_len(buf + n - sb) < sb / 2 && !atomic_load_explicit(&c->s->stop, memory_order_acquire))
			break;
	}
	if (!n)
		return 0;
	c->bytes += n;
	if (send_frame(c->s, TV_MSG_DATA, (uint32_t)c->cpu, buf, n))
		return -EPIPE;
	return n == cap ? 1 : 0;
}

/* Move @n bytes from the pipe to the channel; copy when it cannot splice. */
static int pipe_to_channel(struct agent_cpu *c, size_t n, unsigned char *buf, size_t cap)
{
	int fd = c->s->fd;

	while (n > 0) {
		ssize_t w = splice(c->pipe[0], NULL, fd, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (w > 0) {
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			int ret = wait_writable(fd);

			if (ret)
				return ret;
			continue;
		}
		if (w < 0 && errno == EINVAL) {
			/* This channel has no splice_write: copy through @buf. */
			ssize_t r = read(c->pipe[0], buf, n < cap ? n : cap);
			int ret;

			if (r <= 0)
				return -EIO;
			ret = write_all(fd, buf, (size_t)r);
			if (ret)
				return ret;
			n -= (size_t)r;
			continue;
		}
		return w < 0 ? -errno : -EIO;
	}
	return 0;
}

/*
 * Whole sub-buffers without a copy through user space: splice() only takes
 * the pages the writer has left.  Return: 1 when a full chunk moved (more
 * may wait), 0 when there was nothing, <0 on error.
 */
static int cpu_splice(struct agent_cpu *c, unsigned char *buf, size_t cap)
{
	struct session *s = c->s;
	unsigned char hdr[TV_PROTO_HDR_SIZE];
	ssize_t n = splice(c->fd, NULL, c->pipe[1], NULL, c->chunk,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	int ret = -EPIPE;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0) {
		c->no_splice = 1;	/* read() still works */
		return 0;
	}
	if (n == 0)
		return 0;
	tv_proto_hdr_encode(hdr, TV_MSG_DATA, (uint32_t)c->cpu, (uint32_t)n);
	pthread_mutex_lock(&s->send_lock);
	if (!s->dead) {
		ret = write_all(s->fd, hdr, sizeof(hdr));
		if (!ret)
			ret = pipe_to_channel(c, (size_t)n, buf, cap);
		if (ret) {
			s->dead = 1;
			say("Cannot send to host: type=DATA, errno=%d", -ret);
		}
	}
	pthread_mutex_unlock(&s->send_lock);
	if (ret) {
		/* Empty the pipe: the data has nowhere to go. */
		while (read(c->pipe[0], buf, cap) > 0)
			;
		return ret;
	}
	c->bytes += (unsigned long long)n;
	return (size_t)n == c->chunk;
}

/* Full pages by splice when possible, then (@partial) what read() gives. */
static void cpu_collect(struct agent_cpu *c, unsigned char *buf, size_t cap, int partial)
{
	for (int i = 0; i < 4096 && !c->no_splice && cpu_splice(c, buf, cap) > 0; i++)
		;
	if (partial || c->no_splice)
		for (int i = 0; i < 4096 && cpu_drain(c, buf, cap) > 0; i++)
			;
}

static void *cpu_thread(void *arg)
{
	struct agent_cpu *c = arg;
	size_t cap = c->s->subbuf_size * 16;
	unsigned char *buf = malloc(cap);
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	struct timespec last, now;
	char path[320], tid[24];
	int fd;

	if (!buf)
		return NULL;
	/* Our own reads and sends are not the guest's workload: untraced. */
	snprintf(path, sizeof(path), "%s/set_event_notrace_pid", c->s->inst);
	snprintf(tid, sizeof(tid), "%d", (int)gettid());
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if ((fd < 0 || write(fd, tid, strlen(tid)) < 0) && verbose)
		say("Cannot untrace reader thread (no set_event_notrace_pid?): errno=%d", errno);
	if (fd >= 0)
		close(fd);

	clock_gettime(CLOCK_MONOTONIC, &last);
	while (!atomic_load_explicit(&c->s->stop, memory_order_acquire)) {
		int r = poll(&pfd, 1, 200);

		clock_gettime(CLOCK_MONOTONIC, &now);
		/*
		 * Woken at buffer_percent: whole pages, few wake-ups.  Once a
		 * second also take what a quiet CPU has, so that the host holds
		 * all but the last second if the guest dies.
		 */
		if (now.tv_sec != last.tv_sec) {
			last = now;
			cpu_collect(c, buf, cap, 1);
		} else if (r > 0 && (pfd.revents & POLLIN)) {
			cpu_collect(c, buf, cap, 0);
		}
	}
	/* Tracing is off: everything left, partial pages included. */
	cpu_collect(c, buf, cap, 1);
	free(buf);
	return NULL;
}

static int start_cpus(struct session *s)
{
	char path[400];

	s->cpus = calloc((size_t)s->ncpus, sizeof(*s->cpus));
	if (!s->cpus)
		return -ENOMEM;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		struct agent_cpu *c = &s->cpus[cpu];

		c->s = s;
		c->cpu = cpu;
		c->pipe[0] = c->pipe[1] = -1;
		c->no_splice = pipe2(c->pipe, O_CLOEXEC | O_NONBLOCK) != 0;
		if (!c->no_splice) {
			int sz = fcntl(c->pipe[1], F_SETPIPE_SZ, (int)(16 * s->subbuf_size));

			if (sz < 0)
				sz = fcntl(c->pipe[1], F_GETPIPE_SZ);
			c->chunk = sz >= (int)s->subbuf_size ? (size_t)sz / s->subbuf_size * s->subbuf_size : 0;
			c->no_splice = !c->chunk;
		}
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", s->inst, cpu);
		c->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (c->fd < 0) {
			say("Cannot open ring buffer: path=\"%s\", errno=%d", path, errno);
			continue;	/* an offline CPU: its file stays empty */
		}
		c->started = !pthread_create(&c->thread, NULL, cpu_thread, c);
	}
	return 0;
}

static void stop_cpus(struct session *s)
{
	atomic_store_explicit(&s->stop, 1, memory_order_release);
	for (int cpu = 0; s->cpus && cpu < s->ncpus; cpu++) {
		if (s->cpus[cpu].started)
			pthread_join(s->cpus[cpu].thread, NULL);
		if (s->cpus[cpu].fd >= 0)
			close(s->cpus[cpu].fd);
		for (int i = 0; i < 2; i++)
			if (s->cpus[cpu].pipe[i] >= 0)
				close(s->cpus[cpu].pipe[i]);
	}
}

static unsigned long long stat_value(const char *stats, const char *key)
{
	const char *p = stats;

	/* Match at line starts: "overrun:" is also inside "commit overrun:". */
	while (p) {
		if (!strncmp(p, key, strlen(key)))
			return strtoull(p + strlen(key), NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

static int send_end(struct session *s)
{
	char *text = malloc(256 + (size_t)s->ncpus * 96), path[400];
	unsigned long long lost_total = 0, events_total = 0;
	size_t off = 0;
	int ret;

	if (!text)
		return -ENOMEM;
	text[0] = '\0';
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		unsigned long long lost, events;
		char *st;

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", s->inst, cpu);
		st = read_file(path, NULL);
		if (!st)
			continue;
		lost = stat_value(st, "overrun: ") + stat_value(st, "commit overrun: ") +
		       stat_value(st, "dropped events: ");
		events = stat_value(st, "read events: ");
		free(st);
		lost_total += lost;
		events_total += events;
		off += (size_t)sprintf(text + off, "cpu%d.lost=%llu\ncpu%d.events=%llu\n", cpu, lost,
				       cpu, events);
	}
	sprintf(text + off, "lost_total=%llu\nevents_total=%llu\n", lost_total, events_total);
	ret = send_text(s, TV_MSG_END, text);
	free(text);
	return ret;
}

/* ---------------------------------------------------------- sync probes */

static void write_marker(struct session *s, uint16_t type, uint64_t seq, uint64_t aux)
{
	unsigned char m[TV_SYNC_MARKER_SIZE];

	tv_sync_marker_encode(m, type, s->guest, seq, aux);
	if (s->marker_fd >= 0 && write(s->marker_fd, m, sizeof(m)) < 0 && verbose)
		say("Cannot write sync marker: errno=%d", errno);
}

static void cpuid(unsigned leaf, unsigned *a, unsigned *b, unsigned *c, unsigned *d)
{
	__asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

/* 1: AMD (vmmcall), 0: Intel (vmcall), -1: not under KVM (no probe). */
static int hcall_flavour(void)
{
	unsigned a, b, c, d;
	char vendor[13], hv[13];

	cpuid(0, &a, &b, &c, &d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	cpuid(1, &a, &b, &c, &d);
	if (!(c & (1u << 31)))
		return -1;
	cpuid(0x40000000, &a, &b, &c, &d);
	memcpy(hv, &b, 4);
	memcpy(hv + 4, &c, 4);
	memcpy(hv + 8, &d, 4);
	hv[12] = '\0';
	if (strncmp(hv, "KVMKVMKVM", 9))
		return -1;
	return (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine")) ? 1 : 0;
}

static sigjmp_buf hcall_jmp;

static void hcall_sigill(int sig)
{
	(void)sig;
	siglongjmp(hcall_jmp, 1);
}

/*
 * KVM traces kvm_hypercall before it checks the caller's privilege, so a
 * user-space call with an unknown number is seen by the host and returns
 * -KVM_EPERM here.
 */
static void hypercall(int amd, uint64_t seq, uint64_t a1)
{
	long ret, nr = TV_SYNC_HCALL_NR;

	if (amd)
		__asm__ volatile(".byte 0x0f,0x01,0xd9"
				 : "=a"(ret) : "a"(nr), "b"(seq), "c"(a1), "d"(0L), "S"(0L) : "memory");
	else
		__asm__ volatile(".byte 0x0f,0x01,0xc1"
				 : "=a"(ret) : "a"(nr), "b"(seq), "c"(a1), "d"(0L), "S"(0L) : "memory");
	(void)ret;
}

static uint32_t run_hcalls(struct session *s, uint64_t first, uint32_t count)
{
	static int flavour = -2;
	struct sigaction sa = { .sa_handler = hcall_sigill }, old;
	volatile uint32_t done = 0;

	if (flavour == -2)
		flavour = no_hcalls ? -1 : hcall_flavour();
	if (flavour < 0 || count > 1000)
		return 0;
	sigaction(SIGILL, &sa, &old);
	if (sigsetjmp(hcall_jmp, 1) == 0) {
		for (uint32_t i = 0; i < count; i++) {
			write_marker(s, TV_SYNC_HCALL_BEFORE, first + i, 0);
			hypercall(flavour, first + i, 0xabc00u | s->guest);
			write_marker(s, TV_SYNC_HCALL_AFTER, first + i, 0);
			done = i + 1;
		}
	} else {
		say("Hypercall probe raised SIGILL: probes disabled");
		flavour = -1;
	}
	sigaction(SIGILL, &old, NULL);
	return done;
}

static void answer_hcall(struct session *s, const unsigned char *p, size_t len)
{
	unsigned char out[16];
	uint64_t first;
	uint32_t count;

	if (len < 12)
		return;
	first = tv_proto_get_u64(p);
	count = tv_proto_get_u32(p + 8);
	tv_proto_put_u64(out, first);
	tv_proto_put_u32(out + 8, count);
	tv_proto_put_u32(out + 12, run_hcalls(s, first, count));
	send_frame(s, TV_MSG_HCALL_DONE, 0, out, sizeof(out));
}

static void answer_ping(struct session *s, const unsigned char *p, size_t len)
{
	uint64_t seq;

	if (len < 8)
		return;
	seq = tv_proto_get_u64(p);
	write_marker(s, TV_SYNC_PING_RECV, seq, 0);
	write_marker(s, TV_SYNC_PONG_SEND, seq, 0);
	send_frame(s, TV_MSG_PONG, 0, p, 8);
}

/* ------------------------------------------------------------- session */

static int start_opt(const char *key, const char *val, void *ctx)
{
	struct session *s = ctx;

	if (!strcmp(key, "events")) {
		snprintf(s->events_spec, sizeof(s->events_spec), "%s", val);
	} else if (!strcmp(key, "clock")) {
		snprintf(s->clock, sizeof(s->clock), "%s", val);
	} else if (!strcmp(key, "buffer_kb")) {
		long kb = atol(val);

		s->buffer_kb = kb >= 4 && kb <= (1L << 20) ? (unsigned)kb : s->buffer_kb;
	} else if (!strcmp(key, "guest")) {
		s->guest = (uint16_t)atoi(val);
	}
	return 0;
}

static int session_start(struct session *s, const char *text, size_t len)
{
	int ret;

	if (tv_proto_kv_parse(text, len, start_opt, s) == -EINVAL)
		return -EINVAL;
	ret = setup_instance(s);
	if (ret)
		return ret;
	enable_events(s, s->events_spec);
	if (!s->nr_events)
		return -ENOENT;
	s->ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	s->subbuf_size = subbuf_size(s);
	return 0;
}

static void session_cleanup(struct session *s)
{
	/* Open files of the instance would make its rmdir fail (EBUSY). */
	if (s->marker_fd >= 0)
		close(s->marker_fd);
	s->marker_fd = -1;
	if (s->inst[0]) {
		inst_write(s, "tracing_on", "0");
		for (int i = 0; i < s->nr_events; i++) {
			char path[400];

			snprintf(path, sizeof(path), "%s/events/%s/enable", s->inst, s->events[i]);
			write_file(path, "0");
		}
		if (rmdir(s->inst))
			say("Cannot remove tracefs instance: path=\"%s\", errno=%d", s->inst, errno);
	}
	for (int i = 0; i < s->nr_events; i++)
		free(s->events[i]);
	free(s->cpus);
}

/* Commands until STOP or the host goes away. */
static void session_serve(struct session *s)
{
	for (;;) {
		struct tv_proto_hdr hdr;
		unsigned char *p;
		int ret = recv_frame(s->fd, &hdr, &p, 1000);

		if (ret == -ETIMEDOUT)
			continue;
		if (ret) {
			say("Host channel ended: errno=%d; stopping", -ret);
			pthread_mutex_lock(&s->send_lock);	/* dead is under send_lock */
			s->dead = 1;
			pthread_mutex_unlock(&s->send_lock);
			return;
		}
		if (hdr.type == TV_MSG_PING)
			answer_ping(s, p, hdr.len);
		else if (hdr.type == TV_MSG_HCALL)
			answer_hcall(s, p, hdr.len);
		free(p);
		if (hdr.type == TV_MSG_STOP)
			return;
	}
}

static void run_session(int fd)
{
	struct session s = { .fd = fd, .marker_fd = -1, .buffer_kb = 2048 };
	struct tv_proto_hdr hdr;
	unsigned char *p = NULL;
	char path[320], err[160];
	int ret;

	pthread_mutex_init(&s.send_lock, NULL);
	snprintf(s.clock, sizeof(s.clock), "local");
	ret = recv_frame(fd, &hdr, &p, 10000);
	if (ret) {
		/* Nobody to tell: the host went away or never came. */
		if (verbose)
			say("No START from the host: errno=%d", -ret);
		return;
	}
	if (hdr.type != TV_MSG_START)
		ret = -EPROTO;
	if (!ret)
		ret = session_start(&s, p ? (char *)p : "", hdr.len);
	free(p);
	if (ret) {
		snprintf(err, sizeof(err), "cannot start tracing in the guest: errno=%d (%s)", -ret,
			 strerror(-ret));
		say("%s", err);
		send_text(&s, TV_MSG_ERROR, err);
		session_cleanup(&s);
		return;
	}
	snprintf(path, sizeof(path), "%s/trace_marker_raw", s.inst);
	s.marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	ret = send_meta(&s);
	if (!ret)
		ret = send_formats(&s);
	if (!ret)
		ret = start_cpus(&s);
	if (!ret)
		ret = inst_write(&s, "tracing_on", "1");
	if (!ret)
		ret = send_frame(&s, TV_MSG_READY, 0, NULL, 0);
	if (!ret) {
		if (verbose)
			say("Tracing %d events on %d CPUs", s.nr_events, s.ncpus);
		session_serve(&s);
	}
	inst_write(&s, "tracing_on", "0");
	stop_cpus(&s);
	snprintf(path, sizeof(path), "%s/saved_cmdlines", s.tracing);
	send_file(&s, path, "saved_cmdlines");
	snprintf(path, sizeof(path), "%s/saved_tgids", s.tracing);
	if (access(path, R_OK) == 0)
		send_file(&s, path, "saved_tgids");
	send_end(&s);
	session_cleanup(&s);
	if (verbose)
		say("Session ended");
}

/* ------------------------------------------------------------ channels */

static int listen_vsock(unsigned port)
{
	struct sockaddr_vm addr = {
		.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 4)) {
		say("No vsock listener: port=%u, errno=%d", port, errno);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* /dev/vportNpM whose /sys/class/virtio-ports name is one of ours. */
static int open_serial(const char *want)
{
	static const char *const names[] = { TV_AGENT_SERIAL_NAME, "tracevisor.0" };
	char path[320], dev[320], *name, *mm;
	struct dirent *de;
	DIR *d;
	int fd = -1;

	if (want && strcmp(want, "auto")) {
		fd = open(want, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 && isatty(fd)) {
			struct termios tio;

			/* A pty (tests, emulated consoles) must pass bytes untouched. */
			if (tcgetattr(fd, &tio) == 0) {
				cfmakeraw(&tio);
				tcsetattr(fd, TCSANOW, &tio);
			}
		}
		if (fd < 0)
			say("Cannot open serial port: path=\"%s\", errno=%d", want, errno);
		return fd;
	}
	d = opendir("/sys/class/virtio-ports");
	if (!d)
		return -1;
	while (fd < 0 && (de = readdir(d))) {
		int ours = 0;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
		name = read_file(path, NULL);
		for (size_t i = 0; name && i < 2; i++)
			ours |= !strncmp(name, names[i], strlen(names[i])) &&
				(name[strlen(names[i])] == '\n' || !name[strlen(names[i])]);
		free(name);
		if (!ours)
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/dev", de->d_name);
		mm = read_file(path, NULL);
		/* No devtmpfs/udev: make the node from sysfs. */
		if (access(dev, F_OK) && mm) {
			unsigned maj, min;

			if (sscanf(mm, "%u:%u", &maj, &min) == 2)
				mknod(dev, S_IFCHR | 0600, makedev(maj, min));
		}
		free(mm);
		fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			say("Cannot open virtio-serial port: path=\"%s\", errno=%d", dev, errno);
		else if (verbose)
			say("Listening on virtio-serial port %s", dev);
	}
	closedir(d);
	return fd;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor-agent [-p PORT] [-s PATH|auto|none] [-1] [-H] [-v]\n\n"
		"Guest agent of tracevisor: records this guest's kernel events on the host's\n"
		"command (tracevisor record --guest ...).\n\n"
		"  -p, --port PORT     AF_VSOCK port to listen on (default %d; 0: no vsock)\n"
		"  -s, --serial PATH   virtio-serial port device (default auto: the port named\n"
		"                      %s or tracevisor.0; none: no serial)\n"
		"  -1, --once          exit after one recording session\n"
		"  -H, --no-hypercalls answer hypercall probe requests without hypercalls\n"
		"  -v, --verbose       say more on stderr\n",
		TV_AGENT_VSOCK_PORT, TV_AGENT_SERIAL_NAME);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "serial", required_argument, NULL, 's' },
		{ "once", no_argument, NULL, '1' },
		{ "no-hypercalls", no_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned port = TV_AGENT_VSOCK_PORT;
	const char *serial = "auto";
	int once = 0, c, lfd = -1, sfd = -1;

	while ((c = getopt_long(argc, argv, "p:s:1Hvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': port = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': serial = optarg; break;
		case '1': once = 1; break;
		case 'H': no_hcalls = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (port)
		lfd = listen_vsock(port);
	if (strcmp(serial, "none"))
		sfd = open_serial(serial);
	if (lfd < 0 && sfd < 0) {
		say("Nothing to listen on: no vsock and no virtio-serial port");
		return 1;
	}
	if (verbose)
		say("Ready: vsock port %u%s, serial %s", port, lfd < 0 ? " (unavailable)" : "",
		    sfd < 0 ? "none" : "yes");
	for (;;) {
		struct pollfd pfd[2] = { { .fd = lfd, .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		int r = poll(pfd, 2, 1000);

		if (r < 0 && errno != EINTR)
			return 1;
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				run_session(fd);
				close(fd);
				if (once)
					return 0;
			}
		}
		/* virtio-serial says POLLIN|POLLHUP while no host is connected. */
		if (r > 0 && (pfd[1].revents & POLLIN) && !(pfd[1].revents & POLLHUP)) {
			run_session(sfd);
			if (once)
				return 0;
		} else if (r > 0 && (pfd[1].revents & (POLLHUP | POLLERR))) {
			/* virtio-serial: no host on the other end yet. */
			usleep(200000);
		}
	}
}
