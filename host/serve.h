/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * tracevisor serve's parts (host/serve*.c): the metrics of one scrape
 * (host/serve_metrics.c: the kernel's rows folded into series, rendered
 * in the Prometheus text format or OpenMetrics) and the small HTTP server
 * that answers the scrapes (host/serve_http.c).
 *
 * Threads: everything here runs on tv_serve_run()'s thread.
 */
#ifndef TV_HOST_SERVE_H
#define TV_HOST_SERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracevisor/tracevisor.h"

/*
 * The histogram's bucket bounds (le): 4^k x 256 ns, k = 0..12, i.e.
 * 256 ns, 1.024 us, 4.096 us ... 4.29 s, then +Inf.  Each is a power of
 * two, hence a bound of the log-linear histogram the kernel keeps
 * (kvm/bpf/top_exits.h): a Prometheus bucket is exactly the sum of the
 * log-linear buckets below its bound.  Why so few: 100 VMs x their
 * reasons stay under 1 MB a scrape (doc/fleet.md).
 */
#define SERVE_NBOUNDS 13
#define SERVE_BOUND_NS(i) (256ULL << (2 * (i)))

/* Longest label values kept (longer ones are cut). */
#define SERVE_NAME_MAX 64
#define SERVE_REASON_MAX 32
/* The reason of an exit code the architecture's table does not name:
 * reasons stay bounded by the tables (lib/format/exit_reasons.c). */
#define SERVE_REASON_UNKNOWN "unknown"

struct serve_vm {
	pid_t tgid;			/* 0: the "_other" VM of --max-vms; --xen: domid + 1 */
	char name[SERVE_NAME_MAX];	/* the vm label */
	char uuid[40];			/* "" when not known */
	uint64_t gone_ns;		/* when its VMM was first seen gone; 0: alive */
	bool folded;			/* beyond --max-vms: its series are "_other"'s */
};

/* One (vm, vcpu, reason) series: an exit counter and a latency histogram. */
struct serve_series {
	unsigned int vm;		/* index in serve_metrics.vms */
	int vcpu;			/* -1 without --per-vcpu */
	char reason[SERVE_REASON_MAX];
	uint64_t count;			/* exits */
	uint64_t timed;			/* exits timed to their entry (the histogram's count) */
	uint64_t sum_ns;
	uint64_t le[SERVE_NBOUNDS];	/* cumulative: timed exits <= SERVE_BOUND_NS(i) */
};

/* The exporter's own health, in one scrape. */
struct serve_health {
	uint64_t lost[3];		/* no row (map full), no open-exit slot, unreadable reason */
	unsigned int programs;		/* BPF programs attached */
	double last_scrape_s;		/* the previous scrape's duration */
	uint64_t scrapes;
	unsigned int vms_over_limit;	/* VMs folded into vm="_other" by --max-vms */
	uint64_t unknown_reasons;	/* rows of codes no table names (reason="unknown") */
	unsigned int max_vms;
	uint64_t refused;		/* HTTP requests refused (401, 429) */
	uint64_t snapshots;		/* POST /snapshot: snapshots taken */
	uint64_t snapshots_refused[2];	/* refused: holdoff, max-snapshots */
};

/* One guest's stream (serve --guest), from tv_guest_get_stats(). */
struct serve_guest {
	char name[SERVE_NAME_MAX];	/* the guest label: its SPEC's name */
	uint64_t up;			/* 1: its agent traces and the stream has not ended */
	uint64_t bytes;			/* received from the agent, every frame */
	uint64_t events, lost;		/* as the agent reported them (0 before it did) */
	uint64_t probes_sent, probes_answered;	/* sync probes: pings and hypercalls */
	uint64_t refused[3];		/* answers to no request (PONG, HCALL_DONE); the stream ended by a bad frame or a limit */
};

struct serve_metrics {
	struct serve_vm *vms;		/* owned */
	size_t nr_vms, cap_vms;
	struct serve_series *series;	/* owned */
	size_t nr_series, cap_series;
	struct serve_health health;
	bool xen;			/* serve --xen: Xen's records, not the kernel's */
	struct serve_guest *guests;	/* owned; nr_guests: serve --guest's */
	size_t nr_guests;
};

/* A new zeroed series for (vm, vcpu, reason), or NULL (no memory): equal
 * keys may repeat until serve_series_sort() merges them. */
struct serve_series *serve_series_new(struct serve_metrics *m, unsigned int vm, int vcpu,
				      const char *reason);
/* Sorted by vm, reason, vcpu, with equal keys merged: call before rendering. */
void serve_series_sort(struct serve_metrics *m);
/*
 * Add the log-linear histogram @hist (TOP_NBUCKETS counts) into @s's
 * cumulative buckets, and its count to @s->timed.
 */
void serve_series_add_hist(struct serve_series *s, const unsigned long long *hist);
/*
 * Add @n buckets of powers of two @hist (bucket b: latencies in
 * (2^(b-1), 2^b] ns, the last one above: xen/xen_flight.h) into @s's
 * cumulative buckets; @s->timed is the caller's.
 */
void serve_series_add_log2(struct serve_series *s, const uint64_t *hist, unsigned int n);
/*
 * Append the exposition of @m to @out: Prometheus text format 0.0.4, or
 * OpenMetrics 1.0 (@openmetrics) ending in "# EOF".
 * Return: 0 or -ENOMEM.
 */
int serve_metrics_render(const struct serve_metrics *m, bool openmetrics, struct tv_strbuf *out);
/* Free what @m owns (not @m). */
void serve_metrics_free(struct serve_metrics *m);

/*
 * The VM label of process @tgid under @proc: QEMU's -name (libvirt's
 * domain name is its guest=), else "comm[pid]"; its -uuid into @uuid
 * ("" when none).  @comm: the name the kernel gave, for a VMM gone.
 */
void serve_vm_identify(const char *proc, pid_t tgid, const char *comm, char *name, size_t size,
		       char *uuid, size_t usize);

/*
 * serve_uuid_canon - @in as a uuid label: 8-4-4-4-12 hex digits, written
 * lowercase into @out (@size >= SERVE_UUID_LEN + 1).  The nil UUID (all
 * zeros: dom0's, or a domain created without one) is none.
 * Return: 0, or -EINVAL (not that format, or nil) with @out "".
 */
int serve_uuid_canon(const char *in, char *out, size_t size);
#define SERVE_UUID_LEN 36

struct serve_web;
/*
 * Read the exporter-toolkit web config at @path (host/serve_web.c: TLS,
 * basic_auth_users, bearer_token_file) into *@out (serve_web_free()).
 * Return: 0 or -errno, logged in one line naming the file and the key.
 */
int serve_web_load(const char *path, struct serve_web **out);
void serve_web_free(struct serve_web *w);
/* The TLS context (OpenSSL's SSL_CTX *), or NULL: plain HTTP. */
struct ssl_ctx_st *serve_web_tls(const struct serve_web *w);
/* Does the request head @head carry valid credentials (true without any configured)? */
bool serve_web_authorized(const struct serve_web *w, const char *head);
/* The WWW-Authenticate value of a 401. */
const char *serve_web_challenge(const struct serve_web *w);

/* Longest alert= and alert_vm= values of a snapshot's session.meta. */
#define SERVE_ALERT_VALUE_MAX 128
/* What POST /snapshot keeps of an Alertmanager webhook (host/serve_alert.c). */
struct serve_alert {
	unsigned int firing;		/* firing alerts; 0: no snapshot */
	char name[SERVE_ALERT_VALUE_MAX];	/* the first firing alert's alertname, sanitised */
	char vms[4 * SERVE_ALERT_VALUE_MAX];	/* their vm labels, distinct, ','-separated */
};
/*
 * serve_alert_parse - Alertmanager's webhook payload (version 4) @body
 * of @len bytes into @a.  Return: 0, or -EINVAL/-ENOMEM with @why (size
 * @wsize) saying what is wrong in one line.
 */
int serve_alert_parse(const char *body, size_t len, struct serve_alert *a, char *why, size_t wsize);

struct serve_http;
/* Listen on @addr ("HOST:PORT", "[V6]:PORT"), with @web (or NULL; it must
 * outlive the server): 0 or -errno (logged). */
int serve_http_open(const char *addr, const struct serve_web *web, struct serve_http **out);
/* Requests refused so far: without credentials (401) or over the rate (429). */
uint64_t serve_http_refused(const struct serve_http *h);
/* The listening socket, for poll(). */
int serve_http_fd(const struct serve_http *h);
/* The answers of serve_http_answer() (@ctx: theirs). */
struct serve_handlers {
	/* GET /metrics: the exposition into @body; 0 or -ENOMEM */
	int (*render)(void *ctx, bool openmetrics, struct tv_strbuf *body);
	/* POST /snapshot (NULL: 404): the body, @len bytes (NUL-terminated);
	 * one line into @reply; the HTTP status (200, 400, 500...) */
	int (*snapshot)(void *ctx, const char *body, size_t len, struct tv_strbuf *reply);
	void *ctx;
};
/*
 * Accept one connection and answer it: GET /metrics and POST /snapshot
 * through @hd; / a short page; other paths 404, other methods 405.  A
 * request's head must arrive whole within 5 s and 8 KiB, a POST's body
 * (Content-Length, no chunks) within the same 5 s and SERVE_BODY_MAX.
 * Return: 0 (a client's error is the client's), or -ENOMEM.
 */
int serve_http_answer(struct serve_http *h, const struct serve_handlers *hd);
/* The largest POST body (413 beyond): an Alertmanager group of ~200 alerts. */
#define SERVE_BODY_MAX (256 * 1024)
void serve_http_close(struct serve_http *h);

#endif
