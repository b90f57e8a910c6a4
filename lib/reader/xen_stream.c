// SPDX-License-Identifier: LGPL-2.1
/*
 * The session reader's stream for a domain of kind xen-trace: xen/cpuN.xen
 * holds physical CPU N's t_rec records exactly as the hypervisor wrote them
 * (wrap and lost records included).  Each record is turned into a
 * synthesized libtraceevent record (lib/xen/xen_decode.c) with its time in ns:
 * Xen system time when the session has the per-CPU TSC scale of the patched
 * hypervisor (clock=xen-system), else TSC / cpu_khz (clock=xen-tsc).
 * `tracevisor compress` turns it into cpuN.xen.zst (one zstd frame, as
 * cpuN.raw.zst), read here in order through lib/format/compress.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event-parse.h>

#include "reader_internal.h"
#include "xen_trace.h"

#define XEN_STREAM_BUF (64 * 1024)
/* How far the start-state scan reads before falling back to the session's
 * snapshot: a CPU without a scheduler record in its first MBs is rare. */
#define XEN_SCAN_LIMIT (16u << 20)

struct tv_xen_stream {
	unsigned char buf[XEN_STREAM_BUF];
	size_t len, pos;
	uint64_t buf_off;		/* file offset of buf[0] */
	int eof;
	struct tv_xen_cpu_state cs;
	unsigned char ev[TV_XEN_EVENT_MAX];
	uint64_t khz;
	bool system_time;		/* per-CPU scale of the patched Xen */
	uint64_t tsc0, stime0;
	uint32_t mul;
	int8_t shift;
	const struct tv_xen_line *line;	/* Xen's common line, or NULL */
	struct tv_xen_line_span span;	/* its scale used last; lo > hi: none yet */
	struct tv_xen_rec last;		/* behind the current event */
};

static void xen_stream_clock(struct tv_xen_stream *xs, const struct tv_domain *dom, int cpu)
{
	const char *clock = tv_meta_get(dom->meta, "clock");
	char key[64];

	const char *isa = tv_meta_get(dom->meta, "hvm_isa");

	xs->cs.isa = !isa ? TV_KVM_ISA_UNKNOWN : !strcmp(isa, "vmx") ? TV_KVM_ISA_VMX
		   : !strcmp(isa, "svm") ? TV_KVM_ISA_SVM : TV_KVM_ISA_UNKNOWN;
	xs->khz = (uint64_t)tv_meta_get_ll(dom->meta, "tsc_khz", 0);
	if (!clock || strcmp(clock, "xen-system"))
		return;
	snprintf(key, sizeof(key), "cpu%d.tsc_to_system_mul", cpu);
	xs->mul = (uint32_t)tv_meta_get_ll(dom->meta, key, 0);
	snprintf(key, sizeof(key), "cpu%d.tsc_shift", cpu);
	xs->shift = (int8_t)tv_meta_get_ll(dom->meta, key, 0);
	snprintf(key, sizeof(key), "cpu%d.tsc_timestamp", cpu);
	xs->tsc0 = (uint64_t)tv_meta_get_ll(dom->meta, key, 0);
	snprintf(key, sizeof(key), "cpu%d.system_time", cpu);
	xs->stime0 = (uint64_t)tv_meta_get_ll(dom->meta, key, 0);
	xs->system_time = xs->mul != 0;
}

/*
 * The patched hypervisor records each recalibration in band: from there on
 * this CPU's records map to system time with the new stamp and scale.
 */
static void xen_stream_rescale(struct tv_xen_stream *xs, const struct tv_xen_rec *rec)
{
	if (!xs->system_time || rec->nr_extra < 6)
		return;
	xs->tsc0 = rec->extra[0] | (uint64_t)rec->extra[1] << 32;
	xs->stime0 = rec->extra[2] | (uint64_t)rec->extra[3] << 32;
	xs->mul = rec->extra[4];
	xs->shift = (int8_t)rec->extra[5];
}

/* The next bytes of the file: through its zstd frame when compressed. */
static ssize_t xen_read(int fd, struct tv_zstream *zs, void *buf, size_t len, const char **why)
{
	ssize_t n;

	if (zs)
		return tv_zstream_read(zs, buf, len, why);
	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/*
 * The head of a compressed file for the start-state scan: its own
 * descriptor and frame, so the stream's reading still starts at 0.
 */
static int xen_scan_open(struct tv_cpu_stream *st, int *fd, struct tv_zstream **zs)
{
	uint64_t size;
	int ret;

	*fd = tv_domain_open_file(st->dom, st->path);
	if (*fd < 0)
		return *fd;
	ret = tv_zstream_open(*fd, zs, &size);
	if (ret) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/*
 * The vCPU running on this CPU when its first record was written.  Records
 * do not name it; the first scheduler record that shows who ran before it
 * (a switch's prev, running -> X, continue_running) says it exactly, so the
 * file's head is scanned for one (pread: the stream's offset stays 0).
 * Without one within XEN_SCAN_LIMIT, or before a lost-records record, the
 * session's snapshot taken from the hypervisor when recording started
 * (cpuN.running=DOM.VCPU, xen/xen_recorder.c) is used; without that, unknown.
 * Return: 1 found by the scan, 2 from the snapshot, 0 unknown.
 */
static int xen_stream_start_state(struct tv_cpu_stream *st, int cpu)
{
	struct tv_xen_cpu_state *cs = &st->xen->cs;
	unsigned char *buf = st->xen->buf;
	size_t len = 0, pos = 0;
	uint64_t off = 0;
	struct tv_xen_rec rec;
	unsigned int dom, vcpu;
	struct tv_zstream *zs = NULL;
	const char *snap, *why;
	char key[64];
	int r = 0, zfd = -1;

	if (st->zs && xen_scan_open(st, &zfd, &zs))
		off = XEN_SCAN_LIMIT;	/* no scan: the snapshot (read errors come later) */
	while (off + len < XEN_SCAN_LIMIT) {
		unsigned int size = tv_xen_rec_parse(buf + pos, len - pos, &rec);
		ssize_t n;

		if (size) {
			pos += size;
			r = tv_xen_rec_prev_running(&rec, &cs->cur_dom, &cs->cur_vcpu);
			if (r)
				break;
			continue;
		}
		memmove(buf, buf + pos, len - pos);
		off += pos;
		len -= pos;
		pos = 0;
		if (zs)		/* the scan reads in order from 0: the frame's order */
			n = xen_read(zfd, zs, buf + len, XEN_STREAM_BUF - len, &why);
		else
			n = pread(st->fd, buf + len, XEN_STREAM_BUF - len, (off_t)(off + len));
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	tv_zstream_close(zs);
	if (zfd >= 0)
		close(zfd);
	if (r == 1)
		return 1;
	snprintf(key, sizeof(key), "cpu%d.running", cpu);
	snap = tv_meta_get(st->dom->meta, key);
	if (snap && sscanf(snap, "%u.%u", &dom, &vcpu) == 2 && dom <= 0xffff && vcpu <= 0xffff) {
		cs->cur_dom = (uint16_t)dom;
		cs->cur_vcpu = (uint16_t)vcpu;
		return 2;
	}
	cs->cur_dom = cs->cur_vcpu = 0xffff;
	return 0;
}

int tv_xen_stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu)
{
	memset(st, 0, sizeof(*st));
	st->dom = dom;
	st->cpu = cpu;
	snprintf(st->path, sizeof(st->path), "%s/cpu%d.xen", dom->dir, cpu);
	st->fd = tv_domain_open_file(dom, st->path);
	if (st->fd == -ENOENT) {	/* compressed? */
		strcat(st->path, ".zst");
		st->fd = tv_domain_open_file(dom, st->path);
	}
	if (st->fd < 0) {
		int err = -st->fd;

		if (err == ENOENT) {	/* a CPU without a buffer, or no records */
			st->done = 1;
			return 0;
		}
		if (err != TV_EUNSAFE)
			tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", st->path, err, strerror(err));
		return -err;
	}
	if (strstr(st->path, ".zst")) {
		int ret = tv_zstream_open(st->fd, &st->zs, &st->file_size);

		if (ret == -EBADMSG)
			tv_err("Corrupt stream file: path=\"%s\", offset=0: not a zstd frame with its size",
			       st->path);
		else if (ret)
			tv_err("Cannot read stream file: path=\"%s\", errno=%d (%s)", st->path, -ret,
			       strerror(-ret));
		if (ret)
			return ret;
	}
	st->xen = calloc(1, sizeof(*st->xen));
	if (!st->xen)
		return -ENOMEM;
	tv_xen_cpu_state_init(&st->xen->cs);
	xen_stream_clock(st->xen, dom, cpu);
	st->xen->line = dom->line;
	st->xen->span.lo = 1;	/* an empty span: the first record looks its scale up */
	xen_stream_start_state(st, cpu);
	return 0;
}

/* Keep the unread tail and read more; return bytes available. */
static long xen_stream_fill(struct tv_cpu_stream *st)
{
	struct tv_xen_stream *xs = st->xen;
	const char *why = NULL;
	ssize_t n;

	memmove(xs->buf, xs->buf + xs->pos, xs->len - xs->pos);
	xs->buf_off += xs->pos;
	xs->len -= xs->pos;
	xs->pos = 0;
	while (!xs->eof && xs->len < sizeof(xs->buf)) {
		n = xen_read(st->fd, st->zs, xs->buf + xs->len, sizeof(xs->buf) - xs->len, &why);
		if (n < 0 && why) {
			tv_err("Corrupt stream file: path=\"%s\", offset=%llu: %s", st->path,
			       (unsigned long long)(xs->buf_off + xs->len), why);
			return n;
		}
		if (n < 0) {
			tv_err("Cannot read stream file: path=\"%s\", errno=%d (%s)", st->path, (int)-n,
			       strerror((int)-n));
			return n;
		}
		/* a compressed file cut short: its frame said how much it holds */
		if (n == 0 && st->zs && tv_zstream_pos(st->zs) < st->file_size) {
			tv_err("Corrupt stream file: path=\"%s\", offset=%llu: compressed data ends before its size (%llu bytes)",
			       st->path, (unsigned long long)tv_zstream_pos(st->zs),
			       (unsigned long long)st->file_size);
			return -EBADMSG;
		}
		if (n == 0)
			xs->eof = 1;
		xs->len += (size_t)n;
	}
	return (long)xs->len;
}

static uint64_t xen_stream_ns(struct tv_xen_stream *xs, uint64_t tsc)
{
	if (xs->line) {
		struct tv_xen_line_span *sp = &xs->span;

		if (tsc < sp->lo || tsc >= sp->hi)
			tv_xen_line_span_at(xs->line, tsc, sp);
		return tv_xen_tsc_to_stime(tsc, sp->tsc0, sp->stime0, sp->mul, sp->shift);
	}
	if (xs->system_time)
		return tv_xen_tsc_to_stime(tsc, xs->tsc0, xs->stime0, xs->mul, xs->shift);
	return tv_xen_tsc_to_ns(tsc, xs->khz);
}

/* Parse the next record into xs; return 1, 0 at the end, or -errno. */
static int xen_stream_parse(struct tv_cpu_stream *st, struct tv_xen_rec *rec)
{
	struct tv_xen_stream *xs = st->xen;
	unsigned int size;

	size = tv_xen_rec_parse(xs->buf + xs->pos, xs->len - xs->pos, rec);
	if (!size) {
		long n = xen_stream_fill(st);

		if (n < 0)
			return (int)n;
		size = tv_xen_rec_parse(xs->buf, xs->len, rec);
	}
	if (!size) {
		/* followed: the rest of a record being written comes later */
		if (xs->len && !st->dom->follow)
			tv_warn("Stream file ends inside a record: path=\"%s\", offset=%llu, bytes=%zu",
				st->path, (unsigned long long)xs->buf_off, xs->len);
		return 0;
	}
	st->rec.offset = xs->buf_off + xs->pos;
	xs->pos += size;
	return 1;
}

/*
 * A record without a TSC (an HVM handler's) happened at the previous
 * record's; before the file's first TSC there is none, so it takes the
 * first one read after it (in the buffer: a followed file may not have it
 * yet, and then it stays 0).
 */
static void xen_stream_first_tsc(struct tv_xen_stream *xs)
{
	struct tv_xen_rec next;
	size_t pos = xs->pos;
	unsigned int size;

	while ((size = tv_xen_rec_parse(xs->buf + pos, xs->len - pos, &next))) {
		if (next.has_tsc) {
			xs->cs.last_tsc = next.tsc;
			xs->cs.have_tsc = true;
			return;
		}
		pos += size;
	}
}

/*
 * A record the reader passes over still times the records after it that
 * have no TSC of their own, as it would have read it (the TSC of a CPU
 * change never counted: no event).  xs->pos is past it.
 */
static void xen_stream_pass(struct tv_xen_stream *xs, uint32_t event, bool has_tsc, uint64_t tsc)
{
	if (event == XT_CPU_CHANGE)
		return;
	if (has_tsc) {
		xs->cs.last_tsc = tsc;
		xs->cs.have_tsc = true;
	} else if (!xs->cs.have_tsc) {
		xen_stream_first_tsc(xs);
	}
}

/*
 * Past the whole records in the buffer that @want does not take, from
 * their header and TSC alone: the line's reader takes 2 records in 100,
 * and parsing every one was most of its cost.
 */
static void xen_stream_skip(struct tv_xen_stream *xs, bool (*want)(uint32_t event))
{
	for (;;) {
		const unsigned char *p = xs->buf + xs->pos;
		size_t avail = xs->len - xs->pos;
		uint32_t hdr, lo, hi;
		unsigned int size;

		if (avail < 4)
			return;
		memcpy(&hdr, p, 4);
		size = 4 + (hdr >> 31 ? 8 : 0) + 4 * ((hdr >> 28) & 7);
		if (avail < size || want(hdr & 0x0fffffffu))
			return;
		xs->pos += size;
		if (hdr >> 31) {
			memcpy(&lo, p + 4, 4);
			memcpy(&hi, p + 8, 4);
		}
		xen_stream_pass(xs, hdr & 0x0fffffffu, hdr >> 31, (uint64_t)hi << 32 | lo);
	}
}

int tv_xen_stream_next_record(struct tv_cpu_stream *st, bool (*want)(uint32_t event))
{
	struct tv_xen_stream *xs = st->xen;
	struct tv_xen_rec rec;
	int ret;

	if (st->done)
		return 0;
	for (;;) {
		xen_stream_skip(xs, want);
		ret = xen_stream_parse(st, &rec);	/* one it takes, or one cut by the buffer's end */
		if (ret <= 0) {
			st->done = 1;
			return ret;
		}
		if (rec.event != XT_CPU_CHANGE && want(rec.event))
			break;
		xen_stream_pass(xs, rec.event, rec.has_tsc, rec.tsc);
	}
	/* tv_xen_rec_to_event()'s time: a record without a TSC is at the previous one's */
	xen_stream_pass(xs, rec.event, rec.has_tsc, rec.tsc);
	st->rec.ts = xen_stream_ns(xs, xs->cs.last_tsc);
	xs->last = rec;
	xs->last.tsc = xs->cs.last_tsc;
	if (rec.event == XT_TSCALE)
		xen_stream_rescale(xs, &rec);
	return 1;
}

int tv_xen_stream_next(struct tv_cpu_stream *st)
{
	struct tv_xen_stream *xs = st->xen;
	struct tv_xen_rec rec;
	unsigned int size = 0;
	uint64_t tsc = 0, offset;
	const char *why = NULL;
	int ret;

	if (st->done)
		return 0;
	while (!size) {
		ret = xen_stream_parse(st, &rec);
		if (ret <= 0) {
			st->done = 1;
			return ret;
		}
		if (!rec.has_tsc && !xs->cs.have_tsc)
			xen_stream_first_tsc(xs);
		size = tv_xen_rec_to_event(&xs->cs, &rec, xs->ev, &tsc);
	}
	offset = st->rec.offset;
	memset(&st->rec, 0, sizeof(st->rec));
	st->rec.ts = xen_stream_ns(xs, tsc);
	st->rec.offset = offset;
	st->rec.size = (int)size;
	st->rec.record_size = (int)size;
	st->rec.data = xs->ev;
	st->rec.cpu = st->cpu;
	xs->last = rec;
	xs->last.tsc = tsc;
	if (rec.event == XT_TSCALE)
		xen_stream_rescale(xs, &rec);
	if (rec.event == XT_LOST_RECORDS)
		st->rec.missed_events = rec.extra[0];
	st->event = tv_domain_checked_event(st->dom, &st->rec, &st->pid, &why);
	if (!st->event) {
		tv_err("Corrupt stream file: path=\"%s\", offset=%llu: %s", st->path,
		       (unsigned long long)offset, why);
		st->done = 1;
		return -EBADMSG;
	}
	return 1;
}

const struct tv_xen_rec *tv_xen_stream_last(const struct tv_cpu_stream *st)
{
	return &st->xen->last;
}

void tv_xen_stream_close(struct tv_cpu_stream *st)
{
	tv_zstream_close(st->zs);
	st->zs = NULL;
	if (st->fd > 0)
		close(st->fd);
	free(st->xen);
	st->xen = NULL;
	st->fd = -1;
}

/*
 * Following a session being recorded (top --xen): the drain thread appends
 * to cpuN.xen as it goes, so the end of file next() stopped at may have
 * grown; a record cut by that end is still in the buffer, read on whole.
 */
static int tv_xen_stream_refresh(struct tv_cpu_stream *st)
{
	if (st->zs || !st->xen)
		return 0;	/* compressed after the recording, or no file: final */
	st->xen->eof = 0;
	st->done = 0;
	return 0;
}

/* Everything before the buffer: the start-state scan ran at open. */
static uint64_t tv_xen_stream_done_bytes(const struct tv_cpu_stream *st)
{
	return st->zs || !st->xen ? 0 : st->xen->buf_off;
}

const struct tv_stream_source tv_xen_source = {
	.kind = "xen-trace",
	.open = tv_xen_stream_open,
	.next = tv_xen_stream_next,
	.close = tv_xen_stream_close,
	.refresh = tv_xen_stream_refresh,
	.done_bytes = tv_xen_stream_done_bytes,
};
