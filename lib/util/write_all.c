// SPDX-License-Identifier: LGPL-2.1
/*
 * Writing a buffer whole (lib/util/write_all.h): libc only, as the guest
 * agent builds this file in.
 */
#include <errno.h>
#include <unistd.h>

#include "write_all.h"

int tv_write_all_wait(int fd, const void *buf, size_t len, int (*wait)(int fd))
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && wait) {
			int ret = wait(fd);

			if (ret)
				return ret;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tv_write_all(int fd, const void *buf, size_t len)
{
	return tv_write_all_wait(fd, buf, len, NULL);
}
