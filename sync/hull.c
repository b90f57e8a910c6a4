// SPDX-License-Identifier: LGPL-2.1
/*
 * Convex-hull clock estimation (Duda et al.; the fully incremental form of
 * Poirier and Jabbarifar used by Trace Compass).
 *
 * Every probe pair says on which side of the true line y = f(x) a point
 * lies.  Only the upper hull of the "below" points and the lower hull of
 * the "above" points can constrain a line, and both are kept incrementally
 * with Andrew's monotone chain (amortised O(1) per point, points in x
 * order).  A line fits iff, for every pair (a above, b below), its slope
 * satisfies slope * (b.x - a.x) >= b.y - a.y: that gives the two bounding
 * slopes.  The estimate is the middle line; its error bound is its largest
 * distance, over the span, to the lowest and highest lines that fit: the
 * true relation, if linear, is one of them.
 *
 * Coordinates are stored relative to the first point and limited to 2^62,
 * so every product below fits in a signed 128-bit integer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "hull.h"

#define COORD_LIMIT ((int64_t)1 << 62)
#define SLOPE_LIMIT_Q48 ((int64_t)1 << 62)	/* slopes below 2^14 */

typedef __int128 i128;

struct pt {
	int64_t x, y;
};

struct chain {
	struct pt *p;
	size_t n, cap;
	size_t added;
};

struct tv_sync_hull {
	int have_origin;
	struct pt origin;
	struct chain below;	/* upper hull of the points under the line */
	struct chain above;	/* lower hull of the points over the line */
};

/* A possibly infinite slope bound, as a fraction with den > 0. */
struct frac {
	int64_t num, den;
	int finite;
};

struct tv_sync_hull *tv_sync_hull_new(void)
{
	return calloc(1, sizeof(struct tv_sync_hull));
}

void tv_sync_hull_free(struct tv_sync_hull *h)
{
	if (!h)
		return;
	free(h->below.p);
	free(h->above.p);
	free(h);
}

/* Cross product of (b - a) and (c - a): > 0 when a, b, c turn left. */
static i128 cross(struct pt a, struct pt b, struct pt c)
{
	return (i128)(b.x - a.x) * (c.y - a.y) - (i128)(b.y - a.y) * (c.x - a.x);
}

static int chain_push(struct chain *c, struct pt p, int upper)
{
	if (c->n && p.x < c->p[c->n - 1].x)
		return -EINVAL;
	if (c->n && p.x == c->p[c->n - 1].x) {
		/* Same x: only the more constraining point matters. */
		if (upper ? p.y <= c->p[c->n - 1].y : p.y >= c->p[c->n - 1].y)
			return 0;
		c->n--;
	}
	while (c->n >= 2) {
		i128 t = cross(c->p[c->n - 2], c->p[c->n - 1], p);

		if (upper ? t < 0 : t > 0)
			break;
		c->n--;
	}
	if (tv_array_grow(&c->p, &c->cap, c->n, sizeof(*c->p), 64))
		return -ENOMEM;
	c->p[c->n++] = p;
	return 0;
}

static int hull_add(struct tv_sync_hull *h, int64_t x, int64_t y, int below)
{
	struct pt p;
	int ret;

	if (!h->have_origin) {
		h->origin = (struct pt){ x, y };
		h->have_origin = 1;
	}
	if (__builtin_sub_overflow(x, h->origin.x, &p.x) ||
	    __builtin_sub_overflow(y, h->origin.y, &p.y) ||
	    p.x >= COORD_LIMIT || p.x <= -COORD_LIMIT || p.y >= COORD_LIMIT || p.y <= -COORD_LIMIT)
		return -ERANGE;
	ret = chain_push(below ? &h->below : &h->above, p, below);
	if (!ret)
		(below ? &h->below : &h->above)->added++;
	return ret;
}

int tv_sync_hull_add_below(struct tv_sync_hull *h, int64_t x, int64_t y)
{
	return hull_add(h, x, y, 1);
}

int tv_sync_hull_add_above(struct tv_sync_hull *h, int64_t x, int64_t y)
{
	return hull_add(h, x, y, 0);
}

/* a < b for fractions with positive denominators. */
static int frac_less(struct frac a, struct frac b)
{
	return (i128)a.num * b.den < (i128)b.num * a.den;
}

/* Floor (or ceiling) of n / d, d > 0. */
static i128 div_round(i128 n, i128 d, int up)
{
	i128 q = n / d, r = n % d;

	if (r && ((r > 0) == up))
		q += up ? 1 : -1;
	return q;
}

static int64_t frac_to_q48(struct frac f)
{
	return (int64_t)div_round((i128)f.num * TV_SLOPE_ONE, f.den, 0);
}

/*
 * The two bounding slopes.  Return -1 when no slope fits, with the pair
 * that shows it in @msg.
 */
static int slope_bounds(const struct tv_sync_hull *h, struct frac *lo, struct frac *hi,
			char *msg, size_t size)
{
	const struct chain *A = &h->above, *B = &h->below;

	lo->finite = hi->finite = 0;
	for (size_t i = 0; i < A->n; i++) {
		for (size_t j = 0; j < B->n; j++) {
			struct pt a = A->p[i], b = B->p[j];
			struct frac f = { b.y - a.y, b.x - a.x, 1 };

			if (f.den == 0) {
				if (b.y > a.y)
					goto contradiction;
				continue;
			}
			if (f.den < 0) {
				f.num = -f.num;
				f.den = -f.den;
				if (!hi->finite || frac_less(f, *hi))
					*hi = f;
			} else if (!lo->finite || frac_less(*lo, f)) {
				*lo = f;
			}
			if (lo->finite && hi->finite && frac_less(*hi, *lo))
				goto contradiction;
			continue;
contradiction:
			snprintf(msg, size,
				 "no line fits: a probe received at x=%lld (ref %lld) contradicts one sent at x=%lld (ref %lld); clocks are not linear or probes are mismatched",
				 (long long)(b.x + h->origin.x), (long long)(b.y + h->origin.y),
				 (long long)(a.x + h->origin.x), (long long)(a.y + h->origin.y));
			return -1;
		}
	}
	return 0;
}

/* Floor (up = 0) or ceiling of slope * dx. */
static i128 frac_mul(struct frac s, int64_t dx, int up)
{
	return div_round((i128)s.num * dx, s.den, up);
}

/*
 * Value at @g of the line of slope @a that rests on chain @c: the lowest
 * line of that slope above all "below" points (up = 0, rounded down) or
 * the highest under all "above" points (up = 1, rounded up).
 */
static i128 resting_line_at(const struct chain *c, struct frac a, int64_t g, int up)
{
	i128 best = 0;

	for (size_t i = 0; i < c->n; i++) {
		i128 v = c->p[i].y + frac_mul(a, g - c->p[i].x, up);

		if (i == 0 || (up ? v < best : v > best))
			best = v;
	}
	return best;
}

/*
 * The extreme value at @g over every line that fits: the lowest (up = 0,
 * from the below chain) or the highest (up = 1, from the above chain).
 * For a fixed slope the line rests on its chain; the resting value is
 * convex (concave) in the slope, so its extreme over [lo, hi] is at lo, hi
 * or a slope where the resting vertex changes: an edge slope of the chain.
 * As a function of g it is a min (max) of lines, so the error of a line
 * against it is largest at the span's ends.
 */
static i128 extreme_at(const struct chain *c, int64_t g, struct frac lo, struct frac hi, int up)
{
	i128 best = resting_line_at(c, lo, g, up), v = resting_line_at(c, hi, g, up);

	best = up ? (v > best ? v : best) : (v < best ? v : best);
	for (size_t i = 0; i + 1 < c->n; i++) {
		struct frac e = { c->p[i + 1].y - c->p[i].y, c->p[i + 1].x - c->p[i].x, 1 };

		if (frac_less(e, lo) || frac_less(hi, e))
			continue;
		v = resting_line_at(c, e, g, up);
		best = up ? (v > best ? v : best) : (v < best ? v : best);
	}
	return best;
}

/* Map value at relative x, exactly as tv_clock_map_apply() computes it. */
static i128 line_at(int64_t b_int, int64_t slope_q48, int64_t x)
{
	return b_int + (((i128)x * slope_q48) >> 48);
}

static int64_t error_at(const struct tv_sync_hull *h, int64_t b_int, int64_t s, int64_t g,
			struct frac lo, struct frac hi)
{
	i128 f = line_at(b_int, s, g);
	i128 down = f - extreme_at(&h->below, g, lo, hi, 0);
	i128 up = extreme_at(&h->above, g, lo, hi, 1) - f;
	i128 e = down > up ? down : up;

	return e > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)e;
}

static int64_t max_error(const struct tv_sync_hull *h, int64_t b_int, int64_t s, int64_t g0,
			 int64_t g1, struct frac lo, struct frac hi)
{
	int64_t e0 = error_at(h, b_int, s, g0, lo, hi), e1 = error_at(h, b_int, s, g1, lo, hi);

	return (e0 > e1 ? e0 : e1) + 1;	/* +1: the map's own integer rounding */
}

/* Middle intercept (Q48, relative) between the two hulls for slope @s. */
static i128 middle_intercept(const struct tv_sync_hull *h, int64_t s)
{
	i128 bmin = 0, bmax = 0;

	for (size_t i = 0; i < h->below.n; i++) {
		i128 v = (i128)h->below.p[i].y * TV_SLOPE_ONE - (i128)s * h->below.p[i].x;

		if (i == 0 || v > bmin)
			bmin = v;
	}
	for (size_t i = 0; i < h->above.n; i++) {
		i128 v = (i128)h->above.p[i].y * TV_SLOPE_ONE - (i128)s * h->above.p[i].x;

		if (i == 0 || v < bmax)
			bmax = v;
	}
	return (bmin + bmax) / 2;
}

static int64_t choose_slope(struct frac lo, struct frac hi)
{
	int64_t s;

	if (lo.finite && hi.finite)
		return (int64_t)(((i128)frac_to_q48(lo) + frac_to_q48(hi)) / 2);
	/* One-sided: assume the nominal rate where the bound allows it. */
	s = TV_SLOPE_ONE;
	if (lo.finite && frac_to_q48(lo) > s)
		s = frac_to_q48(lo) + 1;
	if (hi.finite && frac_to_q48(hi) < s)
		s = frac_to_q48(hi);
	return s;
}

static void estimate_span(const struct tv_sync_hull *h, int64_t *g0, int64_t *g1)
{
	int64_t lo = h->below.p[0].x, hi = h->below.p[h->below.n - 1].x;

	if (h->above.p[0].x < lo)
		lo = h->above.p[0].x;
	if (h->above.p[h->above.n - 1].x > hi)
		hi = h->above.p[h->above.n - 1].x;
	*g0 = lo;
	*g1 = hi;
}

static void estimate_finish(const struct tv_sync_hull *h, int64_t span_lo, int64_t span_hi,
			    struct frac lo, struct frac hi, struct tv_sync_estimate *out)
{
	int64_t s = choose_slope(lo, hi), g0, g1, b_int;

	if (s <= 0 || s >= SLOPE_LIMIT_Q48) {
		out->quality = TV_SYNC_FAILED;
		snprintf(out->message, sizeof(out->message),
			 "no usable line: slope %.6g outside (0, 16384)", (double)s / TV_SLOPE_ONE);
		return;
	}
	b_int = (int64_t)(middle_intercept(h, s) >> 48);
	out->map = (struct tv_clock_map){ h->origin.x, h->origin.y + b_int, s };
	estimate_span(h, &g0, &g1);
	if (span_lo < span_hi &&
	    span_lo - h->origin.x > -COORD_LIMIT && span_hi - h->origin.x < COORD_LIMIT) {
		g0 = span_lo - h->origin.x;
		g1 = span_hi - h->origin.x;
	}
	out->span_lo = g0 + h->origin.x;
	out->span_hi = g1 + h->origin.x;
	if (!lo.finite || !hi.finite) {
		out->quality = TV_SYNC_APPROXIMATE;
		snprintf(out->message, sizeof(out->message),
			 "drift unbounded (%s slope bound missing): probes needed at more points in time",
			 lo.finite ? "upper" : "lower");
		return;
	}
	out->bound_ns = max_error(h, b_int, s, g0, g1, lo, hi);
	out->quality = out->bound_ns <= TV_SYNC_ACCURATE_NS ? TV_SYNC_ACCURATE
							    : TV_SYNC_APPROXIMATE;
	if (out->quality == TV_SYNC_APPROXIMATE)
		snprintf(out->message, sizeof(out->message),
			 "bound %lld ns exceeds %d ns: probes too sparse or one-way delays too long",
			 (long long)out->bound_ns, TV_SYNC_ACCURATE_NS);
}

int tv_sync_hull_estimate(const struct tv_sync_hull *h, int64_t span_lo, int64_t span_hi,
			  struct tv_sync_estimate *out)
{
	struct frac lo = { 0, 1, 0 }, hi = { 0, 1, 0 };

	memset(out, 0, sizeof(*out));
	out->bound_ns = -1;
	out->map.slope_q48 = TV_SLOPE_ONE;
	out->nr_above = h->above.n;
	out->nr_below = h->below.n;
	if (!h->above.n || !h->below.n) {
		out->quality = TV_SYNC_INSUFFICIENT;
		snprintf(out->message, sizeof(out->message),
			 "probes in one direction only (%zu to the domain, %zu from it): need both",
			 h->below.added, h->above.added);
		return 0;
	}
	if (slope_bounds(h, &lo, &hi, out->message, sizeof(out->message))) {
		out->quality = TV_SYNC_FAILED;
		return 0;
	}
	out->slope_min = lo.finite ? (double)lo.num / (double)lo.den : 0;
	out->slope_max = hi.finite ? (double)hi.num / (double)hi.den : 0;
	estimate_finish(h, span_lo, span_hi, lo, hi, out);
	return 0;
}
