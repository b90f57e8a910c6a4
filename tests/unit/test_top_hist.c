// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel aggregation's latency histogram (kvm/bpf/top_exits.h's
 * top_bucket(), the same function the BPF program runs; kvm/top_bpf.c's
 * percentiles): every value falls in a bucket whose range holds it, at
 * most 1/16 of its value wide; on several distributions, p50 and p99 from
 * the histogram are within 3.2% of the exact nearest-rank ones (the live
 * view promises 5%).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "bpf/top_exits.h"
#include "top_bpf.h"
#include "tv_test.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t exact(const uint64_t *sorted, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
}

/* log-uniform between @lo and @hi ns, or a two-mode mix */
static uint64_t draw(int dist, uint64_t lo, uint64_t hi)
{
	double u = (double)rand() / RAND_MAX;

	if (dist == 1)	/* 90% fast exits, 10% slow ones */
		return u < 0.9 ? 800 + (uint64_t)(u * 400) : 200000 + (uint64_t)(u * 1e6);
	return (uint64_t)exp(log((double)lo) + u * (log((double)hi) - log((double)lo)));
}

int main(void)
{
	static uint64_t v[200000], h[TOP_NBUCKETS];
	const size_t n = sizeof(v) / sizeof(v[0]);
	uint64_t lo, hi;

	/* buckets: contiguous, each value inside its own */
	for (uint64_t x = 0; x < 5000000; x += 1 + x / 97) {
		unsigned int b = top_bucket(x);

		tv_top_bucket_range(b, &lo, &hi);
		TV_CHECK(b < TOP_NBUCKETS && lo <= x && x < hi, "%llu in bucket %u [%llu, %llu)",
			 (unsigned long long)x, b, (unsigned long long)lo, (unsigned long long)hi);
		TV_CHECK(x < TOP_SUB || (hi - lo) * TOP_SUB <= lo, "bucket %u too wide", b);
	}
	TV_CHECK(top_bucket(UINT64_MAX) == TOP_NBUCKETS - 1, "2^64-1 in bucket %u", top_bucket(UINT64_MAX));
	for (int dist = 0; dist < 3; dist++) {
		memset(h, 0, sizeof(h));
		for (size_t i = 0; i < n; i++) {
			v[i] = draw(dist, dist == 2 ? 10 : 1000, dist == 2 ? 100000000 : 1000000);
			h[top_bucket(v[i])]++;
		}
		qsort(v, n, sizeof(v[0]), cmp_u64);
		for (unsigned int pct = 50; pct <= 99; pct += 49) {
			double want = (double)exact(v, n, pct);
			double got = (double)tv_top_hist_percentile(h, n, pct);

			TV_CHECK(fabs(got - want) <= 0.032 * want, "distribution %d p%u: %.0f, exact %.0f",
				 dist, pct, got, want);
		}
	}
	return tv_test_done("test_top_hist");
}
