// SPDX-License-Identifier: LGPL-2.1
/*
 * Clock synchronisation of a whole session: read every domain's probes in
 * its own clock, estimate each (guest, peer) relation with the convex-hull
 * estimator (or the exact TSC relation), keep for each domain the path to
 * the reference with the smallest composed bound, then check causality of
 * every probe pair under the final transforms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "sync_probes.h"
#include "tsc.h"
#include "sync_session.h"

static int reference_index(const struct scan *sc, const char *dir)
{
	char path[4096];
	struct tv_meta *m = NULL;
	const char *name;
	int ref = 0;

	snprintf(path, sizeof(path), "%s/session.meta", dir);
	if (tv_meta_read(path, &m))
		return 0;
	name = tv_meta_get(m, "reference_domain");
	for (size_t d = 0; name && d < sc->nr_domains; d++)
		if (!strcmp(tv_reader_domain(sc->rd, d)->subdir, name))
			ref = (int)d;
	tv_meta_free(m);
	return ref;
}

static int sync_compute(struct scan *sc, const char *dir, struct tv_sync_result *out)
{
	struct graph *g = calloc(1, sizeof(*g));
	struct causality c;
	int ref = reference_index(sc, dir), ret;

	out->domains = calloc(sc->nr_domains, sizeof(*out->domains));
	if (!g || !out->domains) {
		free(g);
		return -ENOMEM;
	}
	out->nr = sc->nr_domains;
	snprintf(out->reference, sizeof(out->reference), "%s",
		 tv_reader_domain(sc->rd, (size_t)ref)->subdir);
	qsort(sc->probes, sc->nr_probes, sizeof(*sc->probes), sync_cmp_probe);
	ret = sync_estimate_edges(sc, g);
	for (size_t d = 0; d < sc->nr_domains && !ret; d++) {
		struct tv_sync_domain *r = &out->domains[d];

		r->alt_bound_ns = -1;
		r->pcpu_skew_ns = -1;
		snprintf(r->domain, sizeof(r->domain), "%s", tv_reader_domain(sc->rd, d)->subdir);
		if ((int)d == ref) {
			snprintf(r->method, sizeof(r->method), "reference");
			snprintf(r->via, sizeof(r->via), "%s", r->domain);
			r->est.map.slope_q48 = TV_SLOPE_ONE;
		} else {
			ret = sync_tsc_method(sc, (int)d, ref, r);
			ret = ret < 0 ? ret : 0;
		}
	}
	if (!ret) {
		sync_resolve_paths(sc, g, ref, out->domains);
		ret = sync_attach_pieces(sc, g, out->domains);
	}
	if (!ret) {
		sync_compose_paths(sc, out->domains, ref);
		sync_alternative_paths(sc, g, out->domains, ref);
		for (size_t d = 0; d < sc->nr_domains; d++) {
			if (!out->domains[d].method[0])
				sync_explain_missing(sc, g, d, &out->domains[d]);
			else if (!strcmp(out->domains[d].method, "tsc") && g->e[d][ref].valid)
				out->domains[d].nr_probes = g->e[d][ref].nr_pairs;
			else
				sync_explain_untimed(sc, d, &out->domains[d]);
		}
		c.res = out->domains;
		c.g = g;
		ret = sync_map_probes(sc, out->domains);
		if (!ret)
			ret = sync_for_each_pair(sc, sync_check_pair, &c);
		for (size_t d = 0; d < sc->nr_domains && !ret; d++)
			out->domains[d].held_rounds = sync_count_held_rounds(sc, (int)d);
		for (size_t d = 0; d < sc->nr_domains && !ret; d++)
			out->domains[d].misplaced_rounds = sync_count_misplaced_rounds(sc, (int)d);
		for (size_t d = 0; d < sc->nr_domains && !ret; d++)
			out->domains[d].ambiguous_rounds = sync_count_ambiguous_rounds(sc, (int)d);
		for (size_t d = 0; d < sc->nr_domains && d < MAX_DOMAINS; d++)
			out->domains[d].foreign_probes = sc->dom[d].foreign;
		for (size_t d = 0; d < sc->nr_domains && !ret; d++) {
			int v = sync_domain_index(sc, out->domains[d].via);

			sync_describe_cross_check(&out->domains[d], v >= 0 ? &g->e[d][v] : NULL);
		}
	}
	for (size_t d = 0; d < MAX_DOMAINS; d++)
		for (size_t p = 0; p < MAX_DOMAINS; p++)
			free(g->e[d][p].pieces);
	free(g);
	return ret;
}

/*
 * A traced process (kind ust) stamps its events in its parent domain's
 * clock: its map is its parent's, via it (lib/reader/reader.c maps it so too).
 */
static int sync_ust_domains(struct scan *sc, struct tv_sync_result *out)
{
	for (size_t d = 0; d < out->nr; d++) {
		const struct tv_meta *m = tv_reader_domain(sc->rd, d)->meta;
		const char *kind = tv_meta_get(m, "kind"), *parent = tv_meta_get(m, "parent");
		struct tv_sync_domain *r = &out->domains[d], copy;

		if (!kind || strcmp(kind, "ust") || !parent)
			continue;
		for (size_t p = 0; p < out->nr; p++) {
			if (p == d || strcmp(out->domains[p].domain, parent))
				continue;
			if (tv_sync_domain_copy(&copy, &out->domains[p]))
				return -ENOMEM;
			tv_sync_domain_release(r);
			snprintf(copy.domain, sizeof(copy.domain), "%s", r->domain);
			snprintf(copy.via, sizeof(copy.via), "%s", parent);
			/* its parent's probes are not its own: its checks are its vCPU check */
			copy.nr_probes = 0;
			copy.nr_pairs_checked = 0;
			copy.causality_violations = 0;
			copy.nr_vcpu_checked = 0;
			copy.vcpu_violations = 0;
			copy.nr_runstate_checked = 0;
			copy.runstate_violations = 0;
			copy.message_violations = 0;
			copy.held_rounds = 0;
			copy.misplaced_rounds = 0;
			copy.ambiguous_rounds = 0;
			copy.foreign_probes = 0;
			/* its streams are not its parent's vCPUs: not moved (not done yet) */
			copy.xen_line = 0;
			copy.pvclock_ns = 0;
			*r = copy;
			break;
		}
	}
	return 0;
}

static void scan_release(struct scan *sc)
{
	tv_reader_close(sc->rd);
	for (size_t d = 0; d < MAX_DOMAINS; d++)
		tv_tsc_segments_free(&sc->tsc[d]);
	free(sc->probes);
	free(sc->streams);
	memset(sc, 0, sizeof(*sc));
}

/*
 * What Xen's records gave the first scan, which its second (the pvclock
 * domains on the line) does not read again: they are stamped on the line
 * in both.  Its probes, its first and last times, and the counts its
 * records add to any domain (none of these depends on a pvclock domain's
 * time: untimed probe records, records forged for another guest).
 */
struct xen_part {
	struct probe *probes;
	size_t nr_probes;
	int64_t first, last;
	size_t untimed[MAX_DOMAINS], hcall_untimed[MAX_DOMAINS], foreign[MAX_DOMAINS];
};

static int xen_part_save(const struct scan *sc, struct xen_part *x)
{
	memset(x, 0, sizeof(*x));
	x->probes = malloc((sc->nr_probes + 1) * sizeof(*x->probes));
	if (!x->probes)
		return -ENOMEM;
	for (size_t i = 0; i < sc->nr_probes; i++)
		if (sc->probes[i].type == TV_PROBE_XEN_RECORD || sc->probes[i].type == TV_PROBE_XEN_HCALL)
			x->probes[x->nr_probes++] = sc->probes[i];
	x->first = sc->xen_dom >= 0 ? sc->dom[sc->xen_dom].first : -1;
	x->last = sc->xen_dom >= 0 ? sc->dom[sc->xen_dom].last : -1;
	for (size_t d = 0; d < sc->nr_domains && d < MAX_DOMAINS; d++) {
		x->untimed[d] = sc->dom[d].xen_untimed;
		x->hcall_untimed[d] = sc->dom[d].xen_hcall_untimed;
		x->foreign[d] = sc->dom[d].foreign;
	}
	return 0;
}

/* The second scan's state completed with @x (its counts are the first scan's, whole). */
static int xen_part_restore(struct scan *sc, const struct xen_part *x)
{
	for (size_t i = 0; i < x->nr_probes; i++) {
		if (tv_array_grow(&sc->probes, &sc->cap_probes, sc->nr_probes, sizeof(*sc->probes), 1024))
			return -ENOMEM;
		sc->probes[sc->nr_probes++] = x->probes[i];
	}
	if (sc->xen_dom >= 0) {
		sc->dom[sc->xen_dom].first = x->first;
		sc->dom[sc->xen_dom].last = x->last;
	}
	for (size_t d = 0; d < sc->nr_domains && d < MAX_DOMAINS; d++) {
		sc->dom[d].xen_untimed = x->untimed[d];
		sc->dom[d].xen_hcall_untimed = x->hcall_untimed[d];
		sc->dom[d].foreign = x->foreign[d];
	}
	return 0;
}

/*
 * Xen's pCPUs differ (lib/reader/xen_line.c): the pvclock domains' constants
 * from a first scan, then the probes scanned again with those domains on
 * Xen's line; the estimates are made on that scan.  @line: what was moved.
 * The second scan reads the pvclock domains only (Xen's records, most of a
 * Xen session, are kept from the first: struct xen_part): it was as long
 * as the first (issue 28: sync 2x slower with the line than without).
 */
static int sync_scan_on_line(struct scan *sc, const char *dir, struct tv_sync_result *line)
{
	int64_t tol[MAX_DOMAINS] = { 0 };
	struct xen_part x = { 0 };
	int ret = sync_scan_session(sc, dir, NULL);

	if (!ret)
		ret = sync_xen_line_constants(sc, line, tol);
	if (ret || !line->nr)
		return ret;
	ret = xen_part_save(sc, &x);
	scan_release(sc);
	for (size_t d = 0; !ret && d < line->nr && d < MAX_DOMAINS; d++) {
		sc->on_line[d] = line->domains[d].xen_line;
		sc->line_pvclock_ns[d] = line->domains[d].pvclock_ns;
		sc->line_tol_ns[d] = tol[d];
	}
	if (!ret)
		ret = sync_scan_session(sc, dir, line);
	if (!ret)
		ret = xen_part_restore(sc, &x);
	free(x.probes);
	return ret;
}

int tv_sync_session(const char *dir, struct tv_sync_result *out)
{
	struct scan *sc = calloc(1, sizeof(*sc));
	struct tv_sync_result line = { 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	if (!sc)
		return -ENOMEM;
	ret = sync_scan_on_line(sc, dir, &line);
	if (!ret)
		ret = sync_compute(sc, dir, out);
	for (size_t d = 0; !ret && d < line.nr && d < out->nr; d++) {
		out->domains[d].xen_line = line.domains[d].xen_line;
		out->domains[d].pvclock_ns = line.domains[d].pvclock_ns;
	}
	/* before the vCPU check: a guest's traced process is checked with its map */
	if (!ret)
		ret = sync_ust_domains(sc, out);
	if (!ret)
		ret = tv_sync_check_vcpus(dir, out);
	if (!ret)
		ret = tv_sync_check_runstates(dir, out);
	if (ret)
		tv_sync_result_free(out);
	tv_sync_result_free(&line);
	scan_release(sc);
	free(sc);
	return ret;
}
