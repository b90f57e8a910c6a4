// SPDX-License-Identifier: GPL-2.0
/* The exit tracker (lib/util/exit_tracker.c) and latency table (lib/util/latency_table.c). */
#include <string.h>

#include "tv_test.h"
#include "exit_tracker.h"
#include "latency_table.h"

static void test_pairing(void)
{
	struct tv_exit_tracker t = { 0 };
	struct tv_exit_slot *s;
	uint64_t dur = 0;

	/* Many more keys than any fixed table held: nothing dropped. */
	for (uint64_t k = 0; k < 10000; k++)
		TV_CHECK(tv_exit_tracker_exit(&t, k, 100 + k) != NULL, "exit %llu", (unsigned long long)k);
	TV_CHECK(tv_exit_tracker_open(&t) == 10000, "open %llu", (unsigned long long)tv_exit_tracker_open(&t));
	for (uint64_t k = 0; k < 10000; k++) {
		s = tv_exit_tracker_find(&t, k);
		TV_CHECK(s && tv_exit_tracker_close(&t, s, 200 + 2 * k, &dur) == 1 && dur == 100 + k,
			 "pair %llu", (unsigned long long)k);
	}
	TV_CHECK(t.paired == 10000 && tv_exit_tracker_open(&t) == 0, "all paired");
	/* A second exit before the entry, an entry before its exit. */
	tv_exit_tracker_exit(&t, 7, 1000);
	tv_exit_tracker_exit(&t, 7, 1100);
	TV_CHECK(t.unmatched == 1, "unmatched %llu", (unsigned long long)t.unmatched);
	s = tv_exit_tracker_find(&t, 7);
	TV_CHECK(tv_exit_tracker_close(&t, s, 1050, &dur) == 0 && t.backwards == 1, "backwards");
	TV_CHECK(tv_exit_tracker_close(&t, s, 1200, &dur) == 0, "closed twice");
	TV_CHECK(tv_exit_tracker_find(&t, 123456) == NULL, "unknown key found");
	s = tv_exit_tracker_slot(&t, 0xffffffffffffULL);
	TV_CHECK(s && s->label == -1 && !s->open, "new slot");
	tv_exit_tracker_free(&t);
}

static int cmp_total(const void *x, const void *y)
{
	const struct tv_exit_stat_row *a = x, *b = y;

	return (a->total_ns < b->total_ns) - (a->total_ns > b->total_ns);
}

static void test_latency(void)
{
	struct tv_latency_table t = { 0 };
	struct tv_exit_stat out = { 0 };
	struct tv_latency_acc *a = tv_latency_row(&t, "vm", "0", "hlt");

	TV_CHECK(a && tv_latency_row(&t, "vm", "0", "hlt") == a, "same row");
	for (uint64_t v = 100; v >= 1; v--) {
		a->row.count++;
		tv_latency_add(a, v);
	}
	TV_CHECK(tv_latency_row(&t, "vm", "1", "hlt") != a, "other vcpu, other row");
	TV_CHECK(tv_latency_table_finish(&t, &out, cmp_total) == 0 && out.nr_rows == 2, "finish");
	TV_CHECK(!strcmp(out.rows[0].vcpu, "0") && out.rows[0].min_ns == 1 && out.rows[0].p50_ns == 50 &&
		 out.rows[0].p99_ns == 99 && out.rows[0].max_ns == 100 && out.rows[0].total_ns == 5050 &&
		 out.rows[0].count == 100, "row 0: %llu %llu %llu", (unsigned long long)out.rows[0].min_ns,
		 (unsigned long long)out.rows[0].p50_ns, (unsigned long long)out.rows[0].p99_ns);
	TV_CHECK(out.rows[0].hist[0] == 0 && out.rows[0].hist[1] == 1 && out.rows[0].hist[7] == 37,
		 "log2 buckets");
	TV_CHECK(!out.rows[1].has_latency && out.rows[1].min_ns == 0, "row without latency");
	tv_exit_stat_free(&out);
	tv_latency_table_free(&t);
}

int main(void)
{
	test_pairing();
	test_latency();
	return tv_test_done("test_exit_tracker");
}
