// SPDX-License-Identifier: GPL-2.0
/*
 * The reader tries a domain's event formats in a forked child before it
 * parses them (lib/reader/domain.c, formats_trial()), once per process
 * and set of formats, not once per reader: sync opens four readers on a
 * session and stat three (issue 28).  fork() is counted here (this
 * program's definition is the one the reader's static library calls):
 * the first reader of tests/samples/synced-multi forks one trial per
 * domain, a second reader none, and a format changed by one byte is
 * tried again, alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"

static int forks;

pid_t fork(void)
{
	static pid_t (*real)(void);

	if (!real)
		real = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	forks++;
	return real ? real() : -1;
}

/* The forks of opening and closing one reader of @dir; -1: it failed. */
static int forks_of_open(const char *dir)
{
	struct tv_reader *rd = NULL;
	int before = forks;

	if (tv_reader_open(dir, &rd))
		return -1;
	tv_reader_close(rd);
	return forks - before;
}

int main(void)
{
	char tmpl[] = "/tmp/tv-trial-test.XXXXXX";
	const char *src = getenv("TV_ROOT");
	char dir[4096], cmd[8400], path[4200];
	char *tmp = mkdtemp(tmpl);
	int first, again, changed, after;
	FILE *f;

	tv_log_set_callback(NULL, NULL);
	if (!tmp) {
		TV_CHECK(0, "mkdtemp");
		return tv_test_done("test_format_trial");
	}
	snprintf(dir, sizeof(dir), "%s/s", tmp);
	snprintf(cmd, sizeof(cmd), "cp -r '%s/tests/samples/synced-multi' '%s'", src ? src : ".", dir);
	TV_CHECK(system(cmd) == 0, "%s", cmd);
	first = forks_of_open(dir);
	again = forks_of_open(dir);
	/* one byte more (a blank line at the end): still parsed, but not the bytes tried */
	snprintf(path, sizeof(path), "%s/guest-good/events/kvm/kvm_hypercall/format", dir);
	f = fopen(path, "a");
	TV_CHECK(f && fputc('\n', f) == '\n' && fclose(f) == 0, "append to %s", path);
	changed = forks_of_open(dir);
	after = forks_of_open(dir);
	printf("format trials: %d at the first reader, %d at the second, %d after a format changed, %d then\n",
	       first, again, changed, after);
	TV_CHECK(first == 5, "the first reader forked %d trials, want one per domain (5)", first);
	TV_CHECK(again == 0, "a second reader of the same formats forked %d trials, want 0", again);
	TV_CHECK(changed == 1, "a reader after one format changed forked %d trials, want 1", changed);
	TV_CHECK(after == 0, "the next reader forked %d trials, want 0", after);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "cannot clean %s\n", tmp);
	return tv_test_done("test_format_trial");
}
