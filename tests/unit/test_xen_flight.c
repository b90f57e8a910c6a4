// SPDX-License-Identifier: GPL-2.0
/*
 * Xen in the flight recorder without Xen (xen/xen_flight.c): the per-CPU
 * ring keeps exactly the last records that fit, whole, oldest first, a
 * TSC-stamped record at its head, across the ring's end and whatever the
 * cuts of the windows fed; its bounds are refused.  The exit watch pairs
 * VMEXIT with VMENTRY (or runnable) per vCPU, reports an exit past its
 * limit once, at its end or while still open by another CPU's later
 * records, and leaves hlt out unless the rule names it.  Its counts
 * (serve --xen) have every exit per (domain, vCPU, reason), the paired
 * ones timed into the right power-of-two bucket, a gone domain forgotten.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "xen_trace.h"
#include "../../xen/xen_flight.h"
#include "tv_test.h"

/* A record: @event with @nr extra words, a TSC when @tsc_on. */
static size_t put_rec(unsigned char *p, uint32_t event, int tsc_on, uint64_t tsc, const uint32_t *extra,
		      unsigned int nr)
{
	uint32_t hdr = event | (nr << 28) | (tsc_on ? 1u << 31 : 0);
	size_t off = 4;

	memcpy(p, &hdr, 4);
	if (tsc_on) {
		uint32_t lo = (uint32_t)tsc, hi = (uint32_t)(tsc >> 32);

		memcpy(p + 4, &lo, 4);
		memcpy(p + 8, &hi, 4);
		off = 12;
	}
	memcpy(p + off, extra, 4 * nr);
	return off + 4 * nr;
}

/*
 * A stream of @n records of sizes 12..40 bytes (extra[0] the sequence
 * number), every third one without a TSC; offsets of each into @offs.
 */
static size_t make_stream(unsigned char *buf, unsigned int n, size_t *offs)
{
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++) {
		uint32_t extra[7] = { i, 0xa5a5a5a5, 3, 4, 5, 6, 7 };
		unsigned int nr = 1 + i % 7;

		offs[i] = len;
		len += put_rec(buf + len, 0x0002f00fu, i % 3 != 2, 1000 + i, extra, nr);
	}
	offs[n] = len;
	return len;
}

static void test_bounds(void)
{
	struct tv_xen_fring r;

	TV_CHECK(tv_xen_fring_init(&r, TV_XEN_FRING_MIN_BYTES - 4) == -EINVAL, "below the minimum");
	TV_CHECK(tv_xen_fring_init(&r, TV_XEN_FRING_MAX_BYTES + 4) == -EINVAL, "above the maximum");
	TV_CHECK(tv_xen_fring_init(&r, TV_XEN_FRING_MIN_BYTES) == 0, "the minimum");
	TV_CHECK(r.len == 0 && tv_xen_fring_copy(&r, (unsigned char[1]){ 0 }) == 0, "empty");
	tv_xen_fring_free(&r);
}

/* The ring's content is the stream's tail from a record boundary, within cap. */
static void check_tail(const struct tv_xen_fring *r, const unsigned char *stream, const size_t *offs,
		       unsigned int n, const char *what)
{
	unsigned char *out = malloc(r->cap);
	size_t len = tv_xen_fring_copy(r, out);
	size_t start = offs[n] - len;
	unsigned int first = n;
	struct tv_xen_rec rec;

	for (unsigned int i = 0; i < n; i++)
		if (offs[i] == start)
			first = i;
	TV_CHECK(len <= r->cap, "%s: %zu bytes held in %zu", what, len, r->cap);
	TV_CHECK(first < n, "%s: the ring starts on a record boundary (at %zu)", what, start);
	TV_CHECK(!memcmp(out, stream + start, len), "%s: the last %zu bytes, in order", what, len);
	TV_CHECK(tv_xen_rec_parse(out, len, &rec) && rec.has_tsc, "%s: the oldest record has a TSC", what);
	TV_CHECK(len + 40 + 2 * 40 > r->cap || first == 0, "%s: the ring is nearly full once wrapped (%zu of %zu)",
		 what, len, r->cap);
	TV_CHECK(r->fed == n && r->dropped == first, "%s: fed %llu dropped %llu, first kept %u", what,
		 (unsigned long long)r->fed, (unsigned long long)r->dropped, first);
	free(out);
}

static void test_ring(void)
{
	enum { N = 5000 };
	unsigned char *stream = malloc(N * 40);
	size_t *offs = malloc((N + 1) * sizeof(*offs));
	size_t len = make_stream(stream, N, offs);
	struct tv_xen_fring r;
	unsigned int untimed = 0;

	/* whole, in one window */
	TV_CHECK(!tv_xen_fring_init(&r, TV_XEN_FRING_MIN_BYTES + 4), "init");
	tv_xen_fring_feed(&r, stream, len);
	check_tail(&r, stream, offs, N, "one window");
	tv_xen_fring_free(&r);

	/* cut anywhere: windows of 1..97 bytes, records split across them */
	TV_CHECK(!tv_xen_fring_init(&r, TV_XEN_FRING_MIN_BYTES + 4), "init");
	for (size_t off = 0, step = 1; off < len; off += step, step = step % 97 + 1) {
		tv_xen_fring_feed(&r, stream + off, off + step > len ? len - off : step);
		/* after every window: the head record has its own TSC */
		untimed += r.len && !(r.buf[(r.head + 3) % r.cap] >> 7);
	}
	TV_CHECK(untimed == 0, "%u windows left a record without a TSC at the head", untimed);
	TV_CHECK(r.part_len == 0, "no partial record left");
	check_tail(&r, stream, offs, N, "cut windows");
	tv_xen_fring_free(&r);

	/* before it wraps: everything */
	TV_CHECK(!tv_xen_fring_init(&r, 1 << 20), "init");
	tv_xen_fring_feed(&r, stream, len);
	TV_CHECK(r.len == len && r.dropped == 0, "all %zu bytes kept", len);
	check_tail(&r, stream, offs, N, "no wrap");
	tv_xen_fring_free(&r);
	free(stream);
	free(offs);
}

/* Feeding @cpu's watch one record. */
static void rec_to(struct tv_xen_exit_watch *w, int cpu, uint32_t event, uint64_t tsc, uint32_t a, uint32_t b)
{
	unsigned char buf[40];
	uint32_t extra[2] = { a, b };

	tv_xen_exit_watch_feed(w, cpu, buf, put_rec(buf, event, 1, tsc, extra, 2));
}

#define RUNSTATE(old, new) (XT_SCHED_RUNSTATE | (old) << 8 | (new) << 4)
#define D1V0 (1u << 16 | 0)
#define MS 1000000ULL	/* 1 GHz: TSC cycles are ns */
#define SVM_IO 0x7b
#define SVM_HLT 0x78

static struct tv_xen_exit_watch *watch(int domid, int match, uint32_t reason)
{
	struct tv_xen_exit_rule rule = { .limit_ns = 1 * MS, .domid = domid, .match_reason = match,
					 .reason = reason, .hlt = SVM_HLT };
	struct tv_xen_exit_watch *w = NULL;

	TV_CHECK(!tv_xen_exit_watch_new(&rule, 2, 1000000, &w), "watch");
	/* d1v0 runs on pCPU 0 */
	rec_to(w, 0, RUNSTATE(1, 0), 10, D1V0, 0);
	return w;
}

static void test_watch(void)
{
	struct tv_xen_exit_watch *w = watch(-1, 0, 0);
	struct tv_xen_exit_hit hit;
	uint64_t lat = 0;
	uint64_t t = 100 * MS;

	/* short exit, hlt exit: nothing */
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0x1000);
	rec_to(w, 0, XT_HVM_VMENTRY, t + MS / 2, 0, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t + MS, SVM_HLT, 0x1000);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 9 * MS, 0, 0);
	tv_xen_exit_watch_pass(w);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "no hit for a short exit or a hlt");

	/* a 2 ms I/O exit: reported at its end, closed */
	t += 20 * MS;
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0x1000);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 2 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1, "a hit");
	TV_CHECK(hit.domid == 1 && hit.vcpu == 0 && hit.pcpu == 0 && hit.reason == SVM_IO && !hit.open &&
		 hit.latency_ns == 2 * MS && hit.exit_tsc == t, "d%u v%u p%u reason 0x%x latency %llu open %d",
		 hit.domid, hit.vcpu, hit.pcpu, hit.reason, (unsigned long long)hit.latency_ns, hit.open);
	TV_CHECK(tv_xen_exit_watch_closed(w, &hit, &lat) == 1 && lat == 2 * MS, "closed, %llu",
		 (unsigned long long)lat);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "reported once");

	/* still open: seen by pCPU 1's later records, reported once, then closed */
	t += 20 * MS;
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0x1000);
	rec_to(w, 1, RUNSTATE(1, 0), t + MS / 2, 2u << 16, 0);
	tv_xen_exit_watch_pass(w);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "not yet past the limit");
	rec_to(w, 1, RUNSTATE(0, 1), t + 3 * MS, 2u << 16, 0);
	tv_xen_exit_watch_pass(w);
	tv_xen_exit_watch_pass(w);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1 && hit.open && hit.latency_ns == 3 * MS,
		 "open hit, latency %llu", (unsigned long long)hit.latency_ns);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "reported once while open");
	TV_CHECK(tv_xen_exit_watch_closed(w, &hit, &lat) == 0, "still open");
	rec_to(w, 0, XT_HVM_VMENTRY, t + 7 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_closed(w, &hit, &lat) == 1 && lat == 7 * MS, "closed after 7 ms: %llu",
		 (unsigned long long)lat);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "no second report at its end");

	/*
	 * a vCPU that moved from pCPU 1 to pCPU 0 within one drain: pCPU 0's
	 * records (its 5 ms exit) come first, then pCPU 1's (its earlier
	 * 0.1 ms exit and entry): the later exit is still the one open, and
	 * is reported as pCPU 0's records go on
	 */
	t += 20 * MS;
	rec_to(w, 0, RUNSTATE(1, 0), t + MS, D1V0, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t + 2 * MS, SVM_IO, 0x1000);
	rec_to(w, 1, RUNSTATE(1, 0), t - MS, D1V0, 0);
	rec_to(w, 1, XT_HVM_VMEXIT, t, SVM_IO, 0x1000);
	rec_to(w, 1, XT_HVM_VMENTRY, t + MS / 10, 0, 0);
	rec_to(w, 1, RUNSTATE(0, 1), t + MS / 2, D1V0, 0);
	tv_xen_exit_watch_pass(w);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "moved: not yet past the limit");
	rec_to(w, 0, XT_HVM_VMENTRY, t + 7 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1 && !hit.open && hit.exit_tsc == t + 2 * MS &&
		 hit.latency_ns == 5 * MS, "moved within a drain: hit %d, exit at %llu, latency %llu",
		 hit.open, (unsigned long long)(hit.exit_tsc - t), (unsigned long long)hit.latency_ns);

	/* made runnable 0.5 ms in: the exit ends there (the wait for a CPU is not its) */
	t += 20 * MS;
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0x1000);
	rec_to(w, 1, RUNSTATE(2, 1), t + MS / 2, D1V0, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 5 * MS, 0, 0);
	tv_xen_exit_watch_pass(w);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "runnable ends the exit");
	tv_xen_exit_watch_free(w);

	/* reason=hlt: only hlt; vm=d2: not d1's */
	w = watch(-1, 1, SVM_HLT);
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 5 * MS, 0, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t + 6 * MS, SVM_HLT, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 11 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1 && hit.reason == SVM_HLT && hit.latency_ns == 5 * MS,
		 "reason=hlt: the hlt exit");
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "reason=hlt: only it");
	tv_xen_exit_watch_free(w);
	w = watch(2, 0, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 5 * MS, 0, 0);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "vm=d2: not d1's exit");
	tv_xen_exit_watch_free(w);
}

/* The patched Xen (clock xen-system): a hit's time is pCPU 0's system time, by its latest scale. */
static void test_watch_scale(void)
{
	struct tv_xen_exit_watch *w = watch(-1, 0, 0);
	struct tv_xen_exit_hit hit;
	unsigned char buf[40];
	/* from TSC 50 ms: system time 7 s + (TSC - 50 ms) / 2 (mul 2^31, shift 0) */
	uint32_t tscale[6] = { 50 * MS, 0, (uint32_t)7000000000ULL, (uint32_t)(7000000000ULL >> 32),
			       1u << 31, 0 };
	uint64_t t = 100 * MS;

	tv_xen_exit_watch_set_scale(w, 0, 5000000000ULL, 1u << 31, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 2 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1 && hit.exit_ns == 5000000000ULL + t / 2 &&
		 hit.latency_ns == 2 * MS, "by the start's scale: exit_ns %llu", (unsigned long long)hit.exit_ns);
	/* pCPU 1's time scale record changes nothing; pCPU 0's does */
	tv_xen_exit_watch_feed(w, 1, buf, put_rec(buf, XT_TSCALE, 1, 60 * MS, tscale, 6));
	t += 20 * MS;
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 2 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1 && hit.exit_ns == 5000000000ULL + t / 2,
		 "pCPU 1's scale left out: exit_ns %llu", (unsigned long long)hit.exit_ns);
	tv_xen_exit_watch_feed(w, 0, buf, put_rec(buf, XT_TSCALE, 1, 60 * MS, tscale, 6));
	t += 20 * MS;
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 2 * MS, 0, 0);
	TV_CHECK(tv_xen_exit_watch_take(w, &hit) == 1 && hit.exit_ns == 7000000000ULL + (t - 50 * MS) / 2,
		 "by pCPU 0's new scale: exit_ns %llu", (unsigned long long)hit.exit_ns);
	tv_xen_exit_watch_free(w);
}

/* The row of (@dom, @vcpu, @reason) in @rows, or NULL. */
static const struct tv_xen_exit_count *count_of(const struct tv_xen_exit_count *rows, size_t nr,
						unsigned int dom, unsigned int vcpu, unsigned int reason)
{
	for (size_t i = 0; i < nr; i++)
		if (rows[i].domid == dom && rows[i].vcpu == vcpu && rows[i].reason == reason)
			return &rows[i];
	return NULL;
}

static void test_counts(void)
{
	struct tv_xen_exit_rule rule = { .limit_ns = UINT64_MAX, .domid = -1, .hlt = ~0u };
	struct tv_xen_exit_watch *w = NULL;
	struct tv_xen_exit_count *rows = NULL;
	const struct tv_xen_exit_count *c;
	struct tv_xen_exit_hit hit;
	uint64_t t = 100 * MS, lost = 1;
	size_t nr = 0;

	TV_CHECK(tv_xen_exit_bucket(0) == 0 && tv_xen_exit_bucket(1) == 0 && tv_xen_exit_bucket(2) == 1 &&
		 tv_xen_exit_bucket(256) == 8 && tv_xen_exit_bucket(257) == 9 &&
		 tv_xen_exit_bucket(UINT64_MAX) == TV_XEN_EXIT_NBUCKETS - 1, "buckets (2^(b-1), 2^b]");
	TV_CHECK(!tv_xen_exit_watch_new(&rule, 2, 1000000, &w), "watch");
	TV_CHECK(!tv_xen_exit_watch_count(w), "count");
	rec_to(w, 0, RUNSTATE(1, 0), 10, D1V0, 0);
	rec_to(w, 1, RUNSTATE(1, 0), 10, 2u << 16 | 1, 0);
	/* d1v0: 3 io exits of 0.5 ms, 2 ms and one whose end is lost (open); d2v1: a hlt of 5 ms */
	rec_to(w, 0, XT_HVM_VMEXIT, t, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + MS / 2, 0, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t + MS, SVM_IO, 0);
	rec_to(w, 0, XT_HVM_VMENTRY, t + 3 * MS, 0, 0);
	rec_to(w, 0, XT_HVM_VMEXIT, t + 4 * MS, SVM_IO, 0);
	rec_to(w, 1, XT_HVM_VMEXIT, t, SVM_HLT, 0);
	rec_to(w, 1, XT_HVM_VMENTRY, t + 5 * MS, 0, 0);
	tv_xen_exit_watch_pass(w);
	TV_CHECK(!tv_xen_exit_watch_take(w, &hit), "a counting watch reports nothing");
	TV_CHECK(!tv_xen_exit_watch_counts(w, &rows, &nr, &lost) && nr == 2 && !lost, "2 rows, %zu", nr);
	c = count_of(rows, nr, 1, 0, SVM_IO);
	TV_CHECK(c && c->count == 3 && c->timed == 2 && c->sum_ns == 5 * MS / 2, "d1v0 io: %llu exits, %llu timed",
		 c ? (unsigned long long)c->count : 0ULL, c ? (unsigned long long)c->timed : 0ULL);
	/* 0.5 ms in (2^18, 2^19], 2 ms in (2^20, 2^21] ns */
	TV_CHECK(c && c->hist[19] == 1 && c->hist[21] == 1, "d1v0 io's buckets");
	c = count_of(rows, nr, 2, 1, SVM_HLT);
	TV_CHECK(c && c->count == 1 && c->timed == 1 && c->hist[23] == 1, "d2v1 hlt: 5 ms in (2^22, 2^23]");
	free(rows);
	tv_xen_exit_watch_forget(w, 1);
	TV_CHECK(!tv_xen_exit_watch_counts(w, &rows, &nr, &lost) && nr == 1 && rows[0].domid == 2,
		 "d1 forgotten: %zu rows", nr);
	free(rows);
	/* counted again after its rows were dropped: a row of its own, from zero */
	rec_to(w, 0, XT_HVM_VMENTRY, t + 6 * MS, 0, 0);
	TV_CHECK(!tv_xen_exit_watch_counts(w, &rows, &nr, &lost) && nr == 2, "d1's open exit ended");
	c = count_of(rows, nr, 1, 0, SVM_IO);
	TV_CHECK(c && c->count == 0 && c->timed == 1, "d1 from zero");
	c = count_of(rows, nr, 2, 1, SVM_HLT);
	TV_CHECK(c && c->count == 1, "d2 kept its count after the reindex");
	free(rows);
	tv_xen_exit_watch_free(w);
}

int main(void)
{
	test_bounds();
	test_ring();
	test_watch();
	test_watch_scale();
	test_counts();
	return tv_test_done("test_xen_flight");
}
