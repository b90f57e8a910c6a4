/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Internals of xen/: the domain directory, shared by recorder and importer.
 * Used inside xen/ only; what the layers above use is in xen_recorder.h.
 */
#ifndef TV_XEN_INTERNAL_H
#define TV_XEN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xen_trace.h"
#include "xen_recorder.h"

struct tv_xen_cpu_count {
	uint64_t bytes;
	uint64_t records;	/* everything but wrap and lost records */
	uint64_t lost;		/* sum of TRC_LOST_RECORDS counts */
	uint64_t wraps;
};

/* Count the records of one cpuN.xen; a missing file counts as empty. */
int tv_xen_count_stream(const char *path, struct tv_xen_cpu_count *cnt);

/*
 * The same count taken as a cpuN.xen's bytes go by, in pieces cut anywhere
 * (the recorder's drained windows): after the last piece, cnt is what
 * tv_xen_count_stream() finds in their concatenation (a record cut off at
 * the end counts in bytes only).  Zero it to start.
 */
struct tv_xen_counter {
	struct tv_xen_cpu_count cnt;
	uint32_t have;		/* bytes of the current record seen so far */
	uint32_t size;		/* its size, once its header word is seen */
	unsigned char head[16];	/* its first bytes: header, TSC, extra[0] */
};

void tv_xen_count_feed(struct tv_xen_counter *c, const unsigned char *p, size_t len);

struct tv_xen_meta_kv {
	char key[48];
	char value[48];
};

struct tv_xen_meta_info {
	int ncpus;
	uint64_t cpu_khz;
	const char *khz_source;	/* "xc_physinfo", "option", "default" */
	const char *clock;	/* "xen-tsc" or "xen-system" */
	const char *source;	/* "tracevisor" or "xentrace" */
	char xen_version[32];
	uint32_t evt_mask;
	bool have_mask_state;	/* the two below were read from Xen */
	uint32_t mask_before, mask_after;	/* found at start, read back at stop */
	unsigned int tbuf_pages;
	const char *hvm_isa;	/* "vmx", "svm" or NULL: how to name exit reasons */
	char missing[160];	/* what the stock hypervisor lacks */
	bool builtin_formats;	/* no events/ written: "formats=builtin" */
	struct tv_xen_meta_kv *extra;	/* per-CPU time scale and the like */
	size_t nr_extra;
	/* a flight recorder's (0: none): SIZE, per CPU, records pushed out */
	uint64_t flight_bytes, flight_ring_bytes, flight_dropped;
	/* ncpus counts taken while recording, or NULL: count the cpuN.xen files */
	const struct tv_xen_cpu_count *counts;
};

int tv_xen_write_meta(const char *domain_dir, const struct tv_xen_meta_info *info);

struct tv_session_writer;
/*
 * SESSION/xen and its header_page, from the session writer @w (which makes
 * SESSION first if no recorder has yet); its path into @out.  @formats:
 * write events/xen/NAME/format too (import); without them (the recorder)
 * the reader takes its built-in formats, and the meta says formats=builtin.
 */
int tv_xen_make_domain_dir(struct tv_session_writer *w, bool formats, char *out, size_t size);
#endif
