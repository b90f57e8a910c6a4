// SPDX-License-Identifier: LGPL-2.1
/*
 * Opening a session's files as untrusted input (issue #11, item 9): a file
 * the reader opens must be a regular file, and one that a symlink leads to
 * must stay inside the session.  A FIFO would block open() and read() for
 * ever (no writer), a device reads endless or foreign data, and a symlink
 * out of the session reads files the session never held.  open() uses
 * O_NONBLOCK so that a FIFO is seen by fstat() instead of hanging; the flag
 * is cleared again on the regular file that passes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "format_io.h"

static const char *file_type(mode_t m)
{
	if (S_ISFIFO(m))
		return "FIFO";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISDIR(m))
		return "directory";
	return "not a regular file";
}

/* Is the file behind @path inside directory @root (both resolved)? */
static int inside(const char *root, const char *path)
{
	char *r = realpath(root, NULL), *p = realpath(path, NULL);
	int ok = -1;

	if (r && p) {
		size_t n = strlen(r);

		ok = !strncmp(p, r, n) && (p[n] == '/' || (n == 1 && r[0] == '/'));
	}
	free(r);
	free(p);
	return ok;
}

int tv_session_open_file(const char *root, const char *path)
{
	struct stat st, lst;
	int fd, flags, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto err;
	}
	if (!S_ISREG(st.st_mode)) {
		tv_err("Not a regular file in the session: path=\"%s\", type=%s", path,
		       file_type(st.st_mode));
		ret = -TV_EUNSAFE;
		goto err;
	}
	if (root && !lstat(path, &lst) && S_ISLNK(lst.st_mode) && inside(root, path) != 1) {
		tv_err("File outside the session: path=\"%s\" is a symlink leading out of \"%s\"",
		       path, root);
		ret = -TV_EUNSAFE;
		goto err;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
err:
	close(fd);
	return ret;
}

/*
 * Writing a file inside a session (issue #22): the directory is shared
 * with what a guest sent and may be writable by others, so a name may
 * already be taken by a symlink planted there to make the recorder (root)
 * write somewhere else, or by a hard link.  Never open an existing name:
 * create it new (O_EXCL: a symlink at @path fails too, whatever it points
 * to), after removing a regular file left there (an earlier run's .tmp, a
 * file written again); a symlink or any other kind of file is refused.
 */
int tv_file_create_at(int dfd, const char *path, const char *shown, int flags, const char *what)
{
	for (int tries = 0;; tries++) {
		int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | flags,
				0644);
		struct stat st;
		int err;

		if (fd >= 0)
			return fd;
		err = errno;
		if (err != EEXIST || tries || fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW)) {
			tv_err("Cannot create %s: path=\"%s\", errno=%d (%s)", what, shown, err,
			       strerror(err));
			return -err;
		}
		if (S_ISLNK(st.st_mode)) {
			tv_err("Cannot create %s: path=\"%s\" is a symbolic link (not followed)", what,
			       shown);
			return -ELOOP;
		}
		if (!S_ISREG(st.st_mode)) {
			tv_err("Cannot create %s: path=\"%s\" is not a regular file (type=%s)", what,
			       shown, file_type(st.st_mode));
			return -EEXIST;
		}
		if (unlinkat(dfd, path, 0) && errno != ENOENT) {
			err = errno;
			tv_err("Cannot replace %s: path=\"%s\", errno=%d (%s)", what, shown, err,
			       strerror(err));
			return -err;
		}
	}
}

int tv_file_create(const char *path, int flags, const char *what)
{
	return tv_file_create_at(AT_FDCWD, path, path, flags, what);
}

FILE *tv_file_fcreate(const char *path, const char *what)
{
	int fd = tv_file_create(path, 0, what);
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int err = errno;

		tv_err("Cannot create %s: path=\"%s\", errno=%d (%s)", what, path, err, strerror(err));
		close(fd);
		errno = err;
	}
	return f;
}
