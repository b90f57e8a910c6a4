// SPDX-License-Identifier: LGPL-2.1
/*
 * One recording session: the host recorder (kvm/kvm_recorder.c), Xen's
 * (xen/xen_recorder.c) and the guests (host/guest.c), started and stopped in the
 * one order that keeps every clock-sync probe inside the recorded traces:
 *
 *   start: host created, Xen created, host started, Xen started, guests
 *          started and awaited, first dom0/Xen probe burst
 *   stop:  guests stopped (their last probes need the host still tracing),
 *          last dom0/Xen probe burst, Xen stopped (lists xen/), host
 *          stopped, session.meta committed
 *
 * The session directory is this file's: one session writer (lib/
 * session_writer.c) per session and per flight-recorder snapshot.  Each
 * recorder gets it, takes its own subfolder from it and lists its domain
 * when whole: the host at its create (the reference), each guest and its
 * traced processes as the guest ends, the host's traced processes at the
 * UST stop, Xen at its stop.  session.meta is committed here, once.
 *
 * Both waits for the guests (start: until they trace; stop: until they
 * end, each by its own deadline) watch opts.cancel_fd, so that the
 * caller's Ctrl-C is heard while a guest withholds its answer.
 *
 * The dom0/Xen probes follow the guests' schedule (host/probe_sched.c).
 * The library prints nothing; tv_session_record_opts.notify hears what a
 * user should know.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "probe_sched.h"
#include "ust_listen.h"
#include "ust_record.h"
#include "guest_stop.h"
#include "../kvm/recorder_session.h"
#include "guest.h"
#include "xen_probe.h"
#include "flight.h"
#include "flight_guest.h"
#include "../kvm/kvm_recorder.h"
#include "../xen/xen_recorder.h"

#include <poll.h>

/* dom0/Xen probe rounds at start and end, like the guests' bursts. */
#define XEN_EDGE_PROBES 3
#define VCPU_SCAN_INTERVAL_S 1.0

struct tv_session_record {
	struct tv_session_record_opts opts;
	struct tv_session_writer *session;	/* DIR: the recorders' subfolders, session.meta */
	const char *events[TV_SESSION_MAX_EVENTS];
	const char *filters[TV_SESSION_MAX_EVENTS];	/* events[i]'s own, or NULL */
	struct tv_recorder *host;
	struct tv_xen_recorder *xen;
	struct tv_guest **guests;	/* opts.nr_guests, NULL: not started */
	struct tv_ust_recorder *ust;	/* record --ust */
	char ust_list[600];		/* the --ust globs for the agents */
	unsigned int snapshots;		/* the last snapshot-N tried */
	bool host_flight;		/* the host kernel's ring kept (host.flight_bytes) */
	bool xen_flight;		/* Xen's rings kept in dom0 (xen_opts.flight_bytes) */
	struct tv_flight_opts flight_opts;	/* --trigger, checked before anything starts */
	struct tv_flight *flight;	/* armed once every recorder runs */
	struct tv_probe_sched xen_sched;
	uint64_t xen_seq;		/* next dom0/Xen sync probe */
	bool xen_probes_off;		/* one failed: no more */
	double next_scan;		/* of /proc for new VMs */
	int wait_err;			/* poll() of cancel_fd failed: -errno, logged */
};

static void notify(struct tv_session_record *s, enum tv_session_note note, const char *name,
		   int err, const char *detail)
{
	if (s->opts.notify)
		s->opts.notify(s->opts.notify_ctx, note, name, err, detail);
}

/*
 * Sync probes need kvm_hypercall (and the TSC relation kvm_write_tsc_offset)
 * in the host trace: add them to an explicit -e list when this host has
 * them.  The default ("kvm") has them already.
 */
static void add_sync_events(struct tv_session_record *s)
{
	static const char *const sync_events[] = { "kvm:kvm_hypercall", "kvm:kvm_write_tsc_offset" };
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	struct tv_record_opts *h = &s->opts.host;

	if (!s->opts.nr_guests || !h->nr_events)
		return;
	for (size_t i = 0; i < 2; i++) {
		char path[128];
		int present = 0;

		for (size_t r = 0; r < 2; r++) {
			snprintf(path, sizeof(path), "%s/events/kvm/%s", roots[r], sync_events[i] + 4);
			present |= access(path, F_OK) == 0;
		}
		if (present && h->nr_events < TV_SESSION_MAX_EVENTS)
			s->events[h->nr_events++] = sync_events[i];
	}
}

/*
 * --xen with guests and no -e: the guests' sync probes need dom0's trace
 * (their markers), so dom0 records the scheduler too (the KVM default,
 * every kvm event, means nothing in dom0).
 */
static void dom0_default_events(struct tv_session_record *s)
{
	static const char *const dom0_events[] = { "sched:sched_switch", "sched:sched_wakeup" };
	struct tv_record_opts *h = &s->opts.host;

	if (!s->opts.xen || !s->opts.nr_guests || h->nr_events || h->nr_time_functions)
		return;
	for (size_t i = 0; i < 2; i++)
		s->events[h->nr_events++] = dom0_events[i];
}

/* Host recorder (when -e or no --xen) then Xen's, into the same session. */
static int start_recorders(struct tv_session_record *s)
{
	int ret = 0;

	if (!s->opts.xen || s->opts.host.nr_events || s->opts.host.nr_time_functions) {
		ret = tv_recorder_create_in(s->session, &s->opts.host, &s->host);
		if (ret)
			return ret;
	}
	if (s->opts.xen)
		ret = tv_xen_recorder_create_in(s->session, &s->opts.xen_opts, &s->xen);
	if (!ret && s->host)
		ret = tv_recorder_start(s->host);
	if (!ret && s->xen)
		ret = tv_xen_recorder_start(s->xen);
	return ret;
}

/* The host's traced processes, in the host's trace clock (host/ust_record.c). */
static int start_ust(struct tv_session_record *s)
{
	static const char *const all[] = { "*" };
	struct tv_ust_record_opts uo = {
		.session = s->session, .clock = s->opts.host.clock,
		.patterns = s->opts.nr_ust_patterns ? s->opts.ust_patterns : all,
		.nr_patterns = s->opts.nr_ust_patterns ? s->opts.nr_ust_patterns : 1,
		.socket = s->opts.ust_socket,
		.flight_bytes = s->opts.ust_flight_bytes,
		.mode = s->opts.ust_mode,
		.subbuf_size = s->opts.ust_subbuf_size,
		.nr_subbufs = s->opts.ust_nr_subbufs,
	};

	if (!s->host) {
		tv_err("--ust needs the host recorder: give -e EVENT with --xen");
		return -EINVAL;
	}
	return tv_ust_recorder_start(&uo, &s->ust);
}

/*
 * Wait up to @ms for an interruption (opts.cancel).  Return: true to give
 * up waiting: the caller's cancel said so, or poll() failed (then logged,
 * and the stop says so: a wait that cannot watch for Ctrl-C is not kept).
 */
static bool session_interrupted(struct tv_session_record *s, int ms)
{
	struct pollfd pfd = { .fd = s->opts.cancel_fd, .events = POLLIN };
	int n;

	if (!s->opts.cancel) {
		poll(NULL, 0, ms);
		return false;
	}
	n = poll(&pfd, 1, ms);
	if (n < 0 && errno != EINTR) {
		tv_err("Cannot wait for an interruption: fd=%d, errno=%d (%s)", s->opts.cancel_fd,
		       errno, strerror(errno));
		s->wait_err = -errno;
		return true;
	}
	return n > 0 && s->opts.cancel(s->opts.notify_ctx) != 0;
}

static void notify_not_ready(struct tv_session_record *s, struct tv_guest *g, int err)
{
	struct tv_guest_stats st;

	tv_guest_get_stats(g, &st);
	notify(s, TV_SESSION_GUEST_NOT_READY, tv_guest_name(g), err, st.status[0] ? st.status : NULL);
}

/*
 * The workload starts once every guest traces (or gave up): one timeout
 * for all, each guest said once, as it fails or at the timeout; an
 * interruption ends the wait at once (the guests are then stopped).
 */
static int wait_guests_ready(struct tv_session_record *s, int timeout_ms)
{
	double start = tv_probe_sched_now(), deadline = start + timeout_ms / 1000.0;
	/* 1: said ready or not; 2: said still waiting (a user hears why early) */
	char *said = calloc(s->opts.nr_guests ? s->opts.nr_guests : 1, 1);

	if (!said)
		return -ENOMEM;
	for (;;) {
		bool note = tv_probe_sched_now() - start >= TV_SESSION_GUEST_WAIT_NOTE_MS / 1000.0;
		size_t waiting = 0;
		double left;

		for (size_t i = 0; i < s->opts.nr_guests; i++) {
			int ret;

			if (said[i] == 1)
				continue;
			ret = tv_guest_wait_ready(s->guests[i], 0);
			if (ret == -ETIMEDOUT) {
				waiting++;
				if (note && !said[i]) {
					said[i] = 2;
					notify(s, TV_SESSION_GUEST_WAITING, tv_guest_name(s->guests[i]),
					       tv_guest_connect_error(s->guests[i]), NULL);
				}
				continue;
			}
			said[i] = 1;
			if (ret)
				notify_not_ready(s, s->guests[i], ret);
		}
		left = deadline - tv_probe_sched_now();
		if (!waiting)
			break;
		if (left <= 0) {
			for (size_t i = 0; i < s->opts.nr_guests; i++)
				if (said[i] != 1)
					notify_not_ready(s, s->guests[i], -ETIMEDOUT);
			break;
		}
		if (session_interrupted(s, left < 0.02 ? (int)(left * 1000) + 1 : 20))
			break;
	}
	free(said);
	return s->wait_err;
}

static int start_guests(struct tv_session_record *s)
{
	int timeout = s->opts.guest_ready_timeout_ms > 0 ? s->opts.guest_ready_timeout_ms
							 : TV_SESSION_GUEST_READY_TIMEOUT_MS;
	int ret;

	for (size_t i = 0; i < s->opts.nr_guests; i++) {
		s->opts.guest_opts.index = (unsigned int)i;
		ret = tv_guest_start(s->host, &s->opts.guests[i], &s->opts.guest_opts, &s->guests[i]);
		if (ret)
			return ret;
	}
	return wait_guests_ready(s, timeout);
}

/*
 * dom0/Xen clock-sync probes (doc/sync-probes.md): only when dom0's trace
 * is recorded too, since the markers bracketing Xen's record live there.
 */
static void xen_probes(struct tv_session_record *s, unsigned int n)
{
	if (!s->xen || !s->host || s->xen_probes_off)
		return;
	for (unsigned int i = 0; i < n; i++) {
		if (tv_xen_sync_probe(s->host, s->xen_seq++)) {
			notify(s, TV_SESSION_XEN_PROBES_FAILED, NULL, -EIO, NULL);
			s->xen_probes_off = true;
			return;
		}
	}
}

/* The agents get the --ust globs as one comma list (START's "ust" key). */
static int ust_join(struct tv_session_record *s)
{
	size_t len = 0;

	s->ust_list[0] = '\0';
	for (size_t i = 0; i < s->opts.nr_ust_patterns || (!i && !s->opts.nr_ust_patterns); i++) {
		const char *p = s->opts.nr_ust_patterns ? s->opts.ust_patterns[i] : "*";
		int n = snprintf(s->ust_list + len, sizeof(s->ust_list) - len, "%s%s", i ? "," : "", p);

		if (strchr(p, ',') || n < 0 || (size_t)n >= sizeof(s->ust_list) - len) {
			tv_err("--ust patterns for the guests: no commas, at most %zu bytes in all",
			       sizeof(s->ust_list) - 1);
			return -EINVAL;
		}
		len += (size_t)n;
	}
	s->opts.guest_opts.ust = s->ust_list;
	s->opts.guest_opts.ust_mode = s->opts.ust_mode;
	s->opts.guest_opts.ust_subbuf_size = s->opts.ust_subbuf_size;
	s->opts.guest_opts.ust_nr_subbufs = s->opts.ust_nr_subbufs;
	return 0;
}

/* The processes' policy (--ust-mode, --ust-buffer), checked before anything is created. */
static int ust_policy_check(const struct tv_session_record *s)
{
	struct tv_ust_record_opts uo = {
		.flight_bytes = s->opts.ust_flight_bytes,
		.mode = s->opts.ust_mode,
		.subbuf_size = s->opts.ust_subbuf_size,
		.nr_subbufs = s->opts.ust_nr_subbufs,
	};
	struct tv_ust_policy pol;

	if (!s->opts.ust && (uo.mode || uo.subbuf_size || uo.nr_subbufs)) {
		tv_err("--ust-mode and --ust-buffer need --ust (the traced processes they configure)");
		return -EINVAL;
	}
	return tv_ust_recorder_policy(&uo, &pol);
}

/*
 * The soft limit of open files up to the hard one: 1024, the usual soft
 * limit, is what one guest's 1024 CPU files alone would take.  Each guest
 * also has its own budget (TV_GUEST_MAX_OPEN_CPU_FILES, UST files only
 * while written), so this is headroom, not the bound.  A command that
 * record starts gets the caller's limit back (tools/cmd_record.c).
 */
static void nofile_raise(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur >= r.rlim_max)
		return;
	r.rlim_cur = r.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &r))
		tv_warn("Cannot raise the open-file limit to its hard limit %llu: errno=%d (%s)",
			(unsigned long long)r.rlim_max, errno, strerror(errno));
}

/* A --trigger's DURATION option, or @def without it. */
static int flight_duration(const char *what, const char *arg, uint64_t def, uint64_t *ns)
{
	*ns = def;
	if (arg && tv_flight_parse_duration(arg, ns)) {
		tv_err("Invalid %s: '%s' (a duration with its unit: 100ms, 2s, 500us)", what, arg);
		return -EINVAL;
	}
	return 0;
}

/*
 * The triggers and their options, before anything is created: a bad rule
 * leaves no session.  Exit rules time with CLOCK_MONOTONIC (BPF's clock):
 * the host's trace clock defaults to mono with them, so that their
 * trigger_time is in the session's clock.
 */
static int flight_check(struct tv_session_record *s)
{
	const struct tv_session_record_opts *o = &s->opts;
	struct tv_flight_opts *fo = &s->flight_opts;
	int ret;

	if (!o->nr_triggers && !o->trigger_post && !o->trigger_holdoff && !o->max_snapshots)
		return 0;
	if (!o->host.flight_bytes && !(o->xen && o->xen_opts.flight_bytes)) {
		tv_err("--trigger, --post, --trigger-holdoff and --max-snapshots need --flight-recorder SIZE (the rings a snapshot writes: the host kernel's, with --xen Xen's)");
		return -EINVAL;
	}
	ret = tv_flight_rules_check(o->triggers, o->nr_triggers);
	if (!ret)
		ret = tv_flight_guest_rules_check(o->triggers, o->nr_triggers, o->guests, o->nr_guests);
	if (!ret)
		ret = flight_duration("--post", o->trigger_post, TV_FLIGHT_DEFAULT_POST_NS, &fo->post_ns);
	if (!ret)
		ret = flight_duration("--trigger-holdoff", o->trigger_holdoff,
				      TV_FLIGHT_DEFAULT_HOLDOFF_NS, &fo->holdoff_ns);
	if (ret)
		return ret;
	fo->rules = o->triggers;
	fo->nr_rules = o->nr_triggers;
	fo->max_snapshots = o->max_snapshots;
	for (size_t i = 0; i < o->nr_triggers && !s->opts.host.clock && !o->xen; i++)
		if (!strncmp(o->triggers[i], "exit-latency>", 13))
			s->opts.host.clock = "mono";
	fo->clock = s->opts.host.clock;
	return 0;
}

/* Everything tv_session_record_start() does; on failure the caller destroys @s. */
static int session_record_start(struct tv_session_record *s,
				const struct tv_session_record_opts *opts)
{
	int ret;

	nofile_raise();
	s->opts = *opts;
	ret = flight_check(s);
	if (ret)
		return ret;
	if (opts->host.nr_events > TV_SESSION_MAX_EVENTS) {
		tv_err("too many events (at most %d)", TV_SESSION_MAX_EVENTS);
		return -EINVAL;
	}
	for (size_t i = 0; i < opts->host.nr_events; i++) {
		s->events[i] = opts->host.events[i];
		s->filters[i] = opts->host.event_filters ? opts->host.event_filters[i] : NULL;
	}
	s->opts.host.events = s->events;
	s->opts.host.event_filters = s->filters;	/* sized for add_sync_events() */
	/* user space reads mono and x86-tsc only: a --ust session defaults to mono */
	if (s->opts.ust && !s->opts.host.clock)
		s->opts.host.clock = "mono";
	s->opts.guest_opts.clock = s->opts.host.clock;
	s->flight_opts.clock = s->opts.host.clock;
	/* the guests keep their rings too, SIZE each, their triggers evaluated in them */
	s->opts.guest_opts.flight_bytes = s->opts.host.flight_bytes;
	s->opts.guest_opts.triggers = s->opts.triggers;
	s->opts.guest_opts.nr_triggers = s->opts.nr_triggers;
	if (ust_policy_check(s) || (s->opts.ust && s->opts.nr_guests && ust_join(s)))
		return -EINVAL;
	s->guests = calloc(opts->nr_guests ? opts->nr_guests : 1, sizeof(*s->guests));
	if (!s->guests || tv_session_writer_new(s->opts.host.outdir, 0, &s->session))
		return -ENOMEM;
	tv_probe_sched_init(&s->xen_sched, s->opts.guest_opts.sync_interval > 0
					   ? s->opts.guest_opts.sync_interval
					   : TV_GUEST_DEFAULT_SYNC_INTERVAL, XEN_EDGE_PROBES);
	dom0_default_events(s);
	add_sync_events(s);
	ret = start_recorders(s);
	s->host_flight = s->host && s->opts.host.flight_bytes;
	s->xen_flight = s->xen && s->opts.xen_opts.flight_bytes;
	s->flight_opts.xen = s->xen_flight ? s->xen : NULL;	/* exit rules on Xen's records */
	if (!ret && s->opts.nr_guests && !s->host) {
		tv_err("--guest needs the host recorder: give -e EVENT with --xen");
		ret = -EINVAL;
	}
	if (!ret && s->opts.ust)
		ret = start_ust(s);
	if (!ret)
		ret = start_guests(s);
	if (!ret)
		xen_probes(s, tv_probe_sched_begin(&s->xen_sched, tv_probe_sched_now()));
	if (!ret && s->opts.nr_triggers)
		ret = tv_flight_arm(&s->flight_opts, &s->flight);
	if (!ret && s->flight)
		tv_guest_flight_attach(s->guests, s->opts.nr_guests, s->flight);
	s->next_scan = tv_probe_sched_now() + VCPU_SCAN_INTERVAL_S;
	return ret;
}

int tv_session_record_start(const struct tv_session_record_opts *opts,
			    struct tv_session_record **out)
{
	struct tv_session_record *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	ret = session_record_start(s, opts);
	if (ret)
		goto err;
	*out = s;
	return 0;
err:
	tv_session_record_destroy(s);
	return ret;
}

int tv_session_record_tick_ms(const struct tv_session_record *s)
{
	double wait = s->xen_sched.interval < VCPU_SCAN_INTERVAL_S ? s->xen_sched.interval
								  : VCPU_SCAN_INTERVAL_S;
	int ms = (int)(wait * 1000);
	int due = s->flight ? tv_flight_next_ms(s->flight) : -1;

	return due >= 0 && due < ms ? due : ms;
}

int tv_session_record_wait_fd(const struct tv_session_record *s)
{
	return s->flight ? tv_flight_fd(s->flight) : -1;
}

static int session_snapshot(struct tv_session_record *s, const char *const *keys,
			    char *path, size_t size);

/* Said before the snapshot is written: a guest's ring can take many seconds. */
static void notify_fired(struct tv_session_record *s, const char *const *keys)
{
	char detail[1024];
	size_t used = 0;

	detail[0] = '\0';
	for (size_t i = 0; keys[i] && used < sizeof(detail); i += 2) {
		int n = snprintf(detail + used, sizeof(detail) - used, "%s%s=%s", used ? " " : "", keys[i],
				 keys[i + 1]);

		if (n < 0 || (size_t)n >= sizeof(detail) - used)
			break;
		used += (size_t)n;
	}
	notify(s, TV_SESSION_TRIGGER_FIRED, NULL, 0, detail);
}

/* The triggers' work: a due snapshot, the refusals said. */
static void flight_tick(struct tv_session_record *s)
{
	static const char *const why[] = { "busy", "holdoff", "max-snapshots" };
	struct tv_flight_fire fire;
	unsigned int refused[3];
	char path[4200];
	int ret;

	if (!s->flight)
		return;
	tv_flight_next_ms(s->flight);	/* reads the eventfd */
	if (tv_flight_due(s->flight, &fire)) {
		notify_fired(s, fire.keys);
		ret = session_snapshot(s, fire.keys, path, sizeof(path));
		tv_flight_done(s->flight, !ret);
		notify(s, TV_SESSION_SNAPSHOT, ret ? NULL : path, ret, fire.keys[1]);
	}
	tv_flight_refused(s->flight, &refused[0], &refused[1], &refused[2]);
	for (int i = 0; i < 3; i++)
		if (refused[i])
			notify(s, TV_SESSION_TRIGGER_REFUSED, NULL, (int)refused[i], why[i]);
}

void tv_session_record_tick(struct tv_session_record *s)
{
	double now = tv_probe_sched_now();

	flight_tick(s);
	if (s->xen && tv_probe_sched_due(&s->xen_sched, now))
		xen_probes(s, 1);
	if (s->host && now >= s->next_scan) {
		/* VMs started since the last scan */
		tv_recorder_scan_vcpus(s->host);
		s->next_scan = now + tv_session_record_tick_ms(s) / 1000.0;
	}
}

/*
 * Every guest ends by its own deadline (host/guest.c: 7 s after the
 * request), in parallel; an interruption meanwhile cuts them all short.
 */
static void wait_guests_stopped(struct tv_session_record *s)
{
	bool aborted = false;

	for (;;) {
		bool running = false;

		for (size_t i = 0; i < s->opts.nr_guests; i++)
			if (s->guests[i] && !tv_guest_finished(s->guests[i]))
				running = true;
		if (!running)
			return;
		if (aborted) {
			poll(NULL, 0, 10);
		} else if (session_interrupted(s, 50)) {
			for (size_t i = 0; i < s->opts.nr_guests; i++)
				if (s->guests[i])
					tv_guest_abort(s->guests[i]);
			aborted = true;
		}
	}
}

int tv_session_record_stop(struct tv_session_record *s)
{
	int ret = 0;

	/* no trigger while the recorders stop */
	tv_guest_flight_attach(s->guests, s->opts.nr_guests, NULL);
	tv_flight_disarm(s->flight);
	s->flight = NULL;
	/* All at once: a dead guest's timeout must not hold the others. */
	for (size_t i = 0; i < s->opts.nr_guests; i++)
		if (s->guests[i])
			tv_guest_request_stop(s->guests[i]);
	wait_guests_stopped(s);
	/* Guests first: their last probes need the host still tracing. */
	for (size_t i = 0; i < s->opts.nr_guests; i++)
		if (s->guests[i])
			tv_guest_stop(s->guests[i]);
	/* traced processes while the host still traces: one timeline to the end */
	if (s->ust && tv_ust_recorder_stop(s->ust, s->session))
		ret = -1;
	xen_probes(s, tv_probe_sched_end(&s->xen_sched));
	if (s->xen)
		ret = tv_xen_recorder_stop(s->xen) ? -1 : 0;
	if (s->host && tv_recorder_stop(s->host))
		ret = -1;
	/* last, once every domain is listed: with the host when host/ is
	 * whole, else (Xen alone) when Xen stopped cleanly */
	if ((s->host ? tv_recorder_finished(s->host) : s->xen && !ret) &&
	    tv_session_writer_commit(s->session, NULL))
		ret = -1;
	return s->wait_err ? -1 : ret;
}

void tv_session_record_destroy(struct tv_session_record *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->guests && i < s->opts.nr_guests; i++)
		tv_guest_destroy(s->guests[i]);
	free(s->guests);
	tv_flight_disarm(s->flight);	/* the guests' threads are joined: none uses it */
	tv_ust_recorder_destroy(s->ust);
	tv_xen_recorder_destroy(s->xen);
	tv_recorder_destroy(s->host);
	tv_session_writer_free(s->session);
	free(s);
}

struct tv_recorder *tv_session_record_host(const struct tv_session_record *s)
{
	return s->host;
}

struct tv_xen_recorder *tv_session_record_xen(const struct tv_session_record *s)
{
	return s->xen;
}

size_t tv_session_record_nr_guests(const struct tv_session_record *s)
{
	return s->opts.nr_guests;
}

struct tv_guest *tv_session_record_guest(const struct tv_session_record *s, size_t i)
{
	return i < s->opts.nr_guests ? s->guests[i] : NULL;
}

/*
 * A snapshot is a session of its own, with a writer of its own: DIR/
 * snapshot-N, the next free N (snapshots of an earlier run in the same
 * directory are kept).  Return: 0 with @path its directory, or -errno (logged).
 */
static int snapshot_writer(struct tv_session_record *s, char *path, size_t size,
			   struct tv_session_writer **out)
{
	int ret;

	for (unsigned int n = ++s->snapshots;; n = ++s->snapshots) {
		snprintf(path, size, "%s/snapshot-%u", tv_session_writer_dir(s->session), n);
		ret = tv_session_writer_new(path, TV_SESSION_WRITER_QUIET, out);
		if (!ret)
			ret = tv_session_writer_mkdir(*out);
		if (!ret)
			return 0;
		tv_session_writer_free(*out);
		*out = NULL;
		if (ret != -EEXIST || n > 100000) {
			tv_err("Cannot create snapshot directory: path=\"%s\", errno=%d (%s)", path, -ret,
			       strerror(-ret));
			return ret;
		}
	}
}

/* The host kernel's frozen ring into the snapshot @w, listed first (the reference). */
static int snapshot_host(struct tv_session_record *s, struct tv_session_writer *w,
			 struct tv_flight_shot *shot)
{
	char dir[4200];
	int ret = tv_session_writer_domain_dir(w, "host", dir, sizeof(dir));

	if (!ret)
		ret = tv_recorder_flight_write(s->host, dir, shot);
	return ret ? ret : tv_session_writer_add_domain(w, "host");
}

/* The traced processes' tails into @path; none registered is no error when the kernel is there. */
static int snapshot_ust(struct tv_session_record *s, struct tv_session_writer *w, const char *path)
{
	char domains[4096];
	int ret = tv_ust_recorder_snapshot(s->ust, path, domains, sizeof(domains));

	if (ret == -ENODATA && (s->host_flight || s->xen_flight))
		return 0;
	if (ret == -ENODATA)
		tv_err("Nothing to snapshot yet: no traced process has registered or traced an event: path=\"%s\"", path);
	else if (ret == -ESHUTDOWN)
		tv_err("Cannot snapshot: the recording is ending: path=\"%s\"", path);
	else if (ret)
		tv_err("Cannot write snapshot: path=\"%s\", errno=%d (%s)", path, -ret, strerror(-ret));
	for (char *save, *d = strtok_r(ret ? NULL : domains, ",", &save); d && !ret;
	     d = strtok_r(NULL, ",", &save))
		ret = tv_session_writer_add_domain(w, d);
	return ret;
}

static int session_snapshot(struct tv_session_record *s, const char *const *keys,
			    char *path, size_t size)
{
	struct tv_session_writer *w = NULL;
	struct tv_flight_shot shot = { 0 };
	int ret = 0;

	if (!s->host_flight && !s->xen_flight && (!s->ust || !s->opts.ust_flight_bytes)) {
		tv_err("Not a flight recorder: the session records without --flight-recorder");
		return -EINVAL;
	}
	/* the kernel's ring first, before any directory: the incident is now */
	if (s->host_flight)
		ret = tv_recorder_flight_freeze(s->host, &shot);
	if (!ret)
		ret = snapshot_writer(s, path, size, &w);
	if (ret) {
		tv_flight_shot_free(s->host, &shot);
		return ret;
	}
	/* the guests freeze theirs and send it while the host's is written */
	tv_guest_flight_snapshots_begin(s->guests, s->opts.nr_guests, w, s->snapshots);
	if (s->host_flight)
		ret = snapshot_host(s, w, &shot);
	tv_flight_shot_free(s->host, &shot);
	if (!ret && s->xen_flight)
		ret = tv_xen_recorder_flight_write(s->xen, w);
	if (!ret && s->ust && s->opts.ust_flight_bytes)
		ret = snapshot_ust(s, w, path);
	/* waited for even after a failure: nothing may still write into @path */
	if (tv_guest_flight_snapshots_end(s->guests, s->opts.nr_guests, w) && !ret)
		ret = -ENOMEM;
	for (size_t i = 0; !ret && keys && keys[i]; i += 2)
		ret = tv_session_writer_set(w, keys[i], keys[i + 1]);
	if (!ret)
		ret = tv_session_writer_commit(w, NULL);
	if (ret && tv_session_remove_tree(path))	/* no half snapshot: it reads as none */
		tv_warn("Cannot remove incomplete snapshot: path=\"%s\"", path);
	else if (ret)
		s->snapshots--;		/* its number is free again */
	tv_session_writer_free(w);
	return ret;
}

int tv_session_record_snapshot(struct tv_session_record *s, char *path, size_t size)
{
	return session_snapshot(s, NULL, path, size);
}

int tv_session_record_snapshot_keys(struct tv_session_record *s, const char *const *keys, char *path,
				    size_t size)
{
	return session_snapshot(s, keys, path, size);
}

void tv_session_record_ust_summary(const struct tv_session_record *s, size_t *procs,
				   uint64_t *events, uint64_t *lost)
{
	tv_ust_recorder_summary(s ? s->ust : NULL, procs, events, lost);
}
