/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * serve --xen (host/serve_xen.c): VM exits from Xen's trace records in
 * dom0, into serve's series.  Threads: serve's; the Xen recorder drains
 * in a thread of its own.
 */
#ifndef TV_HOST_SERVE_XEN_H
#define TV_HOST_SERVE_XEN_H

#include <stdbool.h>
#include <stdint.h>

/* What the recorder asks of Xen: exits, and the scheduler (whose vCPU runs). */
#define SERVE_XEN_CLASSES "gen,sched,hvm"

struct serve_metrics;
struct serve_xen;

/*
 * serve_xen_open - Xen's tracing started for serve: its consumer (the
 * recorder) and an exit watch counting every exit.  *@out is the
 * caller's (serve_xen_close()).  Return: 0, or -errno logged in one line
 * (-ENODEV: not Xen's dom0; another trace consumer running).
 */
int serve_xen_open(struct serve_xen **out);
struct tv_xen_recorder;
/*
 * serve_xen_open_on - the exit watch on @rec, a Xen flight recorder
 * started by the caller (serve --xen --flight-recorder: the session
 * recorder's), which outlives *@out and stays the caller's.  Return: 0,
 * or -errno logged in one line.
 */
int serve_xen_open_on(struct tv_xen_recorder *rec, struct serve_xen **out);
/* Xen's tracing stopped and restored (not a borrowed recorder's), the temporary session removed; NULL-safe. */
void serve_xen_close(struct serve_xen *x);

struct serve_xen_opts {
	uint64_t now_ns, forget_ns;	/* CLOCK_MONOTONIC; a gone domain's rows stay this long */
	unsigned int max_vms;
	bool per_vcpu;
};
/*
 * serve_xen_scrape - the exits counted so far as series of @m (appended;
 * @m->vms is the cache of domains: vm->tgid is the domid + 1, 0 for
 * "_other"), health.lost[0] the exits past the watch's row bound.
 * Return: 0 or -ENOMEM.
 */
int serve_xen_scrape(struct serve_xen *x, struct serve_metrics *m, const struct serve_xen_opts *o);

#endif
