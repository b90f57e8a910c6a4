// SPDX-License-Identifier: LGPL-2.1
/*
 * Writing a stream file straight from a mapping that not every file system
 * can take (tv_write_mapped, lib/tv_internal.h).
 *
 * The Xen consumer writes its windows from the foreign (privcmd) mapping of
 * Xen's trace buffers, without a copy.  ext4 and tmpfs copy from it like
 * from any memory; 9p (virtfs) and NFS direct I/O pin the pages instead,
 * and pages of a VM_PFNMAP mapping cannot be pinned: the write fails with
 * EFAULT.  Such a file then gets its bytes through a copy in a buffer of
 * ours, from that write on: the next EFAULT would come just the same.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tv_internal.h"

#define BOUNCE_SIZE (256u * 1024)	/* one write per 256 KiB copied */

static int write_bounced(int fd, const char *p, size_t len, struct tv_bounce *b)
{
	if (!b->buf) {
		b->buf = malloc(BOUNCE_SIZE);
		if (!b->buf)
			return -ENOMEM;
	}
	while (len) {
		size_t n = len < BOUNCE_SIZE ? len : BOUNCE_SIZE;
		int ret;

		memcpy(b->buf, p, n);
		ret = tv_write_all(fd, b->buf, n);
		if (ret)
			return ret;
		p += n;
		len -= n;
	}
	return 0;
}

int tv_write_mapped(int fd, const struct iovec *iov, int n, struct tv_bounce *b)
{
	struct iovec v[TV_WRITE_MAPPED_MAX_IOV];
	int i = 0;

	if (n < 0 || n > TV_WRITE_MAPPED_MAX_IOV)
		return -EINVAL;
	memcpy(v, iov, (size_t)n * sizeof(*v));
	/* The fast path: one writev from the mapping itself. */
	while (i < n && !b->on) {
		ssize_t w = writev(fd, v + i, n - i);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EFAULT) {
			b->on = 1;	/* this file system cannot pin the mapping */
			break;
		}
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		for (; i < n && (size_t)w >= v[i].iov_len; i++)
			w -= (ssize_t)v[i].iov_len;
		if (i < n) {
			v[i].iov_base = (char *)v[i].iov_base + w;
			v[i].iov_len -= (size_t)w;
		}
	}
	for (; i < n; i++) {
		int ret = write_bounced(fd, v[i].iov_base, v[i].iov_len, b);

		if (ret)
			return ret;
	}
	return 0;
}

void tv_bounce_free(struct tv_bounce *b)
{
	free(b->buf);
	b->buf = NULL;
}
