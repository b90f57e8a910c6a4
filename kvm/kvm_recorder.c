// SPDX-License-Identifier: LGPL-2.1
/*
 * The host recorder: a tracefs instance of our own, the requested events
 * enabled in it, one splice capture thread per CPU (capture.c), and the
 * host/ folder of the session (doc/session-format.md).  The session
 * directory and session.meta are the session writer's (lib/
 * session_writer.c): `record` owns it (host/recorder.c), or a recorder
 * made alone (tv_recorder_create()) makes and commits its own.
 *
 * Life cycle: create (instance + static files) -> start (threads, tracing on)
 * -> stop (tracing off, drain, stats, metadata) -> destroy (instance gone).
 * The instance is named "tracevisor-PID" so that a later run can tell a
 * stale instance (its PID is dead) from one in use.  The session directory
 * and the instance are tied (kvm/recover.c): a later run salvages what a
 * killed recorder left in its instance into that session, then removes it.
 * host/meta is written at the start (status=recording) and again at the
 * end, so that a killed recorder's session reads with its clock and sizes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <tracefs.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "capture.h"
#include "proto.h"
#include "events.h"
#include "session_files.h"
#include "probes.h"
#include "recover.h"
#include "recorder_session.h"
#include "kvm_recorder.h"
#include "vcpu_scan.h"

#define INSTANCE_PREFIX "tracevisor-"

struct vm_label {
	pid_t pid;
	char name[64];
};

struct tv_recorder {
	struct tracefs_instance *instance;
	const char *tracing_dir;
	struct tv_event_list events;
	/* the specs resolved: opts' events with dynamic probes created and
	 * named ("GROUP:NAME"), then --time-function's pairs; a filter each */
	char **specs;
	const char **spec_filters;
	size_t nr_specs;
	struct tv_probe_set probes;
	struct tv_session_writer *session;	/* DIR's owner: gives host/, lists "host" */
	bool own_session;		/* made by tv_recorder_create(): committed at stop */
	char domain_dir[PATH_MAX];
	int stop_fd;
	int nr_cpus;
	size_t subbuf_size;
	struct tv_capture *caps;
	struct tv_record_cpu_stats *stats;
	struct tv_vcpu_map vcpus;
	struct vm_label *labels;	/* names given by --guest pid:... */
	size_t nr_labels;
	/*
	 * Threads: the guest threads (host/guest.c) call tv_recorder_add_vcpu
	 * and _set_vm_name while the main thread records (they list their
	 * domains with the session writer, under its own lock).  @lock
	 * covers labels/nr_labels and vcpus (every scan, add and label pass: a
	 * scan reallocates the map).  caps[i].bytes is an atomic
	 * counter of its capture thread; marker_fd is written without a lock
	 * (one write() is one record).  The rest is the main thread's.
	 */
	pthread_mutex_t lock;		/* labels, vcpus */
	int marker_fd;			/* the instance's trace_marker_raw */
	struct tv_record_opts opts;
	char clock[32];
	uint64_t start_tsc, stop_tsc;
	struct timespec start_raw, stop_raw, start_wall;
	int started, stopped;
	int tied;			/* DIR/recorder written: removed at the end */
	bool finished;			/* host/ written whole at stop */
	/*
	 * A flight recorder (opts.flight_bytes): no capture thread, the
	 * instance in overwrite mode; a snapshot freezes it by swapping in
	 * its snapshot buffer (@flight_swap) or, where the kernel has none,
	 * by stopping tracing while it is read (the gap said in the meta).
	 */
	bool flight;
	bool flight_swap;
	int snap_fd;			/* the instance's snapshot file, open: a freeze is one write */
	unsigned int flight_kb;		/* per CPU */
	uint64_t *overwritten;		/* per CPU, at stop: overrun (the ring's turnover) */
};

static int instance_pid(const char *name)
{
	const char *p = name + strlen(INSTANCE_PREFIX);
	char *end;
	long pid = strtol(p, &end, 10);

	return (*p && !*end && pid > 0 && pid <= INT_MAX) ? (int)pid : -1;
}

/* "tracevisor-trig-PID-N" of a recorder that is gone (TV_TRIGGER_INSTANCE_PREFIX). */
static bool trigger_instance_dead(const char *name)
{
	size_t n = strlen(TV_TRIGGER_INSTANCE_PREFIX);
	char *end;
	long pid;

	if (strncmp(name, TV_TRIGGER_INSTANCE_PREFIX, n))
		return false;
	pid = strtol(name + n, &end, 10);
	return end != name + n && *end == '-' && pid > 0 && pid <= INT_MAX &&
	       kill((pid_t)pid, 0) && errno == ESRCH;
}

/* Tracing off, then the instance removed: 1 when it is gone. */
static int instance_remove(const char *name)
{
	struct tracefs_instance *inst = tracefs_instance_alloc(NULL, name);
	int removed = 0;

	if (!inst)
		return 0;
	/* A stale instance may still have tracing on: stop it first. */
	tracefs_trace_off(inst);
	if (tracefs_instance_destroy(inst) == 0) {
		tv_info("Removed stale tracefs instance: name=\"%s\"", name);
		removed = 1;
	} else {
		tv_warn("Cannot remove stale tracefs instance: name=\"%s\", errno=%d (%s)",
			name, errno, strerror(errno));
	}
	tracefs_instance_free(inst);
	return removed;
}

int tv_tracefs_cleanup_stale(void)
{
	char **names = tracefs_instances("^" INSTANCE_PREFIX);
	const char *tracing_dir = tracefs_tracing_dir();
	int removed = 0;

	for (size_t i = 0; names && names[i] && tracing_dir; i++) {
		int pid = instance_pid(names[i]);

		if (pid < 0) {
			if (trigger_instance_dead(names[i]))
				removed += instance_remove(names[i]);
			continue;
		}
		/* a dead recorder's events go to its session first */
		switch (tv_recover_stale(tracing_dir, names[i], pid)) {
		case TV_STALE_ALIVE:
			continue;
		case TV_STALE_DONE:
			removed++;
			continue;
		case TV_STALE_DEAD:
			removed += instance_remove(names[i]);
			break;
		}
	}
	tracefs_list_free(names);
	if (tracing_dir)
		tv_recover_prune_registry(tracing_dir);
	return removed;
}

static int recorder_check_access(struct tv_recorder *rec)
{
	rec->tracing_dir = tracefs_tracing_dir();
	if (!rec->tracing_dir) {
		tv_err("Cannot find tracefs: not mounted at /sys/kernel/tracing and mounting it failed (is CONFIG_FTRACE on?)");
		return -ENOENT;
	}
	if (geteuid() != 0 || access(rec->tracing_dir, W_OK)) {
		tv_err("Cannot write to tracefs: path=\"%s\": recording needs root (CAP_SYS_ADMIN)",
		       rec->tracing_dir);
		return -EACCES;
	}
	return 0;
}

static int instance_write(struct tv_recorder *rec, const char *file, const char *val)
{
	if (tracefs_instance_file_write(rec->instance, file, val) < 0) {
		int err = errno ? errno : EINVAL;

		tv_err("Cannot write tracefs file: path=\"%s/instances/%s/%s\", value=\"%s\", errno=%d (%s)",
		       rec->tracing_dir, tracefs_instance_get_name(rec->instance), file, val, err, strerror(err));
		return -err;
	}
	return 0;
}

/* Is @clock a whole word of trace_clock's "local [global] mono ..." list? */
static bool clock_listed(const char *avail, const char *clock)
{
	size_t n = strlen(clock);

	for (const char *p = avail; (p = strstr(p, clock)); p++) {
		char before = p == avail ? ' ' : p[-1];
		char after = p[n];

		/* "mono" must not match inside "mono_raw" */
		if ((before == ' ' || before == '[') &&
		    (after == ' ' || after == ']' || after == '\n' || !after))
			return true;
	}
	return false;
}

static int recorder_set_clock(struct tv_recorder *rec)
{
	const char *clock = rec->opts.clock ? rec->opts.clock : "local";
	char *avail = tracefs_instance_file_read(rec->instance, "trace_clock", NULL);

	if (!avail || !clock_listed(avail, clock)) {
		if (avail)
			avail[strcspn(avail, "\n")] = '\0';	/* first line; no strtok */
		tv_err("Unknown trace clock: \"%s\" (available: %s)", clock, avail ? avail : "?");
		free(avail);
		return -EINVAL;
	}
	free(avail);
	snprintf(rec->clock, sizeof(rec->clock), "%s", clock);
	return instance_write(rec, "trace_clock", clock);
}

/*
 * Filters: a spec's own (-f after its -e) or else the recording's global
 * one, each applied where the event has its fields; a filter that fits
 * none of the events it was given for is an error.
 */
static int recorder_set_filters(struct tv_recorder *rec)
{
	size_t *fits = calloc(rec->nr_specs + 1, sizeof(*fits));	/* [nr_specs]: global */
	size_t global = 0;
	int ret = 0;

	if (!fits)
		return -ENOMEM;
	for (size_t i = 0; i < rec->events.nr; i++) {
		const struct tv_event_id *id = &rec->events.ids[i];
		const char *own = id->spec < rec->nr_specs ? rec->spec_filters[id->spec] : NULL;
		const char *filter = own ? own : rec->opts.filter;

		if (!own && filter)
			global++;
		if (filter && tracefs_event_file_write(rec->instance, id->system, id->event, "filter",
						       filter) >= 0)
			fits[own ? id->spec : rec->nr_specs]++;
	}
	for (size_t s = 0; s <= rec->nr_specs && !ret; s++) {
		const char *filter = s < rec->nr_specs ? rec->spec_filters[s] : rec->opts.filter;

		if (filter && !fits[s] && (s < rec->nr_specs || global)) {
			tv_err("Invalid filter: filter=\"%s\" fits no event of %s (see %s/instances/%s/error_log)",
			       filter, s < rec->nr_specs ? rec->specs[s] : "the recording",
			       rec->tracing_dir, tracefs_instance_get_name(rec->instance));
			ret = -EINVAL;
		}
	}
	if (!ret && rec->opts.filter && fits[rec->nr_specs] < global)
		tv_warn("Filter applies to %zu of %zu events; the others have no such fields and are recorded unfiltered",
			fits[rec->nr_specs], global);
	free(fits);
	return ret;
}

static int recorder_enable_events(struct tv_recorder *rec)
{
	int ret = recorder_set_filters(rec);

	for (size_t i = 0; i < rec->events.nr && !ret; i++) {
		struct tv_event_id *id = &rec->events.ids[i];

		if (tracefs_event_file_write(rec->instance, id->system, id->event,
					     "enable", "1") < 0) {
			int err = errno;

			tv_err("Cannot enable event: name=\"%s:%s\", errno=%d (%s)",
			       id->system, id->event, err, strerror(err));
			return -err;
		}
	}
	return ret;
}

static int specs_add(struct tv_recorder *rec, const char *spec, const char *filter)
{
	char **specs = realloc(rec->specs, (rec->nr_specs + 1) * sizeof(*specs));
	const char **filters;

	if (!specs)
		return -ENOMEM;
	rec->specs = specs;
	filters = realloc(rec->spec_filters, (rec->nr_specs + 1) * sizeof(*filters));
	if (!filters)
		return -ENOMEM;
	rec->spec_filters = filters;
	rec->specs[rec->nr_specs] = strdup(spec);
	if (!rec->specs[rec->nr_specs])
		return -ENOMEM;
	rec->spec_filters[rec->nr_specs++] = filter;
	return 0;
}

/*
 * The events to enable: the options' specs, where a dynamic probe is first
 * created and then named by its group, and --time-function's entry and
 * return probes.
 */
static int recorder_build_specs(struct tv_recorder *rec)
{
	static const char *const default_events[] = { TV_RECORD_DEFAULT_EVENTS };
	const struct tv_record_opts *o = &rec->opts;
	const char *const *events = o->nr_events ? o->events : default_events;
	size_t nr = o->nr_events ? o->nr_events : 1;
	char spec[256], ret_spec[256];
	int ret = 0;

	if (nr && o->nr_time_functions && !o->nr_events)
		nr = 0;	/* only the functions asked for, not every kvm event */
	for (size_t i = 0; i < nr && !ret; i++) {
		const char *filter = o->event_filters && o->nr_events ? o->event_filters[i] : NULL;

		if (!tv_probe_spec_is_dynamic(events[i])) {
			ret = specs_add(rec, events[i], filter);
			continue;
		}
		ret = tv_probe_create(&rec->probes, rec->tracing_dir, events[i], spec, sizeof(spec));
		if (!ret)
			ret = specs_add(rec, spec, filter);
	}
	for (size_t i = 0; i < o->nr_time_functions && !ret; i++) {
		ret = tv_probe_time_function(&rec->probes, rec->tracing_dir, o->time_functions[i], spec,
					     ret_spec, sizeof(spec));
		if (!ret)
			ret = specs_add(rec, spec, NULL);
		if (!ret)
			ret = specs_add(rec, ret_spec, NULL);
	}
	return ret;
}

/*
 * A flight recorder's instance: overwrite mode (the oldest events go), and
 * its snapshot buffer allocated now, the size of the main one, so that a
 * freeze is one swap (no allocation when the incident happens).
 */
static int recorder_setup_flight(struct tv_recorder *rec)
{
	int ret = instance_write(rec, "options/overwrite", "1");

	if (ret || !tracefs_file_exists(rec->instance, "snapshot"))
		return ret;	/* no CONFIG_TRACER_SNAPSHOT: stop, read, restart */
	char *path = tracefs_instance_get_file(rec->instance, "snapshot");

	rec->snap_fd = path ? open(path, O_WRONLY | O_CLOEXEC) : -1;
	tracefs_put_tracing_file(path);
	if (rec->snap_fd < 0 || write(rec->snap_fd, "1", 1) != 1) {
		tv_warn("Cannot allocate the instance's snapshot buffer: name=\"%s\", errno=%d (%s): a snapshot will stop tracing while it reads",
			tracefs_instance_get_name(rec->instance), errno, strerror(errno));
		return 0;
	}
	rec->flight_swap = true;
	return 0;
}

static int recorder_setup_instance(struct tv_recorder *rec)
{
	char name[64], val[32];
	unsigned int kb = rec->flight ? rec->flight_kb
		: rec->opts.buffer_kb ? rec->opts.buffer_kb : TV_RECORD_DEFAULT_BUFFER_KB;
	unsigned int pct = rec->opts.wakeup_percent ? rec->opts.wakeup_percent : 50;
	int ret;

	snprintf(name, sizeof(name), INSTANCE_PREFIX "%d", (int)getpid());
	rec->instance = tracefs_instance_create(name);
	if (!rec->instance) {
		int err = errno;

		tv_err("Cannot create tracefs instance: path=\"%s/instances/%s\", errno=%d (%s)",
		       rec->tracing_dir, name, err, strerror(err));
		return -err;
	}
	/* first: a recorder killed from here on leaves a session to salvage into */
	ret = tv_recover_tie_write(tv_session_writer_dir(rec->session), rec->tracing_dir, name);
	rec->tied = !ret;
	if (!ret)
		ret = instance_write(rec, "tracing_on", "0");
	snprintf(val, sizeof(val), "%u", kb);
	if (!ret)
		ret = instance_write(rec, "buffer_size_kb", val);
	snprintf(val, sizeof(val), "%u", pct);
	if (!ret)
		ret = instance_write(rec, "buffer_percent", val);
	if (!ret && rec->flight)
		ret = recorder_setup_flight(rec);
	if (!ret)
		ret = recorder_set_clock(rec);
	/* tid -> tgid map (saved_tgids) so events attribute to VM processes. */
	if (!ret)
		ret = instance_write(rec, "options/record-tgid", "1");
	if (!ret)
		ret = recorder_enable_events(rec);
	return ret;
}

/* DIR (new) and DIR/host from the session writer; "host" listed first. */
static int recorder_make_outdir(struct tv_recorder *rec)
{
	int ret = tv_session_writer_domain_dir(rec->session, "host", rec->domain_dir,
					       sizeof(rec->domain_dir));

	return ret ? ret : tv_session_writer_add_domain(rec->session, "host");
}

static size_t recorder_subbuf_size(struct tv_recorder *rec)
{
	long long kb = 0;

	if (tracefs_instance_file_read_number(rec->instance, "buffer_subbuf_size_kb", &kb) == 0 &&
	    kb > 0)
		return (size_t)kb * 1024;
	return (size_t)sysconf(_SC_PAGESIZE);
}

static int recorder_open_captures(struct tv_recorder *rec)
{
	char raw[PATH_MAX], out[PATH_MAX];
	char *inst_dir = tracefs_instance_get_dir(rec->instance);
	int ret = 0;

	rec->caps = calloc((size_t)rec->nr_cpus, sizeof(*rec->caps));
	rec->stats = calloc((size_t)rec->nr_cpus, sizeof(*rec->stats));
	rec->overwritten = calloc((size_t)rec->nr_cpus, sizeof(*rec->overwritten));
	if (!rec->caps || !rec->stats || !rec->overwritten || !inst_dir) {
		free(inst_dir);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < rec->nr_cpus; cpu++)
		rec->caps[cpu].raw_fd = rec->caps[cpu].out_fd = rec->caps[cpu].flush_fd =
			rec->caps[cpu].pipe_fd[0] = rec->caps[cpu].pipe_fd[1] = -1;
	for (int cpu = 0; cpu < rec->nr_cpus && !ret && !rec->flight; cpu++) {
		snprintf(raw, sizeof(raw), "%s/per_cpu/cpu%d/trace_pipe_raw", inst_dir, cpu);
		snprintf(out, sizeof(out), "%s/cpu%d.raw", rec->domain_dir, cpu);
		ret = tv_capture_open(&rec->caps[cpu], raw, out, rec->stop_fd, rec->subbuf_size);
		rec->caps[cpu].cpu = cpu;
	}
	free(inst_dir);
	return ret;
}

/* Optional: without it, sync probes have no host side (logged once). */
static void recorder_open_marker(struct tv_recorder *rec)
{
	char *path = tracefs_instance_get_file(rec->instance, "trace_marker_raw");

	if (path)
		rec->marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (rec->marker_fd < 0)
		tv_warn("Cannot open marker file: path=\"%s\", errno=%d (%s) (no host-side sync markers)",
			path ? path : "trace_marker_raw", errno, strerror(errno));
	tracefs_put_tracing_file(path);
}

int tv_recorder_create(const struct tv_record_opts *opts, struct tv_recorder **out)
{
	return tv_recorder_create_in(NULL, opts, out);
}

/* SIZE split over the CPUs, whole KB, at least the 4 KB of one page each. */
static int recorder_flight_size(struct tv_recorder *rec)
{
	uint64_t kb;

	if (!rec->opts.flight_bytes)
		return 0;
	kb = rec->opts.flight_bytes / 1024 / (uint64_t)(rec->nr_cpus > 0 ? rec->nr_cpus : 1);
	if (kb < 4 || kb > 64ULL * 1024 * 1024) {
		tv_err("Invalid flight recorder size: bytes=%llu over %d CPUs gives %llu KB per CPU (4 KB..64 GB)",
		       (unsigned long long)rec->opts.flight_bytes, rec->nr_cpus, (unsigned long long)kb);
		return -EINVAL;
	}
	rec->flight = true;
	rec->flight_kb = (unsigned int)kb;
	return 0;
}

/* The recorder's fields before any step can fail: what destroy may meet. */
static struct tv_recorder *recorder_alloc(const struct tv_record_opts *opts)
{
	struct tv_recorder *rec = calloc(1, sizeof(*rec));

	if (!rec)
		return NULL;
	rec->opts = *opts;
	rec->stop_fd = -1;
	rec->marker_fd = -1;
	rec->snap_fd = -1;
	pthread_mutex_init(&rec->lock, NULL);
	rec->nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	return rec;
}

/* The steps of create that set up the host domain, in order. */
static int recorder_prepare(struct tv_recorder *rec)
{
	int ret = recorder_flight_size(rec);

	if (!ret)
		ret = recorder_check_access(rec);
	if (!ret) {
		tv_tracefs_cleanup_stale();
		tv_probes_cleanup_stale();
		ret = recorder_build_specs(rec);
	}
	if (!ret)
		ret = tv_event_list_resolve(&rec->events, rec->tracing_dir,
					    (const char *const *)rec->specs, rec->nr_specs);
	if (!ret)
		ret = recorder_make_outdir(rec);
	if (!ret)
		ret = recorder_setup_instance(rec);
	if (!ret) {
		rec->subbuf_size = recorder_subbuf_size(rec);
		rec->stop_fd = eventfd(0, EFD_CLOEXEC);
		ret = rec->stop_fd < 0 ? -errno : 0;
	}
	if (!ret)
		ret = tv_session_write_formats(rec->domain_dir, rec->tracing_dir, &rec->events);
	if (!ret)
		ret = recorder_open_captures(rec);
	if (!ret)
		recorder_open_marker(rec);
	return ret;
}

int tv_recorder_create_in(struct tv_session_writer *w, const struct tv_record_opts *opts,
			  struct tv_recorder **out)
{
	struct tv_recorder *rec = recorder_alloc(opts);
	int ret = -ENOMEM;

	*out = NULL;
	if (!rec)
		goto out;
	ret = tv_session_writer_use(w, opts->outdir, &rec->session, &rec->own_session);
	if (ret)
		goto out;
	ret = recorder_prepare(rec);
	if (ret)	/* the session goes only if it was made for host/ */
		tv_session_writer_discard(rec->session, "host");
out:
	if (ret)
		tv_recorder_destroy(rec);
	else
		*out = rec;
	return ret;
}

/*
 * The trace clock beside the wall clock: a marker carrying CLOCK_REALTIME
 * as read just before the write (the trace stamps it a microsecond or so
 * later).  Lets an export show the trace clock as dates; optional.
 */
static void recorder_mark_realtime(struct tv_recorder *rec, uint64_t seq)
{
	unsigned char m[TV_SYNC_MARKER_SIZE];
	struct timespec now;

	if (rec->marker_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	tv_sync_marker_encode(m, TV_SYNC_CLOCK_REALTIME, 0, seq,
			      (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec);
	tv_recorder_write_marker(rec, m, sizeof(m));
}

static int recorder_write_meta(struct tv_recorder *rec, bool final);
static int recorder_write_maps(struct tv_recorder *rec, bool tasks);
static int recorder_meta_write(struct tv_recorder *rec, const char *dir, bool final,
			       const struct tv_flight_shot *shot);
static int recorder_maps_write(struct tv_recorder *rec, const char *dir, bool tasks);
static int recorder_drain(struct tv_recorder *rec, const char *dir, const char *file,
			  uint64_t *bytes);
static void recorder_meta_shot(struct tv_recorder *rec, struct tv_meta *m,
			       const struct tv_flight_shot *shot);

static inline uint64_t read_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

int tv_recorder_start(struct tv_recorder *rec)
{
	int ret = 0;

	pthread_mutex_lock(&rec->lock);	/* guest threads add vCPUs */
	tv_vcpu_map_scan(&rec->vcpus, "/proc");
	pthread_mutex_unlock(&rec->lock);
	for (int cpu = 0; cpu < rec->nr_cpus && !ret && !rec->flight; cpu++)
		ret = tv_capture_start(&rec->caps[cpu]);
	clock_gettime(CLOCK_REALTIME, &rec->start_wall);
	clock_gettime(CLOCK_MONOTONIC_RAW, &rec->start_raw);
	rec->start_tsc = read_tsc();
	if (!ret && tracefs_trace_on(rec->instance) < 0) {
		ret = -errno;
		tv_err("Cannot turn tracing on: instance=\"%s\", errno=%d (%s)",
		       tracefs_instance_get_name(rec->instance), -ret, strerror(-ret));
	}
	rec->started = 1;
	if (!ret)
		recorder_mark_realtime(rec, 0);
	/*
	 * For a killed recorder's session: its clock, sizes and VMs (the map
	 * scanned above: a second scan of /proc costs ~50 ms).  Not the task
	 * maps: reading saved_tgids costs ~10 ms of CPU, and a salvage copies
	 * them (kvm/recover.c).
	 */
	if (!ret)
		ret = recorder_write_meta(rec, false);
	if (!ret)
		ret = recorder_write_maps(rec, false);
	return ret;
}

static void recorder_read_cpu_stats(struct tv_recorder *rec, int cpu)
{
	char file[64];
	char *s;
	struct tv_record_cpu_stats *st = &rec->stats[cpu];

	snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
	s = tracefs_instance_file_read(rec->instance, file, NULL);
	if (!rec->flight)
		st->bytes = rec->caps[cpu].bytes;
	if (!s)
		return;
	tv_capture_parse_stats(s, &st->events, &st->lost);
	if (rec->flight) {
		/* overwritten is what a ring of SIZE is for: not lost */
		rec->overwritten[cpu] = tv_capture_parse_overrun(s);
		st->lost -= rec->overwritten[cpu] < st->lost ? rec->overwritten[cpu] : st->lost;
	}
	free(s);
}

/*
 * DIR/host/meta.  At the start (!@final): what is known then, with
 * status=recording, so that a killed recorder's session reads with its
 * clock; at the end: everything, with the counts.
 */
static int recorder_write_meta(struct tv_recorder *rec, bool final)
{
	return recorder_meta_write(rec, rec->domain_dir, final, NULL);
}

/*
 * host/meta into @dir: the session's (@shot NULL) or a flight recorder's
 * snapshot (@shot: what it froze, its counts; status complete).
 */
static int recorder_meta_write(struct tv_recorder *rec, const char *dir, bool final,
			       const struct tv_flight_shot *shot)
{
	struct tv_meta *m = tv_meta_new();
	struct utsname uts;
	char path[PATH_MAX + 16];
	uint64_t lost = 0, events = 0, bytes = 0;
	double secs;
	int ret;

	if (!m)
		return -ENOMEM;
	uname(&uts);
	secs = (double)(rec->stop_raw.tv_sec - rec->start_raw.tv_sec) +
	       (double)(rec->stop_raw.tv_nsec - rec->start_raw.tv_nsec) / 1e9;
	if (!final)
		secs = 0;
	tv_meta_set(m, "domain", "host");
	tv_meta_set(m, "kind", "linux-ftrace");
	tv_meta_set(m, "clock", "%s", rec->clock);
	tv_meta_set(m, "ncpus", "%d", rec->nr_cpus);
	tv_meta_set(m, "kernel_release", "%s", uts.release);
	tv_meta_set(m, "hostname", "%s", uts.nodename);
	tv_meta_set(m, "machine", "%s", uts.machine);
	tv_meta_set(m, "long_size", "%zu", sizeof(long));
	tv_meta_set(m, "endian", "little");
	tv_meta_set(m, "subbuf_size", "%zu", rec->subbuf_size);
	tv_meta_set(m, "buffer_kb", "%u", rec->flight ? rec->flight_kb
		    : rec->opts.buffer_kb ? rec->opts.buffer_kb : TV_RECORD_DEFAULT_BUFFER_KB);
	if (rec->flight) {
		tv_meta_set(m, "flight_bytes", "%llu", (unsigned long long)rec->opts.flight_bytes);
		tv_meta_set(m, "flight_freeze", "%s", tv_recorder_flight_method(rec));
	}
	if (rec->opts.filter)
		tv_meta_set(m, "filter", "%s", rec->opts.filter);
	if (secs > 0.1 && rec->stop_tsc > rec->start_tsc) {
		tv_meta_set(m, "tsc_khz", "%.0f",
			    (double)(rec->stop_tsc - rec->start_tsc) / secs / 1000.0);
		tv_meta_set(m, "tsc_khz_source", "measured against CLOCK_MONOTONIC_RAW over %.3f s", secs);
	}
	tv_meta_set(m, "start_realtime_ns", "%lld",
		    (long long)rec->start_wall.tv_sec * 1000000000LL + rec->start_wall.tv_nsec);
	tv_meta_set(m, "status", final || shot ? "complete" : "recording");
	if (shot)
		recorder_meta_shot(rec, m, shot);
	if (final)
		tv_meta_set(m, "duration_ns", "%.0f", secs * 1e9);
	for (int cpu = 0; cpu < rec->nr_cpus && final; cpu++) {
		char key[48];
		struct tv_record_cpu_stats *st = &rec->stats[cpu];

		snprintf(key, sizeof(key), "cpu%d.bytes", cpu);
		tv_meta_set(m, key, "%llu", (unsigned long long)st->bytes);
		snprintf(key, sizeof(key), "cpu%d.events", cpu);
		tv_meta_set(m, key, "%llu", (unsigned long long)st->events);
		snprintf(key, sizeof(key), "cpu%d.lost", cpu);
		tv_meta_set(m, key, "%llu", (unsigned long long)st->lost);
		if (rec->flight) {
			snprintf(key, sizeof(key), "cpu%d.overwritten", cpu);
			tv_meta_set(m, key, "%llu", (unsigned long long)rec->overwritten[cpu]);
		}
		lost += st->lost;
		events += st->events;
		bytes += st->bytes;
	}
	if (final) {
		tv_meta_set(m, "events_total", "%llu", (unsigned long long)events);
		tv_meta_set(m, "lost_total", "%llu", (unsigned long long)lost);
		tv_meta_set(m, "bytes_total", "%llu", (unsigned long long)bytes);
	}
	{
		struct tv_strbuf sb = { 0 };

		for (size_t i = 0; i < rec->events.nr; i++)
			tv_strbuf_append(&sb, "%s%s:%s", i ? "," : "", rec->events.ids[i].system,
					 rec->events.ids[i].event);
		tv_meta_set(m, "events", "%s", sb.data ? sb.data : "");
		tv_strbuf_free(&sb);
	}
	snprintf(path, sizeof(path), "%s/meta", dir);
	ret = tv_meta_write(m, path);
	tv_meta_free(m);
	return ret;
}

static void recorder_apply_labels(struct tv_recorder *rec)
{
	pthread_mutex_lock(&rec->lock);
	for (size_t i = 0; i < rec->vcpus.nr; i++)
		for (size_t l = 0; l < rec->nr_labels; l++)
			if (rec->vcpus.threads[i].vm_pid == rec->labels[l].pid)
				snprintf(rec->vcpus.threads[i].vm_name,
					 sizeof(rec->vcpus.threads[i].vm_name), "%s",
					 rec->labels[l].name);
	pthread_mutex_unlock(&rec->lock);
}

int tv_recorder_flush(struct tv_recorder *rec, int timeout_ms)
{
	uint64_t *want = calloc((size_t)rec->nr_cpus, sizeof(*want));
	struct timespec pause = { 0, 1000000 };
	int ret = 0, waited = 0;

	if (!want)
		return -ENOMEM;
	if (!rec->started || rec->stopped || rec->flight)
		ret = -EINVAL;
	for (int cpu = 0; cpu < rec->nr_cpus && !ret; cpu++) {
		want[cpu] = tv_capture_flushed(&rec->caps[cpu]) + 1;
		ret = tv_capture_flush(&rec->caps[cpu]);
	}
	for (int cpu = 0; cpu < rec->nr_cpus && !ret; cpu++) {
		while (!ret && tv_capture_flushed(&rec->caps[cpu]) < want[cpu]) {
			if (waited++ >= timeout_ms)
				ret = -ETIMEDOUT;
			nanosleep(&pause, NULL);
		}
	}
	free(want);
	if (ret == -ETIMEDOUT)
		tv_err("Cannot flush the ring buffers: no capture thread answer in %d ms", timeout_ms);
	return ret;
}

int tv_recorder_checkpoint(struct tv_recorder *rec)
{
	pthread_mutex_lock(&rec->lock);	/* guest threads add vCPUs */
	tv_vcpu_map_scan(&rec->vcpus, "/proc");
	pthread_mutex_unlock(&rec->lock);
	return recorder_write_maps(rec, true);
}

/* The vCPU map as scanned last, and (@tasks) the task maps as they are now. */
static int recorder_write_maps(struct tv_recorder *rec, bool tasks)
{
	return recorder_maps_write(rec, rec->domain_dir, tasks);
}

static int recorder_maps_write(struct tv_recorder *rec, const char *dir, bool tasks)
{
	char path[PATH_MAX + 32];
	int ret;

	recorder_apply_labels(rec);
	snprintf(path, sizeof(path), "%s/vcpus", dir);
	pthread_mutex_lock(&rec->lock);
	ret = tv_vcpu_map_write(&rec->vcpus, path);
	pthread_mutex_unlock(&rec->lock);
	return ret || !tasks ? ret : tv_session_write_task_maps(dir, rec->tracing_dir);
}

int tv_recorder_stop(struct tv_recorder *rec)
{
	uint64_t one = 1;
	int ret = 0, err;

	if (!rec->started || rec->stopped)
		return 0;
	rec->stopped = 1;
	recorder_mark_realtime(rec, 1);
	tracefs_trace_off(rec->instance);
	rec->stop_tsc = read_tsc();
	clock_gettime(CLOCK_MONOTONIC_RAW, &rec->stop_raw);
	/* The eventfd stays readable: every capture thread sees it. */
	if (write(rec->stop_fd, &one, sizeof(one)) != sizeof(one))
		ret = -errno;
	for (int cpu = 0; cpu < rec->nr_cpus && !rec->flight; cpu++) {
		err = tv_capture_join(&rec->caps[cpu]);
		if (err && !ret)
			ret = err;
		recorder_read_cpu_stats(rec, cpu);
	}
	/* a flight recorder's last buffers: the session itself (Ctrl-C) */
	if (rec->flight) {
		uint64_t *bytes = calloc((size_t)rec->nr_cpus, sizeof(*bytes));

		ret = bytes ? recorder_drain(rec, rec->domain_dir, "trace_pipe_raw", bytes) : -ENOMEM;
		for (int cpu = 0; cpu < rec->nr_cpus; cpu++) {
			rec->stats[cpu].bytes = bytes ? bytes[cpu] : 0;
			recorder_read_cpu_stats(rec, cpu);
		}
		free(bytes);
	}
	err = tv_recorder_checkpoint(rec);
	if (!err)
		err = recorder_write_meta(rec, true);
	rec->finished = !err;
	/* alone, the recorder owns its session; in `record`, the owner commits */
	if (!err && rec->own_session)
		err = tv_session_writer_commit(rec->session, "host");
	return ret ? ret : err;
}

void tv_recorder_destroy(struct tv_recorder *rec)
{
	if (!rec)
		return;
	if (rec->started && !rec->stopped)
		tv_recorder_stop(rec);
	for (int cpu = 0; rec->caps && cpu < rec->nr_cpus; cpu++) {
		tv_capture_join(&rec->caps[cpu]);
		tv_capture_close(&rec->caps[cpu]);
	}
	/* An open marker file keeps the instance busy (rmdir: EBUSY). */
	if (rec->marker_fd >= 0)
		close(rec->marker_fd);
	rec->marker_fd = -1;
	if (rec->snap_fd >= 0)
		close(rec->snap_fd);
	rec->snap_fd = -1;
	if (rec->instance) {
		tracefs_trace_off(rec->instance);
		if (tracefs_instance_destroy(rec->instance))
			tv_warn("Cannot remove tracefs instance: name=\"%s\", errno=%d (%s)",
				tracefs_instance_get_name(rec->instance), errno, strerror(errno));
		else if (rec->tied)	/* nothing left to salvage */
			tv_recover_tie_remove(tv_session_writer_dir(rec->session),
					      tracefs_instance_get_name(rec->instance));
		tracefs_instance_free(rec->instance);
	}
	/* after the instance: a probe still enabled somewhere cannot go */
	tv_probes_destroy(&rec->probes);
	for (size_t i = 0; i < rec->nr_specs; i++)
		free(rec->specs[i]);
	free(rec->specs);
	free(rec->spec_filters);
	if (rec->stop_fd >= 0)
		close(rec->stop_fd);
	free(rec->labels);
	pthread_mutex_destroy(&rec->lock);
	tv_event_list_free(&rec->events);
	tv_vcpu_map_free(&rec->vcpus);
	free(rec->caps);
	free(rec->stats);
	free(rec->overwritten);
	if (rec->own_session)
		tv_session_writer_free(rec->session);
	free(rec);
}

int tv_recorder_scan_vcpus(struct tv_recorder *rec)
{
	int ret;

	pthread_mutex_lock(&rec->lock);	/* guest threads add vCPUs */
	ret = tv_vcpu_map_scan(&rec->vcpus, "/proc");
	pthread_mutex_unlock(&rec->lock);
	return ret;
}

int tv_recorder_nr_cpus(const struct tv_recorder *rec)
{
	return rec->nr_cpus;
}

const struct tv_record_cpu_stats *tv_recorder_cpu_stats(const struct tv_recorder *rec, int cpu)
{
	return (cpu >= 0 && cpu < rec->nr_cpus) ? &rec->stats[cpu] : NULL;
}

uint64_t tv_recorder_bytes(const struct tv_recorder *rec)
{
	uint64_t total = 0;

	for (int cpu = 0; cpu < rec->nr_cpus && !rec->flight; cpu++)
		total += __atomic_load_n(&rec->caps[cpu].bytes, __ATOMIC_RELAXED);
	return total;
}

int tv_recorder_write_marker(struct tv_recorder *rec, const void *buf, size_t len)
{
	ssize_t n;

	if (len < 8 || len > 4096)
		return -EINVAL;
	if (rec->marker_fd < 0)
		return -ENOENT;
	/* One write() is one record: no locking needed between threads. */
	n = write(rec->marker_fd, buf, len);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

int tv_recorder_set_vm_name(struct tv_recorder *rec, pid_t vm_pid, const char *name)
{
	struct vm_label *grown;
	int ret = 0;

	pthread_mutex_lock(&rec->lock);
	grown = realloc(rec->labels, (rec->nr_labels + 1) * sizeof(*grown));
	if (grown) {
		rec->labels = grown;
		grown[rec->nr_labels].pid = vm_pid;
		snprintf(grown[rec->nr_labels].name, sizeof(grown->name), "%s", name);
		/* The vcpus file is whitespace-separated. */
		for (char *p = grown[rec->nr_labels].name; *p; p++)
			if (*p == ' ' || *p == '\t' || *p == '\n')
				*p = '_';
		rec->nr_labels++;
	} else {
		ret = -ENOMEM;
	}
	pthread_mutex_unlock(&rec->lock);
	return ret;
}

int tv_recorder_add_vcpu(struct tv_recorder *rec, pid_t tid, pid_t vm_pid, int vcpu)
{
	int ret;

	pthread_mutex_lock(&rec->lock);
	ret = tv_vcpu_map_add(&rec->vcpus, tid, vm_pid, vcpu);
	pthread_mutex_unlock(&rec->lock);
	return ret;
}

struct tv_session_writer *tv_recorder_session(const struct tv_recorder *rec)
{
	return rec->session;
}

bool tv_recorder_finished(const struct tv_recorder *rec)
{
	return rec->finished;
}

const char *tv_recorder_flight_method(const struct tv_recorder *rec)
{
	return rec->flight_swap ? "snapshot-buffer" : "stop-read-restart";
}

unsigned int tv_recorder_flight_kb(const struct tv_recorder *rec)
{
	return rec->flight ? rec->flight_kb : 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Every CPU's ring (per_cpu/cpuN/@file: trace_pipe_raw, or snapshot_raw
 * for the frozen copy) into @dir/cpuN.raw, bytes per CPU into @bytes.
 * Every CPU is tried (a full disk on one leaves the others' files); the
 * first error is returned.
 */
static int recorder_drain(struct tv_recorder *rec, const char *dir, const char *file,
			  uint64_t *bytes)
{
	char *inst_dir = tracefs_instance_get_dir(rec->instance);
	size_t max_pages = (size_t)rec->flight_kb * 1024 / rec->subbuf_size + 16;
	char raw[PATH_MAX], out[PATH_MAX];
	int ret = 0, err;

	if (!inst_dir)
		return -ENOMEM;
	for (int cpu = 0; cpu < rec->nr_cpus; cpu++) {
		snprintf(raw, sizeof(raw), "%s/per_cpu/cpu%d/%s", inst_dir, cpu, file);
		snprintf(out, sizeof(out), "%s/cpu%d.raw", dir, cpu);
		err = tv_capture_salvage(raw, out, rec->subbuf_size, max_pages, &bytes[cpu]);
		if (err && !ret)
			ret = err;
	}
	free(inst_dir);
	return ret;
}

/* A snapshot's own keys in its host/meta: how it froze, what it holds. */
static void recorder_meta_shot(struct tv_recorder *rec, struct tv_meta *m,
			       const struct tv_flight_shot *shot)
{
	uint64_t bytes = 0;

	tv_meta_set(m, "flight_gap_ns", "%llu", (unsigned long long)shot->gap_ns);
	tv_meta_set(m, "flight_freeze_ns", "%llu", (unsigned long long)shot->freeze_cost_ns);
	tv_meta_set(m, "flight_frozen_mono_ns", "%llu", (unsigned long long)shot->frozen_ns);
	for (int cpu = 0; cpu < rec->nr_cpus; cpu++) {
		char key[48];

		snprintf(key, sizeof(key), "cpu%d.bytes", cpu);
		tv_meta_set(m, key, "%llu", (unsigned long long)shot->cpu_bytes[cpu]);
		snprintf(key, sizeof(key), "cpu%d.lost", cpu);
		tv_meta_set(m, key, "0");	/* a tail of the ring, gap-free */
		bytes += shot->cpu_bytes[cpu];
	}
	tv_meta_set(m, "bytes_total", "%llu", (unsigned long long)bytes);
	tv_meta_set(m, "lost_total", "0");
}

/* The freeze: one swap, or tracing off.  Return: 0 or -errno (logged). */
static int recorder_freeze(struct tv_recorder *rec)
{
	const char *name = tracefs_instance_get_name(rec->instance);

	if (rec->flight_swap && pwrite(rec->snap_fd, "1", 1, 0) != 1) {
		tv_err("Cannot freeze the host's ring buffer: path=\"%s/instances/%s/snapshot\", errno=%d (%s)",
		       rec->tracing_dir, name, errno, strerror(errno));
		return errno ? -errno : -EIO;
	}
	if (!rec->flight_swap && tracefs_trace_off(rec->instance) < 0) {
		tv_err("Cannot stop tracing to read the host's ring buffer: instance=\"%s\", errno=%d (%s)",
		       name, errno, strerror(errno));
		return errno ? -errno : -EIO;
	}
	return 0;
}

int tv_recorder_flight_freeze(struct tv_recorder *rec, struct tv_flight_shot *shot)
{
	int ret;

	memset(shot, 0, sizeof(*shot));
	if (!rec->flight || !rec->started || rec->stopped)
		return -EINVAL;
	shot->cpu_bytes = calloc((size_t)rec->nr_cpus, sizeof(*shot->cpu_bytes));
	if (!shot->cpu_bytes)
		return -ENOMEM;
	shot->start_ns = mono_ns();
	ret = recorder_freeze(rec);
	if (ret)
		return ret;
	shot->frozen_ns = mono_ns();
	shot->freeze_cost_ns = shot->frozen_ns - shot->start_ns;
	shot->frozen = true;
	return 0;
}

/* Tracing back on after a stop-read-restart freeze, the gap measured. */
static int recorder_thaw(struct tv_recorder *rec, struct tv_flight_shot *shot)
{
	int err = 0;

	if (!shot->frozen || rec->flight_swap)
		return 0;
	shot->frozen = false;
	if (tracefs_trace_on(rec->instance) < 0) {
		err = errno ? -errno : -EIO;
		tv_err("Cannot restart tracing after a snapshot: instance=\"%s\", errno=%d (%s)",
		       tracefs_instance_get_name(rec->instance), -err, strerror(-err));
	}
	shot->gap_ns = mono_ns() - shot->start_ns;
	return err;
}

int tv_recorder_flight_write(struct tv_recorder *rec, const char *dir, struct tv_flight_shot *shot)
{
	int ret, err;

	if (!shot->frozen)
		return -EINVAL;
	ret = tv_session_write_formats(dir, rec->tracing_dir, &rec->events);
	/* read even when the formats failed: the ring must be emptied to go on */
	err = recorder_drain(rec, dir, rec->flight_swap ? "snapshot_raw" : "trace_pipe_raw",
			     shot->cpu_bytes);
	ret = ret ? ret : err;
	err = recorder_thaw(rec, shot);
	ret = ret ? ret : err;
	if (!ret)
		ret = recorder_maps_write(rec, dir, true);
	if (!ret)
		ret = recorder_meta_write(rec, dir, false, shot);
	return ret;
}

void tv_flight_shot_free(struct tv_recorder *rec, struct tv_flight_shot *shot)
{
	recorder_thaw(rec, shot);	/* frozen but never written: recording goes on */
	free(shot->cpu_bytes);
	shot->cpu_bytes = NULL;
}
