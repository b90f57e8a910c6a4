// SPDX-License-Identifier: LGPL-2.1
/*
 * One CPU's raw stream: a sequence of ring-buffer sub-buffers as spliced
 * from trace_pipe_raw.  Each sub-buffer is read and validated on its own
 * (so memory stays one sub-buffer per CPU) and handed to libtraceevent's
 * kbuffer, which knows the record encoding: time extends, absolute time
 * stamps and padding.  Everything kbuffer is given has been bounds-checked
 * first, record by record, since a session may come from elsewhere; the
 * missed-events flags and count are read here.
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
#define COMMIT_MISSED_EVENTS 0x80000000ULL
#define COMMIT_MISSED_STORED 0x40000000ULL
/* Record types (type_len) that are no event. */
#define RB_TYPE_PADDING 29
#define RB_TYPE_TIME_EXTEND 30
#define RB_TYPE_TIME_STAMP 31

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

static uint64_t page_commit(const struct tv_cpu_stream *st)
{
	return st->dom->long_size == 8 ? *(uint64_t *)(st->page + 8) : *(uint32_t *)(st->page + 8);
}

static void page_set_commit(struct tv_cpu_stream *st, uint64_t commit)
{
	if (st->dom->long_size == 8)
		*(uint64_t *)(st->page + 8) = commit;
	else
		*(uint32_t *)(st->page + 8) = (uint32_t)commit;
}

/*
 * Walk the records of @len bytes of data the way kbuffer will, and return
 * the length of the well-formed prefix (@len, or the offset of the first
 * bad record with @why set).  kbuffer trusts record lengths: a padding
 * length of -4 would make it read the same record for ever, one that
 * points backwards would loop over earlier events.
 */
static size_t page_check_records(const unsigned char *data, size_t len, const char **why)
{
	size_t off = 0;

	*why = NULL;
	while (off < len) {
		uint32_t head, word = 0;
		unsigned int type_len;
		uint64_t next;

		if (len - off < 4) {
			*why = "record header outside its sub-buffer";
			return off;
		}
		memcpy(&head, data + off, 4);
		type_len = head & 31;
		if (type_len == 0 || type_len >= RB_TYPE_PADDING) {
			if (len - off < 8) {
				*why = "record outside its sub-buffer";
				return off;
			}
			memcpy(&word, data + off + 4, 4);
		}
		if (type_len == RB_TYPE_PADDING) {
			/* array[0]: bytes after the header, itself included */
			next = off + 4 + (uint64_t)word;
			if ((int32_t)word < 4) {	/* kbuffer reads it as an int */
				*why = "padding record does not advance";
				return off;
			}
		} else if (type_len >= RB_TYPE_TIME_EXTEND) {
			next = off + 8;
		} else if (type_len == 0) {
			/* array[0]: payload length + 4 */
			if (word < 8) {
				*why = "record length too small";
				return off;
			}
			next = off + 8 + (((uint64_t)word - 4 + 3) & ~3ULL);
		} else {
			next = off + 4 + 4ULL * type_len;
		}
		if (next > len) {
			*why = type_len == RB_TYPE_PADDING ? "padding record outside its sub-buffer"
							   : "record outside its sub-buffer";
			return off;
		}
		off = (size_t)next;
	}
	return len;
}

/* Events lost before the sub-buffer: from its commit flags, not from
 * kbuffer_missed_events(), which says 0 when the first record is a time
 * stamp or padding.  Return 0 or a negative errno (logged). */
static int page_missed(struct tv_cpu_stream *st, uint64_t commit, size_t header)
{
	size_t size = st->dom->subbuf_size;
	long long missed;

	if (!(commit & COMMIT_MISSED_EVENTS))
		return 0;
	missed = -1;	/* lost, but no room to store how many */
	if (commit & COMMIT_MISSED_STORED) {
		uint64_t count = 0;

		if (st->data_len + (size_t)st->dom->long_size > size - header)
			return stream_corrupt(st, st->page_off, "missed-events count outside its sub-buffer");
		memcpy(&count, st->page + header + st->data_len, (size_t)st->dom->long_size);
		missed = count > LLONG_MAX ? LLONG_MAX : (long long)count;
	}
	/* a page with no events passes its losses on to the next one */
	if (st->missed < 0 || missed < 0)
		st->missed = -1;
	else
		st->missed += missed;
	return 0;
}

/* Read and validate the sub-buffer at @off. Return 1 loaded, 0 empty, <0 bad. */
static int stream_load_page(struct tv_cpu_stream *st, uint64_t off)
{
	size_t size = st->dom->subbuf_size;
	size_t header = 8 + (size_t)st->dom->long_size;
	const char *why;
	uint64_t commit;
	size_t good;
	ssize_t n;
	int ret;

	n = pread(st->fd, st->page, size, (off_t)off);
	if (n < 0) {
		tv_err("Cannot read stream file: path=\"%s\", offset=%llu, errno=%d", st->path,
		       (unsigned long long)off, errno);
		return -errno;
	}
	if ((size_t)n < size)
		return stream_corrupt(st, off, "truncated sub-buffer");
	memset(st->page + size, 0, PAGE_SLACK);
	commit = page_commit(st);
	st->data_len = (size_t)(commit & ~COMMIT_FLAGS_MASK);
	if ((commit >> 32) && st->dom->long_size == 8)
		return stream_corrupt(st, off, "sub-buffer commit word has unknown flags");
	if (st->data_len > size - header)
		return stream_corrupt(st, off, "sub-buffer commit exceeds its size");
	st->page_off = off;
	ret = page_missed(st, commit, header);
	if (ret)
		return ret;
	good = page_check_records(st->page + header, st->data_len, &why);
	if (why && good == 0)
		return stream_corrupt(st, off + header, why);
	st->data_len = good;
	if (st->data_len == 0)
		return 0;
	/* kbuffer gets the good records only (and no flags: losses are known);
	 * the real commit word goes back for stream_page_done(). */
	page_set_commit(st, good);
	ret = kbuffer_load_subbuffer(st->kbuf, st->page);
	page_set_commit(st, commit);
	if (ret < 0)
		return stream_corrupt(st, off, "kbuffer rejected the sub-buffer");
	return 1;
}

/* The loaded sub-buffer has no more events: was all of it good? */
static int stream_page_done(struct tv_cpu_stream *st)
{
	size_t header = 8 + (size_t)st->dom->long_size;
	const char *why;
	size_t len = (size_t)(page_commit(st) & ~COMMIT_FLAGS_MASK);

	if (st->data_len == len)
		return 0;
	page_check_records(st->page + header, len, &why);
	return stream_corrupt(st, st->page_off + header + st->data_len,
			      why ? why : "bad record");
}

/* Make st->rec the event kbuffer points at; check it lies in the page. */
static int stream_take_event(struct tv_cpu_stream *st, void *data, unsigned long long ts)
{
	unsigned char *p = data;
	size_t header = 8 + (size_t)st->dom->long_size;
	int size = kbuffer_event_size(st->kbuf);
	const char *why = NULL;
	uint64_t off = st->page_off + (uint64_t)(p - st->page);
	/* errors name the record's header, not its payload */
	uint64_t rec_off = st->page_off + (uint64_t)kbuffer_curr_offset(st->kbuf);

	if (p < st->page + header || size <= 0 ||
	    p + size > st->page + header + st->data_len)
		return stream_corrupt(st, rec_off, "record outside its sub-buffer");
	memset(&st->rec, 0, sizeof(st->rec));
	st->rec.ts = ts;
	st->rec.offset = off;
	st->rec.size = size;
	st->rec.record_size = size;
	st->rec.data = data;
	st->rec.cpu = st->cpu;
	st->rec.missed_events = st->missed;
	st->missed = 0;
	st->event = tv_domain_checked_event(st->dom, &st->rec, &st->pid, &why);
	if (!st->event)
		return stream_corrupt(st, rec_off, why);
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

		if (st->page_off != (uint64_t)-1) {
			ret = stream_page_done(st);
			if (ret)
				return ret;
		}
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
