/* SPDX-License-Identifier: LGPL-2.1 */
/* Internals of xen/: the domain directory, shared by recorder and importer. */
#ifndef TV_XEN_INTERNAL_H
#define TV_XEN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xen_trace.h"

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
	struct tv_xen_meta_kv *extra;	/* per-CPU time scale and the like */
	size_t nr_extra;
	/* ncpus counts taken while recording, or NULL: count the cpuN.xen files */
	const struct tv_xen_cpu_count *counts;
};

int tv_xen_write_meta(const char *domain_dir, const struct tv_xen_meta_info *info);

struct tv_xen_recorder;
/*
 * tv_xen_recorder_checkpoint - write xen/meta of a started recorder now
 * (clock, scale, the running vCPUs at the start), so that a reader can
 * follow the session while it is recorded (top --xen); _stop() writes it
 * again, complete.  Return: 0 or -errno (logged).
 */
int tv_xen_recorder_checkpoint(struct tv_xen_recorder *rec);
/*
 * tv_xen_recorder_flush - wait until the drain thread went over every CPU
 * once after the call began: every record Xen wrote before the call is
 * then in cpuN.xen.  Return: 0, -ETIMEDOUT after @timeout_ms (logged), or
 * the drain thread's error.  From the caller's thread, while started.
 */
int tv_xen_recorder_flush(struct tv_xen_recorder *rec, int timeout_ms);
struct tv_session_writer;
/*
 * SESSION/xen with its formats, from the session writer @w (which makes
 * SESSION first if no recorder has yet); its path into @out.
 */
int tv_xen_make_domain_dir(struct tv_session_writer *w, char *out, size_t size);
/*
 * tv_xen_recorder_create_in - tv_xen_recorder_create() into @w's session
 * (borrowed: it outlives the recorder; its owner commits session.meta).
 * The recorder writes only DIR/xen and lists "xen" at its stop.
 * opts->outdir is not read.  @w NULL: a writer of its own for
 * opts->outdir, committed at its stop (tv_xen_recorder_create()).
 * Return: as tv_xen_recorder_create().
 */
int tv_xen_recorder_create_in(struct tv_session_writer *w, const struct tv_xen_record_opts *opts,
			      struct tv_xen_recorder **out);

/*
 * tv_xen_inject() with @hook called just before (after = 0) and just after
 * (after = 1) the hypercall, inside the open handle's lifetime: how the
 * sync probe (host/xen_probe.c) brackets it with dom0 markers.
 */
typedef void (*tv_xen_inject_hook)(void *ctx, int after);
int tv_xen_inject_hooked(unsigned int event, const uint32_t *data, unsigned int nr,
			 uint64_t mono[2], tv_xen_inject_hook hook, void *ctx);

/* A running domain found by name in xenstore (xen/xenstore.c). */
struct tv_xen_domain {
	unsigned int domid;
	unsigned int nr_vcpus;		/* /local/domain/ID/cpu entries, 0: unknown */
	char channel[256];		/* dom0 end (unix socket) of org.tracevisor.0 */
};

/*
 * tv_xen_domain_find - look up a domain by its xl name through xenstore
 * Return: 0 with @dom filled, or -errno with the reason logged (-ENOENT: no
 * such domain, or no agent channel; -ENOTSUP: built without Xen).
 */
int tv_xen_domain_find(const char *name, struct tv_xen_domain *dom);
/*
 * tv_xen_domain_name - the xl name of domain @domid (/local/domain/ID/name)
 * Return: 0 with @buf filled, -ENOENT (no such domain now), -errno of
 * xenstore, -ENOTSUP built without Xen.  Logs nothing: the caller names
 * the domain some other way.
 */
int tv_xen_domain_name(unsigned int domid, char *buf, size_t size);
/* The domid of the domain named @name: 0, -ENOENT, -errno; logs nothing. */
int tv_xen_domain_id(const char *name, unsigned int *domid);

#endif
