// SPDX-License-Identifier: GPL-2.0
/*
 * A guest's domain can only spoil itself (issue #22, point 1), at the
 * reader: a session of the good svm-exits host and guest domains made of
 * the corrupt samples (tests/samples/corrupt-*: a commit beyond its
 * sub-buffer, a record outside it, an unknown event id) and of a garbage
 * header page.  The host's events are all read, each guest's valid
 * sub-buffers too, its bad ones skipped and counted in one warning with
 * the sample's own path, offset and reason; the undecodable guest is left
 * out with one warning; as host, the same corrupt data stays an error;
 * tv_reader_select_domain() reads subsets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"

static struct tv_strbuf logged;
static char dir[] = "/tmp/tv-isolation.XXXXXX";

static void log_cb(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	tv_strbuf_append(&logged, "%s%s\n", level == TV_LOG_WARN ? "warning: " : "", msg);
}

static int sh(const char *fmt, const char *a, const char *b)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	return system(cmd);
}

/* Events per domain of a whole read of @d: 0, or the reader's error. */
static int count(const char *d, int *host, int *guests)
{
	struct tv_reader *rd;
	struct tv_event ev;
	int ret = tv_reader_open(d, &rd);

	*host = *guests = 0;
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		ret = 0;
		if (!strcmp(ev.domain, "host"))
			(*host)++;
		else
			(*guests)++;
	}
	if (!ret || ret == -EBADMSG)
		tv_reader_close(rd);
	return ret;
}

/* Lines of expected.json of a sample: the events before its corruption. */
static int sample_events(const char *sample)
{
	char path[256], *text;
	int n = 0;

	snprintf(path, sizeof(path), "tests/samples/%s/expected.json", sample);
	text = tv_test_slurp(path);
	for (char *p = text; p && *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

/* The sample's expected.stderr error, as "offset=N: WHY", into @buf. */
static const char *sample_error(const char *sample, char *buf, size_t size)
{
	char path[256], *text, *off;

	snprintf(path, sizeof(path), "tests/samples/%s/expected.stderr", sample);
	text = tv_test_slurp(path);
	off = text ? strstr(text, "offset=") : NULL;
	snprintf(buf, size, "%.*s", off ? (int)strcspn(off, "\n") : 0, off ? off : "");
	free(text);
	return buf;
}

int main(void)
{
	static const char *const bad[] = { "corrupt-commit", "corrupt-record", "corrupt-event-id" };
	const char *root = getenv("TV_ROOT");
	int host, guests, want_host = sample_events("svm-exits"), want_guests = 0, ret;
	char list[512] = "host", why[256];

	if ((root && chdir(root)) || !mkdtemp(dir)) {
		perror("setup");
		return 1;
	}
	tv_log_set_callback(log_cb, NULL);
	tv_log_set_level(TV_LOG_WARN);
	TV_CHECK(!sh("cp -r tests/samples/svm-exits/host %s/", dir, NULL), "copy svm-exits");
	/* each corrupt sample as guest-N (its host/ directory) */
	for (size_t i = 0; i < 3; i++) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "cp -r tests/samples/%s/host %s/guest-%zu", bad[i], dir, i);
		TV_CHECK(!system(cmd), "%s", cmd);
		snprintf(list + strlen(list), sizeof(list) - strlen(list), ",guest-%zu", i);
		want_guests += sample_events(bad[i]);
	}
	/* guest-q: a header page of garbage */
	TV_CHECK(!sh("cp -r tests/samples/svm-exits/host %s/guest-q && echo garbage > %s/guest-q/header_page",
		     dir, dir), "guest-q");
	strcat(list, ",guest-q");
	{
		char meta[600];
		FILE *f;

		snprintf(meta, sizeof(meta), "%s/session.meta", dir);
		f = fopen(meta, "we");
		TV_CHECK(f != NULL, "session.meta");
		if (f) {
			fprintf(f, "format=tracevisor-session\nversion=1\ndomains=%s\nreference_domain=host\n", list);
			fclose(f);
		}
	}

	ret = count(dir, &host, &guests);
	TV_CHECK(ret == 0, "guest corruption failed the session: %d: %s", ret, logged.data);
	TV_CHECK(host == want_host, "host events: %d, want %d", host, want_host);
	/* at least the events before each corruption, and the pages after it too */
	TV_CHECK(guests >= want_guests, "guest events: %d, want at least %d", guests, want_guests);
	for (size_t i = 0; i < 3; i++) {
		char line[512];

		snprintf(line, sizeof(line),
			 "warning: Corrupt sub-buffers skipped: domain=\"guest:%zu\", count=1, the first: path=\"%s/guest-%zu/cpu",
			 i, dir, i);
		TV_CHECK(logged.data && strstr(logged.data, line), "no %s in: %s", line, logged.data);
		sample_error(bad[i], why, sizeof(why));
		TV_CHECK(why[0] && strstr(logged.data, why), "%s: \"%s\" not said: %s", bad[i], why,
			 logged.data);
	}
	TV_CHECK(logged.data && strstr(logged.data, "warning: Domain quarantined, not read: domain=\"guest:q\"") &&
		 strstr(logged.data, "Corrupt header page format"), "guest-q not quarantined: %s",
		 logged.data);
	for (const char *l = logged.data; l && *l; l = strchr(l, '\n') + 1)
		TV_CHECK(!strncmp(l, "warning: ", 9), "not a warning: %.*s", (int)strcspn(l, "\n"), l);
	printf("host %d events, guests %d (at least %d), 3 bad sub-buffers skipped, 1 domain quarantined\n",
	       host, guests, want_guests);

	/* said once per process: a second read says nothing more */
	tv_strbuf_reset(&logged);
	ret = count(dir, &host, &guests);
	TV_CHECK(!ret && (!logged.data || !logged.len), "second read: %d, said: %s", ret, logged.data);

	/* subsets */
	TV_CHECK(!tv_reader_select_domain("guest:1") && !tv_reader_select_domain("host"), "select");
	ret = count(dir, &host, &guests);
	TV_CHECK(!ret && host == want_host && guests >= sample_events("corrupt-record") &&
		 guests < want_guests + 100, "host + guest-1: %d, %d host, %d guest", ret, host, guests);
	tv_reader_select_domain(NULL);
	TV_CHECK(!tv_reader_select_domain("guest-nosuch"), "select");
	tv_strbuf_reset(&logged);
	ret = count(dir, &host, &guests);
	TV_CHECK(ret == -ENOENT && logged.data && strstr(logged.data, "No such domain in session") &&
		 strstr(logged.data, "domain=\"guest-nosuch\""), "unknown domain: %d: %s", ret, logged.data);
	tv_reader_select_domain(NULL);
	TV_CHECK(!tv_reader_select_domain("guest:q"), "select");
	ret = count(dir, &host, &guests);
	TV_CHECK(ret == -ENOENT, "only a quarantined domain: %d", ret);
	tv_reader_select_domain(NULL);

	/* the host's own corruption is still an error */
	TV_CHECK(!sh("rm -rf %s/host && cp -r tests/samples/corrupt-commit/host %s/host", dir, dir), "host");
	tv_strbuf_reset(&logged);
	ret = count(dir, &host, &guests);
	TV_CHECK(ret == -EBADMSG && logged.data && strstr(logged.data, "Corrupt stream file"),
		 "a corrupt host read as %d: %s", ret, logged.data);

	sh("rm -rf %s%s", dir, "");
	tv_strbuf_free(&logged);
	return tv_test_done("test_isolation");
}
