// SPDX-License-Identifier: GPL-2.0
/* lib/format/meta.c: key=value files round trip; malformed input is an error. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "tv_test.h"

static char logged[4096];

static void log_cb(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)ctx;
	snprintf(logged + strlen(logged), sizeof(logged) - strlen(logged), "%s\n", msg);
}

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

/*
 * Someone who can write in a session directory (a shared one, a guest's
 * files beside the host's) plants a link at FILE.tmp to make the recorder,
 * root, write elsewhere: tv_meta_write() refuses a symlink, replaces a
 * stale file or a hard link without touching what it led to, and the
 * other writers (tv_file_create()) do the same.
 */
static void check_planted_links(const char *dir, struct tv_meta *m)
{
	char path[256], tmp[300], victim[256], nowhere[256];
	int fd;

	snprintf(path, sizeof(path), "%s/planted", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(nowhere, sizeof(nowhere), "%s/created-through-the-link", dir);
	spit(victim, "precious\n");
	spit(path, "old=1\n");

	/* a symlink to an existing file: refused, neither file changed */
	TV_CHECK(symlink(victim, tmp) == 0, "symlink");
	logged[0] = '\0';
	TV_CHECK(tv_meta_write(m, path) == -ELOOP, "a symlink at FILE.tmp is refused");
	TV_CHECK(!strcmp(slurp(victim), "precious\n"), "the symlink's target was written: %s",
		 slurp(victim));
	TV_CHECK(!strcmp(slurp(path), "old=1\n"), "the old file changed: %s", slurp(path));
	TV_CHECK(strstr(logged, "Cannot create metadata file") && strstr(logged, tmp) &&
		 strstr(logged, "symbolic link"), "log: %s", logged);
	TV_CHECK(strchr(logged, '\n') == logged + strlen(logged) - 1, "one line: %s", logged);
	unlink(tmp);

	/* a dangling symlink: fopen("w") would have created its target */
	TV_CHECK(symlink(nowhere, tmp) == 0, "symlink");
	TV_CHECK(tv_meta_write(m, path) == -ELOOP, "a dangling symlink at FILE.tmp is refused");
	TV_CHECK(access(nowhere, F_OK) != 0, "a file was created through the dangling symlink");
	unlink(tmp);

	/* a hard link, or a stale regular file: replaced, never written through */
	TV_CHECK(link(victim, tmp) == 0, "link");
	TV_CHECK(tv_meta_write(m, path) == 0, "a hard link at FILE.tmp is replaced");
	TV_CHECK(!strcmp(slurp(victim), "precious\n"), "written through a hard link: %s",
		 slurp(victim));
	TV_CHECK(!strncmp(slurp(path), "format=tracevisor-session\n", 26), "not written: %s",
		 slurp(path));
	TV_CHECK(access(tmp, F_OK) != 0, "no temporary file left");
	spit(tmp, "stale\n");
	TV_CHECK(tv_meta_write(m, path) == 0, "a stale FILE.tmp is replaced");

	/* a symlink at FILE itself: rename() replaces the link, not its target */
	unlink(path);
	TV_CHECK(symlink(victim, path) == 0, "symlink");
	TV_CHECK(tv_meta_write(m, path) == 0, "write over a symlink at FILE");
	TV_CHECK(!strcmp(slurp(victim), "precious\n"), "written through FILE's symlink: %s",
		 slurp(victim));

	/* tv_file_create(), what the other writers use: a directory is refused too */
	TV_CHECK(mkdir(tmp, 0755) == 0, "mkdir");
	logged[0] = '\0';
	fd = tv_file_create(tmp, 0, "stream file");
	TV_CHECK(fd == -EEXIST && strstr(logged, "Cannot create stream file") &&
		 strstr(logged, "not a regular file (type=directory)"), "a directory: %d, %s", fd,
		 logged);
	rmdir(tmp);
	TV_CHECK(symlink(victim, tmp) == 0, "symlink");
	TV_CHECK(tv_file_fcreate(tmp, "vCPU map") == NULL && errno == ELOOP,
		 "tv_file_fcreate through a symlink");
	unlink(tmp);
	unlink(path);
	unlink(victim);
}

int main(void)
{
	char dir[] = "/tmp/tv-meta.XXXXXX", path[256], bad[256];
	struct tv_meta *m, *r = NULL;
	int ret;

	tv_log_set_callback(log_cb, NULL);
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/meta", dir);

	m = tv_meta_new();
	TV_CHECK(m != NULL, "tv_meta_new");
	TV_CHECK(tv_meta_set(m, "format", "tracevisor-session") == 0, "set");
	TV_CHECK(tv_meta_set(m, "version", "%d", 1) == 0, "set");
	TV_CHECK(tv_meta_set(m, "filter", "%s", "a=1 && b!=2") == 0, "value with '='");
	TV_CHECK(tv_meta_set(m, "multi", "%s", "one\ntwo\n") == 0, "value with newlines");
	TV_CHECK(tv_meta_set(m, "empty", "%s", "") == 0, "empty value");
	TV_CHECK(tv_meta_set(m, "hex", "0x%x", 255) == 0, "set");
	TV_CHECK(tv_meta_set(m, "version", "%d", 2) == 0, "overwrite keeps its place");
	TV_CHECK(tv_meta_set(m, "bad=key", "x") == -EINVAL, "'=' in a key is refused");
	TV_CHECK(tv_meta_set(m, "bad\nkey", "x") == -EINVAL, "newline in a key is refused");
	TV_CHECK(!strcmp(tv_meta_get(m, "multi"), "one two "), "newlines become spaces: '%s'",
		 tv_meta_get(m, "multi"));
	TV_CHECK(tv_meta_get(m, "nope") == NULL, "missing key");
	TV_CHECK(tv_meta_get(NULL, "nope") == NULL, "NULL meta");
	TV_CHECK(tv_meta_get_ll(m, "version", -1) == 2, "ll");
	TV_CHECK(tv_meta_get_ll(m, "hex", -1) == 255, "ll accepts 0x");
	TV_CHECK(tv_meta_get_ll(m, "format", -7) == -7, "not a number: default");
	TV_CHECK(tv_meta_get_ll(m, "empty", -8) == -8, "empty: default");
	TV_CHECK(tv_meta_get_ll(m, "nope", -9) == -9, "missing: default");

	TV_CHECK(tv_meta_write(m, path) == 0, "write");
	TV_CHECK(!strcmp(slurp(path), "format=tracevisor-session\nversion=2\nfilter=a=1 && b!=2\n"
				      "multi=one two \nempty=\nhex=0xff\n"),
		 "file content: %s", slurp(path));
	snprintf(bad, sizeof(bad), "%s/meta.tmp", dir);
	TV_CHECK(access(bad, F_OK) != 0, "no temporary file left");

	ret = tv_meta_read(path, &r);
	TV_CHECK(ret == 0 && r, "read back: %d", ret);
	if (r) {
		TV_CHECK(!strcmp(tv_meta_get(r, "filter"), "a=1 && b!=2"), "value split at the first '='");
		TV_CHECK(!strcmp(tv_meta_get(r, "empty"), ""), "empty value");
		TV_CHECK(tv_meta_get_ll(r, "version", 0) == 2, "version");
		snprintf(bad, sizeof(bad), "%s/again", dir);
		TV_CHECK(tv_meta_write(r, bad) == 0, "write again");
		TV_CHECK(!strcmp(slurp(bad), "format=tracevisor-session\nversion=2\nfilter=a=1 && b!=2\n"
					     "multi=one two \nempty=\nhex=0xff\n"), "round trip keeps order");
		tv_meta_free(r);
	}

	/* comments and blank lines are skipped; a later key wins */
	spit(path, "# comment\n\nk=1\nk=2\nlast=no newline");
	r = NULL;
	TV_CHECK(tv_meta_read(path, &r) == 0, "comments");
	TV_CHECK(r && tv_meta_get_ll(r, "k", 0) == 2 && !strcmp(tv_meta_get(r, "last"), "no newline"),
		 "k/last");
	tv_meta_free(r);

	/* a line without '=' is an error naming the file and line */
	spit(path, "a=1\nthis line has no equals sign\nb=2\n");
	r = NULL;
	logged[0] = '\0';
	ret = tv_meta_read(path, &r);
	TV_CHECK(ret == -EINVAL, "malformed line: %d", ret);
	TV_CHECK(r == NULL, "no meta on error");
	TV_CHECK(strstr(logged, "Malformed metadata line") && strstr(logged, path) &&
		 strstr(logged, "line=2"), "log: %s", logged);

	logged[0] = '\0';
	snprintf(bad, sizeof(bad), "%s/missing", dir);
	TV_CHECK(tv_meta_read(bad, &r) == -ENOENT, "missing file");
	TV_CHECK(strstr(logged, bad) != NULL, "log names the file: %s", logged);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/meta", dir);
	TV_CHECK(tv_meta_write(m, bad) == -ENOENT, "write into a missing directory");
	check_planted_links(dir, m);

	tv_meta_free(m);
	tv_meta_free(NULL);
	unlink(path);
	snprintf(bad, sizeof(bad), "%s/again", dir);
	unlink(bad);
	rmdir(dir);
	return tv_test_done("test_decode_meta");
}
