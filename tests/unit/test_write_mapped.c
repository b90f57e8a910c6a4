// SPDX-License-Identifier: GPL-2.0
/*
 * lib/util/write_mapped.c: a write from a mapping the file system cannot pin
 * (9p, NFS direct I/O on the privcmd mapping of Xen's buffers) fails with
 * EFAULT; tv_write_mapped() then copies through its buffer, for that file
 * from then on, and the file gets every byte in order.  writev() is
 * interposed here: it fails with EFAULT for iovecs in the "foreign" array,
 * as 9p does, and returns short counts on request.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tv_internal.h"
#include "tv_test.h"

static unsigned char foreign[3 << 20];	/* the "mapping": 3 MiB, past the bounce buffer */
static int efaults, writevs, short_by;

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	writevs++;
	for (int i = 0; i < n; i++) {
		const unsigned char *p = iov[i].iov_base;

		if (p >= foreign && p < foreign + sizeof(foreign)) {
			efaults++;
			errno = EFAULT;
			return -1;
		}
	}
	if (short_by && n && iov[0].iov_len > (size_t)short_by) {
		struct iovec one = { iov[0].iov_base, iov[0].iov_len - (size_t)short_by };

		return syscall(SYS_writev, fd, &one, 1);
	}
	return syscall(SYS_writev, fd, iov, n);
}

/* The file's bytes equal @n bytes at @want. */
static int file_is(const char *path, const unsigned char *want, size_t n)
{
	unsigned char *got = malloc(n + 1);
	FILE *f = fopen(path, "rb");
	size_t len = f ? fread(got, 1, n + 1, f) : 0;
	int same = len == n && !memcmp(got, want, n);

	if (f)
		fclose(f);
	free(got);
	return same;
}

int main(void)
{
	static unsigned char normal[100000], all[sizeof(foreign) + sizeof(normal)];
	char path[] = "/tmp/tv-write-mapped-XXXXXX";
	struct tv_bounce b = { 0 };
	struct iovec iov[2];
	int fd = mkstemp(path);

	TV_CHECK(fd >= 0, "mkstemp");
	for (size_t i = 0; i < sizeof(foreign); i++)
		foreign[i] = (unsigned char)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(normal); i++)
		normal[i] = (unsigned char)(i * 13 + 5);

	/* Ordinary memory: the direct writev, short writes resumed, no copy. */
	short_by = 1000;
	iov[0] = (struct iovec){ normal, 60000 };
	iov[1] = (struct iovec){ normal + 60000, sizeof(normal) - 60000 };
	TV_CHECK(tv_write_mapped(fd, iov, 2, &b) == 0, "direct write");
	short_by = 0;
	TV_CHECK(!b.on && !b.buf && writevs >= 2, "direct: bounce %d, %d writevs", b.on, writevs);
	TV_CHECK(file_is(path, normal, sizeof(normal)), "direct: the file's bytes");

	/* The mapping, as a window that wraps: EFAULT once, then the copy. */
	writevs = 0;
	iov[0] = (struct iovec){ foreign + (2 << 20), sizeof(foreign) - (2 << 20) };
	iov[1] = (struct iovec){ foreign, 2 << 20 };
	TV_CHECK(tv_write_mapped(fd, iov, 2, &b) == 0, "write from the mapping");
	TV_CHECK(b.on && b.buf && efaults == 1, "bounce on after %d EFAULT", efaults);
	memcpy(all, normal, sizeof(normal));
	memcpy(all + sizeof(normal), foreign + (2 << 20), sizeof(foreign) - (2 << 20));
	memcpy(all + sizeof(normal) + sizeof(foreign) - (2 << 20), foreign, 2 << 20);
	TV_CHECK(file_is(path, all, sizeof(all)), "bounced: the file's bytes in order");

	/* Remembered for the file: no writev from the mapping again. */
	writevs = 0;
	iov[0] = (struct iovec){ foreign, 4096 };
	TV_CHECK(tv_write_mapped(fd, iov, 1, &b) == 0 && writevs == 0 && efaults == 1,
		 "the file's next write: %d writevs, %d EFAULTs", writevs, efaults);
	TV_CHECK(tv_write_mapped(fd, iov, TV_WRITE_MAPPED_MAX_IOV + 1, &b) == -EINVAL, "too many pieces");
	tv_bounce_free(&b);
	TV_CHECK(!b.buf, "freed");

	/* A real error is said, not bounced. */
	close(fd);
	iov[0] = (struct iovec){ normal, 10 };
	TV_CHECK(tv_write_mapped(-1, iov, 1, &(struct tv_bounce){ 0 }) == -EBADF, "EBADF");
	unlink(path);
	return tv_test_done("test_write_mapped");
}
