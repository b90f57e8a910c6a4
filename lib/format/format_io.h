/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Reading a session's files safely (lib/format/): event format checks,
 * opening a file inside the session, zstd streams.  Used in lib/ only; the
 * reader (lib/reader/reader_internal.h) builds on it, never the reverse.
 */
#ifndef TV_LIB_FORMAT_IO_H
#define TV_LIB_FORMAT_IO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * tv_format_text_check - refuse an event format libtraceevent would crash on
 * @text: the format file's text, NUL-terminated
 * @len: its length
 * @path: the file, for the error
 *
 * Return: 0, or -EINVAL with a one-line error logged naming @path.
 */
int tv_format_text_check(const char *text, size_t len, const char *path);
/*
 * tv_format_long_size_check - the format's longs and pointers are
 * @long_size bytes, as the domain's meta and header page say (a format of
 * another word size would decode every field after them wrong)
 *
 * Return: 0, or -EINVAL with a one-line error logged naming @path.
 */
int tv_format_long_size_check(const char *text, int long_size, const char *path);

/*
 * Open a session file for reading (lib/format/session_file.c): a regular file, and
 * when @path is a symlink, one inside directory @root (NULL: not checked).
 * Return: the fd, -errno when open() fails (not logged: ENOENT is often
 * fine), or -TV_EUNSAFE (logged, naming the file) for a FIFO, a device, a
 * directory or a symlink out of the session.
 */
#define TV_EUNSAFE EINVAL
int tv_session_open_file(const char *root, const char *path);
/* Sequential reading of a cpuN.raw.zst (lib/format/compress.c). */
struct tv_zstream;
/* Return: 0 with the frame's content size, -EBADMSG (not one sized zstd frame), -errno. */
int tv_zstream_open(int fd, struct tv_zstream **out, uint64_t *content_size);
/* Up to @len bytes (fewer only at the end); -EBADMSG with *why for bad data. */
ssize_t tv_zstream_read(struct tv_zstream *z, void *buf, size_t len, const char **why);
uint64_t tv_zstream_pos(const struct tv_zstream *z);
void tv_zstream_close(struct tv_zstream *z);

#endif
