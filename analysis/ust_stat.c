// SPDX-License-Identifier: LGPL-2.1
/*
 * `stat` of the traced processes' events (domains of kind ust): a count
 * row per (domain, process, PROVIDER:EVENT), and a latency row per
 * (domain, process, PROVIDER:NAME) for each begin/end pair.  Pairing
 * convention (doc/session-format.md): events PROVIDER:NAME_begin and
 * PROVIDER:NAME_end (or NAME_entry and NAME_exit) of the same thread, the
 * end closing the latest open begin of that NAME (nesting allowed, up to
 * UST_STAT_DEPTH deep); an end with no open begin is counted unmatched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "latency_table.h"

#define UST_STAT_DEPTH 32

struct open_pair {
	struct open_pair *next;
	const void *tep;	/* the process's domain */
	int tid;
	char key[128];		/* PROVIDER:NAME */
	int depth;
	uint64_t begin[UST_STAT_DEPTH];
};

struct ust_stat {
	struct tv_latency_table rows;
	struct open_pair *buckets[4096];
	uint64_t events, unmatched;
};

static unsigned int pair_hash(const void *tep, int tid, const char *key)
{
	unsigned int h = (unsigned int)(uintptr_t)tep * 31u + (unsigned int)tid;

	for (; *key; key++)
		h = h * 131u + (unsigned char)*key;
	return h % 4096;
}

static struct open_pair *pair_of(struct ust_stat *u, const void *tep, int tid, const char *key)
{
	unsigned int h = pair_hash(tep, tid, key);
	struct open_pair *p;

	for (p = u->buckets[h]; p; p = p->next)
		if (p->tep == tep && p->tid == tid && !strcmp(p->key, key))
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tep = tep;
	p->tid = tid;
	snprintf(p->key, sizeof(p->key), "%s", key);
	p->next = u->buckets[h];
	u->buckets[h] = p;
	return p;
}

/* 1 begin, -1 end, 0 neither; @key gets PROVIDER:NAME. */
static int pair_side(const struct tep_event *f, char *key, size_t size)
{
	static const char *const sfx[][2] = { { "_begin", "_end" }, { "_entry", "_exit" } };
	size_t n = strlen(f->name);

	for (size_t i = 0; i < 2; i++)
		for (int side = 0; side < 2; side++) {
			size_t s = strlen(sfx[i][side]);

			if (n > s && !strcmp(f->name + n - s, sfx[i][side])) {
				/* entry/exit and begin/end are distinct pairs */
				snprintf(key, size, "%s:%.*s%s", f->system, (int)(n - s), f->name,
					 i ? "()" : "");
				return side ? -1 : 1;
			}
		}
	return 0;
}

static int ust_stat_event(struct ust_stat *u, const struct tv_event *ev)
{
	const struct tv_domain_info *di = ev->domain_info;
	char reason[160], key[128], pid[24];
	struct tv_latency_acc *a;
	struct open_pair *p;
	int side;

	u->events++;
	snprintf(pid, sizeof(pid), "%s", tv_meta_get(di->meta, "pid") ?: "?");
	snprintf(reason, sizeof(reason), "%s:%s", ev->format->system, ev->format->name);
	a = tv_latency_row(&u->rows, ev->domain, pid, reason);
	if (!a)
		return -ENOMEM;
	a->row.count++;
	side = pair_side(ev->format, key, sizeof(key));
	if (!side)
		return 0;
	p = pair_of(u, ev->tep, ev->pid, key);
	if (!p)
		return -ENOMEM;
	if (side > 0) {
		if (p->depth < UST_STAT_DEPTH)
			p->begin[p->depth] = ev->ts;
		p->depth++;
		return 0;
	}
	if (!p->depth) {
		u->unmatched++;
		return 0;
	}
	p->depth--;
	if (p->depth >= UST_STAT_DEPTH)
		return 0;	/* too deep to have kept its time */
	a = tv_latency_row(&u->rows, ev->domain, pid, key);
	if (!a)
		return -ENOMEM;
	a->row.count++;
	return tv_latency_add(a, ev->ts >= p->begin[p->depth] ? ev->ts - p->begin[p->depth] : 0);
}

static int by_name(const void *a, const void *b)
{
	const struct tv_exit_stat_row *x = a, *y = b;

	return strcmp(x->vm, y->vm) ?: strcmp(x->vcpu, y->vcpu) ?: strcmp(x->reason, y->reason);
}

int tv_ust_stat_compute(const char *dir, struct tv_exit_stat *out)
{
	struct ust_stat *u = calloc(1, sizeof(*u));
	struct tv_reader *rd = NULL;
	struct tv_event ev;
	int ret, any = 0;

	memset(out, 0, sizeof(*out));
	if (!u)
		return -ENOMEM;
	ret = tv_reader_open(dir, &rd);
	for (size_t d = 0; !ret && d < tv_reader_nr_domains(rd); d++) {
		const char *kind = tv_meta_get(tv_reader_domain(rd, d)->meta, "kind");

		any |= kind && !strcmp(kind, "ust");
	}
	if (!ret && !any)
		ret = -ENOENT;
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		const char *kind = tv_meta_get(ev.domain_info->meta, "kind");

		ret = kind && !strcmp(kind, "ust") ? ust_stat_event(u, &ev) : 0;
		if (ev.missed_before > 0)
			out->lost += (uint64_t)ev.missed_before;
	}
	for (size_t d = 0; ret >= 0 && rd && d < tv_reader_nr_domains(rd); d++)
		out->lost += (uint64_t)tv_meta_get_ll(tv_reader_domain(rd, d)->meta, "lost_total", 0) *
			     !strcmp(tv_meta_get(tv_reader_domain(rd, d)->meta, "kind") ?: "", "ust");
	if (!ret)
		ret = tv_latency_table_finish(&u->rows, out, by_name);
	snprintf(out->mode, sizeof(out->mode), "ust");
	out->events = u->events;
	out->unmatched_exits = u->unmatched;
	tv_latency_table_free(&u->rows);
	for (size_t h = 0; h < 4096; h++)
		while (u->buckets[h]) {
			struct open_pair *n = u->buckets[h]->next;

			free(u->buckets[h]);
			u->buckets[h] = n;
		}
	free(u);
	tv_reader_close(rd);
	if (ret)
		tv_exit_stat_free(out);
	return ret;
}
