// SPDX-License-Identifier: LGPL-2.1
/*
 * One CPU's raw stream: a sequence of ring-buffer sub-buffers as spliced
 * from trace_pipe_raw.  Each sub-buffer is read and validated on its own
 * (so memory stays one sub-buffer per CPU) and handed to libtraceevent's
 * kbuffer, which knows the record encoding: time extends, absolute time
 * stamps, padding and the missed-events flags.  Everything kbuffer is given
 * has been bounds-checked first, since a session may come from elsewhere.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event-parse.h>
#include <kbuffer.h>

#include "internal.h"

/* Slack after the sub-buffer: kbuffer reads record headers a few bytes ahead. */
#define PAGE_SLACK 64
/* Flags in the sub-buffer's commit word (kernel's RB_MISSED_*). */
#define COMMIT_FLAGS_MASK 0xc0000000ULL

static int stream_corrupt(struct tv_cpu_stream *st, uint64_t off, const char *why)
{
	tv_err("Corrupt stream file: path=\"%s\", offset=%llu: %s", st->path,
	       (unsigned long long)off, why);
	st->done = 1;
	return -EBADMSG;
}

int tv_cpu_stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu)
{
	struct stat sb;

	memset(st, 0, sizeof(*st));
	st->dom = dom;
	st->cpu = cpu;
	st->fd = -1;
	snprintf(st->path, sizeof(st->path), "%s/cpu%d.raw", dom->dir, cpu);
	st->fd = open(st->path, O_RDONLY | O_CLOEXEC);
	if (st->fd < 0) {
		if (errno == ENOENT) {	/* a CPU with no file had no events */
			st->done = 1;
			return 0;
		}
		tv_err("Cannot open stream file: path=\"%s\", errno=%d", st->path, errno);
		return -errno;
	}
	if (fstat(st->fd, &sb))
		return -errno;
	st->file_size = (uint64_t)sb.st_size;
	st->page = calloc(1, dom->subbuf_size + PAGE_SLACK);
	st->kbuf = kbuffer_alloc(dom->long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
				 KBUFFER_ENDIAN_LITTLE);
	if (!st->page || !st->kbuf)
		return -ENOMEM;
	st->page_off = (uint64_t)-1;
	if (st->file_size % dom->subbuf_size)
		tv_warn("Stream file is not a whole number of sub-buffers: path=\"%s\", size=%llu, subbuf_size=%zu",
			st->path, (unsigned long long)st->file_size, dom->subbuf_size);
	return 0;
}

/* Read and validate the sub-buffer at @off. Return 1 loaded, 0 empty, <0 bad. */
static int stream_load_page(struct tv_cpu_stream *st, uint64_t off)
{
	size_t size = st->dom->subbuf_size;
	size_t header = 8 + (size_t)st->dom->long_size;
	uint64_t commit;
	ssize_t n;

	n = pread(st->fd, st->page, size, (off_t)off);
	if (n < 0) {
		tv_err("Cannot read stream file: path=\"%s\", offset=%llu, errno=%d", st->path,
		       (unsigned long long)off, errno);
		return -errno;
	}
	if ((size_t)n < size)
		return stream_corrupt(st, off, "truncated sub-buffer");
	memset(st->page + size, 0, PAGE_SLACK);
	commit = st->dom->long_size == 8 ? *(uint64_t *)(st->page + 8)
					 : *(uint32_t *)(st->page + 8);
	st->data_len = (size_t)(commit & ~COMMIT_FLAGS_MASK);
	if ((commit >> 32) && st->dom->long_size == 8)
		return stream_corrupt(st, off, "sub-buffer commit word has unknown flags");
	if (st->data_len > size - header)
		return stream_corrupt(st, off, "sub-buffer commit exceeds its size");
	st->page_off = off;
	if (st->data_len == 0)
		return 0;
	if (kbuffer_load_subbuffer(st->kbuf, st->page) < 0)
		return stream_corrupt(st, off, "kbuffer rejected the sub-buffer");
	st->missed = kbuffer_missed_events(st->kbuf);
	return 1;
}

/* Make st->rec the event kbuffer points at; check it lies in the page. */
static int stream_take_event(struct tv_cpu_stream *st, void *data, unsigned long long ts)
{
	unsigned char *p = data;
	size_t header = 8 + (size_t)st->dom->long_size;
	int size = kbuffer_event_size(st->kbuf);
	const char *why = NULL;
	uint64_t off = st->page_off + (uint64_t)(p - st->page);

	if (p < st->page + header || size <= 0 ||
	    p + size > st->page + header + st->data_len)
		return stream_corrupt(st, off, "record outside its sub-buffer");
	memset(&st->rec, 0, sizeof(st->rec));
	st->rec.ts = ts;
	st->rec.offset = off;
	st->rec.size = size;
	st->rec.record_size = size;
	st->rec.data = data;
	st->rec.cpu = st->cpu;
	st->rec.missed_events = st->missed;
	st->missed = 0;
	if (!tv_domain_checked_event(st->dom, &st->rec, &why))
		return stream_corrupt(st, off, why);
	return 1;
}

int tv_cpu_stream_next(struct tv_cpu_stream *st)
{
	unsigned long long ts = 0;
	void *data = NULL;

	if (st->done)
		return 0;
	if (st->page_off != (uint64_t)-1 && st->data_len)
		data = kbuffer_next_event(st->kbuf, &ts);
	while (!data) {
		uint64_t next = st->page_off == (uint64_t)-1 ? 0
							      : st->page_off + st->dom->subbuf_size;
		int ret;

		if (next >= st->file_size) {
			st->done = 1;
			return 0;
		}
		ret = stream_load_page(st, next);
		if (ret < 0)
			return ret;
		if (ret > 0)
			data = kbuffer_read_event(st->kbuf, &ts);
	}
	return stream_take_event(st, data, ts);
}

void tv_cpu_stream_close(struct tv_cpu_stream *st)
{
	if (st->fd >= 0)
		close(st->fd);
	if (st->kbuf)
		kbuffer_free(st->kbuf);
	free(st->page);
	st->fd = -1;
	st->kbuf = NULL;
	st->page = NULL;
}
