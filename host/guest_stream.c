// SPDX-License-Identifier: LGPL-2.1
/*
 * Turning a guest agent's frames into the guest's domain directory.
 *
 * The guest is untrusted: each header is checked before its payload is
 * buffered (size cap), META values are range-checked before they size
 * anything, FILE paths come from a short allow-list of shapes whose
 * components are [A-Za-z0-9_.-] (never "." or ".."), files are created
 * with O_NOFOLLOW below our own directory, DATA must be whole sub-buffers
 * of a CPU that META announced, and the total is capped.  The first
 * violation kills the stream; the files written so far stay valid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "proto.h"
#include "guest_stream.h"

int tv_guest_stream_init(struct tv_guest_stream *gs, const char *dir, uint64_t limit)
{
	memset(gs, 0, sizeof(*gs));
	snprintf(gs->dir, sizeof(gs->dir), "%s", dir);
	gs->limit = limit;
	gs->guest_meta = tv_meta_new();
	return gs->guest_meta ? 0 : -ENOMEM;
}

static int stream_fail(struct tv_guest_stream *gs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int stream_fail(struct tv_guest_stream *gs, int err, const char *fmt, ...)
{
	va_list ap;

	if (gs->failed)
		return gs->failed;
	va_start(ap, fmt);
	vsnprintf(gs->error, sizeof(gs->error), fmt, ap);
	va_end(ap);
	gs->failed = err;
	return err;
}

/* ---------------------------------------------------------------- META */

/* The keys a guest describes itself with; the host owns all others. */
static int meta_key(const char *key, const char *val, void *ctx)
{
	static const char *const allowed[] = {
		"kernel_release", "hostname", "machine", "clock", "ncpus", "subbuf_size",
		"long_size", "endian", "buffer_kb", "events", "filters", "agent_version",
	};
	struct tv_guest_stream *gs = ctx;

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (!strcmp(key, allowed[i]))
			return tv_meta_set(gs->guest_meta, key, "%s", val);
	return 0;
}

static int parse_count(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * The CPU files are all created at META (the reader wants one per CPU) but
 * opened only to write, and a guest holds at most TV_GUEST_MAX_OPEN_CPU_FILES
 * of them open at once: a META with ncpus=1024 must not take 1024 of the
 * recorder's descriptors (with the usual limit of 1024, the host's and the
 * other guests' files, pipes and timers would fail).  Past the budget the
 * guest's open ones are closed and reopened for appending as written.
 */
static int open_cpu_files(struct tv_guest_stream *gs)
{
	char path[PATH_MAX + 32];

	gs->cpu_fd = calloc((size_t)gs->ncpus, sizeof(*gs->cpu_fd));
	gs->cpu_bytes = calloc((size_t)gs->ncpus, sizeof(*gs->cpu_bytes));
	if (!gs->cpu_fd || !gs->cpu_bytes)
		return stream_fail(gs, -ENOMEM, "out of memory");
	for (int cpu = 0; cpu < gs->ncpus; cpu++)
		gs->cpu_fd[cpu] = -1;
	for (int cpu = 0; cpu < gs->ncpus; cpu++) {
		int fd;

		snprintf(path, sizeof(path), "%s/cpu%d.raw", gs->dir, cpu);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			return stream_fail(gs, -errno, "Cannot create stream file: path=\"%s\", errno=%d",
					   path, errno);
		if (cpu < TV_GUEST_MAX_OPEN_CPU_FILES)
			gs->cpu_fd[cpu] = fd;	/* the usual guest: kept open */
		else
			close(fd);
	}
	return 0;
}

/* CPU @cpu's file open for appending, within the guest's budget: 0 or the stream's failure. */
static int cpu_file_open(struct tv_guest_stream *gs, int cpu)
{
	char path[PATH_MAX + 32];
	int open_now = 0;

	if (gs->cpu_fd[cpu] >= 0)
		return 0;
	for (int c = 0; c < gs->ncpus; c++)
		open_now += gs->cpu_fd[c] >= 0;
	if (open_now >= TV_GUEST_MAX_OPEN_CPU_FILES) {
		if (!gs->fd_budget_said++)
			tv_info("Guest writes more than %d CPU files: path=\"%s\": they are reopened as written (the per-guest budget of open files)",
				TV_GUEST_MAX_OPEN_CPU_FILES, gs->dir);
		tv_guest_stream_close_files(gs);
	}
	snprintf(path, sizeof(path), "%s/cpu%d.raw", gs->dir, cpu);
	gs->cpu_fd[cpu] = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (gs->cpu_fd[cpu] < 0)
		return stream_fail(gs, -errno, "Cannot open stream file: path=\"%s\", errno=%d", path,
				   errno);
	return 0;
}

static int handle_meta(struct tv_guest_stream *gs, const unsigned char *p, size_t len)
{
	long long ncpus, subbuf, lsize, filters;

	if (gs->ncpus)
		return stream_fail(gs, -EBADMSG, "protocol error: second META frame");
	if (tv_proto_kv_parse((const char *)p, len, meta_key, gs))
		return stream_fail(gs, -EBADMSG, "protocol error: malformed META text");
	if (parse_count(tv_meta_get(gs->guest_meta, "ncpus"), 1, TV_PROTO_MAX_CPUS, &ncpus) ||
	    parse_count(tv_meta_get(gs->guest_meta, "subbuf_size"), 4096, 1 << 20, &subbuf) ||
	    (subbuf & (subbuf - 1)) ||
	    parse_count(tv_meta_get(gs->guest_meta, "long_size"), 4, 8, &lsize) ||
	    (lsize != 4 && lsize != 8))
		return stream_fail(gs, -EBADMSG,
				   "protocol error: META needs ncpus 1..%d, subbuf_size a power of two in 4096..1048576, long_size 4 or 8",
				   TV_PROTO_MAX_CPUS);
	/* an agent that ignores filter.N (version 1) would record unfiltered */
	if (gs->filters_sent && (parse_count(tv_meta_get(gs->guest_meta, "filters"), 0, 1 << 16,
					     &filters) || filters != gs->filters_sent))
		return stream_fail(gs, -EPROTONOSUPPORT,
				   "the agent (version %s) did not take the %u event filters sent (agent version 2 or later needed)",
				   tv_meta_get(gs->guest_meta, "agent_version") ?: "?", gs->filters_sent);
	/* an agent that streams (version 3 or older) would send what a flight recorder keeps */
	if (gs->flight_asked && (parse_count(tv_meta_get(gs->guest_meta, "agent_version"), 0, 1 << 16,
					     &filters) || filters < 4))
		return stream_fail(gs, -EPROTONOSUPPORT,
				   "the agent (version %s) cannot keep its ring for a flight recorder (--flight-recorder with --guest needs agent version 4 or later)",
				   tv_meta_get(gs->guest_meta, "agent_version") ?: "?");
	gs->ncpus = (int)ncpus;
	gs->subbuf_size = (size_t)subbuf;
	return open_cpu_files(gs);
}

/* ---------------------------------------------------------------- FILE */

/* mkdir -p of the (already checked) directories of @rel below gs->dir. */
static int make_parents(struct tv_guest_stream *gs, const char *rel)
{
	char path[PATH_MAX + TV_PROTO_MAX_PATH + 2];
	size_t base = strlen(gs->dir) + 1;

	snprintf(path, sizeof(path), "%s/%s", gs->dir, rel);
	for (char *p = path + base; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int handle_file(struct tv_guest_stream *gs, const unsigned char *p, size_t len)
{
	char rel[TV_PROTO_MAX_PATH + 1], path[PATH_MAX + TV_PROTO_MAX_PATH + 2];
	const unsigned char *content;
	size_t clen;
	int fd, ret;

	if (tv_proto_file_split(p, len, rel, &content, &clen))
		return stream_fail(gs, -EBADMSG,
				   "protocol error: FILE with a path outside the allowed set");
	if (++gs->nr_files > TV_GUEST_MAX_FILES)
		return stream_fail(gs, -EBADMSG, "protocol error: more than %d files",
				   TV_GUEST_MAX_FILES);
	ret = make_parents(gs, rel);
	if (ret)
		return stream_fail(gs, ret, "Cannot create directory for \"%s\": errno=%d", rel, -ret);
	snprintf(path, sizeof(path), "%s/%s", gs->dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return stream_fail(gs, -errno, "Cannot create file: path=\"%s\", errno=%d", path,
				   errno);
	ret = tv_write_all(fd, content, clen);
	close(fd);
	if (ret)
		return stream_fail(gs, ret, "Cannot write file: path=\"%s\", errno=%d", path, -ret);
	return 0;
}

/* ---------------------------------------------------------------- DATA */

static int handle_data(struct tv_guest_stream *gs, uint32_t cpu, const unsigned char *p,
		       size_t len)
{
	int ret;

	if (!gs->ncpus)
		return stream_fail(gs, -EBADMSG, "protocol error: DATA before META");
	if (cpu >= (uint32_t)gs->ncpus || len == 0 || len % gs->subbuf_size)
		return stream_fail(gs, -EBADMSG,
				   "protocol error: DATA for cpu %u of %d with %zu bytes (not whole %zu-byte sub-buffers)",
				   cpu, gs->ncpus, len, gs->subbuf_size);
	if (cpu_file_open(gs, (int)cpu))
		return gs->failed;
	ret = tv_write_all(gs->cpu_fd[cpu], p, len);
	if (ret)
		return stream_fail(gs, ret, "Cannot write stream file: path=\"%s/cpu%u.raw\", errno=%d",
				   gs->dir, cpu, -ret);
	gs->cpu_bytes[cpu] += len;
	return 0;
}

/* ----------------------------------------------------------------- END */

/*
 * A "cpuN.lost", "cpuN.events" or "cpuN.overwritten" (a flight recorder's) key: 1 when N (decimal digits only, no
 * sign, space or leading zero) is a CPU below @ncpus, -EINVAL when it is
 * not, 0 for any other key.  No sscanf: its %d wrapped "cpu4294967296" to
 * CPU 0.
 */
static int end_key_cpu(const char *key, int ncpus)
{
	const char *p = key + 3;
	size_t n;

	if (strncmp(key, "cpu", 3))
		return 0;
	n = strspn(p, "0123456789");
	if (!n || (p[0] == '0' && n > 1) ||
	    (strcmp(p + n, ".lost") && strcmp(p + n, ".events") && strcmp(p + n, ".overwritten")))
		return 0;
	/* more than 4 digits is beyond TV_PROTO_MAX_CPUS, and beyond ncpus */
	return n > 4 || strtoul(p, NULL, 10) >= (unsigned long)ncpus ? -EINVAL : 1;
}

/* Only the loss and event counts; the host owns every other key. */
static int end_key(const char *key, const char *val, void *ctx)
{
	struct tv_guest_stream *gs = ctx;
	int cpu_key = end_key_cpu(key, gs->ncpus);
	long long v;

	if (cpu_key < 0)
		return cpu_key;
	if (!cpu_key && strcmp(key, "lost_total") && strcmp(key, "events_total") &&
	    strcmp(key, "overwritten_total"))
		return 0;
	if (parse_count(val, 0, INT64_MAX, &v))
		return -EINVAL;
	return tv_meta_set(gs->guest_meta, key, "%lld", v);
}

static int handle_end(struct tv_guest_stream *gs, const unsigned char *p, size_t len)
{
	if (!gs->ncpus)
		return stream_fail(gs, -EBADMSG, "protocol error: END before META");
	if (tv_proto_kv_parse((const char *)p, len, end_key, gs))
		return stream_fail(gs, -EBADMSG, "protocol error: malformed END text");
	gs->ended = 1;
	return 0;
}

static int handle_error(struct tv_guest_stream *gs, const unsigned char *p, size_t len)
{
	char text[300];
	size_t n = len < sizeof(text) - 1 ? len : sizeof(text) - 1;

	for (size_t i = 0; i < n; i++)
		text[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
	text[n] = '\0';
	return stream_fail(gs, -ECANCELED, "guest agent: %s", text);
}

static int handle_ust(struct tv_guest_stream *gs, const struct tv_proto_hdr *h,
		      const unsigned char *p)
{
	char err[200] = "";
	int ret;

	/* each traced process is a domain of the session: only when asked for */
	if (!gs->ust_asked)
		return stream_fail(gs, -EBADMSG, "protocol error: %s, but START asked for no traced processes (no ust=)",
				   tv_proto_type_name(h->type));
	if (!gs->ncpus)
		return stream_fail(gs, -EBADMSG, "protocol error: %s before META",
				   tv_proto_type_name(h->type));
	if (h->type == TV_MSG_UST_PROC)
		ret = tv_guest_ust_proc(gs, h->arg, p, h->len, err, sizeof(err));
	else if (h->type == TV_MSG_UST_META)
		ret = tv_guest_ust_meta(gs, h->arg, p, h->len, err, sizeof(err));
	else if (h->type == TV_MSG_UST_DATA)
		ret = tv_guest_ust_data(gs, h->arg, p, h->len, err, sizeof(err));
	else
		ret = tv_guest_ust_end(gs, h->arg, p, h->len, err, sizeof(err));
	if (ret == -EBADMSG)
		return stream_fail(gs, ret, "protocol error: %s", err);
	if (ret)
		return stream_fail(gs, ret, "%s", err[0] ? err : "cannot record a traced process");
	return 0;
}

/* A flight recorder's frames (host/flight_guest.c): only from its guest, after READY. */
static int handle_flight(struct tv_guest_stream *gs, const struct tv_proto_hdr *h,
			 const unsigned char *p)
{
	char err[200] = "";
	int ret;

	if (!gs->on_flight)
		return stream_fail(gs, -EBADMSG, "protocol error: %s, but the recording is not a flight recorder",
				   tv_proto_type_name(h->type));
	if (!gs->ready)
		return stream_fail(gs, -EBADMSG, "protocol error: %s before READY", tv_proto_type_name(h->type));
	ret = gs->on_flight(gs->flight_ctx, h, p, err, sizeof(err));
	return ret ? stream_fail(gs, ret, "protocol error: %s", err) : 0;
}

static int handle_frame(struct tv_guest_stream *gs, const struct tv_proto_hdr *h,
			const unsigned char *p)
{
	switch (h->type) {
	case TV_MSG_META:
		return handle_meta(gs, p, h->len);
	case TV_MSG_FILE:
		return handle_file(gs, p, h->len);
	case TV_MSG_DATA:
		return handle_data(gs, h->arg, p, h->len);
	case TV_MSG_READY:
		if (!gs->ncpus)
			return stream_fail(gs, -EBADMSG, "protocol error: READY before META");
		if (tv_guest_stream_check(gs))
			return stream_fail(gs, -ENOMEM, "out of memory");
		/* undecodable: nothing more it sends can be read */
		if (gs->rejected[0])
			return stream_fail(gs, -EBADMSG, "rejected: %s", gs->rejected);
		gs->ready = 1;
		return 0;
	case TV_MSG_PONG:
		if (h->len != 8)
			return stream_fail(gs, -EBADMSG, "protocol error: PONG of %u bytes", h->len);
		if (gs->on_pong)
			gs->on_pong(gs->ctx, tv_proto_get_u64(p));
		return 0;
	case TV_MSG_HCALL_DONE:
		if (h->len != 16)
			return stream_fail(gs, -EBADMSG, "protocol error: HCALL_DONE of %u bytes", h->len);
		if (gs->on_hcall_done)
			gs->on_hcall_done(gs->ctx, tv_proto_get_u64(p), tv_proto_get_u32(p + 8),
					  tv_proto_get_u32(p + 12));
		return 0;
	case TV_MSG_END:
		return handle_end(gs, p, h->len);
	case TV_MSG_LOSS:
		if (!gs->ncpus)
			return stream_fail(gs, -EBADMSG, "protocol error: LOSS before META");
		if (tv_proto_kv_parse((const char *)p, h->len, end_key, gs))
			return stream_fail(gs, -EBADMSG, "protocol error: malformed LOSS text");
		return 0;
	case TV_MSG_ERROR:
		return handle_error(gs, p, h->len);
	case TV_MSG_UST_PROC:
	case TV_MSG_UST_META:
	case TV_MSG_UST_DATA:
	case TV_MSG_UST_END:
		return handle_ust(gs, h, p);
	case TV_MSG_HELLO:
		return stream_fail(gs, -EBADMSG, "protocol error: a second HELLO");
	case TV_MSG_SNAP_DATA:
	case TV_MSG_SNAP_FILE:
	case TV_MSG_SNAP_END:
	case TV_MSG_SNAP_UST:
	case TV_MSG_TRIGGER:
		return handle_flight(gs, h, p);
	}
	return stream_fail(gs, -EBADMSG, "protocol error: guest sent a host command (%s)",
			   tv_proto_type_name(h->type));
}

/* --------------------------------------------------------------- check */

int tv_guest_stream_check(struct tv_guest_stream *gs)
{
	int ret;

	if (!gs->ncpus || gs->rejected[0] || !gs->check_domain)
		return 0;
	/* not logged: the guest's status says it, once (record's line at READY, its summary) */
	ret = gs->check_domain(gs->dir, gs->guest_meta, gs->rejected, sizeof(gs->rejected));
	return ret == -ENOMEM ? ret : 0;
}

/* ---------------------------------------------------------------- feed */

void tv_guest_stream_expect_hello(struct tv_guest_stream *gs, uint64_t nonce)
{
	gs->nonce = nonce;
	gs->synced = !nonce;
}

/*
 * Before this session's HELLO: search the bytes for it.  gs->buf holds the
 * longest tail that is a prefix of the expected 24 bytes; a byte that
 * breaks the match drops the oldest held bytes until the rest is a prefix
 * again, and every byte dropped is stale.  Returns the bytes consumed.
 */
static size_t stream_sync(struct tv_guest_stream *gs, const unsigned char *in, size_t len)
{
	unsigned char want[TV_PROTO_HELLO_SIZE];
	size_t used = 0;

	tv_proto_hello_encode(want, gs->nonce);
	while (used < len && !gs->synced) {
		gs->buf[gs->len++] = in[used++];
		while (gs->len && memcmp(gs->buf, want, gs->len)) {
			memmove(gs->buf, gs->buf + 1, --gs->len);
			gs->stale_bytes++;
		}
		if (gs->len == TV_PROTO_HELLO_SIZE) {
			gs->synced = 1;
			gs->len = 0;
		}
	}
	return used;
}

static int stream_reserve(struct tv_guest_stream *gs, size_t need)
{
	unsigned char *grown;

	if (need <= gs->cap)
		return 0;
	grown = realloc(gs->buf, need);
	if (!grown)
		return stream_fail(gs, -ENOMEM, "out of memory");
	gs->buf = grown;
	gs->cap = need;
	return 0;
}

int tv_guest_stream_feed(struct tv_guest_stream *gs, const void *data, size_t len)
{
	const unsigned char *in = data;
	struct tv_proto_hdr h;

	if (gs->failed)
		return gs->failed;
	if (gs->ended && len)
		return stream_fail(gs, -EBADMSG, "protocol error: data after END");
	gs->total += len;
	if (gs->total > gs->limit)
		return stream_fail(gs, -EFBIG, "size limit reached (%llu bytes)",
				   (unsigned long long)gs->limit);
	if (!gs->synced && gs->nonce) {
		size_t n;

		if (stream_reserve(gs, TV_PROTO_HELLO_SIZE))
			return gs->failed;
		n = stream_sync(gs, in, len);
		in += n;
		len -= n;
	}
	while (len > 0) {
		size_t want = TV_PROTO_HDR_SIZE, n;
		int ret;

		if (gs->len >= TV_PROTO_HDR_SIZE) {
			tv_proto_hdr_decode(gs->buf, &h);	/* checked when it completed */
			want += h.len;
		}
		if (stream_reserve(gs, want))
			return gs->failed;
		n = want - gs->len < len ? want - gs->len : len;
		memcpy(gs->buf + gs->len, in, n);
		gs->len += n;
		in += n;
		len -= n;
		if (gs->len == TV_PROTO_HDR_SIZE) {
			ret = tv_proto_hdr_decode(gs->buf, &h);
			if (ret == -EMSGSIZE)
				return stream_fail(gs, ret, "protocol error: frame of %u bytes (limit %u)",
						   h.len, TV_PROTO_MAX_PAYLOAD);
			if (ret)
				return stream_fail(gs, ret, "protocol error: bad frame header");
			if (h.len)
				continue;
		} else if (gs->len < want) {
			continue;
		}
		tv_proto_hdr_decode(gs->buf, &h);
		gs->len = 0;
		ret = handle_frame(gs, &h, gs->buf + TV_PROTO_HDR_SIZE);
		if (ret)
			return ret;
		if (gs->ended && len)
			return stream_fail(gs, -EBADMSG, "protocol error: data after END");
	}
	return 0;
}

void tv_guest_stream_close_files(struct tv_guest_stream *gs)
{
	for (int cpu = 0; gs->cpu_fd && cpu < gs->ncpus; cpu++) {
		if (gs->cpu_fd[cpu] >= 0)
			close(gs->cpu_fd[cpu]);
		gs->cpu_fd[cpu] = -1;
	}
}

void tv_guest_stream_fini(struct tv_guest_stream *gs)
{
	tv_guest_stream_close_files(gs);
	free(gs->cpu_fd);
	free(gs->cpu_bytes);
	free(gs->buf);
	tv_guest_ust_free(gs);
	tv_meta_free(gs->guest_meta);
	gs->cpu_fd = NULL;
	gs->cpu_bytes = NULL;
	gs->buf = NULL;
	gs->guest_meta = NULL;
}
