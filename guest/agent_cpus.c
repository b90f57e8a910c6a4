// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU readers: one thread per CPU moves whole sub-buffers from
 * trace_pipe_raw to the channel (splice, or read + write), and END with
 * each CPU's counts.
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


#include "agent.h"

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

int start_cpus(struct session *s)
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

void stop_cpus(struct session *s)
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

/*
 * The kernel's loss counts (overrun + commit overrun + dropped events) and
 * the events read per CPU: END (@type TV_MSG_END), or LOSS with the losses
 * only, sent once tracing is off and before the drain, which a slow channel
 * may not finish before the host stops waiting.
 */
int send_counts(struct session *s, uint16_t type)
{
	char *text = malloc(256 + (size_t)s->ncpus * 160), path[400];
	unsigned long long lost_total = 0, events_total = 0, over_total = 0;
	size_t off = 0;
	int ret;

	if (!text)
		return -ENOMEM;
	text[0] = '\0';
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		unsigned long long lost, events, over = 0;
		char *st;

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", s->inst, cpu);
		st = read_file(path, NULL);
		if (!st)
			continue;
		lost = stat_value(st, "overrun: ") + stat_value(st, "commit overrun: ") +
		       stat_value(st, "dropped events: ");
		/* a flight recorder's ring turns over by design: overwritten, not lost */
		if (s->flight_bytes) {
			over = stat_value(st, "overrun: ");
			lost -= over;
			over_total += over;
			off += (size_t)sprintf(text + off, "cpu%d.overwritten=%llu\n", cpu, over);
		}
		events = stat_value(st, "read events: ");
		free(st);
		lost_total += lost;
		events_total += events;
		if (type == TV_MSG_END)
			off += (size_t)sprintf(text + off, "cpu%d.lost=%llu\ncpu%d.events=%llu\n", cpu,
					       lost, cpu, events);
		else
			off += (size_t)sprintf(text + off, "cpu%d.lost=%llu\n", cpu, lost);
	}
	if (s->flight_bytes)
		off += (size_t)sprintf(text + off, "overwritten_total=%llu\n", over_total);
	if (type == TV_MSG_END)
		sprintf(text + off, "lost_total=%llu\nevents_total=%llu\n", lost_total, events_total);
	else
		sprintf(text + off, "lost_total=%llu\n", lost_total);
	ret = send_text(s, type, text);
	free(text);
	return ret;
}
