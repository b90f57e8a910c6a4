// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space tracer's consumer (lib/ust/ust_consumer.c), session domain
 * (lib/ust/ust_session.c) and reader source (lib/reader/ust_stream.c), on buffers
 * written here by a minimal synthetic writer that follows lib/ust/ust_abi.h:
 * complete sub-buffers read in order, a dead process's partial sub-buffer
 * recovered, and hostile buffers (a lying record length, a commit counter
 * beyond the buffer, a header that lies about sizes, metadata that lies)
 * cut off with a clear reason while nothing is read out of bounds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <event-parse.h>

#include "tv_test.h"
#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include <ust_consumer.h>	/* lib/s, not tests/unit/ust_consumer.h */
#include "proto.h"
#include "guest_stream.h"
#include "flight_guest.h"
#include "ust_demo_meta.h"

#define SB 4096u
#define NSB 4u
#define NBUFS 2u
#define META_CAP 8192u

struct shm {
	unsigned char *map;
	size_t size;
	struct tv_ust_shm_header *h;
};

static const char meta_text[] =
	UST_DEMO_META_WORK
	"event 3 demo:msg\n"
	"name: msg\nID: 3\nformat:\n"
	UST_DEMO_COMMON_FIELDS
	"\tfield:__data_loc char[] text;\toffset:8;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"%s\", __get_str(text)\n"
	"end\n";

static uint64_t data_offset(void)
{
	return (sizeof(struct tv_ust_buf_ctl) + 8 * NSB + 63) & ~63ull;
}

static struct tv_ust_buf_ctl *ctl(struct shm *s, unsigned int b)
{
	return (struct tv_ust_buf_ctl *)(s->map + s->h->bufs_offset + b * s->h->buf_stride);
}

static void shm_init(struct shm *s, uint32_t mode)
{
	uint64_t stride = data_offset() + (uint64_t)SB * NSB;

	s->size = 4096 + META_CAP + NBUFS * stride;
	s->map = aligned_alloc(4096, (s->size + 4095) & ~4095ul);
	memset(s->map, 0, s->size);
	s->h = (struct tv_ust_shm_header *)s->map;
	*s->h = (struct tv_ust_shm_header){
		.magic = TV_UST_MAGIC, .version = TV_UST_VERSION, .header_size = sizeof(*s->h),
		.nr_bufs = NBUFS, .subbuf_size = SB, .nr_subbufs = NSB, .mode = mode,
		.clock = TV_UST_CLOCK_MONO, .pid = 4242, .meta_offset = 4096,
		.meta_capacity = META_CAP, .bufs_offset = 4096 + META_CAP, .buf_stride = stride,
		.data_offset = data_offset(), .shm_size = s->size,
	};
	memcpy(s->h->comm, "ust-test", 9);
	memcpy(s->map + 4096, meta_text, sizeof(meta_text) - 1);
	s->h->meta_len = sizeof(meta_text) - 1;
	for (unsigned int b = 0; b < NBUFS; b++)
		ctl(s, b)->cpu = b;
}

/*
 * The writer's side of the protocol, one thread: reserve (padding when the
 * record does not fit), payload, header word, commit.  @commit 0 leaves the
 * record reserved and uncommitted (a writer killed mid-event).
 */
/* One case: a fresh mapping in @mode and its consumer, the metadata read. */
static void case_start(struct shm *s, struct tv_ust_consumer *c, uint32_t mode)
{
	shm_init(s, mode);
	tv_ust_consumer_init(c, s->map, s->size);
	tv_ust_consumer_meta_update(c, NULL, 0);
}

static void case_end(struct shm *s, struct tv_ust_consumer *c)
{
	tv_ust_consumer_release(c);
	free(s->map);
}

static int emit(struct shm *s, unsigned int b, uint16_t id, uint64_t ts, uint32_t thread,
		uint64_t seq, int commit)
{
	struct tv_ust_buf_ctl *c = ctl(s, b);
	const uint16_t size = 32;
	uint64_t pos = c->reserve, off = pos % SB, idx;
	unsigned char *sub;
	struct tv_ust_record_hdr h = { ts, id, size, (int32_t)(100 + thread) };

	if (SB - off < size) {	/* pad the tail */
		idx = (pos / SB) % NSB;
		sub = s->map + s->h->bufs_offset + b * s->h->buf_stride + s->h->data_offset + idx * SB;
		memset(sub + off, 0, 16);
		sub[off + 10] = (unsigned char)(SB - off);
		sub[off + 11] = (unsigned char)((SB - off) >> 8);
		c->commit[idx] += SB - off;
		pos += SB - off;
		off = 0;
	}
	if (s->h->mode != TV_UST_MODE_OVERWRITE && pos + size - c->consumed > (uint64_t)SB * NSB) {
		c->lost++;
		c->reserve = pos;
		return 0;
	}
	c->reserve = pos + size;
	idx = (pos / SB) % NSB;
	sub = s->map + s->h->bufs_offset + b * s->h->buf_stride + s->h->data_offset + idx * SB;
	memcpy(sub + off, &h.ts, 8);
	memcpy(sub + off + 16, &thread, 4);
	memcpy(sub + off + 24, &seq, 8);
	if (commit == 0) {	/* reserved, marked uncommitted (ust_abi.h), never committed */
		struct tv_ust_record_hdr u = { ts, TV_UST_ID_UNCOMMITTED, size, h.tid };

		memcpy(sub + off + 8, (char *)&u + 8, 8);
		return 1;
	}
	if (commit < 0)		/* reserved, header word never written */
		return 1;
	memcpy(sub + off + 8, (char *)&h + 8, 8);
	c->commit[idx] += size;
	return 1;
}

static int drain(struct tv_ust_consumer *c, unsigned int b, struct tv_ust_domain *d)
{
	unsigned char out[SB];
	int n = 0, ret;

	while ((ret = tv_ust_consumer_read(c, b, out)) == 1) {
		if (d)
			tv_ust_domain_write(d, b, out);
		n++;
	}
	return ret < 0 ? ret : n;
}

static void test_init_checks(void)
{
	struct tv_ust_consumer c;
	struct shm s;

	shm_init(&s, TV_UST_MODE_DISCARD);
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == 0, "valid mapping refused: %s", c.why);
	tv_ust_consumer_release(&c);

	s.h->nr_bufs = 1000;	/* a header that lies about sizes */
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == -EBADMSG && strstr(c.why, "outside the mapping"),
		 "nr_bufs beyond the mapping: %s", c.why);
	tv_ust_consumer_release(&c);
	s.h->nr_bufs = NBUFS;
	s.h->subbuf_size = 5000;
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == -EBADMSG && strstr(c.why, "subbuf_size"),
		 "subbuf_size not a power of two: %s", c.why);
	tv_ust_consumer_release(&c);
	s.h->subbuf_size = SB;
	s.h->buf_stride = 64;
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == -EBADMSG && strstr(c.why, "stride"),
		 "stride smaller than the sub-buffers: %s", c.why);
	tv_ust_consumer_release(&c);
	s.h->buf_stride = data_offset() + (uint64_t)SB * NSB;
	s.h->meta_capacity = UINT64_MAX - 10;
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == -EBADMSG && strstr(c.why, "metadata"),
		 "metadata area overflowing: %s", c.why);
	tv_ust_consumer_release(&c);
	s.h->meta_capacity = META_CAP;
	TV_CHECK(tv_ust_consumer_init(&c, s.map, 100) == -EBADMSG, "mapping smaller than the header");
	tv_ust_consumer_release(&c);
	s.h->magic = 0;
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == -EBADMSG && strstr(c.why, "magic"),
		 "bad magic: %s", c.why);
	case_end(&s, &c);
}

static void test_meta(void)
{
	struct tv_ust_consumer c;
	uint16_t ids[8];
	struct shm s;

	shm_init(&s, TV_UST_MODE_DISCARD);
	tv_ust_consumer_init(&c, s.map, s.size);
	TV_CHECK(tv_ust_consumer_meta_update(&c, ids, 8) == 3, "three events");
	TV_CHECK(ids[0] == 1 && ids[2] == 3 && !strcmp(c.events[2].provider, "demo") &&
		 !strcmp(c.events[2].name, "work_end"), "ids and names");
	TV_CHECK(c.events[1].min_size == 24 && c.events[3].nr_dyn == 1 && c.events[3].dyn_off[0] == 8,
		 "bounds from the format: %u %u", c.events[1].min_size, c.events[3].nr_dyn);
	TV_CHECK(tv_ust_consumer_meta_update(&c, ids, 8) == 0, "nothing new");
	s.h->meta_len = META_CAP + 1;
	TV_CHECK(tv_ust_consumer_meta_update(&c, NULL, 0) == -EBADMSG && c.cut && strstr(c.why, "meta_len"),
		 "meta_len beyond its area: %s", c.why);
	tv_ust_consumer_release(&c);

	/* an id defined twice, a path in a name, a format whose ID lies */
	{
		static const char *const bad[] = {
			"event 1 a:b\nname: b\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\nend\n"
			"event 1 a:c\nname: c\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\nend\n",
			"event 1 ..:b\nname: b\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\nend\n",
			"event 1 a:b\nname: b\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\nend\n",
			"event 1 a:b\nname: b\nID: 1\nformat:\n\tfield:u64 x;\toffset:70000;\tsize:8;\tsigned:0;\nend\n",
		};
		static const char *const reason[] = { "twice", "name", "ID", "offset" };

		for (size_t i = 0; i < 4; i++) {
			memset(&c, 0, sizeof(c));
			TV_CHECK(tv_ust_meta_append(&c, bad[i], strlen(bad[i]), NULL, 0) == -EBADMSG &&
				 strstr(c.why, reason[i]), "bad metadata %zu: %s", i, c.why);
			tv_ust_consumer_release(&c);
		}
	}
	free(s.map);
}

/*
 * Metadata in linear time (issue #22): an entry a byte at a time (its "end"
 * cut anywhere) parses as a whole one does; an entry of ~4 MiB that never
 * ends, then 2000 empty appends, costs no rescan (quadratic before: each
 * empty UST_META frame of a guest searched the 4 MiB again); a pool shared
 * by two consumers cuts the one that passes it.
 */
static void test_meta_linear(void)
{
	static const char one[] = "event 1 a:b\nname: b\nID: 1\nformat:\n"
				  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\nend\n"
				  "event 2 a:c\nname: c\nID: 2\nformat:\n"
				  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\nend\n";
	struct tv_ust_meta_pool pool = { 0, 100, "guest" };
	struct tv_ust_consumer c, d;
	struct timespec t0, t1;
	size_t big = (4u << 20) - 4096;
	char *text = malloc(big);
	int found = 0;

	memset(&c, 0, sizeof(c));
	for (size_t i = 0; i < sizeof(one) - 1; i++)
		found += tv_ust_meta_append(&c, one + i, 1, NULL, 0);
	TV_CHECK(found == 2 && !c.cut && c.events[2].id == 2 && c.meta_parsed == sizeof(one) - 1,
		 "byte at a time: %d events, cut %d (%s)", found, c.cut, c.why);
	tv_ust_consumer_release(&c);

	memset(&c, 0, sizeof(c));
	/* the first entry but its "end", then lines of x */
	memcpy(text, one, (size_t)(strstr(one, "end\n") - one));
	memset(text + (strstr(one, "end\n") - one), 'x', big - (size_t)(strstr(one, "end\n") - one));
	for (size_t off = big - 1; off > (size_t)(strstr(one, "end\n") - one); off -= 80)
		text[off] = '\n';
	TV_CHECK(tv_ust_meta_append(&c, text, big, NULL, 0) == 0 && !c.cut, "an entry that does not end");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 2000; i++)
		tv_ust_meta_append(&c, NULL, 0, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TV_CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 100,
		 "2000 empty appends after 4 MiB took %ld ms", (long)((t1.tv_sec - t0.tv_sec) * 1000 +
									  (t1.tv_nsec - t0.tv_nsec) / 1000000));
	TV_CHECK(tv_ust_meta_append(&c, "end\n", 4, NULL, 0) == 1 && !c.cut,
		 "its end found after all: %s", c.why);
	tv_ust_consumer_release(&c);
	free(text);

	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	c.pool = d.pool = &pool;
	TV_CHECK(tv_ust_meta_append(&c, one, 60, NULL, 0) == 0 && !c.cut, "60 bytes of the pool's 100");
	TV_CHECK(tv_ust_meta_append(&d, one, 60, NULL, 0) == -EBADMSG && d.cut &&
		 strstr(d.why, "100 bytes of metadata in all (the limit per guest)"),
		 "the second consumer passes the pool: %s", d.why);
	TV_CHECK(pool.used == 60, "the pool counts what it let in: %llu", (unsigned long long)pool.used);
	tv_ust_consumer_release(&c);
	tv_ust_consumer_release(&d);
}

static char tmpdir[64];

static int read_session(const char *dir, uint64_t *count, uint64_t *begins, char *domain, size_t dsize)
{
	struct tv_reader *rd;
	struct tv_event ev;
	uint64_t last = 0;
	int ret = tv_reader_open(dir, &rd), ordered = 1;

	*count = *begins = 0;
	if (ret)
		return ret;
	while ((ret = tv_reader_next(rd, &ev)) > 0) {
		(*count)++;
		if (!strcmp(ev.format->system, "demo") && !strcmp(ev.format->name, "work_begin"))
			(*begins)++;
		if (ev.ts < last)
			ordered = 0;
		last = ev.ts;
		snprintf(domain, dsize, "%s", ev.domain);
	}
	tv_reader_close(rd);
	return ret < 0 ? ret : ordered ? 0 : -EDOM;
}

static void test_read_and_session(void)
{
	struct tv_ust_consumer c;
	struct tv_ust_domain *d;
	struct shm s;
	char dir[128], domain[80] = "";
	uint64_t count, begins, lost[NBUFS];
	int n = 0, got;
	FILE *f;

	shm_init(&s, TV_UST_MODE_DISCARD);
	snprintf(dir, sizeof(dir), "%s/s1", tmpdir);
	mkdir(dir, 0755);
	TV_CHECK(tv_ust_consumer_init(&c, s.map, s.size) == 0, "init");
	tv_ust_consumer_meta_update(&c, NULL, 0);
	TV_CHECK(tv_ust_domain_create(dir, "host", &c.hdr, &d) == 0, "domain created");
	TV_CHECK(!strcmp(tv_ust_domain_subdir(d), "ust-host-4242"), "subdir %s", tv_ust_domain_subdir(d));
	tv_ust_domain_add_events(d, &c);
	/* 1000 begin/end pairs over two buffers, drained as we go */
	for (int i = 0; i < 1000; i++) {
		unsigned int b = (unsigned int)(i & 1);

		n += emit(&s, b, 1, 1000 + 10 * (uint64_t)i, b, (uint64_t)i, 1);
		n += emit(&s, b, 2, 1005 + 10 * (uint64_t)i, b, (uint64_t)i, 1);
		if (i % 50 == 49) {
			drain(&c, 0, d);
			drain(&c, 1, d);
		}
	}
	TV_CHECK(n == 2000 && ctl(&s, 0)->lost == 0, "writer emitted %d, lost %llu", n,
		 (unsigned long long)ctl(&s, 0)->lost);
	got = drain(&c, 0, d) + drain(&c, 1, d);
	TV_CHECK(got == 0, "complete sub-buffers all read already (%d)", got);
	/* the process exits: the partial tails are recovered */
	for (unsigned int b = 0; b < NBUFS; b++) {
		unsigned char out[SB];

		while (tv_ust_consumer_recover(&c, b, out) == 1)
			tv_ust_domain_write(d, b, out);
		lost[b] = tv_ust_consumer_lost(&c, b);
	}
	TV_CHECK(c.bufs[0].records + c.bufs[1].records == 2000, "records read: %llu",
		 (unsigned long long)(c.bufs[0].records + c.bufs[1].records));
	TV_CHECK(tv_ust_domain_finish(d, &c, lost, "complete", 0) == 0, "finish");
	tv_ust_domain_free(d);
	tv_ust_consumer_release(&c);
	snprintf(dir, sizeof(dir), "%s/s1/session.meta", tmpdir);
	f = fopen(dir, "w");
	fprintf(f, "format=tracevisor-session\nversion=1\ndomains=ust-host-4242\nreference_domain=ust-host-4242\n");
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/s1", tmpdir);
	TV_CHECK(read_session(dir, &count, &begins, domain, sizeof(domain)) == 0, "session read in order");
	TV_CHECK(count == 2000 && begins == 1000, "reader: %llu events, %llu begins",
		 (unsigned long long)count, (unsigned long long)begins);
	TV_CHECK(!strcmp(domain, "host"), "shown in its parent's domain: %s", domain);
	free(s.map);
}

static void test_recover_partial(void)
{
	struct tv_ust_consumer c;
	unsigned char out[SB];
	uint64_t records;
	size_t end;
	const char *why;
	struct shm s;

	case_start(&s, &c, TV_UST_MODE_DISCARD);
	for (int i = 0; i < 3; i++)
		emit(&s, 0, 1, 10 + (uint64_t)i, 0, (uint64_t)i, 1);
	emit(&s, 0, 1, 20, 0, 3, 0);	/* reserved, marked uncommitted: SIGKILL here */
	emit(&s, 0, 1, 21, 1, 4, 1);	/* another thread's committed record after it */
	TV_CHECK(tv_ust_consumer_read(&c, 0, out) == 0, "the partial sub-buffer is not complete");
	TV_CHECK(tv_ust_consumer_recover(&c, 0, out) == 1, "recovered");
	tv_ust_subbuf_walk(out, SB, c.events, TV_UST_MAX_ID + 1, &end, &records, &why);
	TV_CHECK(records == 4 && end == 128 && out[96 + 24] == 4,
		 "committed records around the uncommitted one, moved up: %llu",
		 (unsigned long long)records);
	TV_CHECK(tv_ust_consumer_recover(&c, 0, out) == 0, "nothing more reserved");
	case_end(&s, &c);

	/* a header word never written (a writer without the uncommitted mark) ends it */
	case_start(&s, &c, TV_UST_MODE_DISCARD);
	for (int i = 0; i < 3; i++)
		emit(&s, 0, 1, 10 + (uint64_t)i, 0, (uint64_t)i, 1);
	emit(&s, 0, 1, 20, 0, 3, -1);
	emit(&s, 0, 1, 21, 1, 4, 1);
	TV_CHECK(tv_ust_consumer_recover(&c, 0, out) == 1, "recovered");
	tv_ust_subbuf_walk(out, SB, c.events, TV_UST_MAX_ID + 1, &end, &records, &why);
	TV_CHECK(records == 3 && end == 96, "zero header ends the sub-buffer: %llu",
		 (unsigned long long)records);
	case_end(&s, &c);
}

/* seqs of the records in @n sub-buffers at @out: contiguous from *@first; the count */
static uint64_t snap_seqs(const unsigned char *out, unsigned int n, uint64_t *first, int *gap)
{
	uint64_t count = 0, next = 0;

	*gap = 0;
	for (unsigned int i = 0; i < n; i++)
		for (size_t off = 0; off + 32 <= SB; off += 32) {
			struct tv_ust_record_hdr h;
			uint64_t seq;

			memcpy(&h, out + (size_t)i * SB + off, sizeof(h));
			if (h.id == TV_UST_ID_PADDING)
				break;
			memcpy(&seq, out + (size_t)i * SB + off + 24, 8);
			if (!count)
				*first = seq;
			else if (seq != next)
				*gap = 1;
			next = seq + 1;
			count++;
		}
	return count;
}

/* A flight recorder's snapshot: the newest sub-buffers, copied without taking them. */
static void test_snapshot(void)
{
	struct tv_ust_consumer c;
	unsigned char out[NSB * SB];
	unsigned int n;
	uint64_t first = 0, cnt;
	int whole, gap;
	struct shm s;

	case_start(&s, &c, TV_UST_MODE_OVERWRITE);
	/* 1000 records of 32 bytes: the ring (512) lapped, the current sub-buffer holds 104 */
	for (uint64_t i = 0; i < 1000; i++)
		emit(&s, 0, 1, 10 + i, 0, i, 1);
	TV_CHECK(tv_ust_consumer_snapshot(&c, 0, out, NSB, &n, &whole) == 0 && n == 4 && !whole,
		 "lapped ring: %u sub-buffers, whole %d", n, whole);
	cnt = snap_seqs(out, n, &first, &gap);
	TV_CHECK(cnt == 488 && first == 512 && !gap, "newest 488 records from seq 512: %llu from %llu, gap %d",
		 (unsigned long long)cnt, (unsigned long long)first, gap);
	TV_CHECK(c.bufs[0].pos == 0 && c.bufs[0].records == 0 && ctl(&s, 0)->consumed == 0,
		 "a snapshot consumes nothing");
	TV_CHECK(tv_ust_consumer_snapshot(&c, 0, out, 2, &n, &whole) == 0 && n == 2 &&
		 snap_seqs(out, n, &first, &gap) == 232 && first == 768 && !gap,
		 "at most 2 sub-buffers: the newest 232 records from 768 (%u, from %llu)", n,
		 (unsigned long long)first);
	TV_CHECK(tv_ust_consumer_snapshot(&c, 1, out, NSB, &n, &whole) == 0 && n == 0 && whole,
		 "an empty buffer: nothing, nothing lost");
	/* a writer between reserve and commit: the tail waits, the complete ones are taken */
	emit(&s, 0, 1, 2000, 0, 1000, 0);
	TV_CHECK(tv_ust_consumer_snapshot(&c, 0, out, NSB, &n, &whole) == 0 && n == 3 &&
		 snap_seqs(out, n, &first, &gap) == 384 && first == 512 && !gap,
		 "tail in flight: the 3 complete sub-buffers (%u, from %llu)", n, (unsigned long long)first);
	/* a commit count that lies: that sub-buffer and the older ones are not taken */
	ctl(&s, 0)->commit[(16384 / SB) % NSB] += 8;
	TV_CHECK(tv_ust_consumer_snapshot(&c, 0, out, NSB, &n, &whole) == 0 && n == 2 &&
		 snap_seqs(out, n, &first, &gap) == 256 && first == 640,
		 "a bad commit stops the walk back (%u, from %llu)", n, (unsigned long long)first);
	case_end(&s, &c);

	/* a short run: everything from the first event, whole */
	case_start(&s, &c, TV_UST_MODE_OVERWRITE);
	for (uint64_t i = 0; i < 200; i++)
		emit(&s, 1, 1, 10 + i, 0, i, 1);
	TV_CHECK(tv_ust_consumer_snapshot(&c, 1, out, NSB, &n, &whole) == 0 && n == 2 && whole &&
		 snap_seqs(out, n, &first, &gap) == 200 && first == 0 && !gap,
		 "not lapped: all 200 from seq 0, whole (%u, whole %d)", n, whole);
	case_end(&s, &c);

	case_start(&s, &c, TV_UST_MODE_DISCARD);
	TV_CHECK(tv_ust_consumer_snapshot(&c, 0, out, NSB, &n, &whole) == -EINVAL,
		 "a discard buffer is read, not snapshot");
	case_end(&s, &c);
}

static void test_hostile(void)
{
	struct tv_ust_consumer c;
	unsigned char out[SB];
	uint64_t records;
	size_t end;
	const char *why;
	struct shm s;
	unsigned char *sub;

	/* a commit counter beyond the buffer */
	case_start(&s, &c, TV_UST_MODE_DISCARD);
	emit(&s, 0, 1, 1, 0, 0, 1);
	ctl(&s, 0)->commit[0] = 3 * SB;
	ctl(&s, 0)->reserve = SB;
	TV_CHECK(tv_ust_consumer_read(&c, 0, out) == -EBADMSG && strstr(c.why, "commit[0]"),
		 "commit beyond: %s", c.why);
	TV_CHECK(tv_ust_consumer_read(&c, 1, out) == -EBADMSG, "cut off: nothing more read");
	case_end(&s, &c);

	/* reserve more than a ring ahead, or behind */
	shm_init(&s, TV_UST_MODE_DISCARD);
	tv_ust_consumer_init(&c, s.map, s.size);
	ctl(&s, 0)->reserve = 100 * SB;
	TV_CHECK(tv_ust_consumer_read(&c, 0, out) == -EBADMSG && strstr(c.why, "reserve"),
		 "reserve beyond the ring: %s", c.why);
	case_end(&s, &c);

	/* a lying record length: the valid records before it are kept */
	case_start(&s, &c, TV_UST_MODE_DISCARD);
	for (int i = 0; i < 200; i++)
		emit(&s, 0, 2, (uint64_t)i, 0, (uint64_t)i, 1);
	sub = s.map + s.h->bufs_offset + s.h->data_offset;
	sub[5 * 32 + 10] = 0xf0;	/* record 5's size: 0xf0 + ... beyond the sub-buffer */
	sub[5 * 32 + 11] = 0xff;
	TV_CHECK(tv_ust_consumer_read(&c, 0, out) == 1 && c.cut && strstr(c.why, "size"),
		 "lying length cut: %s", c.why);
	tv_ust_subbuf_walk(out, SB, c.events, TV_UST_MAX_ID + 1, &end, &records, &why);
	TV_CHECK(records == 5 && !why, "the 5 records before it kept, the rest zeroed (%llu)",
		 (unsigned long long)records);
	TV_CHECK(tv_ust_consumer_read(&c, 0, out) == -EBADMSG, "cut off after");
	case_end(&s, &c);

	/* an unknown id, a string pointing outside its record */
	case_start(&s, &c, TV_UST_MODE_DISCARD);
	for (int i = 0; i < 200; i++)
		emit(&s, 0, 3, (uint64_t)i, 0, (uint64_t)i, 1);
	sub = s.map + s.h->bufs_offset + s.h->data_offset;
	/* record 0: text at 24, 8 bytes (fits in 32 - 8); record 1: 64 bytes, does not */
	sub[16] = 16; sub[18] = 8;
	sub[32 + 16] = 16; sub[32 + 18] = 64;
	TV_CHECK(tv_ust_consumer_read(&c, 0, out) == 1 && strstr(c.why, "dynamic"),
		 "dynamic field outside: %s", c.why);
	case_end(&s, &c);
}

/* Nothing read outside the mapping or the sub-buffer, whatever the bytes (see also the fuzzer). */
static void test_random(void)
{
	struct tv_ust_consumer c;
	unsigned char out[SB];
	struct shm s;
	int cuts = 0;

	srand(7);
	for (int round = 0; round < 300; round++) {
		case_start(&s, &c, (uint32_t)(round % 3));
		for (int i = 0; i < 300; i++)
			emit(&s, (unsigned int)(i & 1), (uint16_t)(1 + i % 2), (uint64_t)i, 0, (uint64_t)i, 1);
		for (int k = 0; k < 20; k++) {	/* scribble on the buffers' control and data */
			size_t at = s.h->bufs_offset + (size_t)rand() % (s.size - s.h->bufs_offset);

			s.map[at] = (unsigned char)rand();
		}
		for (unsigned int pass = 0; pass < 2 * NSB + 2; pass++)
			for (unsigned int b = 0; b < NBUFS; b++)
				if (tv_ust_consumer_read(&c, b, out) < 0 || tv_ust_consumer_recover(&c, b, out) < 0)
					break;
		cuts += c.cut;
		case_end(&s, &c);
	}
	TV_CHECK(cuts > 0, "some of 300 scribbled buffers cut off (%d)", cuts);
}

static void feed_frame(struct tv_guest_stream *gs, uint16_t type, uint32_t arg, const void *p, size_t len)
{
	unsigned char h[TV_PROTO_HDR_SIZE];

	tv_proto_hdr_encode(h, type, arg, (uint32_t)len);
	tv_guest_stream_feed(gs, h, sizeof(h));
	if (len)
		tv_guest_stream_feed(gs, p, len);
}

/* A guest's traced processes through the host's guest stream (host/guest_ust.c). */
static void test_guest_stream(void)
{
	static const char meta[] = "ncpus=1\nsubbuf_size=4096\nlong_size=8\nclock=mono\n";
	static const char proc[] = "pid=77\ncomm=demo\nnr_bufs=1\nsubbuf_size=4096\nnr_subbufs=2\n"
				   "clock=mono\nmode=blocking\nper_thread=0\n";
	struct tv_guest_stream gs;
	unsigned char sub[SB] = { 0 };
	const char *subdirs[4];
	char dir[160], *text;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/s2", tmpdir);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/s2/guest-g", tmpdir);
	mkdir(dir, 0755);
	/* UST frames only when START had ust= (each process is a domain) */
	snprintf(dir, sizeof(dir), "%s/s2/guest-n", tmpdir);
	mkdir(dir, 0755);
	tv_guest_stream_init(&gs, dir, 1 << 24);
	feed_frame(&gs, TV_MSG_META, 0, meta, sizeof(meta) - 1);
	feed_frame(&gs, TV_MSG_UST_PROC, 0, proc, sizeof(proc) - 1);
	TV_CHECK(gs.failed == -EBADMSG && strstr(gs.error, "START asked for no traced processes"),
		 "UST_PROC without ust=: %s", gs.error);
	tv_guest_stream_fini(&gs);
	snprintf(dir, sizeof(dir), "%s/s2/guest-g", tmpdir);
	tv_guest_stream_init(&gs, dir, 1 << 24);
	gs.ust_asked = 1;
	gs.check_domain = tv_domain_check;	/* the reader's check of each process's domain */
	feed_frame(&gs, TV_MSG_META, 0, meta, sizeof(meta) - 1);
	feed_frame(&gs, TV_MSG_UST_PROC, 0, proc, sizeof(proc) - 1);
	feed_frame(&gs, TV_MSG_UST_PROC, 1, proc, sizeof(proc) - 1);
	feed_frame(&gs, TV_MSG_UST_META, 0, meta_text, sizeof(meta_text) - 1);
	feed_frame(&gs, TV_MSG_UST_META, 1, meta_text, sizeof(meta_text) - 1);
	for (int i = 0; i < 10; i++) {	/* 10 records of demo:work_begin */
		struct tv_ust_record_hdr h = { 100 + (uint64_t)i, 1, 32, 77 };

		memcpy(sub + 32 * i, &h, sizeof(h));
	}
	feed_frame(&gs, TV_MSG_UST_DATA, 0 << 16 | 0, sub, SB);
	sub[4 * 32 + 10] = 0xf8;	/* process 1: record 4 lies about its size */
	sub[4 * 32 + 11] = 0x7f;
	feed_frame(&gs, TV_MSG_UST_DATA, 1 << 16 | 0, sub, SB);
	feed_frame(&gs, TV_MSG_UST_DATA, 1 << 16 | 0, sub, SB);	/* ignored: cut off */
	feed_frame(&gs, TV_MSG_UST_END, 0, "status=complete\ncpu0.lost=3\n", 28);
	feed_frame(&gs, TV_MSG_UST_END, 1, "status=complete\n", 16);
	TV_CHECK(!gs.failed, "a lying process does not end the guest's stream: %s", gs.error);
	n = tv_guest_ust_finish(&gs, subdirs, 4);
	TV_CHECK(n == 2 && !strcmp(subdirs[0], "ust-guest-g-77") && !strcmp(subdirs[1], "ust-guest-g-77.1"),
		 "two domains: %zu %s", n, n ? subdirs[0] : "");
	snprintf(dir, sizeof(dir), "%s/s2/ust-guest-g-77/meta", tmpdir);
	text = tv_test_slurp(dir);
	TV_CHECK(text && strstr(text, "status=complete") && strstr(text, "events_total=10") &&
		 strstr(text, "lost_total=3") && strstr(text, "parent=guest-g"), "good process's meta: %s", text);
	free(text);
	snprintf(dir, sizeof(dir), "%s/s2/ust-guest-g-77.1/meta", tmpdir);
	text = tv_test_slurp(dir);
	TV_CHECK(text && strstr(text, "status=truncated: buffer 0: a record's size") &&
		 strstr(text, "events_total=4"), "lying process cut, its 4 valid records kept: %s", text);
	free(text);
	/* protocol errors end the stream: data of a process never announced */
	feed_frame(&gs, TV_MSG_UST_DATA, 9 << 16, sub, SB);
	TV_CHECK(gs.failed == -EBADMSG && strstr(gs.error, "before its UST_PROC"), "unknown process: %s", gs.error);
	tv_guest_stream_fini(&gs);
	snprintf(dir, sizeof(dir), "%s/s2/guest-h", tmpdir);
	mkdir(dir, 0755);
	tv_guest_stream_init(&gs, dir, 1 << 24);
	gs.ust_asked = 1;
	feed_frame(&gs, TV_MSG_META, 0, meta, sizeof(meta) - 1);
	feed_frame(&gs, TV_MSG_UST_PROC, 0, "pid=1\nnr_bufs=5000\nsubbuf_size=4096\nnr_subbufs=2\n", 48);
	TV_CHECK(gs.failed == -EBADMSG && strstr(gs.error, "settings"), "settings out of range: %s", gs.error);
	tv_guest_stream_fini(&gs);
}

/* A guest flight recorder's SNAP_UST (host/flight_guest.c, host/guest_ust.c): checked, late, capped. */
static void test_guest_snap_ust(void)
{
	static const char meta[] = "ncpus=1\nsubbuf_size=4096\nlong_size=8\nclock=mono\nagent_version=4\n";
	static const char proc[] = "pid=78\ncomm=demo\nnr_bufs=2\nsubbuf_size=4096\nnr_subbufs=4\n"
				   "clock=mono\nmode=overwrite\nper_thread=0\n";
	static unsigned char sub[2 * SB];
	struct tv_guest_flight_io io = { .name = "f" };
	struct tv_guest_flight *fl = NULL;
	struct tv_guest_stream gs;
	struct tv_meta *m = tv_meta_new();
	uint64_t dropped = 0;
	char dir[160], list[256], *text;

	for (int i = 0; i < 10; i++) {	/* 10 records of demo:work_begin */
		struct tv_ust_record_hdr h = { 100 + (uint64_t)i, 1, 32, 78 };

		memcpy(sub + 32 * i, &h, sizeof(h));
	}
	snprintf(dir, sizeof(dir), "%s/s3", tmpdir);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/s3/snapshot-1", tmpdir);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/s3/guest-f", tmpdir);
	mkdir(dir, 0755);
	tv_guest_stream_init(&gs, dir, 1 << 24);
	gs.ust_asked = 1;
	gs.flight_asked = 1;
	io.gs = &gs;
	io.src_dir = dir;
	TV_CHECK(!tv_guest_flight_new(&io, 2 * SB, NULL, 0, &fl), "flight of the guest");
	gs.on_flight = tv_guest_flight_frame;
	gs.flight_ctx = fl;
	feed_frame(&gs, TV_MSG_META, 0, meta, sizeof(meta) - 1);
	feed_frame(&gs, TV_MSG_READY, 0, "", 0);
	feed_frame(&gs, TV_MSG_UST_PROC, 0, proc, sizeof(proc) - 1);
	feed_frame(&gs, TV_MSG_UST_META, 0, meta_text, sizeof(meta_text) - 1);
	/* no snapshot asked: a well-formed SNAP_UST is late, dropped and counted */
	feed_frame(&gs, TV_MSG_SNAP_UST, TV_PROTO_SNAP_UST_ARG(1, 0, 1), sub, SB);
	TV_CHECK(!gs.failed, "a late SNAP_UST ends the stream: %s", gs.error);
	tv_guest_flight_counts(fl, m);
	TV_CHECK(tv_meta_get_ll(m, "snapshot_late_bytes", -1) == SB, "late SNAP_UST counted: %lld",
		 tv_meta_get_ll(m, "snapshot_late_bytes", -1));
	/* the direct checks: a lying frame is a protocol error, late or not */
	TV_CHECK(tv_guest_ust_snap_check(&gs, TV_PROTO_SNAP_UST_ARG(1, 9, 0), SB, list, sizeof(list)) == -EBADMSG &&
		 strstr(list, "SNAP_UST for process 9 before its UST_PROC"), "unknown process: %s", list);
	TV_CHECK(tv_guest_ust_snap_check(&gs, TV_PROTO_SNAP_UST_ARG(1, 0, 2), SB, list, sizeof(list)) == -EBADMSG &&
		 strstr(list, "buffer 2 of 2"), "buffer out of range: %s", list);
	TV_CHECK(tv_guest_ust_snap_check(&gs, TV_PROTO_SNAP_UST_ARG(1, 0, 0), SB - 8, list, sizeof(list)) == -EBADMSG &&
		 strstr(list, "not whole 4096-byte sub-buffers"), "partial sub-buffer: %s", list);
	TV_CHECK(tv_guest_ust_snap_check(&gs, TV_PROTO_SNAP_UST_ARG(1, 0, 1), SB, list, sizeof(list)) == 0,
		 "a good SNAP_UST refused: %s", list);
	/* written into snapshot-1/ust-guest-f-78, capped at SIZE (2 sub-buffers) per process */
	snprintf(dir, sizeof(dir), "%s/s3/snapshot-1/guest-f", tmpdir);
	TV_CHECK(!tv_guest_ust_snap_write(&gs, TV_PROTO_SNAP_UST_ARG(1, 0, 1), sub, 2 * SB, dir, 2 * SB, &dropped) &&
		 !tv_guest_ust_snap_write(&gs, TV_PROTO_SNAP_UST_ARG(1, 0, 0), sub, SB, dir, 2 * SB, &dropped) &&
		 dropped == SB, "SNAP_UST past SIZE dropped: %llu", (unsigned long long)dropped);
	TV_CHECK(tv_guest_ust_snap_finish(&gs, "snapshot", list, sizeof(list)) == 1 &&
		 !strcmp(list, "ust-guest-f-78"), "snapshot's process listed: '%s'", list);
	snprintf(dir, sizeof(dir), "%s/s3/snapshot-1/ust-guest-f-78/meta", tmpdir);
	text = tv_test_slurp(dir);
	TV_CHECK(text && strstr(text, "status=snapshot") && strstr(text, "events_total=10"),
		 "snapshot's process meta: %s", text);
	free(text);
	snprintf(dir, sizeof(dir), "%s/s3/ust-guest-f-78/cpu1.ust", tmpdir);
	TV_CHECK(access(dir, F_OK), "the snapshot's data went into the session's own domain");
	/* through the stream: a SNAP_UST for a buffer the process does not have ends it */
	feed_frame(&gs, TV_MSG_SNAP_UST, TV_PROTO_SNAP_UST_ARG(1, 0, 7), sub, SB);
	TV_CHECK(gs.failed == -EBADMSG && strstr(gs.error, "SNAP_UST for buffer 7 of 2"), "bad buffer: %s", gs.error);
	tv_guest_stream_fini(&gs);
	tv_guest_flight_free(fl);
	tv_meta_free(m);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tv-test-ust-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	test_init_checks();
	test_meta();
	test_meta_linear();
	test_read_and_session();
	test_recover_partial();
	test_snapshot();
	test_hostile();
	test_random();
	test_guest_stream();
	test_guest_snap_ust();
	tv_session_remove_tree(tmpdir);
	return tv_test_done("test_ust");
}
