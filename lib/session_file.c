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

#include "internal.h"

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
	size_t n;
	int ok;

	if (!r || !p) {
		free(r);
		free(p);
		return -1;
	}
	n = strlen(r);
	ok = !strncmp(p, r, n) && (p[n] == '/' || (n == 1 && r[0] == '/'));
	free(r);
	free(p);
	return ok;
}

int tv_session_open_file(const char *root, const char *path)
{
	struct stat st, lst;
	int fd, flags;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (!S_ISREG(st.st_mode)) {
		tv_err("Not a regular file in the session: path=\"%s\", type=%s", path,
		       file_type(st.st_mode));
		close(fd);
		return -TV_EUNSAFE;
	}
	if (root && !lstat(path, &lst) && S_ISLNK(lst.st_mode) && inside(root, path) != 1) {
		tv_err("File outside the session: path=\"%s\" is a symlink leading out of \"%s\"",
		       path, root);
		close(fd);
		return -TV_EUNSAFE;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

int tv_domain_open_file(const struct tv_domain *dom, const char *path)
{
	char root[PATH_MAX];
	char *slash;

	snprintf(root, sizeof(root), "%s", dom->dir);
	slash = strrchr(root, '/');
	if (slash && slash != root)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
	else
		snprintf(root, sizeof(root), ".");
	return tv_session_open_file(root, path);
}
