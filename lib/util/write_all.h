/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Writing a buffer whole: shared by the library and the guest agent (which
 * builds it in, libc only), so both resume short writes the same way.
 */
#ifndef TV_WRITE_ALL_H
#define TV_WRITE_ALL_H

#include <stddef.h>

/*
 * tv_write_all_wait - write @len bytes at @buf to @fd whole
 * @wait: called when a non-blocking @fd is full (EAGAIN), to wait until it
 *        can take more: 0 to write again, or -errno to give up with;
 *        NULL makes EAGAIN an error like any other.
 *
 * Short writes and EINTR are resumed.  Return: 0 or -errno (-EIO for a write
 * of 0 bytes); nothing logged.
 */
int tv_write_all_wait(int fd, const void *buf, size_t len, int (*wait)(int fd));

/* tv_write_all - tv_write_all_wait() without a wait: for blocking files. */
int tv_write_all(int fd, const void *buf, size_t len);

#endif
