// SPDX-License-Identifier: LGPL-2.1
/*
 * Built without the Xen libraries (TV_WITH_XEN=0, or no libxen-dev): the
 * parts of xen/ that talk to the hypervisor (xen_recorder.c, inject.c) are left
 * out and these take their place, so the library and the CLI need no
 * libxen*.so.  Decoding, importing and analysing Xen sessions do not need
 * the hypervisor and still work.
 */
#ifndef TV_HAVE_XEN
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_internal.h"
#include "xen_recorder.h"

static int not_built(const char *what)
{
	tv_err("%s needs Xen support, which this tracevisor was built without: install the Xen libraries (libxen-dev) and rebuild (make TV_WITH_XEN=1)",
	       what);
	return -ENOTSUP;
}

int tv_xen_domain_find(const char *name, struct tv_xen_domain *dom)
{
	(void)name;
	(void)dom;
	return not_built("Finding a Xen domain (--guest xen:NAME)");
}

int tv_xen_recorder_create(const struct tv_xen_record_opts *opts, struct tv_xen_recorder **out)
{
	(void)opts;
	*out = NULL;
	return not_built("Recording Xen's trace");
}

int tv_xen_recorder_create_in(struct tv_session_writer *w, const struct tv_xen_record_opts *opts,
			      struct tv_xen_recorder **out)
{
	(void)w;
	return tv_xen_recorder_create(opts, out);
}

int tv_xen_recorder_start(struct tv_xen_recorder *rec)
{
	(void)rec;
	return -ENOTSUP;
}

int tv_xen_recorder_stop(struct tv_xen_recorder *rec)
{
	(void)rec;
	return -ENOTSUP;
}

void tv_xen_recorder_destroy(struct tv_xen_recorder *rec)
{
	(void)rec;
}

int tv_xen_recorder_checkpoint(struct tv_xen_recorder *rec)
{
	(void)rec;
	return -ENOTSUP;
}

int tv_xen_recorder_flush(struct tv_xen_recorder *rec, int timeout_ms)
{
	(void)rec;
	(void)timeout_ms;
	return -ENOTSUP;
}

int tv_xen_domain_name(unsigned int domid, char *buf, size_t size)
{
	(void)domid;
	(void)buf;
	(void)size;
	return -ENOTSUP;
}

int tv_xen_domain_uuid(unsigned int domid, char *buf, size_t size)
{
	(void)domid;
	(void)buf;
	(void)size;
	return -ENOTSUP;
}

int tv_xen_domain_id(const char *name, unsigned int *domid)
{
	(void)name;
	(void)domid;
	return -ENOTSUP;
}

int tv_xen_recorder_nr_cpus(const struct tv_xen_recorder *rec)
{
	(void)rec;
	return 0;
}

uint64_t tv_xen_recorder_bytes(const struct tv_xen_recorder *rec)
{
	(void)rec;
	return 0;
}

uint64_t tv_xen_host_cpu_khz(void)
{
	return 0;	/* as on a host that is not a Xen dom0 */
}

int tv_xen_inject_hooked(unsigned int event, const uint32_t *data, unsigned int nr,
			 uint64_t mono[2], tv_xen_inject_hook hook, void *ctx)
{
	(void)event;
	(void)data;
	(void)nr;
	(void)mono;
	(void)hook;
	(void)ctx;
	return not_built("Injecting a Xen trace record");
}

int tv_xen_inject(unsigned int event, const uint32_t *data, unsigned int nr, uint64_t mono[2])
{
	return tv_xen_inject_hooked(event, data, nr, mono, NULL, NULL);
}
int tv_xen_recorder_flight_write(struct tv_xen_recorder *rec, struct tv_session_writer *w)
{
	(void)rec;
	(void)w;
	return -ENOTSUP;
}

int tv_xen_recorder_flight_bytes(const struct tv_xen_recorder *rec, size_t *per_cpu, int *ncpus)
{
	(void)rec;
	*per_cpu = 0;
	*ncpus = 0;
	return -ENOTSUP;
}

int tv_xen_recorder_watch_exits(struct tv_xen_recorder *rec, const struct tv_xen_exit_rule *rule,
				struct tv_xen_exit_watch **out)
{
	(void)rec;
	(void)rule;
	*out = NULL;
	return -ENOTSUP;
}

void tv_xen_recorder_unwatch_exits(struct tv_xen_recorder *rec, struct tv_xen_exit_watch *w)
{
	(void)rec;
	(void)w;
}

int tv_xen_recorder_isa(const struct tv_xen_recorder *rec)
{
	(void)rec;
	return 0;
}

uint32_t tv_xen_recorder_hlt_code(const struct tv_xen_recorder *rec)
{
	(void)rec;
	return ~0u;
}

#endif
