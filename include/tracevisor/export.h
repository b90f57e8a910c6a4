/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Exporting a session to other tools' formats: CTF 1.8 (babeltrace2,
 * Trace Compass), Perfetto (protobuf and JSON) and one HTML page.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_EXPORT_H
#define TRACEVISOR_EXPORT_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/export.h>"
#endif

#include <stdint.h>

#include <tracevisor/reader.h>

#pragma GCC visibility push(default)

struct tv_export_stats {
	uint64_t events;
	uint64_t streams;	/* CTF streams, or Perfetto tracks */
	uint64_t slices;	/* Perfetto: VM exit slices (KVM and Xen HVM) */
	uint64_t unpaired_exits;	/* Perfetto: exits with no entry (no slice) */
	uint64_t runstate_slices;	/* Perfetto: Xen vCPU runstate intervals */
};

enum tv_export_format {
	TV_EXPORT_CTF,		/* a CTF 1.8 directory (babeltrace2, Trace Compass) */
	TV_EXPORT_PERFETTO,	/* Perfetto's native protobuf TracePackets */
	TV_EXPORT_PERFETTO_JSON,	/* Chrome trace-event JSON (Perfetto's legacy format) */
	TV_EXPORT_HTML,		/* one self-contained HTML page */
};

/**
 * tv_export - write a session in another tool's format, in the reference clock
 * @rd: the session, open for reading (consumed to its end; still the caller's)
 * @session_dir: its directory (metadata, stat's rows, sync/transforms)
 * @out: the directory (CTF) or file (the others) to create
 * @format: what to write:
 *   TV_EXPORT_CTF: one CTF 1.8 trace, a stream per domain and CPU, event
 *   fields typed from the format files (doc/ctf-export.md);
 *   TV_EXPORT_PERFETTO: TracePackets (doc/perfetto/trace.proto): a process
 *   group per layer, exit and task slices, flows from exits to the guest,
 *   interned names, clock snapshots of the sync (doc/perfetto-export.md);
 *   TV_EXPORT_PERFETTO_JSON: trace-event JSON, tracks per CPU and vCPU,
 *   VM exits as slices, every event's fields;
 *   TV_EXPORT_HTML: a timeline with a lane per host CPU, vCPU, guest CPU,
 *   Xen pCPU and vCPU and traced thread, stat's rows (elements with data-vm,
 *   data-reason, data-count, data-p99-ns), latency histograms, the sync
 *   result and the losses per domain, everything inline (doc/man/
 *   tracevisor-export.1 says what is aggregated); reads the session three
 *   times.
 * @st: counts of what was written (caller's storage): @events; @streams
 *      (CTF streams, Perfetto tracks, HTML lanes); @slices (exit slices, or
 *      HTML items drawn one by one); @unpaired_exits, @runstate_slices
 *      (Perfetto)
 *
 * Return: 0 or -errno (logged); -EINVAL for an unknown @format.
 */
int tv_export(struct tv_reader *rd, const char *session_dir, const char *out,
	      enum tv_export_format format, struct tv_export_stats *st);

#pragma GCC visibility pop

#endif /* TRACEVISOR_EXPORT_H */
