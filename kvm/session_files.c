// SPDX-License-Identifier: LGPL-2.1
/* Static files of a recorded domain: formats, header page, task maps. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "events.h"
#include "session_files.h"
#include "probes.h"

static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		int err = errno;

		tv_err("Cannot open tracefs file: path=\"%s\", errno=%d (%s)", src, err, strerror(err));
		return -err;
	}
	out = tv_file_create(dst, 0, "file");
	if (out < 0) {
		close(in);
		return out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			ret = errno ? -errno : -EIO;
			tv_err("Cannot write file: path=\"%s\", errno=%d (%s)", dst, -ret, strerror(-ret));
			break;
		}
	}
	if (n < 0 && !ret)
		ret = -errno;
	close(in);
	if (close(out) && !ret)
		ret = -errno;
	return ret;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Marker events are always on: their formats decode sync probes and notes. */
static int write_marker_formats(const char *domain_dir, const char *tracing_dir)
{
	static const char *const markers[] = { "print", "raw_data" };
	char src[PATH_MAX], dst[PATH_MAX];

	for (size_t i = 0; i < 2; i++) {
		snprintf(src, sizeof(src), "%s/events/ftrace/%s/format", tracing_dir, markers[i]);
		if (access(src, R_OK))
			continue;
		snprintf(dst, sizeof(dst), "%s/events/ftrace/%s", domain_dir, markers[i]);
		if (mkdir_p(dst) == 0) {
			snprintf(dst, sizeof(dst), "%s/events/ftrace/%s/format", domain_dir, markers[i]);
			copy_file(src, dst);
		}
	}
	return 0;
}

int tv_session_write_formats(const char *domain_dir, const char *tracing_dir,
			     const struct tv_event_list *events)
{
	char src[PATH_MAX], dst[PATH_MAX];
	static const char *const headers[] = { "header_page", "header_event" };
	int ret;

	for (size_t i = 0; i < 2; i++) {
		snprintf(src, sizeof(src), "%s/events/%s", tracing_dir, headers[i]);
		snprintf(dst, sizeof(dst), "%s/%s", domain_dir, headers[i]);
		ret = copy_file(src, dst);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < events->nr; i++) {
		const struct tv_event_id *id = &events->ids[i];
		/* a probe group named after our pid is "probes" or "func" in the session */
		const char *sys = tv_probe_session_system(id->system);

		snprintf(dst, sizeof(dst), "%s/events/%s/%s", domain_dir, sys, id->event);
		ret = mkdir_p(dst);
		if (ret) {
			tv_err("Cannot create directory: path=\"%s\", errno=%d (%s)", dst, -ret, strerror(-ret));
			return ret;
		}
		snprintf(src, sizeof(src), "%s/events/%s/%s/format", tracing_dir, id->system,
			 id->event);
		snprintf(dst, sizeof(dst), "%s/events/%s/%s/format", domain_dir, sys, id->event);
		ret = copy_file(src, dst);
		if (ret)
			return ret;
	}
	return write_marker_formats(domain_dir, tracing_dir);
}

int tv_session_write_task_maps(const char *domain_dir, const char *tracing_dir)
{
	static const char *const maps[] = { "saved_cmdlines", "saved_tgids" };
	char src[PATH_MAX], dst[PATH_MAX];

	for (size_t i = 0; i < 2; i++) {
		snprintf(src, sizeof(src), "%s/%s", tracing_dir, maps[i]);
		snprintf(dst, sizeof(dst), "%s/%s", domain_dir, maps[i]);
		/* Optional: older kernels lack saved_tgids. */
		if (access(src, R_OK) == 0 && copy_file(src, dst))
			tv_warn("Cannot save task map: path=\"%s\"", src);
	}
	return 0;
}
