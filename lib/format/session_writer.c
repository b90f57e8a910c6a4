// SPDX-License-Identifier: LGPL-2.1
/*
 * The session writer (session_writer.h): the directory, the recorders'
 * subfolders, the domain list and session.meta, in one place.  The list
 * is kept in the order the recorders give it: the host first (at its
 * create), then guests and their traced processes as each ends, the
 * host's traced processes, Xen at its stop, exactly as session.meta has
 * always listed them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tv_internal.h"
#include "session_writer.h"

struct tv_session_writer {
	char *dir;
	unsigned int flags;
	pthread_mutex_t lock;		/* made, made_for, domains */
	int made;			/* DIR created by this writer */
	char made_for[64];		/* the subfolder whose request created DIR */
	struct tv_strbuf domains;	/* "host,guest-a,..." */
	struct tv_strbuf extra;		/* "key=value\n"...: more session.meta keys */
	int committed;
};

int tv_session_writer_new(const char *dir, unsigned int flags, struct tv_session_writer **out)
{
	struct tv_session_writer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->dir = strdup(dir);
	if (!w->dir) {
		free(w);
		return -ENOMEM;
	}
	w->flags = flags;
	pthread_mutex_init(&w->lock, NULL);
	*out = w;
	return 0;
}

int tv_session_writer_use(struct tv_session_writer *w, const char *dir,
			  struct tv_session_writer **out, bool *own)
{
	*own = !w;
	*out = w;
	return w ? 0 : tv_session_writer_new(dir, 0, out);
}

const char *tv_session_writer_dir(const struct tv_session_writer *w)
{
	return w->dir;
}

static int writer_mkdir_locked(struct tv_session_writer *w)
{
	struct stat st;
	int err = 0;

	if (w->made)
		return 0;
	/* new only: a file or an earlier session there is refused */
	if (stat(w->dir, &st) == 0)
		err = EEXIST;
	else if (mkdir(w->dir, 0755))
		err = errno;
	if (err && !(w->flags & TV_SESSION_WRITER_QUIET)) {
		if (err == EEXIST)
			tv_err("Output exists: path=\"%s\" (remove it or choose another -o)", w->dir);
		else
			tv_err("Cannot create session directory: path=\"%s\", errno=%d (%s)", w->dir,
			       err, strerror(err));
	}
	w->made = !err;
	return -err;
}

int tv_session_writer_mkdir(struct tv_session_writer *w)
{
	int ret;

	pthread_mutex_lock(&w->lock);
	ret = writer_mkdir_locked(w);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int tv_session_writer_domain_dir(struct tv_session_writer *w, const char *subdir, char *path,
				 size_t size)
{
	int ret = 0, n = snprintf(path, size, "%s/%s", w->dir, subdir);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&w->lock);
	if (!w->made) {
		ret = writer_mkdir_locked(w);
		if (!ret)
			snprintf(w->made_for, sizeof(w->made_for), "%s", subdir);
	}
	pthread_mutex_unlock(&w->lock);
	if (!ret && mkdir(path, 0755)) {
		ret = -errno;
		tv_err("Cannot create domain directory: path=\"%s\", errno=%d (%s)", path, -ret,
		       strerror(-ret));
	}
	return ret;
}

int tv_session_writer_add_domain(struct tv_session_writer *w, const char *subdir)
{
	int ret;

	/* one name of the comma list, never a path */
	if (!*subdir || strchr(subdir, '/') || strchr(subdir, ',') || subdir[0] == '.')
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	ret = tv_strbuf_append(&w->domains, "%s%s", w->domains.len ? "," : "", subdir);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int tv_session_writer_commit(struct tv_session_writer *w, const char *reference)
{
	const char *list;
	char first[256];
	int ret;

	pthread_mutex_lock(&w->lock);
	list = w->domains.data ? w->domains.data : "";
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(list, ","), list);
	ret = tv_session_write_meta_extra(w->dir, list, reference ? reference : first,
					  w->extra.data);
	w->committed |= !ret;
	pthread_mutex_unlock(&w->lock);
	return ret;
}

void tv_session_writer_discard(struct tv_session_writer *w, const char *subdir)
{
	pthread_mutex_lock(&w->lock);
	/* only what this recorder created: a directory that did not exist before */
	if (w->made && !w->committed && !strcmp(w->made_for, subdir)) {
		if (tv_session_remove_tree(w->dir))
			tv_warn("Cannot remove incomplete session: path=\"%s\"", w->dir);
		w->made = 0;
		w->made_for[0] = '\0';
	}
	pthread_mutex_unlock(&w->lock);
}

void tv_session_writer_free(struct tv_session_writer *w)
{
	if (!w)
		return;
	pthread_mutex_destroy(&w->lock);
	tv_strbuf_free(&w->domains);
	tv_strbuf_free(&w->extra);
	free(w->dir);
	free(w);
}

int tv_session_writer_set(struct tv_session_writer *w, const char *key, const char *value)
{
	int ret;

	if (!*key || strpbrk(key, "=\n") || strchr(value, '\n'))
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	ret = tv_strbuf_append(&w->extra, "%s=%s\n", key, value);
	pthread_mutex_unlock(&w->lock);
	return ret < 0 ? -ENOMEM : 0;
}
