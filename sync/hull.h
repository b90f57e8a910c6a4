/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The convex-hull clock estimator (sync/hull.c), used by the piecewise
 * estimation (sync/pieces.c) and its unit test.
 */
#ifndef TV_SYNC_HULL_H
#define TV_SYNC_HULL_H

#include <stdint.h>

#include "tracevisor/tracevisor.h"

/*
 * Convex-hull clock estimator (Duda; Poirier and Jabbarifar's fully
 * incremental form).  x is the domain's clock, y the reference's.
 * "below" points (x, y) must lie on or below the true line (e.g. a message
 * sent by the reference at y and received by the domain at x); "above"
 * points on or above it.  Points must come in non-decreasing x per set.
 */
struct tv_sync_hull;

/**
 * tv_sync_hull_new - an empty convex-hull estimator
 *
 * Return: the hull, owned by the caller (tv_sync_hull_free()), or NULL.
 */
struct tv_sync_hull *tv_sync_hull_new(void);

/**
 * tv_sync_hull_free - free @h
 * @h: a hull, or NULL
 */
void tv_sync_hull_free(struct tv_sync_hull *h);

/**
 * tv_sync_hull_add_below - add a point on or below the true line
 * @h: the hull
 * @x: domain time (non-decreasing per set)
 * @y: reference time
 *
 * Return: 0, -ERANGE (coordinates too far apart), -EINVAL (x decreasing), -ENOMEM.
 */
int tv_sync_hull_add_below(struct tv_sync_hull *h, int64_t x, int64_t y);

/**
 * tv_sync_hull_add_above - add a point on or above the true line
 * @h: the hull
 * @x: domain time (non-decreasing per set)
 * @y: reference time
 *
 * Return: as tv_sync_hull_add_below().
 */
int tv_sync_hull_add_above(struct tv_sync_hull *h, int64_t x, int64_t y);

/**
 * tv_sync_hull_estimate - the middle line and its guaranteed error bound
 * @h: the hull
 * @span_lo: first domain timestamp the transform is used on
 * @span_hi: last one
 * @out: filled in every case; quality says how far it can be trusted
 *
 * Return: 0 (even when the quality is failed or insufficient).
 */
int tv_sync_hull_estimate(const struct tv_sync_hull *h, int64_t span_lo, int64_t span_hi,
			  struct tv_sync_estimate *out);

#endif
