// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor snapshot DIR|PID - ask a running `record
 * --flight-recorder SIZE` for a snapshot and wait until it is written.
 *
 * The recorder keeps DIR/flight-recorder (its pid and its snapshot count)
 * and /run/tracevisor/flight-PID (a link to DIR); this command sends it
 * SIGUSR1 and waits until the count (or its error count) moves, then
 * prints the new snapshot's directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

#define SNAPSHOT_WAIT_MS 30000

static void snapshot_usage(FILE *out)
{
	fputs("usage: tracevisor snapshot [-q] DIR|PID\n\n"
	      "Write what a running `tracevisor record --flight-recorder SIZE` keeps (the host\n"
	      "kernel's last SIZE, and with --ust each traced process's) into a new session\n"
	      "directory DIR/snapshot-N/ (read by report, stat, sync and export); the recording goes on.  DIR is the recording's\n"
	      "session directory, PID its recorder's process id.  Prints the new directory.\n"
	      "  -q, --quiet   print nothing, only the exit status\n"
	      "  -h, --help    this help\n", out);
}

/* DIR/flight-recorder into *@m, or -errno with the error said. */
static int snapshot_state(const char *dir, struct tv_meta **m)
{
	char path[PATH_MAX + 32];
	int ret;

	snprintf(path, sizeof(path), "%s/flight-recorder", dir);
	ret = access(path, F_OK) ? -errno : tv_meta_read(path, m);
	if (ret == -ENOENT)
		tv_cli_error("snapshot", "No flight recorder runs for this session: path=\"%s\" (record --flight-recorder SIZE writes it while it runs)",
			     path);
	else if (ret)
		tv_cli_error("snapshot", "Cannot read the flight recorder's state: path=\"%s\", errno=%d (%s)",
			     path, -ret, strerror(-ret));
	return ret;
}

/* PID -> its session directory, through the recorder's /run/tracevisor/flight-PID link. */
static int snapshot_dir_of(const char *arg, char *dir, size_t size)
{
	char link[64], *end;
	long pid;
	ssize_t n;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || *end || pid <= 0 || pid > INT_MAX) {
		snprintf(dir, size, "%s", arg);
		return 0;	/* a directory */
	}
	snprintf(link, sizeof(link), "/run/tracevisor/flight-%ld", pid);
	n = readlink(link, dir, size - 1);
	if (n < 0) {
		tv_cli_error("snapshot", "Not a flight recorder: pid=%ld (no %s: not a running `tracevisor record --flight-recorder`)",
			     pid, link);
		return -ESRCH;
	}
	dir[n] = '\0';
	return 0;
}

/* While waiting: the state as the recorder last renamed it into place (missing: 1). */
static int state_read(const char *dir, struct tv_meta **m)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/flight-recorder", dir);
	return access(path, F_OK) || tv_meta_read(path, m);
}

int cmd_snapshot(int argc, char **argv)
{
	char dir[PATH_MAX];
	struct tv_meta *m;
	long long pid, before, errors;
	int quiet = 0, argi = 1;

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "-h") || !strcmp(argv[argi], "--help")) {
			snapshot_usage(stdout);
			return 0;
		} else if (!strcmp(argv[argi], "-q") || !strcmp(argv[argi], "--quiet")) {
			quiet = 1;
		} else {
			snapshot_usage(stderr);
			return 2;
		}
	}
	if (argc - argi != 1) {
		snapshot_usage(stderr);
		return 2;
	}
	if (snapshot_dir_of(argv[argi], dir, sizeof(dir)) || snapshot_state(dir, &m))
		return 1;
	pid = tv_meta_get_ll(m, "pid", 0);
	before = tv_meta_get_ll(m, "snapshots", 0);
	errors = tv_meta_get_ll(m, "errors", 0);
	tv_meta_free(m);
	if (pid <= 0 || pid > INT_MAX || kill((pid_t)pid, SIGUSR1)) {
		tv_cli_error("snapshot", "Flight recorder not running: path=\"%s/flight-recorder\", pid=%lld, errno=%d (%s)",
			     dir, pid, errno ? errno : ESRCH, strerror(errno ? errno : ESRCH));
		return 1;
	}
	for (int waited = 0; waited < SNAPSHOT_WAIT_MS; waited += 10) {
		poll(NULL, 0, 10);
		if (state_read(dir, &m))
			continue;	/* gone at the end: the kill() below says so */
		if (tv_meta_get_ll(m, "snapshots", 0) > before) {
			if (!quiet)
				printf("%s\n", tv_cli_text(tv_meta_get(m, "last") ? tv_meta_get(m, "last") : ""));
			tv_meta_free(m);
			return 0;
		}
		if (tv_meta_get_ll(m, "errors", 0) > errors) {
			tv_cli_error("snapshot", "The flight recorder could not write the snapshot: pid=%lld, %s (its stderr says why)",
				     pid, tv_meta_get(m, "last_error") ? tv_meta_get(m, "last_error") : "?");
			tv_meta_free(m);
			return 1;
		}
		tv_meta_free(m);
		if (kill((pid_t)pid, 0)) {
			tv_cli_error("snapshot", "The flight recorder ended before the snapshot: pid=%lld", pid);
			return 1;
		}
	}
	tv_cli_error("snapshot", "No snapshot after %d s: pid=%lld, path=\"%s\"", SNAPSHOT_WAIT_MS / 1000, pid, dir);
	return 1;
}
