/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The metrics exporter (`tracevisor serve`): VM exits aggregated in the
 * kernel, served over HTTP on /metrics in the Prometheus text format.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_SERVE_H
#define TRACEVISOR_SERVE_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/serve.h>"
#endif

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(default)

#define TV_SERVE_DEFAULT_LISTEN "127.0.0.1:9477"
#define TV_SERVE_DEFAULT_MAX_VMS 1024
#define TV_SERVE_DEFAULT_FORGET_S 300
#define TV_SERVE_DEFAULT_OUTDIR "tracevisor-serve"

struct tv_serve_opts {
	const char *listen;		/* ADDR:PORT ([v6]:PORT); NULL: the default */
	bool per_vcpu;			/* a vcpu label on the exit metrics */
	unsigned int max_vms;		/* VMs with series of their own; the
					 * others' exits go to vm="_other"; 0:
					 * the default */
	unsigned int forget_s;		/* a gone VMM's series stay this long
					 * (its last exits get scraped); 0: the
					 * default */
	const char *web_config;		/* the Prometheus exporter-toolkit web
					 * config (TLS, basic_auth_users) and
					 * bearer_token_file; NULL: plain HTTP,
					 * no authentication */
	/*
	 * > 0: a host flight recorder (record --flight-recorder SIZE: the
	 * kvm events, the last @flight_bytes in memory) kept armed in
	 * @outdir (NULL: "tracevisor-serve"), and POST /snapshot taking
	 * Alertmanager's webhook (version 4): a snapshot @outdir/snapshot-N
	 * per request with a firing alert, alert= (its alertname,
	 * sanitised) and alert_vm= (the alerts' vm labels) in its
	 * session.meta.  0: POST /snapshot gets 404.
	 */
	uint64_t flight_bytes;
	const char *outdir;
	/*
	 * The webhook's snapshots, bounded as record's triggered ones: at
	 * most @max_snapshots (0: record's default, 10), none within
	 * @trigger_holdoff of the last (a duration with its unit, "30s";
	 * NULL: record's default, 10 s).  A request refused gets 429; the
	 * disk they take is at most @max_snapshots x about @flight_bytes.
	 */
	unsigned int max_snapshots;
	const char *trigger_holdoff;
	/*
	 * Xen's dom0: exits from Xen's trace records (the consumer of record
	 * --xen and top --xen) instead of the kernel's programs; the vm
	 * label is the domain's xl name.  Not with @flight_bytes.
	 */
	bool xen;
	/*
	 * Guests (record --guest SPECs, parsed and resolved) recorded by the
	 * flight recorder (needs @flight_bytes): their agents keep their
	 * rings, a snapshot takes them too, and each guest's stream figures
	 * are served (tracevisor_guest_*{guest="NAME"}).
	 */
	const struct tv_guest_spec *guests;
	size_t nr_guests;
	int stop_fd;			/* readable: stop (a signalfd of SIGTERM
					 * and SIGINT); required */
};

/**
 * tv_serve_run - run the exporter until @opts->stop_fd is readable
 * @opts: settings (read during the call only)
 *
 * Attaches the exit programs of top --bpf (tp_btf, else the tracepoint
 * flavour), or with @opts->xen consumes Xen's trace records, listens on @opts->listen and answers GET /metrics with the
 * Prometheus text format, or OpenMetrics when the request's Accept asks
 * for application/openmetrics-text.  One request at a time, on the
 * calling thread.  Everything it attached and opened is released before
 * it returns, whatever the outcome.  The caller ignores SIGPIPE (TLS
 * writes to a client that went away go through write(2)).
 * Return: 0 after a stop, or -errno (logged in one line: the address in
 * use, no BPF, no kvm events...).
 */
int tv_serve_run(const struct tv_serve_opts *opts);

#pragma GCC visibility pop

#endif
