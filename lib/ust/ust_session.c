// SPDX-License-Identifier: LGPL-2.1
/*
 * Writing one traced process's user-space events into a session: the
 * domain directory ust-PARENT-PID/ of kind "ust" (doc/session-format.md).
 * Its sub-buffers are stored as read (lib/ust/ust_abi.h records), its event
 * formats are the ftrace format files of the process's metadata, so the
 * session reader decodes them with libtraceevent like kernel events
 * (lib/reader/ust_stream.c).
 *
 * Threads: a domain writer belongs to the thread that consumes its process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "ust_consumer.h"

#define UST_MAX_TIDS 4096

struct tv_ust_domain {
	char dir[4096];
	char subdir[80];
	char parent[80];
	struct tv_ust_shm_header hdr;	/* the checked settings of the process */
	int *fds;			/* cpuN.ust per buffer, -1 until written */
	uint64_t *bytes, *events;	/* per buffer */
	unsigned char *written;		/* by id: format file written */
	size_t events_seen;		/* the consumer's nr_events when its formats were last written */
	unsigned int nr_open;		/* fds[] >= 0, at most TV_UST_DOMAIN_MAX_FDS */
	struct { int tid; } tids[UST_MAX_TIDS];	/* threads seen, for saved_cmdlines */
	size_t nr_tids;
};

static int write_text(const char *path, const char *text, size_t len)
{
	int fd = tv_file_create(path, 0, "session file");
	ssize_t n;

	if (fd < 0)
		return fd;	/* said */
	errno = 0;
	n = write(fd, text, len);
	if (close(fd))
		n = -1;
	if (n != (ssize_t)len) {
		int err = errno ? errno : EIO;

		tv_err("Cannot write session file: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
		return -err;
	}
	return 0;
}

static int write_header_page(struct tv_ust_domain *d)
{
	char path[4200], text[512];
	int n = snprintf(text, sizeof(text),
			 "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
			 "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
			 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
			 "\tfield: char data;\toffset:16;\tsize:%u;\tsigned:1;\n",
			 d->hdr.subbuf_size - 16);

	snprintf(path, sizeof(path), "%s/header_page", d->dir);
	return write_text(path, text, (size_t)n);
}

int tv_ust_domain_create(const char *session_dir, const char *parent,
			 const struct tv_ust_shm_header *hdr, struct tv_ust_domain **out)
{
	struct tv_ust_domain *d = calloc(1, sizeof(*d));
	char path[4200];
	int ret;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->hdr = *hdr;
	snprintf(d->parent, sizeof(d->parent), "%s", parent);
	/* a pid seen twice (a process that registered again) gets its own directory */
	for (int n = 0; n < 100; n++) {
		if (n)
			snprintf(d->subdir, sizeof(d->subdir), "ust-%s-%d.%d", parent, hdr->pid, n);
		else
			snprintf(d->subdir, sizeof(d->subdir), "ust-%s-%d", parent, hdr->pid);
		snprintf(d->dir, sizeof(d->dir), "%s/%s", session_dir, d->subdir);
		if (!mkdir(d->dir, 0755) || errno != EEXIST)
			break;
	}
	d->fds = malloc(hdr->nr_bufs * sizeof(*d->fds));
	d->bytes = calloc(hdr->nr_bufs, sizeof(*d->bytes));
	d->events = calloc(hdr->nr_bufs, sizeof(*d->events));
	d->written = calloc(TV_UST_MAX_ID + 1, 1);
	for (unsigned int b = 0; d->fds && b < hdr->nr_bufs; b++)
		d->fds[b] = -1;
	if (!d->fds || !d->bytes || !d->events || !d->written) {
		ret = -ENOMEM;
		goto err;
	}
	snprintf(path, sizeof(path), "%s/events", d->dir);
	if (access(d->dir, W_OK) || (mkdir(path, 0755) && errno != EEXIST)) {
		ret = -errno;
		tv_err("Cannot create session directory: path=\"%s\", errno=%d (%s)", d->dir, -ret,
		       strerror(-ret));
		goto err;
	}
	ret = write_header_page(d);
	if (ret)
		goto err;
	*out = d;
	return 0;
err:
	tv_ust_domain_free(d);
	return ret;
}

const char *tv_ust_domain_subdir(const struct tv_ust_domain *d)
{
	return d->subdir;
}

int tv_ust_domain_add_events(struct tv_ust_domain *d, const struct tv_ust_consumer *c)
{
	char path[4400];

	if (c->nr_events == d->events_seen)
		return 0;	/* nothing new: called every tick and every frame, so O(1) */
	for (unsigned int id = TV_UST_ID_FIRST; c->events && id <= TV_UST_MAX_ID; id++) {
		const struct tv_ust_event *ev = &c->events[id];
		int ret;

		if (!ev->id || d->written[id])
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", d->dir, ev->provider);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		snprintf(path, sizeof(path), "%s/events/%s/%s", d->dir, ev->provider, ev->name);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		strcat(path, "/format");
		ret = write_text(path, ev->format, ev->format_len);
		if (ret)
			return ret;
		d->written[id] = 1;
	}
	d->events_seen = c->nr_events;
	return 0;
}

static void note_tid(struct tv_ust_domain *d, int tid)
{
	for (size_t i = d->nr_tids; i-- > 0;)
		if (d->tids[i].tid == tid)
			return;
	if (d->nr_tids < UST_MAX_TIDS)
		d->tids[d->nr_tids++].tid = tid;
}

/* Count the records (checked by the consumer already) and note their threads. */
static void count_records(struct tv_ust_domain *d, unsigned int b, const unsigned char *sb)
{
	size_t off = 0, size = d->hdr.subbuf_size;

	while (size - off >= sizeof(struct tv_ust_record_hdr)) {
		struct tv_ust_record_hdr h;

		memcpy(&h, sb + off, sizeof(h));
		if (h.id == TV_UST_ID_PADDING || h.size < sizeof(h) || h.size > size - off)
			break;
		if (!d->nr_tids || d->tids[d->nr_tids - 1].tid != h.tid)
			note_tid(d, h.tid);
		d->events[b]++;
		off += h.size;
	}
}

int tv_ust_domain_write(struct tv_ust_domain *d, unsigned int b, const void *subbuf)
{
	char path[4200];
	size_t done = 0;

	if (b >= d->hdr.nr_bufs)
		return -EINVAL;
	if (d->fds[b] < 0) {
		if (d->nr_open >= TV_UST_DOMAIN_MAX_FDS)
			tv_ust_domain_close_files(d);
		snprintf(path, sizeof(path), "%s/cpu%u.ust", d->dir, b);
		/* created once; written before: a file this domain closed to stay in its budget */
		if (!d->bytes[b]) {
			int fd = tv_file_create(path, 0, "stream file");

			if (fd < 0)
				return fd;	/* said */
			d->fds[b] = fd;
		} else {
			d->fds[b] = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_APPEND);
		}
		if (d->fds[b] < 0) {
			int err = errno;

			tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
			return -err;
		}
		d->nr_open++;
	}
	while (done < d->hdr.subbuf_size) {
		ssize_t n = write(d->fds[b], (const char *)subbuf + done, d->hdr.subbuf_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			tv_err("Cannot write stream file: path=\"%s/cpu%u.ust\", errno=%d (%s)", d->dir, b,
			       err, strerror(err));
			return -err;
		}
		done += (size_t)n;
	}
	d->bytes[b] += d->hdr.subbuf_size;
	count_records(d, b, subbuf);
	return 0;
}

void tv_ust_domain_close_files(struct tv_ust_domain *d)
{
	for (unsigned int b = 0; d->fds && b < d->hdr.nr_bufs && d->nr_open; b++)
		if (d->fds[b] >= 0) {
			close(d->fds[b]);
			d->fds[b] = -1;
			d->nr_open--;
		}
	d->nr_open = 0;
}

/* tid -> comm (from /proc when the thread is still there, else the process's) and tid -> pid. */
static int write_task_maps(struct tv_ust_domain *d, const char *comm, int local)
{
	struct tv_strbuf cmd = { 0 }, tg = { 0 };
	char path[4200];
	int ret = 0;

	for (size_t i = 0; i < d->nr_tids && !ret; i++) {
		char name[64] = "", file[96];
		FILE *f;

		snprintf(file, sizeof(file), "/proc/%d/task/%d/comm", d->hdr.pid, d->tids[i].tid);
		if (local && (f = fopen(file, "re"))) {
			if (!fgets(name, sizeof(name), f))
				name[0] = '\0';
			fclose(f);
			name[strcspn(name, "\n")] = '\0';
		}
		ret = tv_strbuf_append(&cmd, "%d %s\n", d->tids[i].tid, name[0] ? name : comm) ?:
		      tv_strbuf_append(&tg, "%d %d\n", d->tids[i].tid, d->hdr.pid);
	}
	if (!ret) {
		snprintf(path, sizeof(path), "%s/saved_cmdlines", d->dir);
		ret = write_text(path, cmd.data ? cmd.data : "", cmd.len);
	}
	if (!ret) {
		snprintf(path, sizeof(path), "%s/saved_tgids", d->dir);
		ret = write_text(path, tg.data ? tg.data : "", tg.len);
	}
	tv_strbuf_free(&cmd);
	tv_strbuf_free(&tg);
	return ret;
}

int tv_ust_domain_finish(struct tv_ust_domain *d, const struct tv_ust_consumer *c,
			 const uint64_t *lost, const char *status, int local)
{
	struct tv_strbuf evlist = { 0 };
	uint64_t ev_total = 0, lost_total = 0, bytes_total = 0;
	char path[4200], comm[sizeof(d->hdr.comm) + 1];
	struct tv_meta *m = tv_meta_new();
	int ret;

	if (!m)
		return -ENOMEM;
	memcpy(comm, d->hdr.comm, sizeof(d->hdr.comm));
	comm[sizeof(d->hdr.comm)] = '\0';
	for (char *p = comm; *p; p++)	/* one word in saved_cmdlines and meta */
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == ',')
			*p = '_';
	tv_ust_domain_close_files(d);
	tv_meta_set(m, "domain", "%s", d->subdir);
	tv_meta_set(m, "kind", "ust");
	tv_meta_set(m, "parent", "%s", d->parent);
	tv_meta_set(m, "pid", "%d", d->hdr.pid);
	tv_meta_set(m, "comm", "%s", comm);
	tv_meta_set(m, "clock", "%s", d->hdr.clock == TV_UST_CLOCK_X86_TSC ? "x86-tsc" : "mono");
	tv_meta_set(m, "ncpus", "%u", d->hdr.nr_bufs);
	tv_meta_set(m, "per_thread", "%u", d->hdr.per_thread);
	tv_meta_set(m, "mode", "%s", tv_ust_mode_name(d->hdr.mode));
	tv_meta_set(m, "subbuf_size", "%u", d->hdr.subbuf_size);
	tv_meta_set(m, "nr_subbufs", "%u", d->hdr.nr_subbufs);
	tv_meta_set(m, "long_size", "8");
	tv_meta_set(m, "endian", "little");
	tv_meta_set(m, "status", "%s", status);
	for (unsigned int b = 0; b < d->hdr.nr_bufs; b++) {
		uint64_t l = lost ? lost[b] : 0;
		char key[3][32];

		if (!d->bytes[b] && !l)
			continue;
		snprintf(key[0], sizeof(key[0]), "cpu%u.bytes", b);
		snprintf(key[1], sizeof(key[1]), "cpu%u.events", b);
		snprintf(key[2], sizeof(key[2]), "cpu%u.lost", b);
		tv_meta_set(m, key[0], "%" PRIu64, d->bytes[b]);
		tv_meta_set(m, key[1], "%" PRIu64, d->events[b]);
		tv_meta_set(m, key[2], "%" PRIu64, l);
		ev_total += d->events[b];
		lost_total += l;
		bytes_total += d->bytes[b];
	}
	tv_meta_set(m, "events_total", "%" PRIu64, ev_total);
	tv_meta_set(m, "lost_total", "%" PRIu64, lost_total);
	tv_meta_set(m, "bytes_total", "%" PRIu64, bytes_total);
	for (unsigned int id = 0; c && c->events && id <= TV_UST_MAX_ID; id++)
		if (c->events[id].id)
			tv_strbuf_append(&evlist, "%s%s:%s", evlist.len ? "," : "",
					 c->events[id].provider, c->events[id].name);
	tv_meta_set(m, "events", "%s", evlist.data ? evlist.data : "");
	tv_strbuf_free(&evlist);
	ret = write_task_maps(d, comm, local);
	snprintf(path, sizeof(path), "%s/meta", d->dir);
	if (!ret)
		ret = tv_meta_write(m, path);
	tv_meta_free(m);
	return ret;
}

void tv_ust_domain_free(struct tv_ust_domain *d)
{
	if (!d)
		return;
	for (unsigned int b = 0; d->fds && b < d->hdr.nr_bufs; b++)
		if (d->fds[b] >= 0)
			close(d->fds[b]);
	free(d->fds);
	free(d->bytes);
	free(d->events);
	free(d->written);
	free(d);
}
