// SPDX-License-Identifier: LGPL-2.1
/*
 * The HTML page of export --format html: the template (export/html/
 * page.html, built into the library), the session's data as one JSON
 * object, stat's rows as table rows with data-* attributes, and Chart.js
 * (Debian's libjs-chart.js, read at export time with its license).
 *
 * Level of detail: a page holds at most HX_BUDGET items one by one.  When
 * a session has more, the intervals of at least a threshold duration (the
 * smallest of 8 log-spaced steps per octave that keeps them under the
 * budget) stay one by one, and the instants when they fit beside them, else
 * those of the sparsest buckets (hx_instant_buckets()); the others are
 * summed per lane, bucket of span/HX_AGG_BUCKETS and label into a count
 * and a total duration: the page draws those as the share of each label.
 * Every text a guest controls (comm, VM and domain names) is escaped for
 * the place it goes: JSON inside <script>, or an HTML attribute.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "export_html.h"

#ifndef TV_CHARTJS_PATH
#define TV_CHARTJS_PATH "/usr/share/javascript/chart.js/chart.min.js"
#endif
#define TV_CHARTJS_LICENSE "/usr/share/doc/libjs-chart.js/copyright"

extern const unsigned char tv_html_template[];
extern const size_t tv_html_template_len;

#define HX_STEPS 8	/* threshold steps per octave */

struct hx_agg {
	uint64_t key;		/* lane << 40 | bucket << 16 | str, + 1; 0: free */
	uint64_t count, total;
};

struct hx_lod {
	uint32_t *kept;		/* indexes of the items kept one by one, by lane then time */
	size_t nr_kept;
	uint64_t threshold_ns;	/* intervals at least this long kept (0: all) */
	bool keep_instants;	/* every instant kept (else: those of sparse buckets) */
	uint32_t *inst_cnt;	/* [lane * (HX_AGG_BUCKETS + 1) + bucket]: its instants */
	uint32_t inst_max;	/* a bucket of at most this many instants keeps them */
	uint64_t inst_room;	/* the budget left beside the intervals */
	struct hx_agg *agg;	/* open addressing, then sorted by key */
	size_t agg_cap, nr_agg;
	uint64_t bucket_ns;
	uint16_t *order;	/* page place -> lane index */
	uint16_t *place;	/* lane index -> its place in the page */
};

static uint64_t hx_dur_ns(const struct hx_item *it)
{
	return it->dur & 0x80000000u ? (uint64_t)(it->dur & 0x7fffffff) * 1000 : it->dur;
}

static bool hx_instant(const struct hx_item *it)
{
	return it->lane & 0x8000;
}

/* 0 for 0 ns, else 1 + 8 * log2(ns) + the next 3 bits of @ns: 8 steps per octave. */
static int hx_step(uint64_t ns)
{
	int msb = 63 - __builtin_clzll(ns | 1);

	return ns ? 1 + HX_STEPS * msb + (int)((ns << (63 - msb)) >> 60 & 7) : 0;
}

/* The smallest duration of step @k (>= 1). */
static uint64_t hx_step_low(int k)
{
	int m = (k - 1) / HX_STEPS, f = (k - 1) % HX_STEPS;

	return m >= 61 ? UINT64_MAX : (((uint64_t)(8 + f) << m) + 7) / 8;
}

/*
 * @s with the bytes that could end or change the place it goes escaped:
 * controls, quotes, backslash, <, > and & as \u00XX in a JSON string (inside
 * <script>, so "</script" cannot appear) or as &#N; in an HTML attribute or
 * text.  Other bytes, UTF-8 included, are copied.
 */
static void hx_escape(FILE *f, const char *s, bool json)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != 0x7f && !strchr("\"'\\<>&", c))
			putc(c, f);
		else if (json && c == '\'')
			putc(c, f);
		else
			fprintf(f, json ? "\\u%04x" : "&#%u;", c);
	}
}

void hx_json_str(FILE *f, const char *s)
{
	putc('"', f);
	hx_escape(f, s, true);
	putc('"', f);
}

static void hx_attr(FILE *f, const char *s)
{
	hx_escape(f, s, false);
}

/*
 * What stays one by one: the intervals from the smallest step whose
 * intervals and longer ones fit the budget (@threshold_ns, 0: all), and
 * the instants when they fit beside them.
 */
static void hx_threshold(const struct hx_session *s, struct hx_lod *lod)
{
	uint64_t hist[64 * HX_STEPS + 2] = { 0 }, above = 0, instants = 0;
	int k;

	lod->threshold_ns = 0;
	lod->keep_instants = true;
	if (s->nr_items <= HX_BUDGET)
		return;
	for (size_t i = 0; i < s->nr_items; i++) {
		if (hx_instant(&s->items[i]))
			instants++;
		else
			hist[hx_step(hx_dur_ns(&s->items[i]))]++;
	}
	for (k = 64 * HX_STEPS + 1; k >= 0 && above + hist[k] <= HX_BUDGET; k--)
		above += hist[k];
	lod->threshold_ns = k < 0 ? 0 : hx_step_low(k + 1);	/* step k + 1 and up */
	lod->keep_instants = above + instants <= HX_BUDGET;
	lod->inst_room = HX_BUDGET - above;
}

static int hx_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static size_t hx_bucket(const struct hx_session *s, const struct hx_lod *lod, const struct hx_item *it)
{
	return (size_t)(it->lane & 0x7fff) * (HX_AGG_BUCKETS + 1) + (it->t0 - s->t_first) / lod->bucket_ns;
}

/*
 * When the instants do not all fit: those of the sparsest buckets (per lane
 * and bucket, at most @inst_max instants, the largest such bound that fits
 * the room left) stay one by one, so that quiet stretches keep every event
 * and busy ones are summed.
 */
static int hx_instant_buckets(const struct hx_session *s, struct hx_lod *lod)
{
	size_t n = s->nr_lanes * (HX_AGG_BUCKETS + 1), nz = 0;
	uint32_t *counts = NULL;
	uint64_t sum = 0;

	if (lod->keep_instants)
		return 0;
	lod->inst_cnt = calloc(n, sizeof(*lod->inst_cnt));
	counts = malloc(n * sizeof(*counts));
	if (!lod->inst_cnt || !counts) {
		free(counts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nr_items; i++)
		if (hx_instant(&s->items[i]) && lod->inst_cnt[hx_bucket(s, lod, &s->items[i])]++ == 0)
			nz++;
	for (size_t i = 0, j = 0; i < n; i++)
		if (lod->inst_cnt[i])
			counts[j++] = lod->inst_cnt[i];
	qsort(counts, nz, sizeof(*counts), hx_u32_cmp);
	for (size_t i = 0; i < nz; i++) {	/* all the buckets of one count, or none */
		size_t j = i;

		while (j + 1 < nz && counts[j + 1] == counts[i])
			j++;
		if (sum + (uint64_t)counts[i] * (j - i + 1) > lod->inst_room)
			break;
		sum += (uint64_t)counts[i] * (j - i + 1);
		lod->inst_max = counts[i];
		i = j;
	}
	free(counts);
	return 0;
}

static bool hx_kept(const struct hx_session *s, const struct hx_lod *lod, const struct hx_item *it)
{
	if (!hx_instant(it))
		return hx_dur_ns(it) >= lod->threshold_ns;
	return lod->keep_instants || lod->inst_cnt[hx_bucket(s, lod, it)] <= lod->inst_max;
}

static int hx_agg_add(struct hx_lod *lod, uint64_t key, uint64_t dur)
{
	size_t h;

	if (lod->nr_agg * 2 >= lod->agg_cap) {
		size_t ncap = lod->agg_cap ? lod->agg_cap * 2 : 4096;
		struct hx_agg *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < lod->agg_cap; i++) {
			if (!lod->agg[i].key)
				continue;
			for (h = (lod->agg[i].key * 0x9e3779b97f4a7c15ULL) >> 20 & (ncap - 1); n[h].key;
			     h = (h + 1) & (ncap - 1))
				;
			n[h] = lod->agg[i];
		}
		free(lod->agg);
		lod->agg = n;
		lod->agg_cap = ncap;
	}
	for (h = (key * 0x9e3779b97f4a7c15ULL) >> 20 & (lod->agg_cap - 1);
	     lod->agg[h].key && lod->agg[h].key != key; h = (h + 1) & (lod->agg_cap - 1))
		;
	if (!lod->agg[h].key)
		lod->nr_agg++;
	lod->agg[h].key = key;
	lod->agg[h].count++;
	lod->agg[h].total += dur;
	return 0;
}


static int hx_lane_rank(const struct hx_lane *l)
{
	static const int rank[] = { [HX_CPU] = 0, [HX_VCPU] = 1, [HX_GCPU] = 2, [HX_PCPU] = 3,
				    [HX_XVCPU] = 4, [HX_XEXIT] = 4, [HX_UST] = 5 };

	return rank[l->kind];
}

/* qsort_r() comparators: no static state, exports may run in parallel. */
static int hx_lane_cmp(const void *a, const void *b, void *lanes)
{
	const struct hx_lane *x = &((const struct hx_lane *)lanes)[*(const uint16_t *)a];
	const struct hx_lane *y = &((const struct hx_lane *)lanes)[*(const uint16_t *)b];
	int c = hx_lane_rank(x) - hx_lane_rank(y);

	c = c ?: strcmp(x->group, y->group);
	c = c ?: x->id - y->id;
	return c ?: (int)x->kind - (int)y->kind;
}

/* The lanes in page order (@order) and each lane's place (@place). */
static int hx_lanes_order(struct hx_session *s, struct hx_lod *lod)
{
	lod->order = calloc(s->nr_lanes + 1, sizeof(*lod->order));
	lod->place = calloc(s->nr_lanes + 1, sizeof(*lod->place));
	if (!lod->order || !lod->place)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_lanes; i++)
		lod->order[i] = (uint16_t)i;
	qsort_r(lod->order, s->nr_lanes, sizeof(*lod->order), hx_lane_cmp, s->lanes);
	for (size_t o = 0; o < s->nr_lanes; o++)
		lod->place[lod->order[o]] = (uint16_t)o;
	return 0;
}

struct hx_items_order {
	const struct hx_item *items;
	const uint16_t *place;
};

static int hx_kept_cmp(const void *a, const void *b, void *order)
{
	const struct hx_items_order *o = order;
	const struct hx_item *x = &o->items[*(const uint32_t *)a];
	const struct hx_item *y = &o->items[*(const uint32_t *)b];
	uint16_t px = o->place[x->lane & 0x7fff], py = o->place[y->lane & 0x7fff];

	if (px != py)
		return px < py ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int hx_agg_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct hx_agg *)a)->key, y = ((const struct hx_agg *)b)->key;

	return x < y ? -1 : x > y;
}

/* Split the items into kept ones (by page lane, then time) and aggregates (same order). */
static int hx_lod_build(struct hx_session *s, struct hx_lod *lod)
{
	uint64_t span = s->t_last - s->t_first + 1;
	size_t w = 0;

	lod->bucket_ns = span / HX_AGG_BUCKETS + 1;
	hx_threshold(s, lod);
	lod->kept = malloc((s->nr_items < HX_BUDGET ? s->nr_items : HX_BUDGET) * sizeof(uint32_t) + 4);
	if (!lod->kept || hx_instant_buckets(s, lod))
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_items; i++) {
		const struct hx_item *it = &s->items[i];
		uint64_t lane = it->lane & 0x7fff, dur = hx_dur_ns(it);

		if (hx_kept(s, lod, it)) {
			lod->kept[w++] = (uint32_t)i;
			s->lanes[lane].items++;
			continue;
		}
		s->lanes[lane].aggregated++;
		if (hx_agg_add(lod, ((uint64_t)lod->place[lane] << 40 |
				     ((it->t0 - s->t_first) / lod->bucket_ns) << 16 | it->str) + 1,
			       hx_instant(it) ? 0 : dur))
			return -ENOMEM;
	}
	lod->nr_kept = w;
	qsort_r(lod->kept, w, sizeof(*lod->kept), hx_kept_cmp,
		&(struct hx_items_order){ .items = s->items, .place = lod->place });
	for (size_t i = 0, j = 0; i < lod->agg_cap; i++)
		if (lod->agg[i].key)
			lod->agg[j++] = lod->agg[i];
	if (lod->nr_agg)
		qsort(lod->agg, lod->nr_agg, sizeof(*lod->agg), hx_agg_cmp);
	return 0;
}

static const char *const hx_kind_names[] = { "cpu", "vcpu", "gcpu", "pcpu", "xvcpu", "xexit", "ust" };

static void hx_write_lanes(FILE *f, const struct hx_session *s, const struct hx_lod *lod)
{
	fputs(",\n\"lanes\":[", f);
	for (size_t o = 0; o < s->nr_lanes; o++) {
		const struct hx_lane *l = &s->lanes[lod->order[o]];

		fprintf(f, "%s{\"kind\":\"%s\",\"id\":%d,\"items\":%llu,\"aggregated\":%llu,\"group\":",
			o ? ",\n" : "", hx_kind_names[l->kind], l->id, (unsigned long long)l->items,
			(unsigned long long)l->aggregated);
		hx_json_str(f, l->group);
		fputs(",\"name\":", f);
		hx_json_str(f, l->name);
		fputs(",\"vm\":", f);
		hx_json_str(f, l->vm);
		fputs("}", f);
	}
	fputs("]", f);
}

/* One array of the lane run kept[from, to): 0 start deltas, 1 durations (-1: instant), 2 labels. */
static void hx_write_column(FILE *f, const struct hx_session *s, const struct hx_lod *lod,
			    size_t from, size_t to, int col)
{
	uint64_t prev = s->t_first;

	putc('[', f);
	for (size_t k = from; k < to; k++) {
		const struct hx_item *it = &s->items[lod->kept[k]];

		if (k > from)
			putc(',', f);
		if (col == 0)
			fprintf(f, "%llu", (unsigned long long)(it->t0 - prev));
		else if (col == 1)
			fprintf(f, "%lld", hx_instant(it) ? -1LL : (long long)hx_dur_ns(it));
		else
			fprintf(f, "%u", it->str);
		prev = it->t0;
	}
	putc(']', f);
}

static void hx_write_items(FILE *f, const struct hx_session *s, const struct hx_lod *lod)
{
	size_t k = 0;

	fputs(",\n\"items\":[", f);
	for (size_t o = 0; o < s->nr_lanes; o++) {
		size_t from = k;

		while (k < lod->nr_kept && lod->place[s->items[lod->kept[k]].lane & 0x7fff] == o)
			k++;
		fputs(o ? ",\n{\"t\":" : "{\"t\":", f);
		hx_write_column(f, s, lod, from, k, 0);
		fputs(",\"d\":", f);
		hx_write_column(f, s, lod, from, k, 1);
		fputs(",\"s\":", f);
		hx_write_column(f, s, lod, from, k, 2);
		putc('}', f);
	}
	fputs("]", f);
}

/* Aggregates, flat: lane (page order), bucket, label, count, total ns. */
static void hx_write_agg(FILE *f, const struct hx_lod *lod)
{
	fprintf(f, ",\n\"lod\":{\"threshold_ns\":%llu,\"instants_kept\":%s,\"instant_bucket_max\":%u,"
		"\"bucket_ns\":%llu,\"budget\":%d,\"agg\":[", (unsigned long long)lod->threshold_ns,
		lod->keep_instants ? "true" : "false", lod->inst_max, (unsigned long long)lod->bucket_ns,
		HX_BUDGET);
	for (size_t i = 0; i < lod->nr_agg; i++) {
		uint64_t key = lod->agg[i].key - 1;

		fprintf(f, "%s%llu,%llu,%llu,%llu,%llu", i ? "," : "",
			(unsigned long long)(key >> 40), (unsigned long long)(key >> 16 & 0xffffff),
			(unsigned long long)(key & 0xffff), (unsigned long long)lod->agg[i].count,
			(unsigned long long)lod->agg[i].total);
	}
	fputs("]}", f);
}

static void hx_write_strs(FILE *f, const struct hx_session *s)
{
	fputs(",\n\"strs\":[", f);
	for (size_t i = 0; i < s->nr_strs; i++) {
		if (i)
			putc(',', f);
		hx_json_str(f, s->strs[i]);
	}
	fputs("]", f);
}

/* @m's @key as a JSON number, "null" when absent or not a number (meta is untrusted). */
static void hx_meta_u64(FILE *f, const struct tv_meta *m, const char *key)
{
	const char *v = tv_meta_get(m, key);
	char *end = NULL;
	unsigned long long n;

	errno = 0;
	n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
	if (!end || *end || errno)
		fputs("null", f);
	else
		fprintf(f, "%llu", n);
}

/*
 * Losses per domain: events read, events lost (the ring buffer's counts
 * before an event), loss marks without a count, and the recorder's own
 * count (meta lost_total: a traced process's discarded events), and the
 * labels of the domain shown as "(other)" (labels_folded, when any).
 */
static void hx_write_losses(FILE *f, const struct hx_session *s)
{
	fputs(",\n\"losses\":[", f);
	for (size_t d = 0; d < tv_reader_nr_domains(s->rd); d++) {
		const struct tv_domain_info *di = tv_reader_domain(s->rd, d);
		const char *status = tv_meta_get(di->meta, "status");

		fprintf(f, "%s{\"domain\":", d ? "," : "");
		hx_json_str(f, di->name);
		fputs(",\"dir\":", f);
		hx_json_str(f, di->subdir);
		fprintf(f, ",\"events\":%llu,\"lost\":%llu,\"lost_flags\":%llu,\"meta_lost\":",
			(unsigned long long)s->loss[d].events, (unsigned long long)s->loss[d].lost,
			(unsigned long long)s->loss[d].lost_flags);
		hx_meta_u64(f, di->meta, "lost_total");
		/* only when some were: the pages of sessions without folds stay as they were */
		if (s->loss[d].strs_folded)
			fprintf(f, ",\"labels_folded\":%llu", (unsigned long long)s->loss[d].strs_folded);
		fputs(",\"status\":", f);
		hx_json_str(f, status ? status : "");
		putc('}', f);
	}
	fputs("]", f);
}

/* The sync panel: what DIR/sync/transforms says of each domain (none: not synchronised). */
static void hx_write_sync(FILE *f, const struct hx_session *s)
{
	struct tv_sync_result res = { 0 };
	int ret = tv_sync_read(s->dir, &res);

	fputs(",\n\"sync\":", f);
	if (ret) {
		fprintf(f, "{\"error\":%d,\"domains\":[]}", ret);
		tv_sync_result_free(&res);
		return;
	}
	fputs("{\"reference\":", f);
	hx_json_str(f, res.reference);
	fputs(",\"domains\":[", f);
	for (size_t i = 0; i < res.nr; i++) {
		const struct tv_sync_domain *d = &res.domains[i];

		fprintf(f, "%s{\"domain\":", i ? "," : "");
		hx_json_str(f, d->domain);
		fputs(",\"via\":", f);
		hx_json_str(f, d->via);
		fputs(",\"method\":", f);
		hx_json_str(f, d->method);
		fprintf(f, ",\"quality\":\"%s\",\"bound_ns\":%lld,\"pieces\":%zu,\"probes\":%zu,"
			"\"pairs_checked\":%zu,\"causality_violations\":%zu,\"vcpu_checked\":%zu,"
			"\"vcpu_violations\":%zu,\"message\":", tv_sync_quality_name(d->est.quality),
			(long long)d->est.bound_ns, d->nr_pieces, d->nr_probes, d->nr_pairs_checked,
			d->causality_violations, d->nr_vcpu_checked, d->vcpu_violations);
		hx_json_str(f, d->est.message);
		putc('}', f);
	}
	fputs("]}", f);
	tv_sync_result_free(&res);
}

struct hx_stat {
	struct tv_exit_stat kvm, xen, ust;
	bool have_xen, have_ust;
};

static void hx_stat_free(struct hx_stat *t)
{
	tv_exit_stat_free(&t->kvm);
	tv_exit_stat_free(&t->xen);
	tv_exit_stat_free(&t->ust);
}

/* stat's own analyses (analysis/exit_stat.c, analysis/ust_stat.c): the page shows its rows. */
static int hx_stat_compute(const char *dir, struct hx_stat *t)
{
	int ret = tv_stat_compute_opts(dir, NULL, &t->kvm, &t->xen, &t->have_xen);

	if (ret)
		return ret;
	ret = tv_ust_stat_compute(dir, &t->ust);
	t->have_ust = !ret;
	return ret == -ENOENT ? 0 : ret;
}

/* A row's vm, vcpu and reason, escaped, each after its text in @before. */
static void hx_row_names(FILE *f, const struct tv_exit_stat_row *r, const char *const before[3])
{
	const char *const v[3] = { r->vm, r->vcpu, r->reason };

	for (int i = 0; i < 3; i++) {
		fputs(before[i], f);
		hx_attr(f, v[i]);
	}
}

static void hx_row_html(FILE *f, const struct tv_exit_stat_row *r, const char *mode)
{
	static const char *const attrs[3] = { "<tr class=\"stat-row\" data-vm=\"", "\" data-vcpu=\"",
					      "\" data-reason=\"" };
	static const char *const cells[3] = { "><td>", "</td><td>", "</td><td>" };

	hx_row_names(f, r, attrs);
	fprintf(f, "\" data-mode=\"%s\" data-count=\"%llu\"", mode, (unsigned long long)r->count);
	if (r->has_latency)
		fprintf(f, " data-p99-ns=\"%llu\"", (unsigned long long)r->p99_ns);
	hx_row_names(f, r, cells);
	fprintf(f, "</td><td>%llu</td>", (unsigned long long)r->count);
	if (r->has_latency)
		fprintf(f, "<td class=\"ns\">%llu</td><td class=\"ns\">%llu</td><td class=\"ns\">%llu</td>"
			"<td class=\"ns\">%llu</td></tr>\n", (unsigned long long)r->p50_ns,
			(unsigned long long)r->p99_ns, (unsigned long long)r->max_ns,
			(unsigned long long)r->total_ns);
	else
		fputs("<td></td><td></td><td></td><td></td></tr>\n", f);
}

static void hx_rows_html(FILE *f, const struct hx_stat *t)
{
	for (size_t i = 0; i < t->kvm.nr_rows; i++)
		hx_row_html(f, &t->kvm.rows[i], t->kvm.mode);
	for (size_t i = 0; t->have_xen && i < t->xen.nr_rows; i++)
		hx_row_html(f, &t->xen.rows[i], t->xen.mode);
	for (size_t i = 0; t->have_ust && i < t->ust.nr_rows; i++)
		hx_row_html(f, &t->ust.rows[i], t->ust.mode);
}

/* The timed rows' log2 histograms (bucket b: [2^(b-1), 2^b) ns) for the charts. */
static void hx_rows_json(FILE *f, const struct tv_exit_stat *st, bool *first)
{
	for (size_t i = 0; i < st->nr_rows; i++) {
		const struct tv_exit_stat_row *r = &st->rows[i];
		bool any = false;

		if (!r->has_latency)
			continue;
		fputs(*first ? "{\"vm\":" : ",\n{\"vm\":", f);
		*first = false;
		hx_json_str(f, r->vm);
		fputs(",\"vcpu\":", f);
		hx_json_str(f, r->vcpu);
		fputs(",\"reason\":", f);
		hx_json_str(f, r->reason);
		fprintf(f, ",\"mode\":\"%s\",\"count\":%llu,\"p99_ns\":%llu,\"hist\":[", st->mode,
			(unsigned long long)r->count, (unsigned long long)r->p99_ns);
		for (int b = 0; b < 64; b++) {
			if (!r->hist[b])
				continue;
			fprintf(f, "%s[%d,%llu]", any ? "," : "", b, (unsigned long long)r->hist[b]);
			any = true;
		}
		fputs("]}", f);
	}
}

static void hx_write_data(FILE *f, struct hx_session *s, const struct hx_lod *lod,
			  const struct hx_stat *t)
{
	bool first = true;

	fprintf(f, "{\"version\":1,\"t_first\":\"%llu\",\"span_ns\":%llu,\"snapshot_ns\":",
		(unsigned long long)s->t_first, (unsigned long long)(s->t_last - s->t_first));
	if (s->snapshot_ts)
		fprintf(f, "%llu", (unsigned long long)(s->snapshot_ts - s->t_first));
	else
		fputs("null", f);
	fprintf(f, ",\"events\":%llu,\"lanes_refused\":%llu,\"labels_folded\":%llu,\"title\":",
		(unsigned long long)s->nr_events, (unsigned long long)s->lanes_refused,
		(unsigned long long)s->strs_folded);
	hx_json_str(f, s->dir);
	hx_write_strs(f, s);
	hx_write_lanes(f, s, lod);
	hx_write_items(f, s, lod);
	hx_write_agg(f, lod);
	hx_write_losses(f, s);
	hx_write_sync(f, s);
	fputs(",\n\"rows\":[", f);
	hx_rows_json(f, &t->kvm, &first);
	if (t->have_xen)
		hx_rows_json(f, &t->xen, &first);
	if (t->have_ust)
		hx_rows_json(f, &t->ust, &first);
	fputs("]}", f);
}

/* The whole file @path, NUL-terminated; -errno. */
static int hx_read_file(const char *path, char **out)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	long n;
	int ret = 0;

	*out = NULL;
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		ret = -EIO;
		goto out;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		ret = buf ? -EIO : -ENOMEM;
		goto out;
	}
	buf[n] = 0;
	*out = buf;
	buf = NULL;
out:
	free(buf);
	fclose(f);
	return ret;
}

/* Chart.js and its license, from Debian's libjs-chart.js; NULL when not installed (said). */
static char *hx_chartjs_read(void)
{
	char *js = NULL, *lic = NULL, *out = NULL;

	if (hx_read_file(TV_CHARTJS_PATH, &js) || hx_read_file(TV_CHARTJS_LICENSE, &lic)) {
		tv_warn("Cannot read Chart.js (Debian libjs-chart.js, make deps): path=\"%s\"; the histograms are drawn as tables",
			TV_CHARTJS_PATH);
		goto out;
	}
	/* inside <script>: its text must not end the element, the license not the comment */
	if (strcasestr(js, "</script") || strstr(lic, "*/")) {
		tv_warn("Chart.js cannot be inlined: path=\"%s\" holds </script or */", TV_CHARTJS_PATH);
		goto out;
	}
	if (asprintf(&out, "/* Chart.js, %s:\n%s*/\n%s", TV_CHARTJS_PATH, lic, js) < 0)
		out = NULL;
out:
	free(js);
	free(lic);
	return out;
}

/* The template with its @@NAME@@ places filled. */
static void hx_fill(FILE *f, struct hx_session *s, const struct hx_lod *lod,
		    const struct hx_stat *t, const char *chartjs)
{
	const char *p = (const char *)tv_html_template, *end = p + tv_html_template_len;

	while (p < end) {
		const char *m = memmem(p, (size_t)(end - p), "@@", 2);
		const char *e = m ? memmem(m + 2, (size_t)(end - m - 2), "@@", 2) : NULL;

		if (!m || !e) {
			fwrite(p, 1, (size_t)(end - p), f);
			break;
		}
		fwrite(p, 1, (size_t)(m - p), f);
		if (!strncmp(m, "@@DATA@@", 8))
			hx_write_data(f, s, lod, t);
		else if (!strncmp(m, "@@ROWS@@", 8))
			hx_rows_html(f, t);
		else if (!strncmp(m, "@@CHARTJS@@", 11))
			fputs(chartjs ? chartjs : "/* Chart.js not installed */", f);
		else if (!strncmp(m, "@@TITLE@@", 9))
			hx_attr(f, s->dir);
		else
			fwrite(m, 1, (size_t)(e + 2 - m), f);
		p = e + 2;
	}
}

static void hx_lod_free(struct hx_lod *lod)
{
	free(lod->kept);
	free(lod->agg);
	free(lod->order);
	free(lod->place);
	free(lod->inst_cnt);
}

int hx_page_write(struct hx_session *s, const char *out, struct tv_export_stats *st)
{
	struct hx_stat t = { 0 };
	struct hx_lod lod = { 0 };
	char *chartjs = NULL;
	FILE *f = NULL;
	int ret;

	ret = hx_stat_compute(s->dir, &t);
	ret = ret ?: hx_lanes_order(s, &lod);
	ret = ret ?: hx_lod_build(s, &lod);
	if (ret)
		goto out;
	chartjs = hx_chartjs_read();
	f = fopen(out, "we");
	if (!f) {
		ret = -errno;
		tv_err("Cannot create output file: path=\"%s\", errno=%d (%s)", out, -ret, strerror(-ret));
		goto out;
	}
	hx_fill(f, s, &lod, &t, chartjs);
	if (fclose(f)) {
		ret = -errno;
		tv_err("Cannot write output file: path=\"%s\", errno=%d (%s)", out, -ret, strerror(-ret));
	}
	f = NULL;
	st->events = s->nr_events;
	st->streams = s->nr_lanes;
	st->slices = lod.nr_kept;
out:
	if (f)
		fclose(f);
	free(chartjs);
	hx_lod_free(&lod);
	hx_stat_free(&t);
	return ret;
}
