// SPDX-License-Identifier: GPL-2.0
/*
 * Errors keep their diagnosis whatever the log callback does (issue #11,
 * item 7): tv_log() saves and restores errno around the callback, and every
 * library site captures the error before it logs.  Here the callback
 * clobbers errno on every message; a session whose events/ folder is
 * missing must still fail with -ENOENT and "Cannot open event formats",
 * not load without formats and report every event as "unknown event id".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "tv_test.h"

static struct tv_strbuf logged;
static int clobber_with;

static void clobbering_log(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)ctx;
	tv_strbuf_append(&logged, "%s\n", msg);
	errno = clobber_with;	/* as a callback doing stdio or syslog may */
}

static void check_missing_events(const char *tmp, int clobber)
{
	struct tv_reader *rd = NULL;
	struct tv_event ev;
	char dir[600];
	int ret;

	clobber_with = clobber;
	tv_strbuf_reset(&logged);
	tv_strbuf_append(&logged, "%s", "");
	snprintf(dir, sizeof(dir), "%s/s", tmp);
	ret = tv_reader_open(dir, &rd);
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0)
		ret = 0;
	tv_reader_close(rd);
	TV_CHECK(ret == -ENOENT, "clobber=%d: reader returned %d, want -ENOENT", clobber, ret);
	TV_CHECK(strstr(logged.data, "Cannot open event formats") != NULL,
		 "clobber=%d: log: %s", clobber, logged.data);
	TV_CHECK(strstr(logged.data, "errno=2 (No such file or directory)") != NULL,
		 "clobber=%d: no strerror beside the number: %s", clobber, logged.data);
	TV_CHECK(strstr(logged.data, "unknown event id") == NULL,
		 "clobber=%d: wrong diagnosis: %s", clobber, logged.data);
}

int main(void)
{
	const char *root = getenv("TV_ROOT");
	char tmp[] = "/tmp/tv-errors.XXXXXX", cmd[1200];

	if (root && chdir(root)) {
		perror(root);
		return 1;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	tv_log_set_callback(clobbering_log, NULL);
	tv_log_set_level(TV_LOG_DEBUG);

	/* tv_log() itself keeps errno. */
	clobber_with = 0;
	errno = EBADF;
	tv_err("test message");
	TV_CHECK(errno == EBADF, "tv_log changed errno to %d", errno);

	/* A session whose host/events is missing. */
	snprintf(cmd, sizeof(cmd), "cp -r tests/samples/svm-exits %s/s && rm -rf %s/s/host/events",
		 tmp, tmp);
	TV_CHECK(system(cmd) == 0, "cannot copy the sample");
	check_missing_events(tmp, 0);
	check_missing_events(tmp, EINVAL);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
	tv_strbuf_free(&logged);
	return tv_test_done("test_errors");
}
