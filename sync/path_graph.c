// SPDX-License-Identifier: LGPL-2.1
/*
 * The path graph: for each domain, the usable edge towards the reference
 * with the smallest bound.
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

static int edge_usable(const struct edge *e)
{
	return e->valid && e->est.quality <= TV_SYNC_APPROXIMATE;
}

/* A bound to rank paths with; a path without a bound ranks last. */
static int64_t edge_cost(const struct edge *e)
{
	return e->est.bound_ns >= 0 ? e->est.bound_ns + 2 : INT64_MAX / 64;
}

/* Relax paths towards the reference (Bellman-Ford on at most 64 nodes). */
void sync_resolve_paths(const struct scan *sc, const struct graph *g, int ref,
			  struct tv_sync_domain *res)
{
	int64_t cost[MAX_DOMAINS];
	size_t n = sc->nr_domains;

	for (size_t d = 0; d < n; d++)
		cost[d] = (int)d == ref || !strcmp(res[d].method, "tsc") ? 0 : -1;
	for (size_t round = 0; round < n; round++) {
		for (size_t d = 0; d < n; d++) {
			for (size_t p = 0; p < n; p++) {
				const struct edge *e = &g->e[d][p];
				int64_t c;

				if (!edge_usable(e) || cost[p] < 0 || cost[d] == 0)
					continue;
				c = cost[p] + edge_cost(e);
				if (cost[d] >= 0 && c >= cost[d])
					continue;
				cost[d] = c;
				res[d].est = e->est;
				res[d].nr_probes = e->nr_pairs;
				snprintf(res[d].method, sizeof(res[d].method), "hull");
				snprintf(res[d].via, sizeof(res[d].via), "%s",
					 tv_reader_domain(sc->rd, p)->subdir);
			}
		}
	}
}
