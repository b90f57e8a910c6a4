// SPDX-License-Identifier: LGPL-2.1
/*
 * DIR/sync/transforms: the sync results as key=value lines, DOMAIN.KEY for
 * each domain (doc/session-format.md), so a session is merged the same way
 * on every machine without estimating again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

static int put(struct tv_meta *m, const char *dom, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int put(struct tv_meta *m, const char *dom, const char *key, const char *fmt, ...)
{
	char k[160], v[400];
	va_list ap;

	snprintf(k, sizeof(k), "%s.%s", dom, key);
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	return tv_meta_set(m, k, "%s", v);
}

static int put_tsc(struct tv_meta *m, const struct tv_sync_domain *d)
{
	int ret;

	ret = put(m, d->domain, "tsc_offset", "%llu", (unsigned long long)d->tsc.offset);
	ret = ret ?: put(m, d->domain, "tsc_ratio", "%llu", (unsigned long long)d->tsc.ratio);
	ret = ret ?: put(m, d->domain, "tsc_frac_bits", "%u", d->tsc.frac_bits);
	ret = ret ?: put(m, d->domain, "tsc_segments", "%zu", d->nr_tsc_segments);
	ret = ret ?: put(m, d->domain, "hull_tsc_diff", "%lld", (long long)d->hull_tsc_diff);
	return ret ?: put(m, d->domain, "hull_bound", "%lld", (long long)d->hull_bound);
}

/*
 * DIR/sync/DOMAIN.tsc: "vcpu from_host offset" per line, one per offset in
 * force (thousands when the host's TSC is unstable: too many for a key),
 * " back" after it where the write moved the guest's TSC back.
 */
static int write_segments(const char *dir, const struct tv_sync_domain *d)
{
	char path[4096];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/sync/%s.tsc", dir, d->domain);
	f = tv_file_fcreate(path, "TSC segments file");
	if (!f)
		return -errno;
	for (size_t i = 0; i < d->nr_tsc_segments; i++)
		fprintf(f, "%u %llu %llu%s\n", d->tsc_segments[i].vcpu,
			(unsigned long long)d->tsc_segments[i].from_host,
			(unsigned long long)d->tsc_segments[i].offset,
			d->tsc_segments[i].moved_back ? " back" : "");
	if (ferror(f))
		err = EIO;
	if (fclose(f) && !err)
		err = errno;
	if (err)
		tv_err("Cannot write TSC segments file: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
	return -err;
}

static int read_segments(const char *dir, struct tv_sync_domain *d)
{
	size_t want = d->nr_tsc_segments, cap = want ? want : 1;
	char path[4096];
	FILE *f;

	d->nr_tsc_segments = 0;
	if (!want)
		return 0;
	snprintf(path, sizeof(path), "%s/sync/%s.tsc", dir, d->domain);
	f = fopen(path, "re");
	if (!f) {
		int err = errno;

		tv_err("Cannot open TSC segments file: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
		return -err;
	}
	d->tsc_segments = calloc(cap, sizeof(*d->tsc_segments));
	while (d->tsc_segments && d->nr_tsc_segments < want) {
		struct tv_tsc_segment *s = &d->tsc_segments[d->nr_tsc_segments];
		unsigned long long from, off;

		char line[128], back[8] = "";

		if (!fgets(line, sizeof(line), f) ||
		    sscanf(line, "%u %llu %llu %7s", &s->vcpu, &from, &off, back) < 3)
			break;
		s->from_host = from;
		s->offset = off;
		s->moved_back = !strcmp(back, "back");
		d->nr_tsc_segments++;
	}
	fclose(f);
	if (!d->tsc_segments)
		return -ENOMEM;
	if (d->nr_tsc_segments != want) {
		tv_err("TSC segments file is short: path=\"%s\", segments=%zu, expected=%zu",
		       path, d->nr_tsc_segments, want);
		return -EINVAL;
	}
	return 0;
}

/* Few (MAX_PIECES): one key each, "from_dom base_dom base_ref slope_q48 bound_ns quality". */
static int put_pieces(struct tv_meta *m, const struct tv_sync_domain *d)
{
	int ret = put(m, d->domain, "pieces", "%zu", d->nr_pieces);

	for (size_t k = 0; k < d->nr_pieces && !ret; k++) {
		const struct tv_sync_piece *pc = &d->pieces[k];
		char key[32];

		snprintf(key, sizeof(key), "piece%zu", k);
		ret = put(m, d->domain, key, "%lld %lld %lld %lld %lld %s", (long long)pc->from_dom,
			  (long long)pc->map.base_dom, (long long)pc->map.base_ref,
			  (long long)pc->map.slope_q48, (long long)pc->bound_ns,
			  tv_sync_quality_name(pc->quality));
	}
	return ret;
}

static int put_domain(struct tv_meta *m, const struct tv_sync_domain *d)
{
	const struct tv_sync_estimate *e = &d->est;
	int ret;

	ret = put(m, d->domain, "method", "%s", d->method);
	ret = ret ?: put(m, d->domain, "via", "%s", d->via);
	ret = ret ?: put(m, d->domain, "quality", "%s", tv_sync_quality_name(e->quality));
	ret = ret ?: put(m, d->domain, "base_dom", "%lld", (long long)e->map.base_dom);
	ret = ret ?: put(m, d->domain, "base_ref", "%lld", (long long)e->map.base_ref);
	ret = ret ?: put(m, d->domain, "slope_q48", "%lld", (long long)e->map.slope_q48);
	ret = ret ?: put(m, d->domain, "offset_ns", "%lld",
			 (long long)(e->map.base_ref - e->map.base_dom));
	ret = ret ?: put(m, d->domain, "drift_ppm", "%.6f",
			 ((double)e->map.slope_q48 / TV_SLOPE_ONE - 1) * 1e6);
	ret = ret ?: put(m, d->domain, "bound_ns", "%lld", (long long)e->bound_ns);
	ret = ret ?: put(m, d->domain, "span", "%lld,%lld", (long long)e->span_lo,
			 (long long)e->span_hi);
	ret = ret ?: put(m, d->domain, "probes", "%zu", d->nr_probes);
	ret = ret ?: put(m, d->domain, "pairs_checked", "%zu", d->nr_pairs_checked);
	ret = ret ?: put(m, d->domain, "vcpu_events_checked", "%zu", d->nr_vcpu_checked);
	ret = ret ?: put(m, d->domain, "vcpu_violations", "%zu", d->vcpu_violations);
	ret = ret ?: put(m, d->domain, "causality_violations", "%zu", d->causality_violations);
	/* only where there are some: Xen domUs, domains with two paths */
	if (d->nr_runstate_checked) {
		ret = ret ?: put(m, d->domain, "runstate_events_checked", "%zu", d->nr_runstate_checked);
		ret = ret ?: put(m, d->domain, "runstate_events_outside", "%zu", d->runstate_violations);
	}
	if (d->alt_via[0]) {
		ret = ret ?: put(m, d->domain, "alt_via", "%s", d->alt_via);
		ret = ret ?: put(m, d->domain, "alt_bound_ns", "%lld", (long long)d->alt_bound_ns);
	}
	if (d->xen_line)
		ret = ret ?: put(m, d->domain, "xen_line_pvclock_ns", "%lld", (long long)d->pvclock_ns);
	/* only where there are some: sessions without forgeries read as before, and
	 * readers take keys by name, so older ones ignore it */
	if (d->foreign_probes)
		ret = ret ?: put(m, d->domain, "foreign_probes", "%zu", d->foreign_probes);
	ret = ret ?: put(m, d->domain, "message", "%s", e->message);
	if (!ret && !strcmp(d->method, "tsc"))
		ret = put_tsc(m, d);
	if (!ret && d->nr_pieces)
		ret = put_pieces(m, d);
	return ret;
}

int tv_sync_write(const char *dir, const struct tv_sync_result *res)
{
	struct tv_meta *m = tv_meta_new();
	char path[4096], list[4096] = "";
	size_t len = 0;
	int ret;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < res->nr; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "",
					res->domains[i].domain);
	ret = tv_meta_set(m, "format", "tracevisor-sync");
	ret = ret ?: tv_meta_set(m, "version", "1");
	ret = ret ?: tv_meta_set(m, "reference", "%s", res->reference);
	ret = ret ?: tv_meta_set(m, "domains", "%s", list);
	for (size_t i = 0; i < res->nr && !ret; i++)
		ret = put_domain(m, &res->domains[i]);
	snprintf(path, sizeof(path), "%s/sync", dir);
	if (!ret && mkdir(path, 0755) && errno != EEXIST) {
		ret = -errno;
		tv_err("Cannot create directory: path=\"%s\", errno=%d (%s)", path, errno, strerror(errno));
	}
	for (size_t i = 0; i < res->nr && !ret; i++)
		if (!strcmp(res->domains[i].method, "tsc"))
			ret = write_segments(dir, &res->domains[i]);
	snprintf(path, sizeof(path), "%s/sync/transforms", dir);
	if (!ret)
		ret = tv_meta_write(m, path);
	tv_meta_free(m);
	return ret;
}

static const char *get(const struct tv_meta *m, const char *dom, const char *key)
{
	char k[160];
	const char *v;

	snprintf(k, sizeof(k), "%s.%s", dom, key);
	v = tv_meta_get(m, k);
	return v ? v : "";
}

static long long get_ll(const struct tv_meta *m, const char *dom, const char *key)
{
	return strtoll(get(m, dom, key), NULL, 10);
}

static enum tv_sync_quality quality_from_name(const char *s)
{
	for (int q = TV_SYNC_EXACT; q <= TV_SYNC_FAILED; q++)
		if (!strcmp(s, tv_sync_quality_name(q)))
			return q;
	return TV_SYNC_FAILED;
}

/*
 * Files written before sync/D.tsc existed list the segments inline,
 * "host_tsc:offset,...", one history for all vCPUs: read them as vCPU 0's.
 */
static int get_inline_segments(const char *list, struct tv_sync_domain *d)
{
	size_t n = 1;

	for (const char *c = list; *c; c++)
		n += *c == ',';
	d->tsc_segments = calloc(n, sizeof(*d->tsc_segments));
	if (!d->tsc_segments)
		return -ENOMEM;
	for (const char *c = list; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL) {
		unsigned long long from, off;

		if (sscanf(c, "%llu:%llu", &from, &off) == 2)
			d->tsc_segments[d->nr_tsc_segments++] =
				(struct tv_tsc_segment){ from, off, 0, 0 };
	}
	return 0;
}

static int get_tsc(const struct tv_meta *m, struct tv_sync_domain *d)
{
	const char *segs = get(m, d->domain, "tsc_segments");

	d->tsc.offset = strtoull(get(m, d->domain, "tsc_offset"), NULL, 10);
	d->tsc.ratio = strtoull(get(m, d->domain, "tsc_ratio"), NULL, 10);
	d->tsc.frac_bits = (unsigned int)get_ll(m, d->domain, "tsc_frac_bits") & 63;
	d->hull_tsc_diff = get_ll(m, d->domain, "hull_tsc_diff");
	d->hull_bound = get_ll(m, d->domain, "hull_bound");
	if (strchr(segs, ':'))
		return get_inline_segments(segs, d);
	d->nr_tsc_segments = strtoull(segs, NULL, 10);
	return 0;
}

static int get_pieces(const struct tv_meta *m, struct tv_sync_domain *d)
{
	long long n = get_ll(m, d->domain, "pieces");

	if (n <= 0)
		return 0;
	if (n > 1024) {
		tv_err("Invalid sync pieces: domain=\"%s\", pieces=%lld", d->domain, n);
		return -EINVAL;
	}
	d->pieces = calloc((size_t)n, sizeof(*d->pieces));
	if (!d->pieces)
		return -ENOMEM;
	for (long long k = 0; k < n; k++) {
		struct tv_sync_piece *pc = &d->pieces[k];
		long long v[5];
		char key[32], q[16];

		snprintf(key, sizeof(key), "piece%lld", k);
		if (sscanf(get(m, d->domain, key), "%lld %lld %lld %lld %lld %15s", &v[0], &v[1],
			   &v[2], &v[3], &v[4], q) != 6 ||
		    (k && v[0] < pc[-1].from_dom)) {
			tv_err("Invalid sync piece: domain=\"%s\", key=%s", d->domain, key);
			return -EINVAL;
		}
		*pc = (struct tv_sync_piece){ v[0], { v[1], v[2], v[3] }, v[4], quality_from_name(q) };
		d->nr_pieces++;
	}
	return 0;
}

static int get_domain(const struct tv_meta *m, struct tv_sync_domain *d)
{
	struct tv_sync_estimate *e = &d->est;

	snprintf(d->method, sizeof(d->method), "%s", get(m, d->domain, "method"));
	snprintf(d->via, sizeof(d->via), "%s", get(m, d->domain, "via"));
	e->quality = quality_from_name(get(m, d->domain, "quality"));
	e->map.base_dom = get_ll(m, d->domain, "base_dom");
	e->map.base_ref = get_ll(m, d->domain, "base_ref");
	e->map.slope_q48 = get_ll(m, d->domain, "slope_q48");
	e->bound_ns = get_ll(m, d->domain, "bound_ns");
	sscanf(get(m, d->domain, "span"), "%ld,%ld", &e->span_lo, &e->span_hi);
	d->nr_probes = (size_t)get_ll(m, d->domain, "probes");
	d->nr_pairs_checked = (size_t)get_ll(m, d->domain, "pairs_checked");
	d->causality_violations = (size_t)get_ll(m, d->domain, "causality_violations");
	d->nr_vcpu_checked = (size_t)get_ll(m, d->domain, "vcpu_events_checked");
	d->vcpu_violations = (size_t)get_ll(m, d->domain, "vcpu_violations");
	d->nr_runstate_checked = (size_t)get_ll(m, d->domain, "runstate_events_checked");
	d->runstate_violations = (size_t)get_ll(m, d->domain, "runstate_events_outside");
	snprintf(d->alt_via, sizeof(d->alt_via), "%s", get(m, d->domain, "alt_via"));
	d->alt_bound_ns = *d->alt_via ? get_ll(m, d->domain, "alt_bound_ns") : -1;
	snprintf(e->message, sizeof(e->message), "%s", get(m, d->domain, "message"));
	d->xen_line = *get(m, d->domain, "xen_line_pvclock_ns") != 0;
	d->pvclock_ns = get_ll(m, d->domain, "xen_line_pvclock_ns");
	d->foreign_probes = (size_t)get_ll(m, d->domain, "foreign_probes");
	if (!strcmp(d->method, "hull"))
		return get_pieces(m, d);
	return strcmp(d->method, "tsc") ? 0 : get_tsc(m, d);
}

int tv_sync_read(const char *dir, struct tv_sync_result *out)
{
	struct tv_meta *m = NULL;
	char path[4096], *list, *save = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/sync/transforms", dir);
	if (access(path, F_OK))
		return -errno;	/* never synced: not an error for readers */
	ret = tv_meta_read(path, &m);
	if (ret)
		return ret;
	if (strcmp(tv_meta_get(m, "format") ?: "", "tracevisor-sync")) {
		tv_err("Not a tracevisor sync file: path=\"%s\"", path);
		tv_meta_free(m);
		return -EINVAL;
	}
	snprintf(out->reference, sizeof(out->reference), "%s", tv_meta_get(m, "reference") ?: "");
	list = strdup(tv_meta_get(m, "domains") ?: "");
	out->domains = calloc(64, sizeof(*out->domains));
	for (char *t = list && out->domains ? strtok_r(list, ",", &save) : NULL;
	     t && out->nr < 64; t = strtok_r(NULL, ",", &save)) {
		snprintf(out->domains[out->nr].domain, sizeof(out->domains[0].domain), "%s", t);
		ret = ret ?: get_domain(m, &out->domains[out->nr]);
		if (!ret && !out->domains[out->nr].tsc_segments)
			ret = read_segments(dir, &out->domains[out->nr]);
		out->nr++;
	}
	if (!ret && (!out->domains || !list))
		ret = -ENOMEM;
	free(list);
	tv_meta_free(m);
	if (ret)
		tv_sync_result_free(out);
	return ret;
}

void tv_sync_result_free(struct tv_sync_result *res)
{
	for (size_t i = 0; res->domains && i < res->nr; i++)
		tv_sync_domain_release(&res->domains[i]);
	free(res->domains);
	memset(res, 0, sizeof(*res));
}
