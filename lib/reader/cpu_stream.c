// SPDX-License-Identifier: LGPL-2.1
/*
 * One CPU's raw stream: a sequence of ring-buffer sub-buffers as spliced
 * from trace_pipe_raw.  Each sub-buffer is read and validated on its own
 * (so memory stays one sub-buffer per CPU), record by record, since a
 * session may come from elsewhere; then its records are decoded here -
 * time extends, absolute time stamps (with the kernel's rule for their
 * top 5 bits, crossing 2^59 included), padding and discarded events - in
 * the kernel's layout (kernel/trace/ring_buffer.c).  libtraceevent's
 * kbuffer did the decoding before; it cost a fifth of a report's time,
 * for a walk page_check_records() already makes.  The missed-events flags
 * and count are read here too.
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

#include "reader_internal.h"

/* Slack after the sub-buffer, zeroed: a record header is never read past it. */
#define PAGE_SLACK 64
/* Flags in the sub-buffer's commit word (kernel's RB_MISSED_*). */
#define COMMIT_FLAGS_MASK 0xc0000000ULL
#define COMMIT_MISSED_EVENTS 0x80000000ULL
#define COMMIT_MISSED_STORED 0x40000000ULL
/* Record types (type_len) that are no event. */
#define RB_TYPE_PADDING 29
#define RB_TYPE_TIME_EXTEND 30
#define RB_TYPE_TIME_STAMP 31
/* Time stamps: a delta has 27 bits; an absolute stamp keeps 59, not these. */
#define TS_SHIFT 27
#define TS_MSB (0xf8ULL << 56)

static int stream_corrupt(struct tv_cpu_stream *st, uint64_t off, const char *why)
{
	tv_err("Corrupt stream file: path=\"%s\", offset=%llu: %s", st->path,
	       (unsigned long long)off, why);
	st->done = 1;
	return -EBADMSG;
}

/*
 * A sub-buffer that fails validation.  In a guest's domain
 * (dom->skip_bad_pages) it is left, counted, and the stream reads on at
 * the next one: the guest's valid sub-buffers are still read, and the
 * session's other domains never lose theirs (lib/reader/reader.c says how many
 * were left).  Elsewhere the error (logged).  Return: 0 or -EBADMSG.
 */
static int stream_bad_page(struct tv_cpu_stream *st, uint64_t off, const char *why)
{
	if (!st->dom->skip_bad_pages)
		return stream_corrupt(st, off, why);
	if (!st->page_bad && !st->bad_pages++) {
		st->bad_off = off;
		st->bad_why = why;
	}
	st->page_bad = 1;
	st->data_len = 0;
	st->rec_off = 0;
	return 0;
}

/* cpuN.raw.zst instead of cpuN.raw (tv_session_compress): its size is inside. */
static int stream_open_compressed(struct tv_cpu_stream *st)
{
	int ret;

	strcat(st->path, ".zst");
	st->fd = tv_domain_open_file(st->dom, st->path);
	if (st->fd == -ENOENT) {
		st->path[strlen(st->path) - 4] = '\0';
		st->done = 1;	/* neither file: that CPU had no events */
		return 0;
	}
	if (st->fd < 0) {
		int err = -st->fd;

		if (err != TV_EUNSAFE)
			tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
		return -err;
	}
	ret = tv_zstream_open(st->fd, &st->zs, &st->file_size);
	if (ret == -EBADMSG)
		tv_err("Corrupt stream file: path=\"%s\", offset=0: not a zstd frame with its size",
		       st->path);
	else if (ret)
		tv_err("Cannot read stream file: path=\"%s\", errno=%d (%s)", st->path, -ret, strerror(-ret));
	return ret;
}

int tv_cpu_stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu)
{
	struct stat sb;
	int ret;

	memset(st, 0, sizeof(*st));
	st->dom = dom;
	st->cpu = cpu;
	st->fd = -1;
	snprintf(st->path, sizeof(st->path) - 4, "%s/cpu%d.raw", dom->dir, cpu);
	st->fd = tv_domain_open_file(dom, st->path);
	if (st->fd == -ENOENT) {
		ret = stream_open_compressed(st);
		if (ret || st->done)
			return ret;
	} else if (st->fd < 0) {
		int err = -st->fd;

		if (err != TV_EUNSAFE)
			tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
		return -err;
	} else if (fstat(st->fd, &sb)) {
		int err = errno;

		tv_err("Cannot read stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
		return -err;
	} else {
		st->file_size = (uint64_t)sb.st_size;
	}
	st->page = calloc(1, dom->subbuf_size + PAGE_SLACK);
	if (!st->page)
		return -ENOMEM;
	st->page_off = (uint64_t)-1;
	if (dom->incomplete)	/* a killed recorder's last write may be partial */
		st->file_size -= st->file_size % dom->subbuf_size;
	else if (st->file_size % dom->subbuf_size)
		tv_warn("Stream file is not a whole number of sub-buffers: path=\"%s\", size=%llu, subbuf_size=%zu",
			st->path, (unsigned long long)st->file_size, dom->subbuf_size);
	return 0;
}

/*
 * Kernels whose RB_MISSED_EVENTS is an int (1 << 31) sign-extend it into
 * the 64-bit commit word: seen on the first page an overwriting ring (a
 * flight recorder) gives after it wrapped.  Those high bits are that flag.
 */
static uint64_t page_commit(const struct tv_cpu_stream *st)
{
	uint64_t commit;

	if (st->dom->long_size != 8)
		return *(uint32_t *)(st->page + 8);
	commit = *(uint64_t *)(st->page + 8);
	if ((commit >> 32) == 0xffffffffULL && (commit & COMMIT_MISSED_EVENTS))
		commit &= 0xffffffffULL;
	return commit;
}

/*
 * Walk the records of @len bytes of data the way stream_next_record() will,
 * and return the length of the well-formed prefix (@len, or the offset of
 * the first bad record with @why set).  The decoder trusts record lengths
 * from here on: a padding length of -4 would read the same record for
 * ever, one that points backwards would loop over earlier events.
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
			if ((int32_t)word < 4) {	/* a length, and never backwards */
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

/* Events lost before the sub-buffer, from its commit flags (not from the
 * first record: it may be a time stamp or padding).  Return 0 or a
 * negative errno (logged). */
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
			return stream_bad_page(st, st->page_off, "missed-events count outside its sub-buffer");
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

/*
 * The sub-buffer at @off into st->page: pread, or the next one out of the
 * decompressor (sub-buffers are read in file order).  Return: bytes read,
 * -EBADMSG (said) for bad compressed data, or -errno.
 */
static ssize_t stream_read_page(struct tv_cpu_stream *st, uint64_t off)
{
	size_t size = st->dom->subbuf_size;
	const char *why = "";
	char msg[160];
	ssize_t n;

	if (!st->zs) {
		n = pread(st->fd, st->page, size, (off_t)off);
		return n < 0 ? -errno : n;
	}
	if (off != tv_zstream_pos(st->zs))
		return stream_corrupt(st, off, "compressed stream read out of order");
	n = tv_zstream_read(st->zs, st->page, size, &why);
	if (n != -EBADMSG)
		return n;
	snprintf(msg, sizeof(msg), "compressed data is corrupt (%s)", why);
	return stream_corrupt(st, off, msg);
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

	n = stream_read_page(st, off);
	if (n == -EBADMSG)
		return -EBADMSG;
	if (n < 0) {
		tv_err("Cannot read stream file: path=\"%s\", offset=%llu, errno=%d (%s)", st->path,
		       (unsigned long long)off, (int)-n, strerror((int)-n));
		return (int)n;
	}
	if ((size_t)n < size)
		return stream_corrupt(st, off, "truncated sub-buffer");
	st->page_off = off;
	st->page_bad = 0;
	memset(st->page + size, 0, PAGE_SLACK);
	commit = page_commit(st);
	st->data_len = (size_t)(commit & ~COMMIT_FLAGS_MASK);
	if ((commit >> 32) && st->dom->long_size == 8)
		return stream_bad_page(st, off, "sub-buffer commit word has unknown flags");
	if (st->data_len > size - header)
		return stream_bad_page(st, off, "sub-buffer commit exceeds its size");
	ret = page_missed(st, commit, header);
	if (ret || st->page_bad)
		return ret;
	good = page_check_records(st->page + header, st->data_len, &why);
	if (why && good == 0)
		return stream_bad_page(st, off + header, why);
	st->data_len = good;
	if (st->data_len == 0)
		return 0;
	memcpy(&st->cur_ts, st->page, 8);
	st->rec_off = 0;
	return 1;
}

/* The loaded sub-buffer has no more events: was all of it good? */
static int stream_page_done(struct tv_cpu_stream *st)
{
	size_t header = 8 + (size_t)st->dom->long_size;
	const char *why;
	size_t len = (size_t)(page_commit(st) & ~COMMIT_FLAGS_MASK);

	if (st->page_bad || st->data_len == len)
		return 0;
	page_check_records(st->page + header, len, &why);
	return stream_bad_page(st, st->page_off + header + st->data_len, why ? why : "bad record");
}

/* The kernel's rb_fix_abs_ts(): an absolute stamp lacks the clock's top bits. */
static uint64_t fix_abs_ts(uint64_t abs, uint64_t cur)
{
	if (cur & TS_MSB) {
		abs |= cur & TS_MSB;
		if (abs < cur)	/* the clock crossed a 2^59 boundary */
			abs += 1ULL << 59;
	}
	return abs;
}

/*
 * The next data record of the loaded sub-buffer, its time stamp in
 * st->cur_ts; NULL when there is none.  The records were checked by
 * page_check_records(): every length is in bounds.
 */
static unsigned char *stream_next_record(struct tv_cpu_stream *st, size_t *len, size_t *hdr_off)
{
	unsigned char *data = st->page + 8 + (size_t)st->dom->long_size;

	while (st->rec_off < st->data_len) {
		size_t off = st->rec_off;
		uint32_t head, word = 0;
		unsigned int type_len;
		uint64_t delta;

		memcpy(&head, data + off, 4);
		type_len = head & 31;
		delta = head >> 5;
		if (type_len == 0 || type_len >= RB_TYPE_PADDING)
			memcpy(&word, data + off + 4, 4);
		switch (type_len) {
		case RB_TYPE_PADDING:	/* a discarded event keeps its delta */
			st->cur_ts += delta;
			st->rec_off = off + 4 + word;
			continue;
		case RB_TYPE_TIME_EXTEND:
			st->cur_ts += ((uint64_t)word << TS_SHIFT) + delta;
			st->rec_off = off + 8;
			continue;
		case RB_TYPE_TIME_STAMP:
			st->cur_ts = fix_abs_ts(((uint64_t)word << TS_SHIFT) + delta, st->cur_ts);
			st->rec_off = off + 8;
			continue;
		case 0:
			*len = ((size_t)word - 4 + 3) & ~(size_t)3;
			st->rec_off = off + 8 + *len;
			break;
		default:
			*len = 4 * (size_t)type_len;
			st->rec_off = off + 4 + *len;
			break;
		}
		st->cur_ts += delta;
		*hdr_off = off;
		return data + st->rec_off - *len;
	}
	return NULL;
}

/* Make st->rec the record at @data; check it is an event of the domain. */
static int stream_take_event(struct tv_cpu_stream *st, unsigned char *data, size_t len,
			     size_t hdr_off)
{
	size_t header = 8 + (size_t)st->dom->long_size;
	const char *why = NULL;
	/* errors name the record's header, not its payload */
	uint64_t rec_off = st->page_off + header + hdr_off;

	if (len == 0 || len > INT_MAX)
		return stream_bad_page(st, rec_off, "record outside its sub-buffer");
	memset(&st->rec, 0, sizeof(st->rec));
	st->rec.ts = st->cur_ts;
	st->rec.offset = st->page_off + (uint64_t)(data - st->page);
	st->rec.size = (int)len;
	st->rec.record_size = (int)len;
	st->rec.data = data;
	st->rec.cpu = st->cpu;
	st->rec.missed_events = st->missed;
	st->missed = 0;
	st->event = tv_domain_checked_event(st->dom, &st->rec, &st->pid, &why);
	if (!st->event)
		return stream_bad_page(st, rec_off, why);	/* 0: the rest of it is left */
	return 1;
}

/* The next record's data: 1 with @data set, 0 at the end, -errno. */
static int stream_next_data(struct tv_cpu_stream *st, unsigned char **data, size_t *len,
			    size_t *hdr_off)
{
	*data = NULL;
	if (st->page_off != (uint64_t)-1 && st->data_len)
		*data = stream_next_record(st, len, hdr_off);
	while (!*data) {
		uint64_t next = st->page_off == (uint64_t)-1 ? 0
							      : st->page_off + st->dom->subbuf_size;
		int ret;

		if (st->page_off != (uint64_t)-1) {
			ret = stream_page_done(st);
			if (ret)
				return ret;
		}
		if (next >= st->file_size) {
			st->done = !st->dom->follow;	/* followed: refresh() may extend it */
			return 0;
		}
		ret = stream_load_page(st, next);
		if (ret < 0)
			return ret;
		if (ret > 0)
			*data = stream_next_record(st, len, hdr_off);
	}
	return 1;
}

int tv_cpu_stream_next(struct tv_cpu_stream *st)
{
	unsigned char *data;
	size_t len = 0, hdr_off = 0;
	int ret;

	if (st->done)
		return 0;
	do {
		ret = stream_next_data(st, &data, &len, &hdr_off);
		if (ret > 0)
			ret = stream_take_event(st, data, len, hdr_off);
	} while (ret == 0 && st->page_bad && !st->done);	/* a guest's bad record: read on */
	return ret;
}

void tv_cpu_stream_close(struct tv_cpu_stream *st)
{
	tv_zstream_close(st->zs);
	st->zs = NULL;
	if (st->fd >= 0)
		close(st->fd);
	free(st->page);
	st->fd = -1;
	st->page = NULL;
}

int tv_cpu_stream_refresh(struct tv_cpu_stream *st)
{
	struct stat sb;

	if (st->zs || st->fd < 0)
		return 0;	/* compressed after the recording: final */
	if (fstat(st->fd, &sb)) {
		int err = errno;

		tv_err("Cannot read stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
		return -err;
	}
	/* the capture writes whole sub-buffers; one may be half written now */
	st->file_size = (uint64_t)sb.st_size - (uint64_t)sb.st_size % st->dom->subbuf_size;
	return 0;
}

uint64_t tv_cpu_stream_done_bytes(const struct tv_cpu_stream *st)
{
	/* the loaded sub-buffer is still in use, those before it are done */
	return st->page_off == (uint64_t)-1 ? 0 : st->page_off;
}

const struct tv_stream_source tv_ftrace_source = {
	.kind = "linux-ftrace",
	.open = tv_cpu_stream_open,
	.next = tv_cpu_stream_next,
	.close = tv_cpu_stream_close,
	.refresh = tv_cpu_stream_refresh,
	.done_bytes = tv_cpu_stream_done_bytes,
};
