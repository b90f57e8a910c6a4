// SPDX-License-Identifier: GPL-2.0
/*
 * One recording session: START parsed, the instance set up, the readers
 * started, requests served until STOP, everything drained and cleaned.
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

static int start_opt(const char *key, const char *val, void *ctx)
{
	struct session *s = ctx;
	int taken = flight_start_opt(s, key, val);

	if (taken)
		return taken < 0 ? taken : 0;
	if (!strcmp(key, "events")) {
		snprintf(s->events_spec, sizeof(s->events_spec), "%s", val);
	} else if (!strcmp(key, "clock")) {
		snprintf(s->clock, sizeof(s->clock), "%s", val);
	} else if (!strcmp(key, "buffer_kb")) {
		long kb = atol(val);

		s->buffer_kb = kb >= 4 && kb <= (1L << 20) ? (unsigned)kb : s->buffer_kb;
	} else if (!strcmp(key, "ust")) {
		snprintf(s->ust_spec, sizeof(s->ust_spec), "%s", val);
	} else if (!strcmp(key, "ust_mode")) {
		snprintf(s->ust_mode, sizeof(s->ust_mode), "%s", val);
	} else if (!strcmp(key, "ust_subbuf_size")) {
		s->ust_subbuf_size = (uint32_t)strtoul(val, NULL, 10);	/* checked by ust_start */
	} else if (!strcmp(key, "ust_nr_subbufs")) {
		s->ust_nr_subbufs = (uint32_t)strtoul(val, NULL, 10);
	} else if (!strcmp(key, "guest")) {
		s->guest = (uint16_t)atoi(val);
	} else if (!strcmp(key, "nonce")) {
		s->nonce = strtoull(val, NULL, 16);
	} else if (!strncmp(key, "filter.", 7)) {
		char *end;
		long n = strtol(key + 7, &end, 10);

		/* the host sends at most one per item of its list */
		if (*end || end == key + 7 || n < 0 || n >= MAX_SPECS || s->filters[n])
			return -EINVAL;
		s->filters[n] = strdup(val);
		if (!s->filters[n])
			return -ENOMEM;
		s->nr_filters++;
	}
	return 0;
}

static int session_start(struct session *s, const char *text, size_t len)
{
	int ret;

	ret = tv_proto_kv_parse(text, len, start_opt, s);
	if (ret == -EINVAL)
		snprintf(s->error, sizeof(s->error), "malformed START (a filter.N twice or N >= %d?)",
			 MAX_SPECS);
	if (ret)
		return ret;
	s->ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	flight_size(s, s->ncpus);
	ret = setup_instance(s);
	if (ret)
		return ret;
	ret = enable_events(s, s->events_spec);
	if (ret)
		return ret;
	if (!s->nr_events)
		return -ENOENT;
	s->subbuf_size = subbuf_size(s);
	return flight_arm(s);
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
		remove_dynamic_probes(s, 1);	/* after: an enabled probe cannot go */
	}
	flight_cleanup(s);
	for (int i = 0; i < s->nr_events; i++)
		free(s->events[i]);
	for (int i = 0; i < MAX_SPECS; i++)
		free(s->filters[i]);
	free(s->cpus);
}

/*
 * Commands until STOP or the host goes away.  A START means the host that
 * began this session is gone (its channel, a console, stayed open) and a
 * new one asks: kept in s->restart, the session ends at once.
 */
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
		if (hdr.type == TV_MSG_START) {
			s->restart = p ? p : (unsigned char *)strdup("");
			s->restart_len = hdr.len;
			return;
		}
		if (hdr.type == TV_MSG_PING)
			answer_ping(s, p, hdr.len);
		else if (hdr.type == TV_MSG_HCALL)
			answer_hcall(s, p, hdr.len);
		else if (hdr.type == TV_MSG_SNAP)
			flight_snapshot(s, hdr.arg);
		free(p);
		if (hdr.type == TV_MSG_STOP)
			return;
	}
}

/*
 * One session: @start is its START payload when the previous session
 * received it (owned, freed here), else it is read from the channel.
 * Returns the START of the next session when one came during this one.
 */
static unsigned char *one_session(int fd, unsigned char *start, size_t start_len,
				  size_t *next_len)
{
	struct session s = { .fd = fd, .marker_fd = -1, .buffer_kb = 2048 };
	struct tv_proto_hdr hdr = { .type = TV_MSG_START, .len = (uint32_t)start_len };
	unsigned char *p = start, hello[TV_PROTO_HELLO_SIZE];
	char path[320], err[600];
	int ret = 0;

	pthread_mutex_init(&s.send_lock, NULL);
	snprintf(s.clock, sizeof(s.clock), "local");
	if (!p)
		ret = recv_frame(fd, &hdr, &p, 10000);
	if (ret) {
		/* Nobody to tell: the host went away or never came. */
		if (verbose)
			say("No START from the host: errno=%d", -ret);
		return NULL;
	}
	if (hdr.type != TV_MSG_START)
		ret = -EPROTO;
	if (!ret)
		ret = session_start(&s, p ? (char *)p : "", hdr.len);
	free(p);
	/* first of all, where this session's reply starts (the host skips to it) */
	if (s.nonce) {
		tv_proto_hello_encode(hello, s.nonce);
		pthread_mutex_lock(&s.send_lock);
		if (write_all(fd, hello, sizeof(hello)))
			s.dead = 1;
		pthread_mutex_unlock(&s.send_lock);
	}
	if (ret) {
		if (s.error[0])	/* the reason, with the event it is about */
			snprintf(err, sizeof(err), "%s", s.error);
		else
			snprintf(err, sizeof(err), "cannot start tracing in the guest: errno=%d (%s)",
				 -ret, strerror(-ret));
		say("%s", err);
		send_text(&s, TV_MSG_ERROR, err);
		session_cleanup(&s);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/trace_marker_raw", s.inst);
	s.marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	ret = send_meta(&s);
	if (!ret)
		ret = send_formats(&s);
	/* a flight recorder sends nothing until asked: its readers start at STOP */
	if (!ret && !s.flight_bytes)
		ret = start_cpus(&s);
	if (!ret)
		ret = inst_write(&s, "tracing_on", "1");
	if (!ret)
		ret = send_frame(&s, TV_MSG_READY, 0, NULL, 0);
	if (!ret)
		flight_watch(&s);
	/* traced processes: their own thread; the kernel's trace goes on without them */
	if (!ret && s.ust_spec[0] && ust_start(&s, s.ust_spec))
		say("Not tracing processes: no registration socket, or a bad policy from the host");
	if (!ret) {
		if (verbose)
			say("Tracing %d events on %d CPUs", s.nr_events, s.ncpus);
		session_serve(&s);
	}
	if (s.restart) {
		/* nobody reads this session any more: nothing more is sent */
		say("A new session was asked for during one: ending the old one unsent");
		pthread_mutex_lock(&s.send_lock);
		s.dead = 1;
		pthread_mutex_unlock(&s.send_lock);
	}
	flight_unwatch(&s);
	/* their last events while the kernel still traces: one timeline to the end */
	ust_stop();
	inst_write(&s, "tracing_on", "0");
	/* the losses are final now: said before a drain that may not finish */
	if (!s.restart && s.nonce)
		send_counts(&s, TV_MSG_LOSS);
	/* a flight recorder's last buffers: the session itself (its Ctrl-C) */
	if (!s.cpus && s.flight_bytes && !ret)
		start_cpus(&s);
	stop_cpus(&s);
	if (!s.restart) {
		snprintf(path, sizeof(path), "%s/saved_cmdlines", s.tracing);
		send_file(&s, path, "saved_cmdlines");
		snprintf(path, sizeof(path), "%s/saved_tgids", s.tracing);
		if (access(path, R_OK) == 0)
			send_file(&s, path, "saved_tgids");
		send_counts(&s, TV_MSG_END);
	}
	session_cleanup(&s);
	if (verbose)
		say("Session ended");
	*next_len = s.restart_len;
	return s.restart;
}

void run_session(int fd)
{
	unsigned char *start = NULL;
	size_t len = 0;

	do
		start = one_session(fd, start, len, &len);
	while (start);
}
