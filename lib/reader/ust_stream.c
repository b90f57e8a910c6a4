// SPDX-License-Identifier: LGPL-2.1
/*
 * The session reader's stream for a domain of kind "ust": cpuN.ust holds
 * buffer N's sub-buffers of a traced process as the consumer read them
 * (lib/ust/ust_abi.h records: an 8-byte time stamp, then an ftrace-style event
 * whose common_type is the id of a format under events/).  Each record is
 * handed to the merge as a libtraceevent record; its time is the
 * process's clock, which is its parent domain's (doc/session-format.md).
 *
 * The file is untrusted like any session file: every record's size is
 * checked against its sub-buffer before it is read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "reader_internal.h"
#include "ust_abi.h"

static int ust_stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu)
{
	struct stat sb;

	memset(st, 0, sizeof(*st));
	st->dom = dom;
	st->cpu = cpu;
	st->fd = -1;
	snprintf(st->path, sizeof(st->path), "%s/cpu%d.ust", dom->dir, cpu);
	st->fd = tv_domain_open_file(dom, st->path);
	if (st->fd < 0) {
		int err = -st->fd;

		st->fd = -1;
		if (err == ENOENT) {	/* a buffer nothing was read from */
			st->done = 1;
			return 0;
		}
		if (err != TV_EUNSAFE)
			tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
		return -err;
	}
	if (fstat(st->fd, &sb))
		return -errno;
	st->file_size = (uint64_t)sb.st_size;
	if (st->file_size % dom->subbuf_size)
		tv_warn("Stream file is not whole sub-buffers, its tail is ignored: path=\"%s\", size=%llu, subbuf_size=%zu",
			st->path, (unsigned long long)st->file_size, dom->subbuf_size);
	st->page = malloc(dom->subbuf_size);
	if (!st->page)
		return -ENOMEM;
	st->page_off = (uint64_t)-1;
	st->data_len = 0;
	return 0;
}

/* The next whole sub-buffer into st->page: 1, 0 at the end, -errno. */
static int ust_stream_load(struct tv_cpu_stream *st)
{
	size_t sb = st->dom->subbuf_size, done = 0;
	uint64_t off = st->page_off == (uint64_t)-1 ? 0 : st->page_off + sb;

	if (off + sb > st->file_size)
		return 0;
	while (done < sb) {
		ssize_t n = pread(st->fd, st->page + done, sb - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			tv_err("Cannot read stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
			return -err;
		}
		done += (size_t)n;
	}
	st->page_off = off;
	st->data_len = sb;
	st->rec_off = 0;
	return 1;
}

static int ust_stream_corrupt(struct tv_cpu_stream *st, const char *why)
{
	tv_err("Corrupt stream file: path=\"%s\", offset=%llu: %s", st->path,
	       (unsigned long long)(st->page_off + st->rec_off), why);
	st->done = 1;
	return -EBADMSG;
}

static int ust_stream_next(struct tv_cpu_stream *st)
{
	struct tv_ust_record_hdr h;
	const char *why = NULL;
	int ret;

	if (st->done)
		return 0;
	for (;;) {
		if (st->page_off == (uint64_t)-1 || st->data_len - st->rec_off < sizeof(h)) {
			ret = ust_stream_load(st);
			if (ret <= 0) {
				st->done = 1;
				return ret;
			}
		}
		memcpy(&h, st->page + st->rec_off, sizeof(h));
		if (h.id != TV_UST_ID_PADDING)
			break;
		st->rec_off = st->data_len;	/* padding ends the sub-buffer */
	}
	if (h.size < sizeof(h) || h.size % TV_UST_RECORD_ALIGN || h.size > st->data_len - st->rec_off)
		return ust_stream_corrupt(st, "record size not a multiple of 8 within its sub-buffer");
	memset(&st->rec, 0, sizeof(st->rec));
	st->rec.ts = h.ts;
	st->rec.offset = st->page_off + st->rec_off;
	st->rec.size = h.size - 8;
	st->rec.record_size = h.size - 8;
	st->rec.data = st->page + st->rec_off + 8;
	st->rec.cpu = st->cpu;
	st->event = tv_domain_checked_event(st->dom, &st->rec, &st->pid, &why);
	if (!st->event)
		return ust_stream_corrupt(st, why);
	st->rec_off += h.size;
	return 1;
}

static void ust_stream_close(struct tv_cpu_stream *st)
{
	if (st->fd >= 0)
		close(st->fd);
	free(st->page);
	st->page = NULL;
	st->fd = -1;
}

const struct tv_stream_source tv_ust_source = {
	.kind = "ust",
	.open = ust_stream_open,
	.next = ust_stream_next,
	.close = ust_stream_close,
};
