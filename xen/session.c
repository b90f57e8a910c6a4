// SPDX-License-Identifier: LGPL-2.1
/*
 * The xen/ domain directory: formats, per-CPU record counts (lost records
 * counted from the hypervisor's own TRC_LOST_RECORDS) and meta; the
 * directory itself from the session writer (lib/format/session_writer.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_internal.h"

/* One whole record whose first bytes are @head (up to 16 of them). */
static void count_record(struct tv_xen_cpu_count *cnt, const unsigned char *head)
{
	uint32_t hdr, lost = 0;

	memcpy(&hdr, head, 4);
	if ((hdr & 0x0fffffffu) == XT_WRAP_BUFFER) {
		cnt->wraps++;
	} else if ((hdr & 0x0fffffffu) == XT_LOST_RECORDS) {
		/* extra[0], after the TSC if the record has one */
		if ((hdr >> 28) & 7)
			memcpy(&lost, head + (hdr >> 31 ? 12 : 4), 4);
		cnt->lost += lost;
	} else {
		cnt->records++;
	}
}

/*
 * A record's size by its top 4 header bits (cycles_included, extra_u32):
 * one load where the shifts and masks took five instructions.
 */
static const uint8_t size_by_top[16] = {
	4, 8, 12, 16, 20, 24, 28, 32, 12, 16, 20, 24, 28, 32, 36, 40,
};

/* A record's size from its header word: event:28, extra_u32:3, tsc:1. */
static uint32_t record_size(uint32_t hdr)
{
	return size_by_top[hdr >> 28];
}

_Static_assert(XT_WRAP_BUFFER == XT_LOST_RECORDS + 1, "one range check for both");

/* A lost or wrap record: the rare ones counted apart. */
static inline bool is_special(uint32_t hdr)
{
	return __builtin_expect((hdr & 0x0fffffffu) - XT_LOST_RECORDS < 2, 0);
}

/*
 * The whole records at the start of @p counted in place (the recorder runs
 * this on every drained window).  Four records per loop turn, no bounds
 * check but the turn's (no record is longer than 40 bytes): 10.3
 * instructions per record over a lab session's cpu0.xen (callgrind), where
 * one record per turn took 18.0 (bench/xen-bench, drain_ns_per_record_tv).  Return: the bytes they take; a
 * record cut by the end is left.
 */
static size_t count_whole(struct tv_xen_cpu_count *cnt, const unsigned char *p, size_t len)
{
	const unsigned char *q = p, *end = p + len;
	uint64_t records = 0;
	uint32_t hdr, size;

	while (end - q >= 4 * 40) {
		uint32_t h[4];

#pragma GCC unroll 4
		for (int i = 0; i < 4; i++) {
			memcpy(&h[i], q, 4);
			if (is_special(h[i])) {
				count_record(cnt, q);
				records--;	/* counted there if at all */
			}
			q += record_size(h[i]);
		}
		records += 4;
	}
	while (end - q >= 4) {
		memcpy(&hdr, q, 4);
		size = record_size(hdr);
		if (size > (size_t)(end - q))
			break;
		if (is_special(hdr))
			count_record(cnt, q);
		else
			records++;
		q += size;
	}
	cnt->records += records;
	return (size_t)(q - p);
}

/* Whole records in place; only a record cut by a piece's end goes through
 * c->head, up to its end in the next pieces. */
void tv_xen_count_feed(struct tv_xen_counter *c, const unsigned char *p, size_t len)
{
	c->cnt.bytes += len;
	while (len) {
		uint32_t take, hdr;

		if (!c->have) {
			size_t whole = count_whole(&c->cnt, p, len);

			p += whole;
			len -= whole;
			if (!len)
				break;
		}
		if (c->have < 4) {
			take = (uint32_t)(len < 4 - c->have ? len : 4 - c->have);
			memcpy(c->head + c->have, p, take);
			c->have += take;
			p += take;
			len -= take;
			if (c->have < 4)
				break;
			memcpy(&hdr, c->head, 4);
			c->size = record_size(hdr);
			continue;
		}
		take = (uint32_t)(len < c->size - c->have ? len : c->size - c->have);
		if (c->have < sizeof(c->head))
			memcpy(c->head + c->have, p,
			       take < sizeof(c->head) - c->have ? take : sizeof(c->head) - c->have);
		c->have += take;
		p += take;
		len -= take;
		if (c->have == c->size) {
			count_record(&c->cnt, c->head);
			c->have = 0;
		}
	}
}

int tv_xen_count_stream(const char *path, struct tv_xen_cpu_count *cnt)
{
	unsigned char buf[64 * 1024];
	struct tv_xen_counter c = { 0 };
	FILE *f = fopen(path, "re");
	size_t n;

	memset(cnt, 0, sizeof(*cnt));
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		tv_xen_count_feed(&c, buf, n);
	fclose(f);
	*cnt = c.cnt;
	return 0;
}

static void meta_set_cpu(struct tv_meta *m, int cpu, const char *what, uint64_t v)
{
	char key[64];

	snprintf(key, sizeof(key), "cpu%d.%s", cpu, what);
	tv_meta_set(m, key, "%llu", (unsigned long long)v);
}

int tv_xen_write_meta(const char *domain_dir, const struct tv_xen_meta_info *info)
{
	struct tv_meta *m = tv_meta_new();
	struct tv_xen_cpu_count cnt, total = { 0 };
	char path[4200];
	int ret;

	if (!m)
		return -ENOMEM;
	tv_meta_set(m, "domain", "xen");
	tv_meta_set(m, "kind", "xen-trace");
	tv_meta_set(m, "clock", "%s", info->clock);
	tv_meta_set(m, "ncpus", "%d", info->ncpus);
	tv_meta_set(m, "long_size", "8");
	tv_meta_set(m, "subbuf_size", "4096");	/* unused by this kind; kept valid */
	tv_meta_set(m, "tsc_khz", "%llu", (unsigned long long)info->cpu_khz);
	tv_meta_set(m, "tsc_khz_source", "%s", info->khz_source);
	tv_meta_set(m, "source", "%s", info->source);
	if (info->xen_version[0])
		tv_meta_set(m, "xen_version", "%s", info->xen_version);
	if (info->evt_mask)
		tv_meta_set(m, "evt_mask", "0x%08x", info->evt_mask);
	if (info->have_mask_state) {
		tv_meta_set(m, "evt_mask_before", "0x%08x", info->mask_before);
		tv_meta_set(m, "evt_mask_after", "0x%08x", info->mask_after);
	}
	if (info->tbuf_pages)
		tv_meta_set(m, "tbuf_pages", "%u", info->tbuf_pages);
	if (info->hvm_isa)
		tv_meta_set(m, "hvm_isa", "%s", info->hvm_isa);
	if (info->missing[0])
		tv_meta_set(m, "missing", "%s", info->missing);
	if (info->builtin_formats)
		tv_meta_set(m, "formats", "builtin");
	for (int cpu = 0; cpu < info->ncpus; cpu++) {
		snprintf(path, sizeof(path), "%s/cpu%d.xen", domain_dir, cpu);
		ret = info->counts ? 0 : tv_xen_count_stream(path, &cnt);
		if (ret) {
			tv_meta_free(m);
			return ret;
		}
		if (info->counts)
			cnt = info->counts[cpu];
		meta_set_cpu(m, cpu, "bytes", cnt.bytes);
		meta_set_cpu(m, cpu, "events", cnt.records);
		meta_set_cpu(m, cpu, "lost", cnt.lost);
		meta_set_cpu(m, cpu, "wraps", cnt.wraps);
		total.bytes += cnt.bytes;
		total.records += cnt.records;
		total.lost += cnt.lost;
	}
	if (info->flight_bytes) {
		tv_meta_set(m, "flight_bytes", "%llu", (unsigned long long)info->flight_bytes);
		tv_meta_set(m, "flight_ring_bytes", "%llu", (unsigned long long)info->flight_ring_bytes);
		tv_meta_set(m, "flight_dropped", "%llu", (unsigned long long)info->flight_dropped);
	}
	for (size_t i = 0; i < info->nr_extra; i++)
		tv_meta_set(m, info->extra[i].key, "%s", info->extra[i].value);
	tv_meta_set(m, "events_total", "%llu", (unsigned long long)total.records);
	tv_meta_set(m, "lost_total", "%llu", (unsigned long long)total.lost);
	tv_meta_set(m, "bytes_total", "%llu", (unsigned long long)total.bytes);
	snprintf(path, sizeof(path), "%s/meta", domain_dir);
	ret = tv_meta_write(m, path);
	tv_meta_free(m);
	return ret;
}


int tv_xen_make_domain_dir(struct tv_session_writer *w, bool formats, char *out, size_t size)
{
	int ret = tv_session_writer_domain_dir(w, "xen", out, size);

	if (ret)
		return ret;
	return formats ? tv_xen_write_formats(out) : tv_xen_write_header_page(out);
}
