// SPDX-License-Identifier: LGPL-2.1
/*
 * A guest's traced processes, as its agent streams them (UST_PROC,
 * UST_META, UST_DATA, UST_END; doc/agent-protocol.md): each into the
 * session's ust-guest-NAME-PID/ (lib/ust/ust_session.c).  Everything is
 * untrusted twice over (the guest, and the process inside it): the
 * settings are checked before they size anything, the metadata entry by
 * entry, every sub-buffer record by record against it.  A frame the agent
 * could not have meant (an index out of range, a size that is not whole
 * sub-buffers) is a protocol error that ends the guest's stream; records
 * that lie only cut that process off, keeping what was valid.
 *
 * Costs are the guest's, bounded whatever it sends: metadata is parsed in
 * linear time (lib/ust/ust_consumer.c), at most TV_UST_MAX_META bytes per
 * process and TV_GUEST_UST_META_MAX in all its processes (the process that
 * passes it is cut off, naming the limit), and a process's stream files
 * are open only while one of its UST_DATA frames is written.
 *
 * Threads: the guest's own thread (the one feeding its stream).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "proto.h"
#include "ust_consumer.h"
#include "guest_stream.h"

/* The metadata a guest's traced processes may make the recorder hold, in all. */
#define TV_GUEST_UST_META_MAX (16ull << 20)

struct tv_guest_ust {
	struct tv_ust_shm_header hdr;	/* from UST_PROC, checked */
	struct tv_ust_consumer c;	/* metadata and the cut state only: no mapping */
	struct tv_ust_domain *dom;
	uint64_t *lost;
	uint64_t records;		/* valid records written */
	char status[300];
	int ended;
	/* the flight snapshot being received (SNAP_UST), NULL none */
	struct tv_ust_domain *snap;
	uint64_t snap_bytes;		/* its data, at most the snapshot's cap */
};

static int is_pow2(unsigned long v)
{
	return v && !(v & (v - 1));
}

static int proc_key(const char *key, const char *val, void *ctx)
{
	struct tv_guest_ust *u = ctx;
	char *end;
	unsigned long v = strtoul(val, &end, 10);
	int num = *val && !*end;

	if (!strcmp(key, "pid") && num && v > 0 && v < (1ul << 31))
		u->hdr.pid = (int32_t)v;
	else if (!strcmp(key, "comm"))
		snprintf(u->hdr.comm, sizeof(u->hdr.comm), "%.15s", val);
	else if (!strcmp(key, "nr_bufs") && num && v >= 1 && v <= TV_UST_MAX_BUFS)
		u->hdr.nr_bufs = (uint32_t)v;
	else if (!strcmp(key, "subbuf_size") && num && is_pow2(v) && v >= 4096 && v <= (1ul << 20))
		u->hdr.subbuf_size = (uint32_t)v;
	else if (!strcmp(key, "nr_subbufs") && num && is_pow2(v) && v >= 2 && v <= 65536)
		u->hdr.nr_subbufs = (uint32_t)v;
	else if (!strcmp(key, "clock") && (!strcmp(val, "mono") || !strcmp(val, "x86-tsc")))
		u->hdr.clock = strcmp(val, "mono") ? TV_UST_CLOCK_X86_TSC : TV_UST_CLOCK_MONO;
	else if (!strcmp(key, "mode") && (!strcmp(val, "discard") || !strcmp(val, "blocking") ||
					  !strcmp(val, "overwrite")))
		u->hdr.mode = !strcmp(val, "discard") ? TV_UST_MODE_DISCARD :
			      !strcmp(val, "blocking") ? TV_UST_MODE_BLOCKING : TV_UST_MODE_OVERWRITE;
	else if (!strcmp(key, "per_thread") && num && v <= 1)
		u->hdr.per_thread = (uint32_t)v;
	else
		return -EINVAL;
	return 0;
}

/* The session directory and the guest's subdirectory, from DIR/guest-NAME. */
static int split_dir(const char *dir, char *session, size_t size, const char **sub)
{
	const char *slash = strrchr(dir, '/');

	if (!slash || (size_t)(slash - dir) >= size)
		return -EINVAL;
	snprintf(session, size, "%.*s", (int)(slash - dir), dir);
	*sub = slash + 1;
	return 0;
}

int tv_guest_ust_proc(struct tv_guest_stream *gs, uint32_t idx, const unsigned char *p, size_t len,
		      char *err, size_t err_size)
{
	struct tv_guest_ust *u;
	char session[PATH_MAX];
	const char *sub;
	int ret;

	if (idx >= TV_PROTO_MAX_UST || gs->ust[idx]) {
		snprintf(err, err_size, "UST_PROC for process %u (a second time, or beyond %d)", idx,
			 TV_PROTO_MAX_UST);
		return -EBADMSG;
	}
	if (!gs->ust_pool) {
		gs->ust_pool = calloc(1, sizeof(*gs->ust_pool));
		if (!gs->ust_pool)
			return -ENOMEM;
		gs->ust_pool->max = TV_GUEST_UST_META_MAX;
		gs->ust_pool->owner = "guest";
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	gs->ust[idx] = u;
	u->c.pool = gs->ust_pool;
	u->hdr.subbuf_size = 0;
	if (tv_proto_kv_parse((const char *)p, len, proc_key, u) || !u->hdr.pid || !u->hdr.nr_bufs ||
	    !u->hdr.subbuf_size || !u->hdr.nr_subbufs) {
		snprintf(err, err_size, "UST_PROC for process %u: bad or missing settings", idx);
		return -EBADMSG;
	}
	u->lost = calloc(u->hdr.nr_bufs, sizeof(*u->lost));
	if (!u->lost)
		return -ENOMEM;
	if (split_dir(gs->dir, session, sizeof(session), &sub))
		return -EINVAL;
	ret = tv_ust_domain_create(session, sub, &u->hdr, &u->dom);
	if (ret) {
		snprintf(err, err_size, "Cannot create the directory of traced process %d", u->hdr.pid);
		return ret;
	}
	snprintf(u->status, sizeof(u->status), "truncated: the agent did not end it");
	return 0;
}

static struct tv_guest_ust *proc_of(struct tv_guest_stream *gs, uint32_t idx, const char *what,
				    char *err, size_t err_size)
{
	if (idx < TV_PROTO_MAX_UST && gs->ust[idx] && gs->ust[idx]->dom && !gs->ust[idx]->ended)
		return gs->ust[idx];
	snprintf(err, err_size, "%s for process %u before its UST_PROC or after its UST_END", what, idx);
	return NULL;
}

static void proc_cut(struct tv_guest_stream *gs, struct tv_guest_ust *u)
{
	snprintf(u->status, sizeof(u->status), "truncated: %s", u->c.why);
	tv_err("Traced process cut off: guest=\"%s\", pid=%d, comm=\"%s\": %s", gs->dir, u->hdr.pid,
	       u->hdr.comm, u->c.why);
}

int tv_guest_ust_meta(struct tv_guest_stream *gs, uint32_t idx, const unsigned char *p, size_t len,
		      char *err, size_t err_size)
{
	struct tv_guest_ust *u = proc_of(gs, idx, "UST_META", err, err_size);
	int ret;

	if (!u)
		return -EBADMSG;
	if (u->c.cut)
		return 0;	/* cut off already: ignored */
	ret = tv_ust_meta_append(&u->c, p, len, NULL, 0);
	if (ret == -EBADMSG) {
		proc_cut(gs, u);
		return 0;
	}
	if (ret < 0)
		return ret;
	return tv_ust_domain_add_events(u->dom, &u->c);
}

/*
 * Whole sub-buffers @p of buffer @b into domain @d, every record checked
 * against the process's metadata: one that lies cuts the process off (the
 * valid part before it written).  Adds the valid records to *@records.
 */
static int subbufs_write(struct tv_guest_stream *gs, struct tv_guest_ust *u, struct tv_ust_domain *d,
			 unsigned int b, const unsigned char *p, size_t len, uint64_t *records)
{
	unsigned char *copy = malloc(u->hdr.subbuf_size);
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (size_t off = 0; off < len && !u->c.cut && !ret; off += u->hdr.subbuf_size) {
		uint64_t n;
		const char *why;
		size_t end;

		memcpy(copy, p + off, u->hdr.subbuf_size);
		ret = tv_ust_subbuf_walk(copy, u->hdr.subbuf_size, u->c.events ? u->c.events : NULL,
					 u->c.events ? TV_UST_MAX_ID + 1 : 0, &end, &n, &why);
		*records += n;
		if (ret) {
			memset(copy + end, 0, u->hdr.subbuf_size - end);	/* the valid part stays */
			snprintf(u->c.why, sizeof(u->c.why), "buffer %u: %s", b, why);
			u->c.cut = 1;
			proc_cut(gs, u);
		}
		ret = tv_ust_domain_write(d, b, copy);
	}
	free(copy);
	/* no descriptor held between frames: 256 processes of 1024 buffers cost none */
	tv_ust_domain_close_files(d);
	return ret;
}

/* A frame's process and buffer: whole sub-buffers of a buffer it has, else a protocol error. */
static struct tv_guest_ust *frame_check(struct tv_guest_stream *gs, uint32_t idx, unsigned int b,
					size_t len, const char *what, char *err, size_t err_size)
{
	struct tv_guest_ust *u = proc_of(gs, idx, what, err, err_size);

	if (u && (b >= u->hdr.nr_bufs || !len || len % u->hdr.subbuf_size)) {
		snprintf(err, err_size, "%s for buffer %u of %u with %zu bytes (not whole %u-byte sub-buffers)",
			 what, b, u->hdr.nr_bufs, len, u->hdr.subbuf_size);
		return NULL;
	}
	return u;
}

int tv_guest_ust_data(struct tv_guest_stream *gs, uint32_t arg, const unsigned char *p, size_t len,
		      char *err, size_t err_size)
{
	struct tv_guest_ust *u = frame_check(gs, arg >> 16, arg & 0xffff, len, "UST_DATA", err, err_size);

	if (!u)
		return -EBADMSG;
	if (u->c.cut)
		return 0;
	return subbufs_write(gs, u, u->dom, arg & 0xffff, p, len, &u->records);
}

int tv_guest_ust_snap_check(struct tv_guest_stream *gs, uint32_t arg, size_t len, char *err,
			    size_t err_size)
{
	return frame_check(gs, TV_PROTO_SNAP_UST_IDX(arg), TV_PROTO_SNAP_UST_BUF(arg), len, "SNAP_UST",
			   err, err_size) ? 0 : -EBADMSG;
}

int tv_guest_ust_snap_write(struct tv_guest_stream *gs, uint32_t arg, const unsigned char *p,
			    size_t len, const char *snap_dir, uint64_t cap, uint64_t *dropped)
{
	struct tv_guest_ust *u = gs->ust[TV_PROTO_SNAP_UST_IDX(arg)];
	char session[PATH_MAX];
	const char *sub;
	uint64_t records = 0;
	int ret;

	if (u->c.cut)
		return 0;
	if (u->snap_bytes + len > cap) {
		*dropped += len;	/* past SIZE: a lying guest's */
		return 0;
	}
	if (!u->snap) {
		if (split_dir(snap_dir, session, sizeof(session), &sub))
			return -EINVAL;
		ret = tv_ust_domain_create(session, sub, &u->hdr, &u->snap);
		if (ret)
			return ret;
	}
	ret = tv_ust_domain_add_events(u->snap, &u->c);
	if (!ret)
		ret = subbufs_write(gs, u, u->snap, TV_PROTO_SNAP_UST_BUF(arg), p, len, &records);
	u->snap_bytes += len;
	return ret;
}

size_t tv_guest_ust_snap_finish(struct tv_guest_stream *gs, const char *status, char *list, size_t size)
{
	size_t n = 0, len = 0;

	list[0] = '\0';
	for (size_t i = 0; i < TV_PROTO_MAX_UST; i++) {
		struct tv_guest_ust *u = gs->ust[i];
		int w;

		if (!u || !u->snap)
			continue;
		if (!tv_ust_domain_add_events(u->snap, &u->c) &&
		    !tv_ust_domain_finish(u->snap, &u->c, NULL, u->c.cut ? "truncated" : status, 0)) {
			w = snprintf(list + len, size - len, "%s%s", n ? "," : "", tv_ust_domain_subdir(u->snap));
			if (w > 0 && (size_t)w < size - len) {
				len += (size_t)w;
				n++;
			}
		}
		tv_ust_domain_free(u->snap);
		u->snap = NULL;
		u->snap_bytes = 0;
	}
	return n;
}

static int end_key(const char *key, const char *val, void *ctx)
{
	struct tv_guest_ust *u = ctx;
	unsigned int b;
	int n = 0;
	char *e;

	if (!strcmp(key, "status")) {
		if (!u->c.cut)
			snprintf(u->status, sizeof(u->status), "%s", val);
		return 0;
	}
	if (sscanf(key, "cpu%u.lost%n", &b, &n) == 1 && n && !key[n] && b < u->hdr.nr_bufs) {
		u->lost[b] = strtoull(val, &e, 10);
		return *val && !*e ? 0 : -EINVAL;
	}
	return -EINVAL;
}

int tv_guest_ust_end(struct tv_guest_stream *gs, uint32_t idx, const unsigned char *p, size_t len,
		     char *err, size_t err_size)
{
	struct tv_guest_ust *u = proc_of(gs, idx, "UST_END", err, err_size);

	if (!u)
		return -EBADMSG;
	if (tv_proto_kv_parse((const char *)p, len, end_key, u)) {
		snprintf(err, err_size, "UST_END for process %u: malformed text", idx);
		return -EBADMSG;
	}
	u->ended = 1;
	return 0;
}

/*
 * The process's domain as the session reader will see it (formats from
 * its metadata, header page): one it would refuse is marked rejected in its
 * meta, said once naming the guest and process, and still listed (the
 * reader leaves it out with a warning).
 */
static int proc_check(struct tv_guest_stream *gs, struct tv_guest_ust *u)
{
	char session[PATH_MAX], dir[PATH_MAX + 96], why[sizeof(u->status) - 12];
	const char *sub;
	int ret;

	if (!gs->check_domain || split_dir(gs->dir, session, sizeof(session), &sub))
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s", session, tv_ust_domain_subdir(u->dom));
	ret = gs->check_domain(dir, NULL, why, sizeof(why));
	if (!ret || ret == -ENOMEM)
		return ret;
	snprintf(u->status, sizeof(u->status), "rejected: %s", why);
	tv_warn("Traced process rejected, its domain will not be read: guest=\"%s\", pid=%d, domain=\"%s\": %s",
		sub, u->hdr.pid, tv_ust_domain_subdir(u->dom), why);
	return tv_ust_domain_finish(u->dom, &u->c, u->lost, u->status, 0);
}

size_t tv_guest_ust_finish(struct tv_guest_stream *gs, const char **subdirs, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < TV_PROTO_MAX_UST; i++) {
		struct tv_guest_ust *u = gs->ust[i];

		if (!u || !u->dom)
			continue;
		if (!tv_ust_domain_finish(u->dom, &u->c, u->lost, u->status, 0) &&
		    !proc_check(gs, u) && n < max)
			subdirs[n++] = tv_ust_domain_subdir(u->dom);
	}
	return n;
}

void tv_guest_ust_counts(const struct tv_guest_stream *gs, struct tv_guest_stats *st)
{
	st->ust_procs = st->ust_cut = st->ust_rejected = st->ust_unended = st->ust_other = 0;
	st->ust_events = st->ust_lost = 0;
	for (size_t i = 0; i < TV_PROTO_MAX_UST; i++) {
		const struct tv_guest_ust *u = gs->ust[i];

		if (!u || !u->dom)
			continue;
		st->ust_procs++;	/* announced: cut off or not, it has its domain */
		st->ust_events += u->records;
		for (unsigned int b = 0; b < u->hdr.nr_bufs; b++)
			st->ust_lost += u->lost[b];
		if (!strncmp(u->status, "rejected", 8))
			st->ust_rejected++;
		else if (u->c.cut)
			st->ust_cut++;
		else if (!u->ended)
			st->ust_unended++;
		else if (strcmp(u->status, "complete"))
			st->ust_other++;
	}
}

void tv_guest_ust_free(struct tv_guest_stream *gs)
{
	for (size_t i = 0; i < TV_PROTO_MAX_UST; i++) {
		struct tv_guest_ust *u = gs->ust[i];

		if (!u)
			continue;
		tv_ust_domain_free(u->dom);
		tv_ust_domain_free(u->snap);
		tv_ust_consumer_release(&u->c);
		free(u->lost);
		free(u);
		gs->ust[i] = NULL;
	}
	free(gs->ust_pool);
	gs->ust_pool = NULL;
}
