/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Exporting a session to other tools' formats: CTF 1.8 (babeltrace2,
 * Trace Compass) and Chrome/Perfetto trace-event JSON.
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

/**
 * tv_export_ctf - write a session as one CTF 1.8 trace in the reference clock
 * @rd: the session, open for reading (consumed to its end; still the caller's)
 * @session_dir: its directory (for metadata)
 * @out: the CTF trace directory to create
 * @st: counts of what was written (caller's storage)
 *
 * Return: 0 or -errno (logged).
 */
int tv_export_ctf(struct tv_reader *rd, const char *session_dir, const char *out,
		  struct tv_export_stats *st);

enum tv_perfetto_format {
	TV_PERFETTO_PROTO,	/* Perfetto's native protobuf TracePackets */
	TV_PERFETTO_JSON,	/* Chrome trace-event JSON (Perfetto's legacy format) */
};

/**
 * tv_export_perfetto - write a session for Perfetto (ui.perfetto.dev)
 * @rd: the session, open for reading (consumed to its end; still the caller's)
 * @session_dir: its directory (sync/transforms, for the clock snapshots)
 * @out: the file to create
 * @format: TV_PERFETTO_PROTO (TracePackets, doc/perfetto/trace.proto: one
 *          process group per layer, exit and task slices, flows from exits
 *          to the guest, interned names, clock snapshots of the sync) or
 *          TV_PERFETTO_JSON (trace-event JSON: tracks per CPU and vCPU, VM
 *          exits as slices, every event's fields)
 * @st: counts of what was written (caller's storage)
 *
 * Return: 0 or -errno (logged).
 */
int tv_export_perfetto(struct tv_reader *rd, const char *session_dir, const char *out,
		       enum tv_perfetto_format format, struct tv_export_stats *st);

/**
 * tv_export_html - write one self-contained HTML page of the session
 * @rd: the session, open for reading (consumed to its end; still the caller's)
 * @session_dir: its directory (stat's rows, the sync result)
 * @out: the HTML file to create
 * @st: @events read, @streams lanes, @slices items drawn one by one (caller's storage)
 *
 * A timeline with a lane per host CPU, vCPU, guest CPU, Xen pCPU and vCPU
 * and traced thread, stat's rows (elements with data-vm, data-reason,
 * data-count, data-p99-ns), latency histograms, the sync result and the
 * losses per domain; scripts, styles and data inline (doc/man/
 * tracevisor-export.1 says what is aggregated).  Reads the session three
 * times: the timeline, stat's analysis, the traced processes'.
 * Return: 0 or -errno (logged).
 */
int tv_export_html(struct tv_reader *rd, const char *session_dir, const char *out,
		   struct tv_export_stats *st);

#pragma GCC visibility pop

#endif /* TRACEVISOR_EXPORT_H */
