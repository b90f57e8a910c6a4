// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's tracefs instance: found or mounted, stale instances of dead
 * agents removed, events enabled, buffer sizes.
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

char *read_file(const char *path, size_t *len)
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

int write_file(const char *path, const char *val)
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

int inst_write(struct session *s, const char *file, const char *val)
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

/*
 * The kernel's reason for refusing a filter: the "parse_error: ..." line it
 * leaves in the event's filter file after a failed write ("" if none).
 */
static void filter_refusal(const char *filter_path, char *why, size_t size)
{
	char *text = read_file(filter_path, NULL), *line;

	why[0] = '\0';
	line = text ? strstr(text, "parse_error: ") : NULL;
	if (line)
		snprintf(why, size, ", kernel: \"%.*s\"", (int)strcspn(line + 13, "\n"), line + 13);
	free(text);
}

/*
 * Enable sys/ev with @filter (NULL: none) written first, so that nothing
 * unfiltered is recorded.  Return: 0, -ENOENT (no such event here),
 * -EINVAL with s->error set (the kernel refused the filter), -E2BIG.
 */
static int enable_one(struct session *s, const char *sys, const char *ev, const char *filter)
{
	char path[400];

	if (s->nr_events == MAX_EVENTS)
		return -E2BIG;
	snprintf(path, sizeof(path), "%s/events/%s/%s/enable", s->inst, sys, ev);
	if (access(path, W_OK))
		return -ENOENT;
	if (filter) {
		char why[200];
		int ret;

		snprintf(path, sizeof(path), "%s/events/%s/%s/filter", s->inst, sys, ev);
		ret = write_file(path, filter);
		if (ret) {
			filter_refusal(path, why, sizeof(why));
			/* a probe by the name it is recorded under (probes:NAME) */
			snprintf(s->error, sizeof(s->error),
				 "Cannot set filter: event=\"%s:%s\", filter=\"%.160s\", errno=%d (%s)%s",
				 strncmp(sys, "tvprobe_", 8) ? sys : "probes", ev, filter, -ret,
				 strerror(-ret), why);
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/events/%s/%s/enable", s->inst, sys, ev);
	}
	if (write_file(path, "1"))
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", sys, ev);
	s->events[s->nr_events++] = strdup(path);
	return 0;
}

/*
 * "sys:event" or "sys": events that do not exist here are skipped.  A
 * filter on a system goes to each of its events that has the fields (as
 * the host's recorder does); one that fits none of them is an error.
 * Return: 0 or -EINVAL with s->error set.
 */
static int enable_spec(struct session *s, const char *spec, const char *filter)
{
	char sys[64], path[400];
	const char *colon = strchr(spec, ':');
	struct dirent *de;
	int fits = 0, refused = 0, ret;
	DIR *d;

	if (colon) {
		snprintf(sys, sizeof(sys), "%.*s", (int)(colon - spec), spec);
		ret = enable_one(s, sys, colon + 1, filter);
		if (ret == -ENOENT && verbose)
			say("Event not available: name=\"%s\"", spec);
		return ret == -EINVAL ? ret : 0;
	}
	snprintf(path, sizeof(path), "%s/events/%s", s->inst, spec);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		ret = enable_one(s, spec, de->d_name, filter);
		if (ret == -EINVAL) {
			refused++;	/* has not the filter's fields: unfiltered */
			ret = enable_one(s, spec, de->d_name, NULL);
		} else if (!ret && filter) {
			fits++;
		}
	}
	closedir(d);
	if (filter && refused && !fits)
		return -EINVAL;	/* s->error: the last refusal */
	s->error[0] = '\0';
	return 0;
}

static int clean_spec_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ':';
}

/*
 * The host's comma list (or the default).  Item N (counted with empty
 * items, as the host counts them) gets START's filter.N.
 * Return: 0, or -EINVAL with s->error set: the kernel refused a filter.
 */
int enable_events(struct session *s, const char *list)
{
	char *copy = strdup(list && *list ? list : DEFAULT_EVENTS), *rest = copy, *spec;
	int ret = copy ? 0 : -ENOMEM;

	for (int n = 0; !ret && (spec = strsep(&rest, ",")); n++) {
		const char *filter = n < MAX_SPECS ? s->filters[n] : NULL;
		char event[96];
		int ok = *spec != '\0';

		if (is_dynamic_spec(spec)) {
			int err = create_dynamic_probe(s, spec, event, sizeof(event));

			if (!err)
				ret = enable_spec(s, event, filter);
			else
				say("Cannot create probe: spec=\"%s\", errno=%d", spec, -err);
			continue;
		}
		/* Names only: no path can be built from the host's words. */
		for (const char *p = spec; *p; p++)
			ok &= clean_spec_char(*p);
		if (ok)
			ret = enable_spec(s, spec, filter);
	}
	free(copy);
	return ret;
}

int setup_instance(struct session *s)
{
	char val[32];
	int ret;

	ret = find_tracefs(s);
	if (ret)
		return ret;
	remove_stale_instances(s->tracing);
	remove_dynamic_probes(s, 0);	/* of agents that were killed */
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

size_t subbuf_size(struct session *s)
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
