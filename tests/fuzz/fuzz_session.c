// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the whole session reader (tv_reader_open/next and the
 * field decoder) on a session directory built from the input, so that
 * session.meta, meta, vcpus, sync/transforms, header_page, formats, ftrace
 * pages, Xen records and zstd streams are all untrusted.
 *
 * Input: a sequence of files, each "PATH\n" + 4-byte little-endian length
 * + that many bytes.  PATH is relative to the session; components "..",
 * "." and empty ones are dropped (the target writes only inside its own
 * directory).  tests/fuzz/session-seeds.py turns tests/samples into seeds.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"

static char base[64];

static void quiet(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	(void)ctx;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Make @rel's parent directories under the session, safe components only. */
static int safe_path(const char *rel, size_t len, char *out, size_t size)
{
	size_t o = (size_t)snprintf(out, size, "%s/s", base);
	size_t i = 0;

	mkdir(out, 0755);
	while (i < len) {
		size_t n = 0;

		while (i + n < len && rel[i + n] != '/')
			n++;
		if (n && !(n == 1 && rel[i] == '.') && !(n == 2 && rel[i] == '.' && rel[i + 1] == '.')) {
			if (o + 1 + n + 1 >= size || memchr(rel + i, '\0', n))
				return -1;
			out[o++] = '/';
			memcpy(out + o, rel + i, n);
			o += n;
			out[o] = '\0';
			if (i + n < len)
				mkdir(out, 0755);
		}
		i += n + 1;
	}
	return o > strlen(base) + 2 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[80], path[512];
	struct tv_reader *rd = NULL;
	struct tv_strbuf sb = { 0 };
	struct tv_event ev;
	size_t off = 0;
	int ret, n = 0;

	if (!base[0]) {
		snprintf(base, sizeof(base), "%s/tv-fuzz-session.%d",
			 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", (int)getpid());
		mkdir(base, 0700);
		tv_log_set_callback(quiet, NULL);
	}
	while (off < size) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		uint32_t len;
		int fd;

		if (!nl || (size_t)(nl - data) + 5 > size)
			break;
		memcpy(&len, nl + 1, 4);
		if (len > size - (size_t)(nl - data) - 5)
			len = (uint32_t)(size - (size_t)(nl - data) - 5);
		if (!safe_path((const char *)data + off, (size_t)(nl - data) - off, path, sizeof(path))) {
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
			if (fd >= 0) {
				if (write(fd, nl + 5, len) < 0)
					abort();
				close(fd);
			}
		}
		off = (size_t)(nl - data) + 5 + len;
	}
	snprintf(dir, sizeof(dir), "%s/s", base);
	ret = tv_reader_open(dir, &rd);
	while (!ret && n++ < 100000 && (ret = tv_reader_next(rd, &ev)) > 0) {
		tv_strbuf_reset(&sb);
		tv_event_fields_json(&ev, &sb);
		ret = 0;
	}
	tv_reader_close(rd);
	tv_strbuf_free(&sb);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
