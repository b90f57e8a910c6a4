// SPDX-License-Identifier: LGPL-2.1
/*
 * Consuming a traced process's buffers (lib/ust/ust_consumer.h): the commit
 * protocol of lib/ust/ust_abi.h read from the consumer's side, with every
 * value from the mapping checked before it is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ust_consumer.h"

static int cut(struct tv_ust_consumer *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->cut) {	/* the first lie is the one worth saying */
		va_start(ap, fmt);
		vsnprintf(c->why, sizeof(c->why), fmt, ap);
		va_end(ap);
	}
	c->cut = 1;
	return -EBADMSG;
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* [off, off + len) inside [0, size), without overflow. */
static int fits(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static int check_layout(struct tv_ust_consumer *c)
{
	const struct tv_ust_shm_header *h = &c->hdr;
	uint64_t ctl = sizeof(struct tv_ust_buf_ctl) + 8ull * h->nr_subbufs;
	uint64_t data = (uint64_t)h->nr_subbufs * h->subbuf_size;

	if (h->magic != TV_UST_MAGIC)
		return cut(c, "bad magic 0x%08x", h->magic);
	if (h->version != TV_UST_VERSION)
		return cut(c, "unknown version %u", h->version);
	if (h->header_size < sizeof(*h) || h->header_size > 4096)
		return cut(c, "header_size %u", h->header_size);
	if (!h->nr_bufs || h->nr_bufs > TV_UST_MAX_BUFS)
		return cut(c, "nr_bufs %u (1..%d)", h->nr_bufs, TV_UST_MAX_BUFS);
	if (!is_pow2(h->subbuf_size) || h->subbuf_size < 4096 || h->subbuf_size > (1u << 20))
		return cut(c, "subbuf_size %u (a power of two in 4096..1048576)", h->subbuf_size);
	if (!is_pow2(h->nr_subbufs) || h->nr_subbufs < 2 || h->nr_subbufs > 65536)
		return cut(c, "nr_subbufs %u (a power of two in 2..65536)", h->nr_subbufs);
	if (h->mode > TV_UST_MODE_OVERWRITE || h->clock > TV_UST_CLOCK_X86_TSC || h->per_thread > 1)
		return cut(c, "mode %u, clock %u or per_thread %u unknown", h->mode, h->clock,
			   h->per_thread);
	if (h->shm_size > c->map_size)
		return cut(c, "shm_size %" PRIu64 " beyond the mapping's %zu bytes", h->shm_size,
			   c->map_size);
	if (!fits(h->meta_offset, h->meta_capacity, c->map_size) || h->meta_offset < h->header_size ||
	    h->meta_capacity > TV_UST_MAX_META)
		return cut(c, "metadata area %" PRIu64 "+%" PRIu64 " outside the mapping",
			   h->meta_offset, h->meta_capacity);
	if ((h->bufs_offset | h->buf_stride | h->data_offset) & 7)
		return cut(c, "buffer offsets not 8-byte aligned");
	if (h->data_offset < ctl || h->buf_stride < h->data_offset ||
	    h->buf_stride - h->data_offset < data)
		return cut(c, "buffer stride %" PRIu64 " or data offset %" PRIu64
			   " too small for %u sub-buffers of %u bytes", h->buf_stride, h->data_offset,
			   h->nr_subbufs, h->subbuf_size);
	if (h->buf_stride > c->map_size || !fits(h->bufs_offset, h->buf_stride * h->nr_bufs, c->map_size))
		return cut(c, "%u buffers of %" PRIu64 " bytes at %" PRIu64 " outside the mapping's %zu bytes",
			   h->nr_bufs, h->buf_stride, h->bufs_offset, c->map_size);
	if (h->bufs_offset < h->header_size ||
	    (h->meta_offset < h->bufs_offset + h->buf_stride * h->nr_bufs &&
	     h->bufs_offset < h->meta_offset + h->meta_capacity))
		return cut(c, "buffers overlap the header or the metadata");
	return 0;
}

static struct tv_ust_buf_ctl *buf_ctl(const struct tv_ust_consumer *c, unsigned int b)
{
	return (struct tv_ust_buf_ctl *)(c->map + c->hdr.bufs_offset + (uint64_t)b * c->hdr.buf_stride);
}

static unsigned char *subbuf_at(const struct tv_ust_consumer *c, unsigned int b, uint64_t pos)
{
	uint64_t idx = (pos / c->hdr.subbuf_size) & (c->hdr.nr_subbufs - 1);

	return (unsigned char *)buf_ctl(c, b) + c->hdr.data_offset + idx * c->hdr.subbuf_size;
}

int tv_ust_consumer_init(struct tv_ust_consumer *c, void *map, size_t map_size)
{
	memset(c, 0, sizeof(*c));
	c->map = map;
	c->map_size = map_size;
	if (map_size < sizeof(c->hdr))
		return cut(c, "mapping of %zu bytes is smaller than the header", map_size);
	/* One copy: the writer may change its header, the checks hold for this one. */
	memcpy(&c->hdr, map, sizeof(c->hdr));
	if (check_layout(c))
		return -EBADMSG;
	c->bufs = calloc(c->hdr.nr_bufs, sizeof(*c->bufs));
	c->events = calloc(TV_UST_MAX_ID + 1, sizeof(*c->events));
	if (!c->bufs || !c->events)
		return -ENOMEM;
	for (unsigned int b = 0; b < c->hdr.nr_bufs; b++) {
		/* acquire: a previous consumer's position, and what it zeroed */
		uint64_t consumed = __atomic_load_n(&buf_ctl(c, b)->consumed, __ATOMIC_ACQUIRE);
		uint64_t reserve = __atomic_load_n(&buf_ctl(c, b)->reserve, __ATOMIC_ACQUIRE);

		if (consumed % c->hdr.subbuf_size || consumed > reserve)
			return cut(c, "buffer %u: consumed %" PRIu64 " is not a sub-buffer boundary at or before reserve %" PRIu64,
				   b, consumed, reserve);
		c->bufs[b].pos = consumed;
	}
	return 0;
}

void tv_ust_consumer_release(struct tv_ust_consumer *c)
{
	free(c->bufs);
	free(c->events);
	free(c->meta);
	c->bufs = NULL;
	c->events = NULL;
	c->meta = NULL;
	c->meta_len = c->meta_cap = c->meta_parsed = c->meta_scanned = 0;
}

uint64_t tv_ust_consumer_lost(const struct tv_ust_consumer *c, unsigned int b)
{
	if (b >= c->hdr.nr_bufs || !c->bufs)
		return 0;
	return __atomic_load_n(&buf_ctl(c, b)->lost, __ATOMIC_RELAXED);
}

/* "offset:N;" and "size:M;" after @p on its line. */
static int field_bounds(const char *p, const char *eol, unsigned long *off, unsigned long *size)
{
	const char *o = memmem(p, (size_t)(eol - p), "offset:", 7);
	const char *s = memmem(p, (size_t)(eol - p), "size:", 5);
	char *end;

	if (!o || !s)
		return -1;
	*off = strtoul(o + 7, &end, 10);
	if (end == o + 7 || *end != ';')
		return -1;
	*size = strtoul(s + 5, &end, 10);
	if (end == s + 5 || *end != ';')
		return -1;
	return 0;
}

int tv_ust_format_scan(const char *text, size_t len, struct tv_ust_event *ev, const char **why)
{
	const char *p = text, *end = text + len;
	int common_type = 0, fields = 0;

	ev->min_size = 0;
	ev->nr_dyn = 0;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *f;
		unsigned long off, size;

		if (!eol)
			eol = end;
		f = memmem(p, (size_t)(eol - p), "field:", 6);
		if (f) {
			if (field_bounds(f, eol, &off, &size) || off > 65535 || size > 65535 ||
			    off + size > 65535) {
				*why = "a field's offset or size is missing or beyond 64 KiB";
				return -EBADMSG;
			}
			fields++;
			if (memmem(f, (size_t)(eol - f), " common_type;", 13))
				common_type = off == 0 && size == 2;
			if (!strncmp(f + 6, "__rel_loc", 9)) {
				*why = "relative dynamic fields (__rel_loc) are not supported";
				return -EBADMSG;
			}
			if (!strncmp(f + 6, "__data_loc", 10)) {
				if (ev->nr_dyn == TV_UST_MAX_DYN || size != 4) {
					*why = "more than 8 dynamic fields, or one not of 4 bytes";
					return -EBADMSG;
				}
				ev->dyn_off[ev->nr_dyn++] = (uint16_t)off;
			}
			if (off + size > ev->min_size)
				ev->min_size = (uint32_t)(off + size);
		}
		p = eol + 1;
	}
	if (!fields || !common_type) {
		*why = "no common_type field of 2 bytes at offset 0";
		return -EBADMSG;
	}
	return 0;
}

static int name_ok(const char *s, size_t n)
{
	if (!n || n > TV_UST_NAME_MAX || (s[0] == '.' && (n == 1 || (n == 2 && s[1] == '.'))))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return 0;
	return 1;
}

/* The format's "name:" and "ID:" lines are the entry's: the reader decodes by them. */
static int format_names(const char *fmt, size_t len, unsigned long id, const char *name, size_t n)
{
	char want[TV_UST_NAME_MAX + 48];
	int w = snprintf(want, sizeof(want), "name: %.*s\nID: %lu\n", (int)n, name, id);

	return len >= (size_t)w && !memcmp(fmt, want, (size_t)w);
}

/* "event ID PROVIDER:EVENT\n" is at most this long: a longer line is a lie, said at once. */
#define META_LINE_MAX (6 + 20 + 1 + TV_UST_NAME_MAX + 1 + TV_UST_NAME_MAX + 1)

/*
 * The end of the format starting at @fmt: its first "end" line.  Searched
 * from where the last search of this entry stopped (c->meta_scanned, less
 * the 3 bytes of a marker cut by the end of the data then), never from
 * @fmt again: an entry that arrives a byte at a time, or an empty append
 * repeated, costs no rescan.  Return: the marker, or NULL (not there yet).
 */
static const char *format_end(struct tv_ust_consumer *c, const char *fmt, const char *end)
{
	const char *from = c->meta + (c->meta_scanned > 3 ? c->meta_scanned - 3 : 0);
	const char *stop;

	if (from < fmt)
		from = fmt;
	for (stop = from; (size_t)(end - stop) >= 4; stop++)
		if ((stop == fmt || stop[-1] == '\n') && !memcmp(stop, TV_UST_META_END, 4))
			return stop;
	c->meta_scanned = c->meta_len;
	return NULL;
}

/*
 * One entry at c->meta + c->meta_parsed: "event ID PROVIDER:EVENT\n",
 * format text, "end\n".  Return: its length, 0 when not whole yet, or
 * -EBADMSG.
 */
static long meta_entry(struct tv_ust_consumer *c, uint16_t *id_out)
{
	const char *p, *end, *nl, *colon, *fmt, *stop, *why = NULL;
	struct tv_ust_event ev = { 0 };
	unsigned long id;
	char *e;

	if (c->meta_parsed >= c->meta_len || c->meta_scanned == c->meta_len)
		return 0;	/* nothing new (and c->meta may still be NULL) */
	p = c->meta + c->meta_parsed;
	end = c->meta + c->meta_len;
	nl = memchr(p, '\n', (size_t)(end - p) < META_LINE_MAX ? (size_t)(end - p) : META_LINE_MAX);
	if (!nl && (size_t)(end - p) >= META_LINE_MAX)
		return cut(c, "metadata at %zu: an \"event\" line longer than %d bytes", c->meta_parsed,
			   META_LINE_MAX);
	if (!nl)
		return 0;
	if ((size_t)(end - p) < 6 || memcmp(p, TV_UST_META_EVENT, 6))
		return cut(c, "metadata at %zu: not an \"event \" line", c->meta_parsed);
	id = strtoul(p + 6, &e, 10);
	if (e == p + 6 || *e != ' ' || id < TV_UST_ID_FIRST || id > TV_UST_MAX_ID)
		return cut(c, "metadata at %zu: event id not in %d..%d", c->meta_parsed,
			   TV_UST_ID_FIRST, TV_UST_MAX_ID);
	e++;
	colon = memchr(e, ':', (size_t)(nl - e));
	if (!colon || !name_ok(e, (size_t)(colon - e)) || !name_ok(colon + 1, (size_t)(nl - colon - 1)))
		return cut(c, "metadata at %zu: event %lu's name is not PROVIDER:EVENT of [A-Za-z0-9_.-]{1,63}",
			   c->meta_parsed, id);
	if (c->events[id].id)
		return cut(c, "metadata at %zu: event id %lu defined twice", c->meta_parsed, id);
	fmt = nl + 1;
	stop = format_end(c, fmt, end);
	if (!stop)
		return 0;
	c->meta_scanned = 0;	/* the next entry starts its own search */
	if (tv_ust_format_scan(fmt, (size_t)(stop - fmt), &ev, &why))
		return cut(c, "metadata: event %lu's format: %s", id, why);
	if (!format_names(fmt, (size_t)(stop - fmt), id, colon + 1, (size_t)(nl - colon - 1)))
		return cut(c, "metadata: event %lu's format does not say \"name: %.*s\" and \"ID: %lu\"",
			   id, (int)(nl - colon - 1), colon + 1, id);
	ev.id = (uint16_t)id;
	memcpy(ev.provider, e, (size_t)(colon - e));
	memcpy(ev.name, colon + 1, (size_t)(nl - colon - 1));
	ev.format = fmt;
	ev.format_off = (size_t)(fmt - c->meta);
	ev.format_len = (size_t)(stop - fmt);
	c->events[id] = ev;
	*id_out = (uint16_t)id;
	return (long)(stop + 4 - p);
}

/*
 * Room for @len bytes (and a NUL), doubled as it grows: appends of any
 * size cost amortised O(size).  The formats point into c->meta: moved with it.
 */
static int meta_grow(struct tv_ust_consumer *c, size_t len)
{
	size_t cap = c->meta_cap ? c->meta_cap : 4096;
	char *m;

	if (len + 1 <= c->meta_cap)
		return 0;
	while (cap < len + 1)
		cap *= 2;
	if (cap > (size_t)TV_UST_MAX_META + 1)
		cap = len + 1 > (size_t)TV_UST_MAX_META + 1 ? len + 1 : (size_t)TV_UST_MAX_META + 1;
	m = realloc(c->meta, cap);
	if (!m)
		return -ENOMEM;
	if (m != c->meta)
		for (size_t i = 0; i <= TV_UST_MAX_ID; i++)
			if (c->events[i].id)
				c->events[i].format = m + c->events[i].format_off;
	c->meta = m;
	c->meta_cap = cap;
	return 0;
}

int tv_ust_consumer_meta_update(struct tv_ust_consumer *c, uint16_t *new_ids, size_t max_new)
{
	/* acquire: the text before meta_len was written before it (ust_abi.h) */
	uint64_t len = __atomic_load_n((uint64_t *)(c->map + offsetof(struct tv_ust_shm_header, meta_len)),
				       __ATOMIC_ACQUIRE);

	if (c->cut)
		return -EBADMSG;
	if (len > c->hdr.meta_capacity)
		return cut(c, "meta_len %" PRIu64 " beyond the metadata area's %" PRIu64 " bytes", len,
			   c->hdr.meta_capacity);
	if (len < c->meta_len)
		return cut(c, "meta_len went back from %zu to %" PRIu64 " (metadata is append-only)",
			   c->meta_len, len);
	return tv_ust_meta_append(c, c->map + c->hdr.meta_offset + c->meta_len, len - c->meta_len,
				  new_ids, max_new);
}

int tv_ust_meta_append(struct tv_ust_consumer *c, const void *text, size_t n, uint16_t *new_ids,
		       size_t max_new)
{
	int found = 0;
	long ret;

	if (c->cut)
		return -EBADMSG;
	if (!c->events && !(c->events = calloc(TV_UST_MAX_ID + 1, sizeof(*c->events))))
		return -ENOMEM;
	if (n > TV_UST_MAX_META - c->meta_len)
		return cut(c, "more than %u bytes of metadata (the limit per process)", TV_UST_MAX_META);
	if (n && c->pool && n > c->pool->max - c->pool->used)
		return cut(c, "its %s's traced processes sent more than %" PRIu64
			   " bytes of metadata in all (the limit per %s)", c->pool->owner, c->pool->max,
			   c->pool->owner);
	if (n) {
		if (meta_grow(c, c->meta_len + n))
			return -ENOMEM;
		memcpy(c->meta + c->meta_len, text, n);
		c->meta_len += n;
		if (c->pool)
			c->pool->used += n;
		c->meta[c->meta_len] = '\0';
	}
	for (;;) {
		uint16_t id = 0;

		ret = meta_entry(c, &id);
		if (ret <= 0)
			break;
		c->meta_parsed += (size_t)ret;
		c->nr_events++;
		if (new_ids && (size_t)found < max_new)
			new_ids[found] = id;
		found++;
	}
	return ret < 0 ? (int)ret : found;
}

int tv_ust_subbuf_walk(const unsigned char *sb, size_t size, const struct tv_ust_event *events,
		       size_t nr_ids, size_t *end, uint64_t *records, const char **why)
{
	size_t off = 0;

	*records = 0;
	*why = NULL;
	while (size - off >= sizeof(struct tv_ust_record_hdr)) {
		struct tv_ust_record_hdr h;
		const struct tv_ust_event *ev;

		memcpy(&h, sb + off, sizeof(h));
		if (h.id == TV_UST_ID_PADDING)
			break;
		if (h.size < sizeof(h) || h.size % TV_UST_RECORD_ALIGN || h.size > size - off) {
			*why = "a record's size is not a multiple of 8 from 16 up to the sub-buffer's end";
			break;
		}
		ev = h.id < nr_ids && events[h.id].id == h.id ? &events[h.id] : NULL;
		if (!ev) {
			*why = "a record's event id is not in the metadata";
			break;
		}
		if (h.size - 8u < ev->min_size) {
			*why = "a record is shorter than its event's format";
			break;
		}
		for (unsigned int i = 0; i < ev->nr_dyn; i++) {
			uint32_t loc;

			memcpy(&loc, sb + off + 8 + ev->dyn_off[i], 4);
			if ((loc & 0xffff) + (loc >> 16) > h.size - 8u) {
				*why = "a record's dynamic field points outside it";
				break;
			}
		}
		if (*why)
			break;
		off += h.size;
		(*records)++;
	}
	*end = off;
	return *why ? -EBADMSG : 0;
}

/* Walk @out; unknown ids may be events registered since: read the metadata once more. */
static int check_records(struct tv_ust_consumer *c, unsigned int b, unsigned char *out,
			 uint64_t *records)
{
	size_t end;
	const char *why;
	int ret = tv_ust_subbuf_walk(out, c->hdr.subbuf_size, c->events, TV_UST_MAX_ID + 1, &end,
				     records, &why);

	if (ret && !strcmp(why, "a record's event id is not in the metadata")) {
		ret = tv_ust_consumer_meta_update(c, NULL, 0);
		if (ret < 0 && ret != -EBADMSG)
			return ret;
		ret = tv_ust_subbuf_walk(out, c->hdr.subbuf_size, c->events, TV_UST_MAX_ID + 1,
					 &end, records, &why);
	}
	if (!ret)
		return 0;
	memset(out + end, 0, c->hdr.subbuf_size - end);	/* keep the valid records only */
	if (!c->cut)
		cut(c, "buffer %u, sub-buffer at %" PRIu64 ", offset %zu: %s", b, c->bufs[b].pos, end, why);
	return 0;
}

/* Give sub-buffer @pos of @b back to the writer (discard and blocking modes). */
static void release_subbuf(struct tv_ust_consumer *c, unsigned int b, uint64_t pos)
{
	memset(subbuf_at(c, b, pos), 0, c->hdr.subbuf_size);
	/* release: the zeroes above are seen by a writer that sees @consumed move */
	__atomic_store_n(&buf_ctl(c, b)->consumed, pos + c->hdr.subbuf_size, __ATOMIC_RELEASE);
}

/* Overwrite mode: the writer is more than a lap ahead, skip to its oldest. */
static void skip_lapped(struct tv_ust_consumer *c, unsigned int b, uint64_t reserve)
{
	struct tv_ust_buf_state *bs = &c->bufs[b];
	uint64_t sb = c->hdr.subbuf_size, ring = sb * c->hdr.nr_subbufs;
	uint64_t oldest = reserve / sb * sb + sb - ring;

	if (reserve - bs->pos > ring && oldest > bs->pos) {
		bs->overwritten += (oldest - bs->pos) / sb;
		bs->pos = oldest;
	}
}

int tv_ust_consumer_read(struct tv_ust_consumer *c, unsigned int b, unsigned char *out)
{
	struct tv_ust_buf_state *bs;
	struct tv_ust_buf_ctl *ctl;
	uint64_t sb = c->hdr.subbuf_size, ring, reserve, commit, want, idx, records;
	int overwrite = c->hdr.mode == TV_UST_MODE_OVERWRITE, ret;

	if (c->cut)
		return -EBADMSG;
	if (b >= c->hdr.nr_bufs)
		return -EINVAL;
	bs = &c->bufs[b];
	ctl = buf_ctl(c, b);
	ring = sb * c->hdr.nr_subbufs;
	/* acquire: pairs with the writer's update of reserve */
	reserve = __atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE);
	if (reserve < bs->pos)
		return cut(c, "buffer %u: reserve %" PRIu64 " went back behind the consumer's %" PRIu64,
			   b, reserve, bs->pos);
	if (reserve - bs->pos > ring) {
		if (!overwrite)
			return cut(c, "buffer %u: reserve %" PRIu64 " is more than the %" PRIu64
				   " bytes of the ring beyond the consumer's %" PRIu64, b, reserve,
				   ring, bs->pos);
		skip_lapped(c, b, reserve);
	}
	idx = (bs->pos / sb) & (c->hdr.nr_subbufs - 1);
	want = (bs->pos / ring + 1) * sb;
	/* acquire: the records committed before commit[idx] reached @want */
	commit = __atomic_load_n(&ctl->commit[idx], __ATOMIC_ACQUIRE);
	if (commit > want && !overwrite)
		return cut(c, "buffer %u: commit[%" PRIu64 "] = %" PRIu64 " is beyond the %" PRIu64
			   " bytes that sub-buffer can hold by now", b, idx, commit, want);
	if (commit < want)
		return 0;
	memcpy(out, subbuf_at(c, b, bs->pos), sb);
	if (overwrite) {
		/* the copy is good only if the writer did not come back into it meanwhile */
		reserve = __atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE);
		if (reserve - bs->pos > ring || commit > want) {
			skip_lapped(c, b, reserve > bs->pos + ring ? reserve : bs->pos + ring + 1);
			return 0;
		}
	}
	ret = check_records(c, b, out, &records);
	if (ret)
		return ret;
	release_subbuf(c, b, bs->pos);
	bs->pos += sb;
	bs->subbufs++;
	bs->records += records;
	return 1;
}

/* ust_abi.h: an overwrite buffer's tail counts only when all reserved in it is committed. */
static int overwrite_tail_whole(const struct tv_ust_consumer *c, unsigned int b, uint64_t reserve)
{
	uint64_t sb = c->hdr.subbuf_size, ring = sb * c->hdr.nr_subbufs;
	uint64_t idx = (reserve / sb) & (c->hdr.nr_subbufs - 1);
	uint64_t commit = __atomic_load_n(&buf_ctl(c, b)->commit[idx], __ATOMIC_ACQUIRE);

	return reserve / sb == c->bufs[b].pos / sb &&
	       commit - reserve / ring * sb == reserve % ring - idx * sb;
}

static int partial(struct tv_ust_consumer *c, unsigned int b, unsigned char *out, int take);

int tv_ust_consumer_recover(struct tv_ust_consumer *c, unsigned int b, unsigned char *out)
{
	return partial(c, b, out, 1);
}

int tv_ust_consumer_copy_partial(struct tv_ust_consumer *c, unsigned int b, unsigned char *out)
{
	return partial(c, b, out, 0);
}

static int partial(struct tv_ust_consumer *c, unsigned int b, unsigned char *out, int take)
{
	struct tv_ust_buf_state *bs;
	const unsigned char *src;
	uint64_t sb = c->hdr.subbuf_size, reserve, records = 0;
	size_t off = 0, kept = 0, end = sb;

	if (c->cut)
		return -EBADMSG;
	if (b >= c->hdr.nr_bufs)
		return -EINVAL;
	bs = &c->bufs[b];
	reserve = __atomic_load_n(&buf_ctl(c, b)->reserve, __ATOMIC_ACQUIRE);
	if (reserve <= bs->pos)
		return 0;
	if (reserve - bs->pos > sb * c->hdr.nr_subbufs)
		return cut(c, "buffer %u: reserve %" PRIu64 " is more than a ring beyond %" PRIu64, b,
			   reserve, bs->pos);
	if (c->hdr.mode == TV_UST_MODE_OVERWRITE && !overwrite_tail_whole(c, b, reserve))
		return 0;	/* nobody zeroes in this mode: an unfinished tail may hold old laps */
	if (c->hdr.mode != TV_UST_MODE_OVERWRITE) {
		uint64_t ring = sb * c->hdr.nr_subbufs, idx = (bs->pos / sb) & (c->hdr.nr_subbufs - 1);
		uint64_t want = (bs->pos / ring + 1) * sb;
		uint64_t commit = __atomic_load_n(&buf_ctl(c, b)->commit[idx], __ATOMIC_ACQUIRE);

		if (commit > want)
			return cut(c, "buffer %u: commit[%" PRIu64 "] = %" PRIu64 " is beyond the %" PRIu64
				   " bytes that sub-buffer can hold by now", b, idx, commit, want);
	}
	src = subbuf_at(c, b, bs->pos);
	/*
	 * Committed records: a non-zero header word, written last (ust_abi.h);
	 * one still TV_UST_ID_UNCOMMITTED is skipped by its size and those
	 * after it kept (moved up: a record holds no offset outside itself).
	 * Nothing beyond @reserve was reserved.
	 */
	if (reserve / sb == bs->pos / sb)
		end = reserve % sb;
	while (end - off >= sizeof(struct tv_ust_record_hdr)) {
		uint64_t word = __atomic_load_n((const uint64_t *)(src + off + 8), __ATOMIC_ACQUIRE);
		struct tv_ust_record_hdr h;

		if (!word)
			break;
		memcpy(&h, src + off, 8);
		memcpy((char *)&h + 8, &word, 8);
		if (h.id == TV_UST_ID_PADDING || h.size < sizeof(h) || h.size % TV_UST_RECORD_ALIGN ||
		    h.size > end - off)
			break;
		if (h.id != TV_UST_ID_UNCOMMITTED) {
			memcpy(out + kept, src + off, h.size);
			memcpy(out + kept + 8, &word, 8);
			kept += h.size;
		}
		off += h.size;
	}
	off = kept;
	memset(out + off, 0, sb - off);
	if (check_records(c, b, out, &records))
		return -EBADMSG;
	bs->records += records;
	if (!take)
		return 1;
	release_subbuf(c, b, bs->pos);
	bs->pos += sb;
	bs->subbufs++;
	return 1;
}

/*
 * One complete sub-buffer @pos of overwrite buffer @b, copied without
 * taking it: valid only if its commit says complete for its lap both before
 * and after the copy, and the writer did not reserve into its slot again.
 */
static int snap_full(struct tv_ust_consumer *c, unsigned int b, uint64_t pos, unsigned char *out)
{
	struct tv_ust_buf_ctl *ctl = buf_ctl(c, b);
	uint64_t sb = c->hdr.subbuf_size, ring = sb * c->hdr.nr_subbufs, records;
	uint64_t idx = (pos / sb) & (c->hdr.nr_subbufs - 1), want = (pos / ring + 1) * sb;

	/* acquire: the records committed before commit[idx] reached @want */
	if (__atomic_load_n(&ctl->commit[idx], __ATOMIC_ACQUIRE) != want)
		return 0;
	memcpy(out, subbuf_at(c, b, pos), sb);
	/* acquire fence: the copy's loads happen before the re-reads below, so a
	 * writer that reserved into this slot (it moves @reserve before it writes)
	 * and changed what we copied is seen there */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE) > pos + ring ||
	    __atomic_load_n(&ctl->commit[idx], __ATOMIC_ACQUIRE) != want)
		return 0;
	return check_records(c, b, out, &records) ? -EBADMSG : 1;
}

/* The current sub-buffer, when everything reserved in it is committed (partial() with @take 0). */
static int snap_tail(struct tv_ust_consumer *c, unsigned int b, uint64_t reserve, unsigned char *out)
{
	struct tv_ust_buf_state saved = c->bufs[b];
	uint64_t sb = c->hdr.subbuf_size, ring = sb * c->hdr.nr_subbufs;
	int ret;

	c->bufs[b].pos = reserve / sb * sb;
	ret = partial(c, b, out, 0);
	c->bufs[b] = saved;	/* a snapshot consumes nothing */
	if (ret != 1)
		return ret;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);	/* as in snap_full() */
	if (__atomic_load_n(&buf_ctl(c, b)->reserve, __ATOMIC_ACQUIRE) > reserve / sb * sb + ring)
		return 0;
	return 1;
}

int tv_ust_consumer_snapshot(struct tv_ust_consumer *c, unsigned int b, unsigned char *out,
			     unsigned int max, unsigned int *n, int *whole)
{
	uint64_t sb = c->hdr.subbuf_size, ring = sb * c->hdr.nr_subbufs, reserve = 0, pos;
	unsigned int got = 0, k;
	int ret = 0;

	*n = 0;
	*whole = 1;
	if (c->cut)
		return -EBADMSG;
	if (b >= c->hdr.nr_bufs || c->hdr.mode != TV_UST_MODE_OVERWRITE)
		return -EINVAL;
	if (!max)
		return 0;
	/*
	 * The newest first: the current sub-buffer once no reservation in it is
	 * in flight (a writer is between its reserve and its commit for a few
	 * ns; tried again with the new position a bounded number of times).
	 */
	for (int tries = 0; tries < 10000; tries++) {
		reserve = __atomic_load_n(&buf_ctl(c, b)->reserve, __ATOMIC_ACQUIRE);
		if (!reserve || reserve % sb == 0)
			break;	/* nothing, or the current sub-buffer is empty */
		ret = snap_tail(c, b, reserve, out + (size_t)(max - 1) * sb);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			got = 1;
			break;
		}
	}
	if (!reserve)
		return 0;
	/* then the complete ones before it, back to the first that is gone or stale */
	for (pos = reserve / sb * sb; got < max && pos >= sb; got++) {
		pos -= sb;
		if (pos + ring <= reserve / sb * sb)
			break;	/* its slot is the current one's: overwritten */
		ret = snap_full(c, b, pos, out + (size_t)(max - 1 - got) * sb);
		if (ret < 0)
			return ret;
		if (!ret)
			break;
	}
	/* oldest first, at the start of @out */
	if (got && got < max)
		memmove(out, out + (size_t)(max - got) * sb, (size_t)got * sb);
	k = got;
	*n = k;
	/* nothing older than what we copied ever existed: the copy reaches back to position 0 */
	*whole = reserve / sb * sb + (reserve % sb ? sb : 0) <= (uint64_t)k * sb;
	return 0;
}

static const char *const ust_mode_names[] = {
	[TV_UST_MODE_DISCARD] = "discard",
	[TV_UST_MODE_BLOCKING] = "blocking",
	[TV_UST_MODE_OVERWRITE] = "overwrite",
};

const char *tv_ust_mode_name(uint32_t mode)
{
	return mode <= TV_UST_MODE_OVERWRITE ? ust_mode_names[mode] : ust_mode_names[0];
}

void tv_ust_flight_policy(uint64_t flight_bytes, long nr_cpus, uint32_t *subbuf_size,
			  uint32_t *nr_subbufs)
{
	uint64_t per_buf = flight_bytes / (uint64_t)(nr_cpus > 0 ? nr_cpus : 1);
	uint32_t sb = 65536, nr = 2;

	while (sb > 4096 && (uint64_t)sb * 4 > per_buf)
		sb /= 2;
	while ((uint64_t)sb * nr * 2 <= per_buf && nr < 4096)
		nr *= 2;
	*subbuf_size = sb;
	*nr_subbufs = nr;
}

/* The first record's timestamp of a sub-buffer (0: none). */
static uint64_t subbuf_first_ts(const unsigned char *sb, size_t size)
{
	struct tv_ust_record_hdr h;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, sb, sizeof(h));
	return h.id == TV_UST_ID_PADDING ? 0 : h.ts;
}

/* Keep the records at or after @horizon (checked already), moved up; the rest zeroed.  Return: kept. */
static size_t subbuf_trim(unsigned char *sb, size_t size, uint64_t horizon)
{
	size_t off = 0, kept = 0, n = 0;

	while (size - off >= sizeof(struct tv_ust_record_hdr)) {
		struct tv_ust_record_hdr h;

		memcpy(&h, sb + off, sizeof(h));
		if (h.id == TV_UST_ID_PADDING || h.size < sizeof(h) || h.size > size - off)
			break;
		if (h.ts >= horizon) {
			memmove(sb + kept, sb + off, h.size);
			kept += h.size;
			n++;
		}
		off += h.size;
	}
	memset(sb + kept, 0, size - kept);
	return n;
}

void tv_ust_tail_release(struct tv_ust_tail *t)
{
	free(t->n);
	free(t->kept);
	free(t->all);
	t->n = NULL;
	t->kept = NULL;
	t->all = NULL;
}

int tv_ust_consumer_tail(struct tv_ust_consumer *c, uint64_t bytes, struct tv_ust_tail *t)
{
	uint32_t nb = c->hdr.nr_bufs, sb = c->hdr.subbuf_size;
	uint64_t max = bytes / ((uint64_t)nb * sb), horizon = 0;
	int ret = 0;

	if (!max)
		max = 1;	/* more buffers than the size allows: one sub-buffer each */
	if (max > c->hdr.nr_subbufs)
		max = c->hdr.nr_subbufs;
	t->max = (uint32_t)max;
	t->n = calloc(nb, sizeof(*t->n));
	t->kept = calloc((size_t)nb * max, sizeof(*t->kept));
	t->all = malloc((size_t)nb * max * sb);
	if (!t->n || !t->kept || !t->all)
		return -ENOMEM;
	for (uint32_t b = 0; b < nb && !ret; b++) {
		unsigned char *mine = t->all + (size_t)b * max * sb;
		int whole;

		ret = tv_ust_consumer_snapshot(c, b, mine, (unsigned int)max, &t->n[b], &whole);
		/* what came before this buffer's oldest is gone: so it goes from the others too */
		if (!ret && t->n[b] && !whole && subbuf_first_ts(mine, sb) > horizon)
			horizon = subbuf_first_ts(mine, sb);
	}
	for (uint32_t b = 0; b < nb; b++)
		for (unsigned int i = 0; i < t->n[b]; i++) {
			size_t at = (size_t)b * max + i;

			t->kept[at] = subbuf_trim(t->all + at * sb, sb, horizon);
		}
	return ret;
}
