/* SPDX-License-Identifier: GPL-2.0 */
/* bench/ust-bench's event for lttng-ust 2.13: bench:ev, two 8-byte integers. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./bench_lttng_tp.h"

#if !defined(BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(bench, ev,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, a, a)
			    lttng_ust_field_integer(uint64_t, b, b)))

#endif

#include <lttng/tracepoint-event.h>
