/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal consumer of libtracevisor-ust's buffers for the unit tests and
 * bench/ust-bench: maps a memfd and reads it exactly as lib/ust/ust_abi.h says
 * (complete sub-buffers in order, zeroed and released; after the writer is
 * gone, the incomplete ones record by record), and the registration
 * messages it exchanges with the process.  Synthetic on purpose: the
 * real consumers (agent, record --ust, the reader's "ust" source) are
 * tested on their own.
 */
#ifndef TV_TEST_UST_CONSUMER_H
#define TV_TEST_UST_CONSUMER_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "ust_abi.h"

struct ustc {
	char *base;
	size_t size;
	struct tv_ust_shm_header *h;
	uint64_t records;	/* events delivered */
	uint64_t uncommitted;	/* TV_UST_ID_UNCOMMITTED skipped in recovery */
	uint64_t recovered;	/* events read record by record from incomplete sub-buffers */
	int bad;		/* malformed records seen */
};

/* Called per event: @payload is the ftrace event (common_type at 0). */
typedef void (*ustc_fn)(void *ctx, uint32_t buf, uint64_t ts, uint16_t id, int32_t tid,
			const char *event, uint16_t size);

static inline int ustc_map(struct ustc *c, int fd)
{
	struct stat sb;

	memset(c, 0, sizeof(*c));
	if (fstat(fd, &sb) < 0)
		return -errno;
	c->size = (size_t)sb.st_size;
	c->base = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c->base == MAP_FAILED)
		return -errno;
	c->h = (struct tv_ust_shm_header *)c->base;
	if (c->h->magic != TV_UST_MAGIC || c->h->shm_size > c->size)
		return -EINVAL;
	return 0;
}

static inline void ustc_unmap(struct ustc *c)
{
	munmap(c->base, c->size);
}

static inline struct tv_ust_buf_ctl *ustc_buf(struct ustc *c, uint32_t i)
{
	return (struct tv_ust_buf_ctl *)(c->base + c->h->bufs_offset + (uint64_t)i * c->h->buf_stride);
}

/*
 * Records of one sub-buffer from offset 0 up to @limit bytes.  @recover:
 * a zero word ends it, TV_UST_ID_UNCOMMITTED is skipped.
 */
static inline void ustc_walk(struct ustc *c, uint32_t i, char *sub, uint32_t limit, bool recover,
			     ustc_fn fn, void *ctx)
{
	uint32_t off = 0;

	while (off + 16 <= limit) {
		uint64_t word = __atomic_load_n((uint64_t *)(sub + off + 8), __ATOMIC_ACQUIRE);
		uint16_t id = (uint16_t)word, size = (uint16_t)(word >> 16);

		if (!word && recover)
			return;
		if (size < 16 || size % 8 || off + size > c->h->subbuf_size) {
			c->bad++;
			return;
		}
		if (id == TV_UST_ID_UNCOMMITTED && recover) {
			c->uncommitted++;
		} else if (id != TV_UST_ID_PADDING) {
			c->records++;
			c->recovered += recover;
			if (fn)
				fn(ctx, i, *(uint64_t *)(sub + off), id, (int32_t)(word >> 32), sub + off + 8,
				   size);
		}
		off += size;
	}
}

/*
 * Read every complete sub-buffer there is now, each also written to @out_fd
 * first unless it is -1 (the bench writes its trace as lttng does); return
 * how many were read.
 */
static inline int ustc_poll_write(struct ustc *c, ustc_fn fn, void *ctx, int out_fd)
{
	uint32_t sb = c->h->subbuf_size, nr = c->h->nr_subbufs;
	int n = 0;

	for (uint32_t i = 0; i < c->h->nr_bufs; i++) {
		struct tv_ust_buf_ctl *b = ustc_buf(c, i);
		char *data = (char *)b + c->h->data_offset;

		for (;;) {
			uint64_t pos = b->consumed, sub = pos / sb;
			uint32_t index = (uint32_t)(sub % nr);
			/* acquire: the records before the count that says they are complete */
			uint64_t commit = __atomic_load_n(&b->commit[index], __ATOMIC_ACQUIRE);

			if (commit < (sub / nr + 1) * sb)
				break;
			if (out_fd >= 0 && write(out_fd, data + (uint64_t)index * sb, sb) != (ssize_t)sb)
				perror("write");
			ustc_walk(c, i, data + (uint64_t)index * sb, sb, false, fn, ctx);
			memset(data + (uint64_t)index * sb, 0, sb);
			/* release: the zeroes before the writers may reserve there again */
			__atomic_store_n(&b->consumed, pos + sb, __ATOMIC_RELEASE);
			n++;
		}
	}
	return n;
}

/* Read every complete sub-buffer there is now; return how many were read. */
static inline int ustc_poll(struct ustc *c, ustc_fn fn, void *ctx)
{
	return ustc_poll_write(c, fn, ctx, -1);
}

/* The writer is gone: what is left, sub-buffer by sub-buffer, up to reserve. */
static inline void ustc_recover(struct ustc *c, ustc_fn fn, void *ctx)
{
	uint32_t sb = c->h->subbuf_size, nr = c->h->nr_subbufs;

	ustc_poll(c, fn, ctx);
	for (uint32_t i = 0; i < c->h->nr_bufs; i++) {
		struct tv_ust_buf_ctl *b = ustc_buf(c, i);
		char *data = (char *)b + c->h->data_offset;
		uint64_t r = b->reserve;

		for (uint64_t pos = b->consumed; pos < r; pos += sb) {
			uint32_t index = (uint32_t)(pos / sb % nr);
			uint64_t limit = r - pos < sb ? r - pos : sb;

			ustc_walk(c, i, data + (uint64_t)index * sb, (uint32_t)limit, true, fn, ctx);
		}
	}
}

static inline uint64_t ustc_lost(struct ustc *c)
{
	uint64_t lost = 0;

	for (uint32_t i = 0; i < c->h->nr_bufs; i++)
		lost += __atomic_load_n(&ustc_buf(c, i)->lost, __ATOMIC_RELAXED);
	return lost;
}

/* One message to the process: @cfg's fields (CONFIG), or none. */
static inline int ustc_send_msg(int fd, uint16_t type, const char *arg, const struct tv_ust_msg *cfg)
{
	struct tv_ust_msg m = { 0 };

	if (cfg)
		m = *cfg;
	m.magic = TV_UST_MAGIC;
	m.version = TV_UST_VERSION;
	m.type = type;
	if (arg)
		snprintf(m.arg, sizeof(m.arg), "%s", arg);
	return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == sizeof(m) ? 0 : -1;
}

/* One message within 5 s, and the descriptor that came with it (or -1). */
static inline int ustc_recv_msg(int fd, struct tv_ust_msg *m, int *passed)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct pollfd p = { fd, POLLIN, 0 };
	struct cmsghdr *c;

	if (passed)
		*passed = -1;
	if (poll(&p, 1, 5000) != 1 || recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) != sizeof(*m) ||
	    m->magic != TV_UST_MAGIC)
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && passed)
			memcpy(passed, CMSG_DATA(c), sizeof(int));
	return 0;
}

#endif
