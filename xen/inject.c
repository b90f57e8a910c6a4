// SPDX-License-Identifier: LGPL-2.1
/*
 * Sync points in Xen's trace: HVMOP_xentrace from dom0 (libxencall).  The
 * record is a TRC_GUEST record; on our patched hypervisor it carries the
 * TSC, so it lands exactly on Xen's time line (stock Xen: no TSC, it takes
 * the previous record's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>
#include <xencall.h>
#include <xentoollog.h>
#include <xen/xen.h>
#include <xen/hvm/hvm_op.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_internal.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int tv_xen_inject_hooked(unsigned int event, const uint32_t *data, unsigned int nr,
			 uint64_t mono[2], tv_xen_inject_hook hook, void *ctx)
{
	uint64_t before, after;
	int rc;

	xentoollog_logger_stdiostream *log = xtl_createlogger_stdiostream(stderr, XTL_CRITICAL, 0);
	xencall_handle *xcall = xencall_open((xentoollog_logger *)log, 0);
	xen_hvm_xentrace_t *tr;
	int ret = 0;

	if (event >= (1u << 12) || nr > 7) {
		ret = -EINVAL;
		goto out;
	}
	if (!xcall) {
		tv_err("Cannot open Xen hypercall interface: errno=%d (%s) (not running on Xen dom0?)", errno, strerror(errno));
		ret = -ENODEV;
		goto out;
	}
	tr = xencall_alloc_buffer(xcall, sizeof(*tr));
	if (!tr) {
		ret = -ENOMEM;
		goto out;
	}
	memset(tr, 0, sizeof(*tr));
	tr->event = (uint16_t)event;
	tr->extra_bytes = (uint16_t)(nr * 4);
	memcpy(tr->extra, data, nr * 4);
	if (hook)
		hook(ctx, 0);
	before = mono_ns();
	rc = xencall2(xcall, __HYPERVISOR_hvm_op, HVMOP_xentrace, (uint64_t)(uintptr_t)tr);
	after = mono_ns();
	if (hook)
		hook(ctx, 1);
	if (mono) {
		mono[0] = before;
		mono[1] = after;
	}
	if (rc) {
		ret = -errno;
		tv_err("Cannot inject trace record: event=0x%x, errno=%d (%s)", event, -ret, strerror(-ret));
	}
	xencall_free_buffer(xcall, tr);
out:
	if (xcall)
		xencall_close(xcall);
	if (log)
		xtl_logger_destroy((xentoollog_logger *)log);
	return ret;
}

int tv_xen_inject(unsigned int event, const uint32_t *data, unsigned int nr, uint64_t mono[2])
{
	return tv_xen_inject_hooked(event, data, nr, mono, NULL, NULL);
}
