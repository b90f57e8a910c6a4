// SPDX-License-Identifier: GPL-2.0
/*
 * Clock estimation on synthetic clocks whose true relation is known:
 * host = b + a * guest, probes with random one-way delays.  The true line
 * must lie within the reported bound everywhere on the span; more probes
 * must shrink the bound; contradictory probes must be detected.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "tv_internal.h"
#include "../../sync/hull.h"

struct truth {
	long double a, b;	/* host = b + a * guest */
};

static unsigned long long rng_state = 88172645463325252ULL;

static double rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / (double)(1ULL << 53);
}

/* One-way delay: a floor plus an exponential tail, like a real channel. */
static int64_t delay_ns(void)
{
	return 300 + (int64_t)(-2000.0 * log(1.0 - rnd()));
}

static int64_t guest_at(const struct truth *t, int64_t host)
{
	return (int64_t)llroundl(((long double)host - t->b) / t->a);
}

/*
 * Host time of round @i of @n between h0 and h1, on the recorder's schedule
 * (doc/sync-probes.md): a burst at the start, regular rounds, a burst at the end.
 */
static int64_t round_time(int i, int n, int64_t h0, int64_t h1)
{
	int burst = n / 4, mid = n - 2 * burst;

	if (i < burst)
		return h0 + i * 20000LL;
	if (i >= burst + mid)
		return h1 - (n - 1 - i) * 20000LL;
	return h0 + burst * 20000LL + (h1 - h0 - 2 * burst * 20000LL) / (mid + 1) * (i - burst + 1);
}

/* @n rounds of ping/pong between host times h0 and h1. */
static struct tv_sync_hull *make_hull(const struct truth *t, int n, int64_t h0, int64_t h1)
{
	struct tv_sync_hull *h = tv_sync_hull_new();

	for (int i = 0; i < n; i++) {
		int64_t hs = round_time(i, n, h0, h1);
		int64_t recv = hs + delay_ns();
		int64_t back = recv + 1000 + delay_ns();

		tv_sync_hull_add_below(h, guest_at(t, recv), hs);
		tv_sync_hull_add_above(h, guest_at(t, recv + 1000), back);
	}
	return h;
}

/* Largest |map - truth| over the span, sampled finely. */
static long double worst_error(const struct truth *t, const struct tv_sync_estimate *e)
{
	long double worst = 0;

	for (int k = 0; k <= 1000; k++) {
		int64_t g = e->span_lo + (e->span_hi - e->span_lo) / 1000 * k;
		long double err = fabsl((long double)tv_clock_map_apply(&e->map, (uint64_t)g) -
					(t->b + t->a * g));

		worst = err > worst ? err : worst;
	}
	return worst;
}

/*
 * Over the whole trace, the bound near its ends is set by the first and
 * last probes' delays (nothing constrains the line before the first one);
 * between the first and the last probe it shrinks as probes are added.
 */
static void check_case(const struct truth *t, size_t c, int n, int whole_span, int64_t *prev)
{
	struct tv_sync_hull *h = make_hull(t, n, 2000000000000LL, 2060000000000LL);
	struct tv_sync_estimate e;
	long double err;

	if (whole_span)
		tv_sync_hull_estimate(h, guest_at(t, 2000000000000LL), guest_at(t, 2060000000000LL), &e);
	else
		tv_sync_hull_estimate(h, 0, 0, &e);
	err = worst_error(t, &e);
	TV_CHECK(e.quality <= TV_SYNC_APPROXIMATE, "case %zu n=%d quality %s: %s", c, n,
		 tv_sync_quality_name(e.quality), e.message);
	TV_CHECK(e.bound_ns >= 0 && err <= e.bound_ns,
		 "case %zu n=%d: true error %.1Lf ns outside bound %lld ns", c, n, err,
		 (long long)e.bound_ns);
	if (!whole_span) {
		TV_CHECK(e.bound_ns < *prev, "case %zu n=%d: bound %lld did not shrink from %lld",
			 c, n, (long long)e.bound_ns, (long long)*prev);
		*prev = e.bound_ns;
	}
	if (n >= 1000)
		TV_CHECK(e.quality == TV_SYNC_ACCURATE, "case %zu n=%d: %s (bound %lld)", c, n,
			 tv_sync_quality_name(e.quality), (long long)e.bound_ns);
	printf("case %zu: %5d rounds, %s: bound %6lld ns, true error %7.1Lf ns, hull %zu+%zu\n",
	       c, n, whole_span ? "whole trace " : "probe span  ", (long long)e.bound_ns, err,
	       e.nr_below, e.nr_above);
	tv_sync_hull_free(h);
}

static void test_true_line_within_bound(void)
{
	static const struct truth cases[] = {
		{ 1.0L + 50e-6L, -123456789012.0L },
		{ 1.0L - 200e-6L, 5000000000.0L },
		{ 1.0L, 42.0L },
	};

	for (size_t c = 0; c < 3; c++) {
		int64_t prev = INT64_MAX;

		for (int n = 8; n <= 8000; n *= 10)
			check_case(&cases[c], c, n, 0, &prev);
		for (int n = 8; n <= 8000; n *= 10)
			check_case(&cases[c], c, n, 1, &prev);
	}
}

static void test_no_line_fits(void)
{
	struct truth t = { 1.0L, 0 };
	struct tv_sync_hull *h = make_hull(&t, 100, 1000000000LL, 2000000000LL);
	struct tv_sync_estimate e;

	/* A "reply" received 1 ms before the ping it answers was sent. */
	tv_sync_hull_add_above(h, 2000100000LL, 1999000000LL);
	tv_sync_hull_estimate(h, 0, 0, &e);
	TV_CHECK(e.quality == TV_SYNC_FAILED, "got %s", tv_sync_quality_name(e.quality));
	TV_CHECK(strstr(e.message, "no line fits") != NULL, "message: %s", e.message);
	tv_sync_hull_free(h);

	/* Non-linear clocks: the guest jumps by 1 ms half-way. */
	h = tv_sync_hull_new();
	for (int i = 0; i < 200; i++) {
		int64_t hs = 1000000000LL + i * 1000000LL, g = hs + 500 + (i >= 100 ? 1000000 : 0);

		tv_sync_hull_add_below(h, g, hs);
		tv_sync_hull_add_above(h, g + 10, hs + 1000);
	}
	tv_sync_hull_estimate(h, 0, 0, &e);
	TV_CHECK(e.quality == TV_SYNC_FAILED, "jump: got %s", tv_sync_quality_name(e.quality));
	tv_sync_hull_free(h);
}

static void test_insufficient(void)
{
	struct tv_sync_hull *h = tv_sync_hull_new();
	struct tv_sync_estimate e;

	for (int i = 0; i < 10; i++)
		tv_sync_hull_add_below(h, 1000 + i * 100, 900 + i * 100);
	tv_sync_hull_estimate(h, 0, 0, &e);
	TV_CHECK(e.quality == TV_SYNC_INSUFFICIENT, "one direction: %s", tv_sync_quality_name(e.quality));
	/* One round: offset bounded, drift not. */
	tv_sync_hull_add_above(h, 1950, 2100);
	tv_sync_hull_estimate(h, 0, 0, &e);
	TV_CHECK(e.quality == TV_SYNC_APPROXIMATE || e.quality == TV_SYNC_ACCURATE,
		 "one round: %s", tv_sync_quality_name(e.quality));
	TV_CHECK(tv_sync_hull_add_below(h, 10, 10) == -EINVAL, "decreasing x accepted");
	TV_CHECK(tv_sync_hull_add_below(h, INT64_MAX, 0) == -ERANGE, "huge x accepted");
	tv_sync_hull_free(h);
}

static void test_tsc_inverse(void)
{
	/* VMX scales with 48 fractional bits, SVM with 32. */
	static const struct tv_tsc_params ps[] = {
		{ 0xfffff00000000000ULL, (uint64_t)(1.7 * (1ULL << 48)), 48 },
		{ 12345, 1ULL << 48, 48 },
		{ 0x8000000000000000ULL, (uint64_t)(2.5 * (1ULL << 32)) + 7, 32 },
		{ 999, (uint64_t)(0.6 * (1ULL << 32)), 32 },
	};
	int bad = 0, bad_smallest = 0;

	for (size_t k = 0; k < 4; k++) {
		for (int i = 0; i < 100000; i++) {
			uint64_t host = (rng_state = rng_state * 6364136223846793005ULL + 1) >> 8;
			uint64_t g = tv_tsc_guest_from_host(&ps[k], host);
			uint64_t back = tv_tsc_host_from_guest(&ps[k], g);

			/* Round trip is exact where the forward map is one-to-one... */
			if (tv_tsc_guest_from_host(&ps[k], back) != g)
				bad++;
			/* ...and the inverse is the first host value giving g. */
			if (back > host || (back > 0 && tv_tsc_guest_from_host(&ps[k], back - 1) == g))
				bad_smallest++;
			if (ps[k].ratio >= (1ULL << ps[k].frac_bits) && back != host)
				bad++;
		}
	}
	TV_CHECK(bad == 0, "%d inexact TSC inversions", bad);
	TV_CHECK(bad_smallest == 0, "%d inverses not the smallest host TSC", bad_smallest);
}

/*
 * KVM on a host with an unstable TSC, as in the nested lab: at each vCPU
 * load the offset makes the guest TSC resume where it stopped (it only
 * counts while loaded), then the clock update catches it up by some
 * amount; guest events happen only between entry and exit.  Every event's
 * guest TSC must map back to exactly the host TSC it happened at, with
 * each vCPU's own history, found among thousands of segments.
 */
#define SEG_VCPUS 2
#define SEG_ROUNDS 3000

struct tsc_event {
	int cpu;
	uint64_t host, guest;
};

static void simulate_vcpu(uint32_t vcpu, uint64_t host, struct tv_tsc_segment *seg, size_t *nseg,
			  struct tsc_event *ev, size_t *nev)
{
	uint64_t off = (uint64_t)-44770180193LL - vcpu * 977;

	seg[(*nseg)++] = (struct tv_tsc_segment){ 0, off, vcpu, 0 };
	for (int r = 0; r < SEG_ROUNDS; r++) {
		uint64_t entry = host + 10, exit = entry + 1000 + (uint64_t)(rnd() * 2e6);
		uint64_t last_guest, load, catchup;

		for (int k = 0; k < 3; k++) {
			uint64_t h = entry + 1 + (uint64_t)(rnd() * (double)(exit - entry - 2));

			ev[(*nev)++] = (struct tsc_event){ (int)vcpu, h, h + off };
		}
		/* Events at the very edges of the run too. */
		ev[(*nev)++] = (struct tsc_event){ (int)vcpu, entry + 1, entry + 1 + off };
		ev[(*nev)++] = (struct tsc_event){ (int)vcpu, exit - 1, exit - 1 + off };
		last_guest = exit + 3 + off;			/* vcpu_put */
		load = exit + 100 + (uint64_t)(rnd() * 5e6);	/* blocked meanwhile */
		off = last_guest - load;			/* frozen while out */
		seg[(*nseg)++] = (struct tv_tsc_segment){ load + 7, off, vcpu, 0 };
		catchup = load + 50 + (uint64_t)(rnd() * 1e5);
		if (rnd() < 0.7) {
			off += (uint64_t)(rnd() * (double)(load - exit));
			seg[(*nseg)++] = (struct tv_tsc_segment){ catchup, off, vcpu, 0 };
		}
		host = catchup + 5;
	}
}

static void test_tsc_segments(void)
{
	size_t cap = SEG_VCPUS * (SEG_ROUNDS * 2 + 1), nseg = 0, nev = 0;
	struct tv_tsc_segment *seg = calloc(cap, sizeof(*seg));
	struct tsc_event *ev = calloc(SEG_VCPUS * SEG_ROUNDS * 5, sizeof(*ev));
	struct tv_sync_domain d = { .domain = "guest-x", .method = "tsc" }, back[1];
	struct tv_sync_result res = { .domains = &d, .nr = 1 }, rd;
	char dir[] = "/tmp/test_sync.XXXXXX", cmd[64];
	int wrong = 0, wrong_read = 0, wrong_other = 0;

	if (!seg || !ev) {
		TV_CHECK(0, "out of memory");
		return;
	}
	for (uint32_t v = 0; v < SEG_VCPUS; v++)
		simulate_vcpu(v, 1000000000ULL * (v + 1), seg, &nseg, ev, &nev);
	d.tsc = (struct tv_tsc_params){ seg[0].offset, 1, 0 };
	d.tsc_segments = seg;
	d.nr_tsc_segments = nseg;
	for (size_t i = 0; i < nev; i++)
		wrong += tv_sync_domain_apply_cpu(&d, ev[i].cpu, ev[i].guest) != ev[i].host;
	TV_CHECK(wrong == 0, "%d of %zu guest TSCs not mapped to their host TSC (%zu segments)",
		 wrong, nev, nseg);
	/* A CPU with no history of its own follows the lowest vCPU's. */
	for (size_t i = 0; i < nev; i++)
		if (ev[i].cpu == 0)
			wrong_other += tv_sync_domain_apply_cpu(&d, 7, ev[i].guest) != ev[i].host ||
				       tv_sync_domain_apply(&d, ev[i].guest) != ev[i].host;
	TV_CHECK(wrong_other == 0, "%d vCPU 0 events mapped differently as CPU 7 or -1",
		 wrong_other);
	/* The segments survive DIR/sync/ (thousands: not a transforms key). */
	TV_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	TV_CHECK(tv_sync_write(dir, &res) == 0, "tv_sync_write");
	TV_CHECK(tv_sync_read(dir, &rd) == 0 && rd.nr == 1, "tv_sync_read");
	if (rd.nr == 1) {
		back[0] = rd.domains[0];
		TV_CHECK(back[0].nr_tsc_segments == nseg, "%zu segments read back, %zu written",
			 back[0].nr_tsc_segments, nseg);
		for (size_t i = 0; i < nev; i++)
			wrong_read += tv_sync_domain_apply_cpu(&back[0], ev[i].cpu, ev[i].guest) !=
				      ev[i].host;
		TV_CHECK(wrong_read == 0, "%d events mapped wrong after reading back", wrong_read);
		tv_sync_result_free(&rd);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	TV_CHECK(system(cmd) == 0, "%s", cmd);
	free(seg);
	free(ev);
}

/*
 * A write that moved a running guest's TSC back (seen in the nested lab:
 * the L2 guest wrote IA32_TSC while running): guest times
 * under the new offset overlap those under the old one.  Read in stream
 * order, every event maps exactly, and so does a sparse subset (sync's
 * probes) told how often its stream went back.
 */
static void test_tsc_moved_back(void)
{
	const uint64_t o0 = (uint64_t)-40000000000LL, back = 500000000;
	struct tv_tsc_segment seg[3] = {
		{ 0, o0, 0, 0 },
		{ 2000000000, o0 - back, 0, 1 },	/* moved back at host 2e9 */
		{ 2600000000, o0 - back + 100000, 0, 0 },	/* a catch-up after it */
	};
	struct tv_sync_domain d = { .domain = "guest-x", .method = "tsc" };
	struct tv_tsc_cursor cur = { 0 }, sparse = { 0 };
	int wrong = 0, wrong_sparse = 0, wrong_stateless = 0, n = 0;
	uint64_t first = 0, last = 0;
	unsigned int backs = 0;

	d.tsc = (struct tv_tsc_params){ o0, 1, 0 };
	d.tsc_segments = seg;
	d.nr_tsc_segments = 3;
	for (uint64_t h = 1000000000; h < 3000000000ULL; h += 1000 + (uint64_t)(rnd() * 1e6), n++) {
		size_t k = h >= seg[2].from_host ? 2 : h >= seg[1].from_host ? 1 : 0;
		uint64_t g = h + seg[k].offset;

		if (!first) {
			first = g;
			tv_sync_domain_apply_stream(&d, 0, first, &sparse);
		}
		backs += g < last;
		last = g;
		wrong += tv_sync_domain_apply_stream(&d, 0, g, &cur) != h;
		wrong_stateless += tv_sync_domain_apply_cpu(&d, 0, g) != h;
		if (n % 97)
			continue;
		while (sparse.backs < backs)
			tv_tsc_cursor_step_back(&d, 0, &sparse);
		sparse.last_ts = 0;
		wrong_sparse += tv_sync_domain_apply_stream(&d, 0, g, &sparse) != h;
	}
	TV_CHECK(backs == 1, "the guest clock went back %u times, not once", backs);
	/* A step back counts on any map (sync steps probes until they reach the count). */
	{
		struct tv_sync_domain line = { .domain = "xen", .method = "hull" };
		struct tv_tsc_cursor c = { 0 };

		line.est.map.slope_q48 = TV_SLOPE_ONE;
		tv_sync_domain_apply_stream(&line, 0, 5, &c);
		tv_tsc_cursor_step_back(&line, 0, &c);
		TV_CHECK(c.backs == 1, "a step back on a line map counted %u", c.backs);
	}
	TV_CHECK(wrong_stateless > 0, "the overlap did not mislead the stateless search");
	TV_CHECK(wrong == 0, "%d of %d events in stream order mapped wrong", wrong, n);
	TV_CHECK(wrong_sparse == 0, "%d sampled events mapped wrong", wrong_sparse);
	printf("moved back: %d events, %d mapped wrong without the stream's order, 0 with it\n",
	       n, wrong_stateless);
}

static void test_compose(void)
{
	struct tv_clock_map inner = { 5000000000LL, 7000000000LL, TV_SLOPE_ONE + (TV_SLOPE_ONE >> 15) };
	struct tv_clock_map outer = { 6000000000LL, -3000LL, TV_SLOPE_ONE - (TV_SLOPE_ONE >> 17) };
	struct tv_clock_map both;
	int64_t worst = 0;

	tv_clock_map_compose(&outer, &inner, &both);
	for (int64_t ts = 5000000000LL; ts < 9000000000LL; ts += 1000003) {
		int64_t a = (int64_t)tv_clock_map_apply(&outer, tv_clock_map_apply(&inner, (uint64_t)ts));
		int64_t b = (int64_t)tv_clock_map_apply(&both, (uint64_t)ts);

		worst = llabs(a - b) > worst ? llabs(a - b) : worst;
	}
	TV_CHECK(worst <= 2, "composed map differs by %lld ns", (long long)worst);
}

int main(void)
{
	test_true_line_within_bound();
	test_no_line_fits();
	test_insufficient();
	test_tsc_inverse();
	test_tsc_segments();
	test_tsc_moved_back();
	test_compose();
	return tv_test_done("test_sync");
}
