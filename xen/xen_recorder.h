/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Xen's recorder (xen/xen_recorder.c, or xen/no_xen.c without Xen) as the layers
 * above use it: the session recording (host/recorder.c) and top --xen
 * (host/top_xen.c); a client program records through
 * tv_session_record_start() with opts.xen.  Also the hypervisor pieces
 * host/ drives besides: injection bracketed by the sync probe
 * (xen/inject.c) and domains by name (xen/xenstore.c).
 */
#ifndef TV_XEN_XEN_RECORDER_H
#define TV_XEN_XEN_RECORDER_H

#include <stdint.h>

#include "tracevisor/tracevisor.h"

/*
 * Threads: a Xen recorder runs one drain thread between its start and
 * stop; call the tv_xen_recorder_* functions from one thread.
 */
struct tv_xen_recorder;

/**
 * tv_xen_recorder_create - map Xen's trace buffers for recording
 * @opts: what to record and where (copied; its strings must outlive @out)
 * @out: the recorder, owned by the caller (tv_xen_recorder_destroy())
 *
 * Opens libxenctrl, libxenforeignmemory and libxenevtchn, allocates the
 * buffers if Xen has none, maps t_info and every CPU's buffer, binds
 * VIRQ_TBUF and creates DIR/xen/.  Tracing starts with
 * tv_xen_recorder_start().  Threads: one caller thread; the recorder
 * drains in a thread of its own between start and stop.
 * Return: 0 or -errno; -ENODEV when this is not a Xen dom0, -ENOTSUP when
 * built without Xen (both logged on one line).
 */
int tv_xen_recorder_create(const struct tv_xen_record_opts *opts, struct tv_xen_recorder **out);

/**
 * tv_xen_recorder_start - set the masks, enable tracing, start the drain thread
 * @rec: the recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_recorder_start(struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_stop - disable tracing, drain every CPU, restore the masks, write xen/meta
 * @rec: a started recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_xen_recorder_stop(struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_destroy - restore the hypervisor's trace state if still changed, unmap, free
 * @rec: a recorder, or NULL
 */
void tv_xen_recorder_destroy(struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_nr_cpus - the number of physical CPUs recorded
 * @rec: the recorder
 */
int tv_xen_recorder_nr_cpus(const struct tv_xen_recorder *rec);

/**
 * tv_xen_recorder_bytes - bytes written so far (progress output)
 * @rec: the recorder
 *
 * Threads: safe while the drain thread runs (a snapshot).
 */
uint64_t tv_xen_recorder_bytes(const struct tv_xen_recorder *rec);

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
 * A flight recorder (opts.flight_bytes, xen/xen_flight.h): the drain
 * thread keeps each pCPU's last opts.flight_bytes / pCPUs bytes in dom0
 * memory instead of writing cpuN.xen; _stop() writes them as the
 * session's xen/.
 *
 * tv_xen_recorder_flight_write - a snapshot: every record Xen wrote so
 * far drained into the rings, then the rings copied into @w's xen/
 * (cpuN.xen, meta), "xen" listed in @w (its owner commits).  From the
 * caller's thread.  Return: 0, -EINVAL not a flight recorder, -errno (logged).
 */
int tv_xen_recorder_flight_write(struct tv_xen_recorder *rec, struct tv_session_writer *w);
/* The ring size per pCPU and how many: 0, -EINVAL not a flight recorder. */
int tv_xen_recorder_flight_bytes(const struct tv_xen_recorder *rec, size_t *per_cpu, int *ncpus);
struct tv_xen_exit_rule;
struct tv_xen_exit_watch;
/*
 * tv_xen_recorder_watch_exits - exit-latency on the records as they are
 * drained (one watch per rule, at most 16; rule->hlt is filled here when
 * the rule leaves hlt out).  The watch is the caller's:
 * tv_xen_recorder_unwatch_exits() detaches and frees it.  Return: 0,
 * -EINVAL not a flight recorder, -EBUSY 16 watch already, -ENOMEM.
 */
int tv_xen_recorder_watch_exits(struct tv_xen_recorder *rec, const struct tv_xen_exit_rule *rule,
				struct tv_xen_exit_watch **out);
void tv_xen_recorder_unwatch_exits(struct tv_xen_recorder *rec, struct tv_xen_exit_watch *w);
/* enum tv_kvm_isa of the host's HVM exits (0: not known), and its hlt's code (~0: none). */
int tv_xen_recorder_isa(const struct tv_xen_recorder *rec);
uint32_t tv_xen_recorder_hlt_code(const struct tv_xen_recorder *rec);

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
/*
 * tv_xen_domain_uuid - the UUID part of domain @domid's /local/domain/ID/vm
 * ("/vm/UUID", as libxl writes it), as xenstore holds it: unchecked, the
 * caller validates its format.
 * Return: 0 with @buf filled, -EINVAL (not "/vm/..."), -E2BIG (longer
 * than @size), -errno of xenstore (-ENOENT: no such key), -ENOTSUP built
 * without Xen.  Logs nothing.
 */
int tv_xen_domain_uuid(unsigned int domid, char *buf, size_t size);
/* The domid of the domain named @name: 0, -ENOENT, -errno; logs nothing. */
int tv_xen_domain_id(const char *name, unsigned int *domid);

/**
 * tv_xen_host_cpu_khz - xc_physinfo's cpu_khz
 *
 * Return: kHz, or 0 when not on a Xen dom0 (or built without Xen).
 */
uint64_t tv_xen_host_cpu_khz(void);

#endif
