// SPDX-License-Identifier: LGPL-2.1
/*
 * Session metadata: ordered key=value lines.  Plain text so that a session
 * can be inspected with cat/grep and decoded on another machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

struct tv_meta_entry {
	char *key;
	char *value;
};

struct tv_meta {
	struct tv_meta_entry *entries;
	size_t nr;
};

struct tv_meta *tv_meta_new(void)
{
	return calloc(1, sizeof(struct tv_meta));
}

void tv_meta_free(struct tv_meta *meta)
{
	if (!meta)
		return;
	for (size_t i = 0; i < meta->nr; i++) {
		free(meta->entries[i].key);
		free(meta->entries[i].value);
	}
	free(meta->entries);
	free(meta);
}

static struct tv_meta_entry *meta_find(const struct tv_meta *meta, const char *key)
{
	for (size_t i = 0; i < meta->nr; i++)
		if (!strcmp(meta->entries[i].key, key))
			return &meta->entries[i];
	return NULL;
}

static int meta_put(struct tv_meta *meta, const char *key, char *value)
{
	struct tv_meta_entry *e = meta_find(meta, key);
	struct tv_meta_entry *grown;

	if (e) {
		free(e->value);
		e->value = value;
		return 0;
	}
	grown = realloc(meta->entries, (meta->nr + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	meta->entries = grown;
	e = &meta->entries[meta->nr];
	e->key = strdup(key);
	if (!e->key)
		return -ENOMEM;
	e->value = value;
	meta->nr++;
	return 0;
}

int tv_meta_set(struct tv_meta *meta, const char *key, const char *fmt, ...)
{
	char *value;
	va_list ap;
	int ret;

	if (strchr(key, '=') || strchr(key, '\n'))
		return -EINVAL;
	va_start(ap, fmt);
	ret = vasprintf(&value, fmt, ap);
	va_end(ap);
	if (ret < 0)
		return -ENOMEM;
	/* One line per entry: a newline would split it on reading. */
	for (char *p = value; *p; p++)
		if (*p == '\n')
			*p = ' ';
	ret = meta_put(meta, key, value);
	if (ret)
		free(value);
	return ret;
}

const char *tv_meta_get(const struct tv_meta *meta, const char *key)
{
	struct tv_meta_entry *e = meta ? meta_find(meta, key) : NULL;

	return e ? e->value : NULL;
}

long long tv_meta_get_ll(const struct tv_meta *meta, const char *key, long long def)
{
	const char *v = tv_meta_get(meta, key);
	char *end;
	long long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoll(v, &end, 0);
	return (errno || *end) ? def : n;
}

/*
 * Written whole to FILE.tmp, synced, then renamed over FILE: a reader
 * never sees half a file, a crash leaves the old one.  FILE.tmp is made
 * new (tv_file_create()): a symlink planted there is refused, not followed.
 */
int tv_meta_write(const struct tv_meta *meta, const char *path)
{
	char tmp[4096];
	FILE *f;
	int ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = tv_file_fcreate(tmp, "metadata file");
	if (!f)
		return -errno;
	for (size_t i = 0; i < meta->nr; i++)
		fprintf(f, "%s=%s\n", meta->entries[i].key, meta->entries[i].value);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		tv_err("Cannot write metadata file: path=\"%s\", errno=%d (%s)", path, -ret, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}

/*
 * A metadata file is untrusted input: a FIFO would block open() and read()
 * for ever, a device reads without end.  O_NONBLOCK so that a FIFO opens
 * and fstat() tells; NULL with *@ret = -errno, or -EINVAL (logged).
 */
#define TV_META_MAX_BYTES (4 << 20)

static FILE *fopen_regular(const char *path, int *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		*ret = -errno;
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*ret = -EINVAL;
		tv_err("Not a regular file in the session: path=\"%s\"", path);
		close(fd);
		return NULL;
	}
	/* Bounded: the largest real one (sync/transforms of many pieces) is
	 * tens of kB; every line becomes an allocation. */
	if (st.st_size > TV_META_MAX_BYTES) {
		*ret = -EINVAL;
		tv_err("Metadata file too large: path=\"%s\", size=%lld, max=%d", path,
		       (long long)st.st_size, TV_META_MAX_BYTES);
		close(fd);
		return NULL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	f = fdopen(fd, "r");
	if (!f) {
		*ret = -errno;
		close(fd);
	}
	return f;
}

int tv_meta_read(const char *path, struct tv_meta **out)
{
	struct tv_meta *meta = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned int lineno = 0;
	FILE *f;
	int ret = 0;

	*out = NULL;
	f = fopen_regular(path, &ret);
	if (!f) {
		if (ret != -EINVAL)
			tv_err("Cannot open metadata file: path=\"%s\", errno=%d (%s)", path, -ret, strerror(-ret));
		return ret;
	}
	meta = tv_meta_new();
	if (!meta) {
		ret = -ENOMEM;
		goto out;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *eq, *value;

		lineno++;
		if (n && line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			tv_err("Malformed metadata line: path=\"%s\", line=%u", path, lineno);
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		value = strdup(eq + 1);
		if (!value || meta_put(meta, line, value)) {
			free(value);
			ret = -ENOMEM;
			break;
		}
	}
	if (!ret) {
		*out = meta;
		meta = NULL;
	}
out:
	free(line);
	fclose(f);
	tv_meta_free(meta);
	return ret;
}

int tv_session_write_meta(const char *session_dir, const char *domains, const char *reference)
{
	return tv_session_write_meta_extra(session_dir, domains, reference, NULL);
}

int tv_session_write_meta_extra(const char *session_dir, const char *domains, const char *reference,
				const char *extra)
{
	struct tv_meta *m = tv_meta_new();
	char path[4096], when[64];
	time_t now = time(NULL);
	struct tm tm;
	int ret;

	if (!m)
		return -ENOMEM;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	tv_meta_set(m, "format", "tracevisor-session");
	tv_meta_set(m, "version", "1");
	tv_meta_set(m, "created", "%s", when);
	tv_meta_set(m, "domains", "%s", domains);
	tv_meta_set(m, "reference_domain", "%s", reference);
	for (const char *line = extra; line && *line; line += strcspn(line, "\n") + 1) {
		size_t klen = strcspn(line, "=");
		size_t len = strcspn(line, "\n");
		char key[128];

		if (klen >= len || klen >= sizeof(key))
			continue;	/* tv_session_writer_set() let none in */
		snprintf(key, sizeof(key), "%.*s", (int)klen, line);
		tv_meta_set(m, key, "%.*s", (int)(len - klen - 1), line + klen + 1);
	}
	snprintf(path, sizeof(path), "%s/session.meta", session_dir);
	ret = tv_meta_write(m, path);
	tv_meta_free(m);
	return ret;
}
