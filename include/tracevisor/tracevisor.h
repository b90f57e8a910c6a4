/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * tracevisor — tracing virtualised systems across host, hypervisor and guests.
 *
 * The public header of libtracevisor (lib/, kvm/, xen/, sync/, host/;
 * doc/architecture.md), one header per topic below it, included from here
 * only: libtracevisor.so exports exactly the functions they declare, what
 * a program that records, reads and analyses sessions needs (the CLI in
 * tools/ is one; tests/unit/check-exports.sh fails on a function no client
 * uses).  Everything else stays inside the library.
 *
 * Library functions never print or exit: they return 0 or a negative errno
 * (or NULL with errno set) and report details through the log callback
 * (tv_log_set_callback()).  Only the command-line tools in tools/ exit.
 *
 * Ownership: an object a *_new(), *_create(), *_open() or *_start() function
 * hands out belongs to the caller, who releases it with the matching
 * *_free(), *_destroy() or *_close(); structs the caller passes in (a
 * tv_strbuf, tv_sync_result, tv_exit_stat) stay the caller's,
 * and their *_free() / *_release() frees only what the library put in
 * them.  Strings and pointers a function returns point into the object
 * they come from and live as long as it, unless the function says
 * "static" or otherwise.  Input strings are copied unless a function says
 * they must outlive the object.
 *
 * Threads: an object (session recording, guest, reader, meta, view, strbuf) is used
 * by one thread at a time; distinct objects may be used in different
 * threads at once.  Functions that may be called from any thread say so
 * ("Threads:" in their comment); the log settings are process-wide.
 *
 * A *session* is a directory (doc/session-format.md):
 *   DIR/session.meta            written last: a session without it is incomplete
 *   DIR/host/                   one subdirectory per traced domain
 *       meta                    key=value: clock, ncpus, kernel, tsc_khz, lost...
 *       header_page, header_event
 *       events/SYSTEM/EVENT/format
 *       saved_cmdlines, saved_tgids, vcpus
 *       cpuN.raw                raw ring-buffer sub-buffers, as spliced
 * Later domains (guest-NAME/, xen/) use the same layout beside host/.
 */
#ifndef TRACEVISOR_H
#define TRACEVISOR_H

#define TV_INSIDE_TRACEVISOR_H

#include <tracevisor/log.h>		/* library messages */
#include <tracevisor/strbuf.h>		/* text buffers and escapes */
#include <tracevisor/session.h>		/* a session on disk: meta files, recover, compress */
#include <tracevisor/reader.h>		/* events in time order, domains, wall clock */
#include <tracevisor/sync.h>		/* clock synchronisation of the domains */
#include <tracevisor/stat.h>		/* analyses: VM exits, Xen, traced processes */
#include <tracevisor/guest.h>		/* guests recorded through their agent */
#include <tracevisor/xen.h>		/* Xen's trace buffers, xentrace import */
#include <tracevisor/record.h>		/* recording a session */
#include <tracevisor/top.h>		/* the live view */
#include <tracevisor/export.h>		/* CTF and Perfetto */
#include <tracevisor/serve.h>		/* the metrics exporter (Prometheus) */

#undef TV_INSIDE_TRACEVISOR_H

#endif /* TRACEVISOR_H */
