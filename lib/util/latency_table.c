// SPDX-License-Identifier: LGPL-2.1
/* The stat analyses' latency rows (lib/util/latency_table.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency_table.h"

#define FNV_OFFSET 14695981039346656037ULL

static uint64_t hash_str(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint64_t hash_row(const struct tv_exit_stat_row *r)
{
	uint64_t h = hash_str(r->reason, hash_str(r->vcpu, hash_str(r->vm, FNV_OFFSET)));

	return hash_str(r->guest_context, hash_str(r->guest_task, h)) ^ (uint64_t)(uint32_t)r->guest_pid;
}

static int same_row(const struct tv_exit_stat_row *a, const struct tv_exit_stat_row *b)
{
	return !strcmp(a->reason, b->reason) && !strcmp(a->vcpu, b->vcpu) && !strcmp(a->vm, b->vm) &&
	       a->guest_pid == b->guest_pid && !strcmp(a->guest_task, b->guest_task) &&
	       !strcmp(a->guest_context, b->guest_context);
}

static int grow(struct tv_latency_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct tv_latency_acc **r = calloc(cap, sizeof(*r));

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct tv_latency_acc *a = t->rows[i];
		size_t j;

		if (!a)
			continue;
		j = hash_row(&a->row) % cap;
		while (r[j])
			j = (j + 1) % cap;
		r[j] = a;
	}
	free(t->rows);
	t->rows = r;
	t->cap = cap;
	return 0;
}

struct tv_latency_acc *tv_latency_row_guest(struct tv_latency_table *t, const char *vm,
					    const char *vcpu, const char *reason,
					    const struct tv_exit_stat_row *guest)
{
	struct tv_exit_stat_row key = { .guest_pid = -1 };
	struct tv_latency_acc *a;
	uint64_t h;
	size_t j;

	snprintf(key.vm, sizeof(key.vm), "%s", vm);
	snprintf(key.vcpu, sizeof(key.vcpu), "%s", vcpu);
	snprintf(key.reason, sizeof(key.reason), "%s", reason);
	if (guest) {
		snprintf(key.guest_task, sizeof(key.guest_task), "%s", guest->guest_task);
		snprintf(key.guest_context, sizeof(key.guest_context), "%s", guest->guest_context);
		key.guest_pid = guest->guest_pid;
	}
	h = hash_row(&key);
	if ((t->nr + 1) * 2 > t->cap && grow(t))
		return NULL;
	for (j = h % t->cap; (a = t->rows[j]); j = (j + 1) % t->cap)
		if (same_row(&a->row, &key))
			return a;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->row = key;
	t->rows[j] = a;
	t->nr++;
	return a;
}

struct tv_latency_acc *tv_latency_row(struct tv_latency_table *t, const char *vm,
				      const char *vcpu, const char *reason)
{
	return tv_latency_row_guest(t, vm, vcpu, reason, NULL);
}

int tv_latency_add(struct tv_latency_acc *a, uint64_t ns)
{
	int bucket;

	if (a->nr_lat == a->cap_lat) {
		size_t cap = a->cap_lat ? a->cap_lat * 2 : 64;
		uint64_t *lat = realloc(a->lat, cap * sizeof(*lat));

		if (!lat)
			return -ENOMEM;
		a->lat = lat;
		a->cap_lat = cap;
	}
	a->lat[a->nr_lat++] = ns;
	a->row.has_latency = true;
	a->row.total_ns += ns;
	/* Bucket b holds [2^(b-1), 2^b) ns; bucket 0 holds 0. */
	bucket = ns ? 64 - __builtin_clzll(ns) : 0;
	a->row.hist[bucket > 63 ? 63 : bucket]++;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* Nearest-rank percentile of sorted values. */
static uint64_t percentile(const uint64_t *v, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return v[rank ? rank - 1 : 0];
}

int tv_latency_table_finish(struct tv_latency_table *t, struct tv_exit_stat *out,
			    int (*cmp)(const void *, const void *))
{
	size_t k = 0;

	out->rows = calloc(t->nr ? t->nr : 1, sizeof(*out->rows));
	if (!out->rows)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct tv_latency_acc *a = t->rows[i];

		if (!a)
			continue;
		if (a->nr_lat) {
			qsort(a->lat, a->nr_lat, sizeof(*a->lat), cmp_u64);
			a->row.min_ns = a->lat[0];
			a->row.max_ns = a->lat[a->nr_lat - 1];
			a->row.p50_ns = percentile(a->lat, a->nr_lat, 50);
			a->row.p99_ns = percentile(a->lat, a->nr_lat, 99);
		}
		out->rows[k++] = a->row;
	}
	out->nr_rows = k;
	qsort(out->rows, out->nr_rows, sizeof(*out->rows), cmp);
	return 0;
}

void tv_latency_table_free(struct tv_latency_table *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		if (t->rows[i])
			free(t->rows[i]->lat);
		free(t->rows[i]);
	}
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
