// SPDX-License-Identifier: LGPL-2.1
/*
 * The reference clock beside the wall clock: the recorder writes a
 * CLOCK_REALTIME marker into the host trace right after tracing starts
 * (doc/sync-probes.md); its time stamp and the wall clock it carries tie
 * the two, for `report --date` and the CTF clock offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "tv_internal.h"

/* The marker follows tracing_on by microseconds: it is among the first events. */
#define WALL_CLOCK_SCAN_EVENTS 1000000

int tv_sync_marker_of_event(const struct tv_event *ev, struct tv_sync_marker *m)
{
	if (ev->record->size < 0)
		return -ENOMSG;
	return tv_sync_marker_decode(ev->record->data, (size_t)ev->record->size, m);
}

uint64_t tv_reference_clock_hz(const struct tv_domain_info *ref)
{
	const char *clock = tv_meta_get(ref->meta, "clock");
	long long khz = tv_meta_get_ll(ref->meta, "tsc_khz", 0);

	return clock && !strcmp(clock, "x86-tsc") && khz > 0 ? (uint64_t)khz * 1000 : 1000000000;
}

int tv_wall_clock_of_event(const struct tv_event *ev, struct tv_wall_clock *wc)
{
	struct tv_sync_marker m;

	if (ev->domain_index != 0 || !ev->format || strcmp(ev->format->system, "ftrace") ||
	    strcmp(ev->format->name, "raw_data") || tv_sync_marker_of_event(ev, &m) ||
	    m.type != TV_SYNC_CLOCK_REALTIME)
		return -ENOMSG;
	wc->ref_ts = ev->ts;
	wc->realtime_ns = m.aux;
	wc->hz = tv_reference_clock_hz(ev->domain_info);
	return 0;
}

int tv_wall_clock_find(const char *dir, struct tv_wall_clock *wc)
{
	struct tv_reader *rd = NULL;
	struct tv_event ev;
	int ret = tv_reader_open(dir, &rd);

	if (ret)
		goto out;
	for (long n = 0; n < WALL_CLOCK_SCAN_EVENTS; n++) {
		ret = tv_reader_next(rd, &ev);
		if (ret <= 0)
			break;
		if (!tv_wall_clock_of_event(&ev, wc)) {
			ret = 0;
			goto out;
		}
	}
	if (ret >= 0) {
		tv_err("No wall-clock marker at the start of the session: path=\"%s\" (recorded without trace_marker_raw, or before tracevisor wrote them)",
		       dir);
		ret = -ENOENT;
	}
out:
	tv_reader_close(rd);
	return ret;
}

uint64_t tv_wall_clock_ns(const struct tv_wall_clock *wc, uint64_t ts)
{
	__int128 d = (__int128)ts - (__int128)wc->ref_ts;
	__int128 wall = (__int128)wc->realtime_ns + d * 1000000000 / (__int128)wc->hz;

	return wall < 0 ? 0 : wall > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)wall;
}

char *tv_wall_clock_format(uint64_t ns, char *out)
{
	time_t secs = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&secs, &tm))
		memset(&tm, 0, sizeof(tm));
	snprintf(out, TV_WALL_CLOCK_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(ns % 1000000000u));
	return out;
}
