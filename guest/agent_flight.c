// SPDX-License-Identifier: GPL-2.0
/*
 * The agent as a flight recorder (record --flight-recorder SIZE --guest
 * SPEC; doc/agent-protocol.md, "Flight recorder"): START's flight_bytes
 * makes the session keep its ring in the guest (the instance in overwrite
 * mode, sized so that all CPUs hold at most SIZE) and send nothing until
 * the host asks: SNAP freezes the ring (a swap with the instance's
 * snapshot buffer where the kernel has one and the guest the memory, else
 * tracing off), reads every CPU's frozen pages as SNAP_DATA, sends
 * saved_cmdlines and SNAP_END with the gap (tracing back on).  START's trigger.N rules are watched in
 * instances of their own ("tracevisor-agent-PID-tN", removed as a dead
 * agent's with the rest), each tracing only its event with its filter in
 * the kernel; a thread reads their trace_pipe and sends TRIGGER.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define TRIG_BUFFER_KB "64"

struct agent_trigger {
	char event[128];	/* SYSTEM:EVENT, START's trigger.N */
	char *filter;		/* START's trigger_filter.N, or NULL */
	char inst[192];		/* its instance directory, "" none */
	int fd;			/* its trace_pipe */
};

struct agent_flight {
	int swap;		/* the instance's snapshot buffer: a freeze is one swap */
	struct agent_trigger trig[AGENT_MAX_TRIGGERS];
	int stop_pipe[2];
	pthread_t thread;
	int started;
};

static struct agent_flight *flight_get(struct session *s)
{
	if (!s->flight) {
		s->flight = calloc(1, sizeof(*s->flight));
		if (!s->flight)
			return NULL;
		s->flight->stop_pipe[0] = s->flight->stop_pipe[1] = -1;
		for (int i = 0; i < AGENT_MAX_TRIGGERS; i++)
			s->flight->trig[i].fd = -1;
	}
	return s->flight;
}

/* trigger.N / trigger_filter.N: N below AGENT_MAX_TRIGGERS, else -EINVAL. */
static int trigger_index(const char *key, size_t prefix)
{
	char *end;
	long n = strtol(key + prefix, &end, 10);

	return *end || end == key + prefix || n < 0 || n >= AGENT_MAX_TRIGGERS ? -EINVAL : (int)n;
}

int flight_start_opt(struct session *s, const char *key, const char *val)
{
	struct agent_flight *f;
	int n;

	if (!strcmp(key, "flight_bytes")) {
		s->flight_bytes = strtoull(val, NULL, 10);
		return 1;
	}
	if (strncmp(key, "trigger.", 8) && strncmp(key, "trigger_filter.", 15))
		return 0;
	n = trigger_index(key, key[7] == '.' ? 8 : 15);
	f = n < 0 ? NULL : flight_get(s);
	if (!f)
		return n < 0 ? n : -ENOMEM;
	if (key[7] == '.')
		snprintf(f->trig[n].event, sizeof(f->trig[n].event), "%s", val);
	else if (!f->trig[n].filter && !(f->trig[n].filter = strdup(val)))
		return -ENOMEM;
	return 1;
}

/*
 * The ring per CPU: SIZE over the CPUs, less the reader page the kernel
 * adds, so that a snapshot of every CPU is at most SIZE (the host's
 * limit per guest).
 */
void flight_size(struct session *s, int ncpus)
{
	unsigned long long kb;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!s->flight_bytes || ncpus <= 0)
		return;
	kb = s->flight_bytes / (unsigned long long)ncpus / 1024;
	kb = kb / (page / 1024) * (page / 1024);	/* whole pages: no rounding up */
	kb = kb > page / 1024 + 4 ? kb - page / 1024 : 4;
	s->buffer_kb = kb > (1u << 20) ? (1u << 20) : (unsigned)kb;
}

static int trig_fail(struct session *s, struct agent_trigger *t, const char *what, int err)
{
	snprintf(s->error, sizeof(s->error), "Cannot arm trigger: event=\"%s\", %s, errno=%d (%s)",
		 t->event, what, err, strerror(err));
	return -err;
}

/* One rule's instance: only its event, filtered in the kernel, read as text. */
static int trigger_arm(struct session *s, int n, struct agent_trigger *t)
{
	char path[400], sys[64], val[32];
	const char *colon = strchr(t->event, ':');

	for (const char *p = t->event; *p; p++)
		if (!(*p == ':' || *p == '_' || *p == '-' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			colon = NULL;	/* names only: no path from the host's words */
	if (!colon || colon == t->event || !colon[1] || (size_t)(colon - t->event) >= sizeof(sys))
		return trig_fail(s, t, "not SYSTEM:EVENT", EINVAL);
	snprintf(sys, sizeof(sys), "%.*s", (int)(colon - t->event), t->event);
	snprintf(t->inst, sizeof(t->inst), "%s/instances/tracevisor-agent-%d-t%d", s->tracing,
		 (int)getpid(), n);
	if (mkdir(t->inst, 0755) && errno != EEXIST) {
		t->inst[0] = '\0';
		return trig_fail(s, t, "cannot create its instance", errno);
	}
	snprintf(path, sizeof(path), "%s/buffer_size_kb", t->inst);
	write_file(path, TRIG_BUFFER_KB);
	snprintf(path, sizeof(path), "%s/trace_clock", t->inst);
	write_file(path, s->clock);
	snprintf(path, sizeof(path), "%s/events/%s/%s/enable", t->inst, sys, colon + 1);
	if (access(path, W_OK))
		return trig_fail(s, t, "no such event in the guest", ENOENT);
	if (t->filter) {
		snprintf(path, sizeof(path), "%s/events/%s/%s/filter", t->inst, sys, colon + 1);
		if (write_file(path, t->filter)) {
			snprintf(s->error, sizeof(s->error),
				 "Cannot arm trigger: event=\"%s\", filter=\"%.200s\": the guest kernel refused the filter",
				 t->event, t->filter);
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/events/%s/%s/enable", t->inst, sys, colon + 1);
	}
	if (write_file(path, "1"))
		return trig_fail(s, t, "cannot enable it", errno);
	snprintf(path, sizeof(path), "%s/trace_pipe", t->inst);
	t->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (t->fd < 0)
		return trig_fail(s, t, "cannot open its trace_pipe", errno);
	snprintf(val, sizeof(val), "1");
	snprintf(path, sizeof(path), "%s/tracing_on", t->inst);
	return write_file(path, val);
}

/* MemAvailable of /proc/meminfo in bytes, 0 unknown. */
static unsigned long long mem_available(void)
{
	char *text = read_file("/proc/meminfo", NULL), *line;
	unsigned long long kb = 0;

	line = text ? strstr(text, "MemAvailable:") : NULL;
	if (line)
		kb = strtoull(line + 13, NULL, 10);
	free(text);
	return kb * 1024;
}

/*
 * The instance's snapshot buffer, allocated now the size of the ring (a
 * kernel with CONFIG_TRACER_SNAPSHOT), so that a snapshot is one swap
 * with no gap, as the host's flight recorder does.  It doubles the ring's
 * memory: only while the guest has 4 x SIZE available; else a snapshot
 * stops tracing while it reads (the gap is measured).
 */
static void flight_swap_setup(struct session *s, struct agent_flight *f)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/snapshot", s->inst);
	if (access(path, W_OK) || mem_available() < 4 * s->flight_bytes)
		return;
	f->swap = !write_file(path, "1");
	if (!f->swap)
		say("Cannot allocate the snapshot buffer: path=\"%s\": snapshots stop tracing while they read", path);
}

int flight_arm(struct session *s)
{
	int ret = 0;

	if (s->flight_bytes && !flight_get(s))
		return -ENOMEM;
	if (!s->flight)
		return 0;
	if (!s->flight_bytes) {
		snprintf(s->error, sizeof(s->error), "trigger.N without flight_bytes in START");
		return -EINVAL;
	}
	flight_swap_setup(s, s->flight);
	for (int n = 0; n < AGENT_MAX_TRIGGERS && !ret; n++)
		if (s->flight->trig[n].event[0])
			ret = trigger_arm(s, n, &s->flight->trig[n]);
	return ret;
}

/* A rule's pipe is readable: its first event line is a TRIGGER, the rest drained. */
static void trigger_read(struct session *s, int n, struct agent_trigger *t)
{
	char buf[8192], text[96];
	int fired = 0;
	ssize_t r;

	while ((r = read(t->fd, buf, sizeof(buf) - 1)) > 0) {
		buf[r] = '\0';
		for (char *save, *line = strtok_r(buf, "\n", &save); line && !fired;
		     line = strtok_r(NULL, "\n", &save)) {
			uint64_t ns;
			int cpu;

			if (tv_proto_trace_line_parse(line, &cpu, &ns))
				continue;
			snprintf(text, sizeof(text), "time=%llu\ncpu=%d\n", (unsigned long long)ns, cpu);
			send_frame(s, TV_MSG_TRIGGER, (uint32_t)n, text, strlen(text));
			fired = 1;
		}
	}
}

static void *trigger_thread(void *arg)
{
	struct session *s = arg;
	struct agent_flight *f = s->flight;

	for (;;) {
		struct pollfd pfd[AGENT_MAX_TRIGGERS + 1];
		int map[AGENT_MAX_TRIGGERS], nfd = 1;

		pfd[0] = (struct pollfd){ .fd = f->stop_pipe[0], .events = POLLIN };
		for (int n = 0; n < AGENT_MAX_TRIGGERS; n++)
			if (f->trig[n].fd >= 0) {
				map[nfd - 1] = n;
				pfd[nfd++] = (struct pollfd){ .fd = f->trig[n].fd, .events = POLLIN };
			}
		if (poll(pfd, (nfds_t)nfd, -1) < 0 && errno != EINTR)
			return NULL;
		if (pfd[0].revents)
			return NULL;
		for (int i = 1; i < nfd; i++)
			if (pfd[i].revents & POLLIN)
				trigger_read(s, map[i - 1], &f->trig[map[i - 1]]);
	}
}

void flight_watch(struct session *s)
{
	struct agent_flight *f = s->flight;
	int any = 0;

	for (int n = 0; f && n < AGENT_MAX_TRIGGERS; n++)
		any |= f->trig[n].fd >= 0;
	if (!any || pipe2(f->stop_pipe, O_CLOEXEC))
		return;
	f->started = !pthread_create(&f->thread, NULL, trigger_thread, s);
	if (!f->started)
		say("Cannot start the trigger thread: the guest's triggers are not watched");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * CPU @cpu's frozen pages, oldest first, as SNAP_DATA frames of whole
 * sub-buffers, at most @budget bytes: the ring is sized to hold no more
 * (flight_size()); pages past it (a kernel that sized it larger) are read
 * and dropped, so that the next snapshot starts after this one.
 * *@first set: this is the snapshot's first frame, sent as soon as it holds
 * one sub-buffer (cleared once sent).  Why: the host gives a guest 2 s from
 * the request to its first data, and a snapshot is most often asked while
 * the guest's VMM is stalled (the very exit that fired the trigger): a full
 * frame (64 KB) took 0.5 s more to cross nested TCG's channel at 135 KB/s
 * (lab kvm-svm-flight, CI of 2026-11-28: no data within 2 s, 2 MB in 15 s).
 * Return: bytes sent.
 */
static uint64_t snap_send_max_ns;
static size_t snap_first_bytes;		/* the first frame's, for -v */
static uint64_t snap_first_at;		/* when it was sent */

static size_t snap_cpu(struct session *s, uint32_t id, int cpu, unsigned char *buf, size_t cap,
		       size_t budget, int *first)
{
	size_t sb = s->subbuf_size, n = 0, sent = 0;
	char path[400];
	int fd;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/%s", s->inst, cpu,
		 s->flight && s->flight->swap ? "snapshot_raw" : "trace_pipe_raw");
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* an offline CPU */
	for (;;) {
		ssize_t r = read(fd, buf + n, sb);

		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0 && sent + n + sb <= budget) {
			memset(buf + n + r, 0, sb - (size_t)r);
			n += sb;
		}
		if ((r <= 0 || n + sb > cap || *first) && n) {
			uint64_t t0 = mono_ns(), dt;
			int ret = send_frame(s, TV_MSG_SNAP_DATA, TV_PROTO_SNAP_ARG(id, cpu), buf, n);

			dt = mono_ns() - t0;
			if (dt > snap_send_max_ns)
				snap_send_max_ns = dt;
			if (ret)
				break;
			if (*first) {
				snap_first_bytes = n;
				snap_first_at = mono_ns();
			}
			*first = 0;
			sent += n;
			n = 0;
		}
		if (r <= 0)
			break;
	}
	close(fd);
	return sent;
}

void flight_snapshot(struct session *s, uint32_t id)
{
	size_t sb = s->subbuf_size, cap = sb * (sb < 65536 ? 16 : 1), budget;
	unsigned char *buf = malloc(cap);
	unsigned long long total = 0;
	uint64_t off_ns, on_ns, frozen_ns;
	int swap, first = 1;
	char text[128], path[320];

	if (!buf || !s->flight_bytes) {
		free(buf);
		send_text_arg(s, TV_MSG_SNAP_END, id, s->flight_bytes ? "error=out of memory\n"
								 : "error=not a flight recorder\n");
		return;
	}
	budget = (size_t)(s->flight_bytes / (unsigned long long)s->ncpus) / sb * sb;
	swap = s->flight && s->flight->swap;
	snap_send_max_ns = snap_first_at = 0;
	snap_first_bytes = 0;
	off_ns = mono_ns();
	/* the freeze: one swap (tracing goes on in the other buffer), or tracing off */
	if (swap && inst_write(s, "snapshot", "1"))
		swap = s->flight->swap = 0;	/* it failed: the other way from now on */
	if (!swap)
		inst_write(s, "tracing_on", "0");
	frozen_ns = mono_ns();
	for (int cpu = 0; cpu < s->ncpus; cpu++)
		total += snap_cpu(s, id, cpu, buf, cap, budget ? budget : sb, &first);
	free(buf);
	snprintf(path, sizeof(path), "%s/saved_cmdlines", s->tracing);
	send_file_as(s, TV_MSG_SNAP_FILE, id, path, "saved_cmdlines");
	snprintf(path, sizeof(path), "%s/saved_tgids", s->tracing);
	if (access(path, R_OK) == 0)
		send_file_as(s, TV_MSG_SNAP_FILE, id, path, "saved_tgids");
	if (!swap)
		inst_write(s, "tracing_on", "1");
	on_ns = swap ? off_ns : mono_ns();
	/* the traced processes' tails (SNAP_UST): after the kernel's, before SNAP_END */
	ust_snapshot(id);
	snprintf(text, sizeof(text), "gap_ns=%llu\nfreeze_ns=%llu\nfreeze=%s\nbytes_total=%llu\n",
		 (unsigned long long)(on_ns - off_ns), (unsigned long long)(frozen_ns - off_ns),
		 swap ? "snapshot-buffer" : "stop-read-restart", total);
	send_text_arg(s, TV_MSG_SNAP_END, id, text);
	if (verbose)
		say("Snapshot %u: %llu bytes sent in %llu ms (first frame %zu bytes at %llu ms, longest frame send %llu ms), frozen by %s, tracing off for %llu us",
		    id, total, (unsigned long long)(mono_ns() - off_ns) / 1000000, snap_first_bytes,
		    (unsigned long long)(snap_first_at ? snap_first_at - off_ns : 0) / 1000000,
		    (unsigned long long)snap_send_max_ns / 1000000,
		    swap ? "snapshot-buffer" : "stop-read-restart", (unsigned long long)(on_ns - off_ns) / 1000);
}

void flight_unwatch(struct session *s)
{
	struct agent_flight *f = s->flight;

	if (!f || !f->started)
		return;
	if (write(f->stop_pipe[1], "x", 1) != 1)
		pthread_cancel(f->thread);
	pthread_join(f->thread, NULL);
	f->started = 0;
}

void flight_cleanup(struct session *s)
{
	struct agent_flight *f = s->flight;

	if (!f)
		return;
	flight_unwatch(s);
	for (int i = 0; i < 2; i++)
		if (f->stop_pipe[i] >= 0)
			close(f->stop_pipe[i]);
	for (int n = 0; n < AGENT_MAX_TRIGGERS; n++) {
		struct agent_trigger *t = &f->trig[n];

		if (t->fd >= 0)
			close(t->fd);
		if (t->inst[0]) {
			char path[400];

			snprintf(path, sizeof(path), "%s/tracing_on", t->inst);
			write_file(path, "0");
			if (rmdir(t->inst))
				say("Cannot remove tracefs instance: path=\"%s\", errno=%d", t->inst, errno);
		}
		free(t->filter);
	}
	free(f);
	s->flight = NULL;
}
