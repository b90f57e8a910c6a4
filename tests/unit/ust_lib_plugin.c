// SPDX-License-Identifier: GPL-2.0
/* An instrumented shared object that test_ust_registry dlopens and dlcloses. */
#include <stdint.h>
#include <tracevisor/ust.h>

TV_UST_EVENT(plug, ev,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))

void plugin_emit(int thread, uint64_t n);

void plugin_emit(int thread, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		tv_ust_trace(plug, ev, thread, i);
}
