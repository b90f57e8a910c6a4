// SPDX-License-Identifier: GPL-2.0
/* lib/meta.c: key=value files round trip; malformed input is an error. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
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

	tv_meta_free(m);
	tv_meta_free(NULL);
	unlink(path);
	snprintf(bad, sizeof(bad), "%s/again", dir);
	unlink(bad);
	rmdir(dir);
	return tv_test_done("test_decode_meta");
}
