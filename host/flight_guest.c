// SPDX-License-Identifier: LGPL-2.1
/*
 * Guests in the flight recorder (doc/agent-protocol.md, "Flight
 * recorder").  With --flight-recorder SIZE, START carries flight_bytes=SIZE
 * and the guest's trigger.N rules; the agent (version 4) keeps its ring in
 * the guest and streams nothing.  A snapshot:
 *
 *   session thread                      guest thread (host/guest.c)
 *   _snapshots_begin: request, wake  -> _poll: SNAP sent, guest-NAME made
 *                                       (formats copied from DIR/guest-NAME)
 *   (host, UST written meanwhile)       _frame: SNAP_DATA, SNAP_FILE, SNAP_UST, SNAP_END
 *   _snapshots_end: wait, list       <- done: at SNAP_END, or truncated at
 *                                       a limit of flight_guest.h (what came kept)
 *
 * The guest's traced processes (SNAP_UST, between its kernel's data and
 * SNAP_END) go into snapshot-N/ust-guest-NAME-PID/, made on a process's
 * first frame from its UST_PROC and metadata (host/guest_ust.c), and are
 * listed beside guest-NAME.
 *
 * A guest is untrusted here as everywhere: its kernel's snapshot data is
 * capped at SIZE, and its traced processes' at SIZE more, all together
 * (the agent shares SIZE evenly between them); more is
 * dropped, counted in snapshot_bytes_dropped and said; its
 * late frames (of a snapshot already written) are dropped and counted, a
 * guest that withholds SNAP_END holds nobody (each thread has its own
 * deadline, the session's wait one overall), and its TRIGGERs go through
 * host/flight.c's holdoff like any rule's, counted per guest.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "session_writer.h"
#include "guest_stream.h"
#include "probe_sched.h"
#include "flight.h"
#include "flight_guest.h"

#define MAX_GUEST_RULES 16	/* host/flight.c's MAX_RULES */
#define FILTER_MAX 1023		/* a START value */
/* after the guests' deadline, for the guest threads to write what came */
#define WRITE_GRACE_S 1.0
/*
 * A guest's TRIGGER refused (busy, holdoff, the snapshot limit): its next
 * ones are counted, not passed on, for this long, so that a flood makes
 * at most one refusal line a second.
 */
#define TRIGGER_QUIET_S 1.0

enum snap_state { SNAP_IDLE, SNAP_ASKED, SNAP_RUNNING, SNAP_DONE };

struct tv_guest_flight {
	struct tv_guest_flight_io io;
	uint64_t bytes;			/* SIZE: a snapshot's data at most */
	char *start;			/* START's lines */
	uint32_t rule_mask;		/* the session's rules that are this guest's */
	pthread_mutex_t lock;		/* below: shared by the two threads */
	int running;			/* the guest traces: snapshots may be asked */
	enum snap_state state;
	unsigned int id;		/* the snapshot asked */
	char dir[PATH_MAX];		/* its snapshot-N/guest-NAME */
	double deadline;		/* now: WAIT_S or PAUSE_S without data, or the cap */
	double asked_at;
	/* the guest thread's, for the meta: where a snapshot's time went */
	double last_data_at, last_turn_at, max_data_gap, max_turn_gap;
	char status[300];		/* DONE: the domain's status */
	int listable;			/* DONE: the domain is readable */
	char ust_list[4096];		/* DONE: its traced processes' subdirs, comma separated */
	uint64_t dropped;		/* DONE: bytes past SIZE */
	struct tv_flight *flight;	/* triggers go there, NULL: not armed */
	int asked;			/* the session thread's: this snapshot asked it */
	/* the guest thread's alone: the snapshot being received */
	int *fd;
	uint64_t *cpu_bytes, got, late_bytes;
	uint64_t ust_got;		/* its processes' SNAP_UST bytes, all together: SIZE at most */
	uint64_t gap_ns, freeze_ns;
	char freeze[24];		/* SNAP_END's: how the agent froze its ring */
	unsigned files;
	int have_end;
	unsigned int triggers, triggers_refused;
	double quiet_until;		/* a refused TRIGGER: the next ones dropped until then */
};

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '.' || c == '-';
}

static int rule_bad(const char *text, const char *why)
{
	tv_err("Invalid trigger: rule=\"%s\": %s", text, why);
	return -EINVAL;
}

int tv_flight_guest_rule_parse(const char *text, char *name, size_t name_size, char *system,
			       size_t system_size, char *event, size_t event_size, const char **filter)
{
	const char *spec = text + 6, *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	const char *flt = strstr(spec, ",filter="), *end = flt ? flt : spec + strlen(spec);

	*filter = NULL;
	if (!c1 || !c2 || c2 > end || c1 == spec || (size_t)(c1 - spec) >= name_size ||
	    (size_t)(c2 - c1 - 1) >= system_size || (size_t)(end - c2 - 1) >= event_size ||
	    c2 == c1 + 1 || end == c2 + 1)
		return rule_bad(text, "guest= needs NAME:SYSTEM:EVENT (the guest's name as in --guest ...,name:NAME)");
	for (const char *p = spec; p < end; p++)
		if (!name_char(*p) && *p != ':')
			return rule_bad(text, "guest=NAME:SYSTEM:EVENT: names are [A-Za-z0-9_.-] (no glob)");
	snprintf(name, name_size, "%.*s", (int)(c1 - spec), spec);
	snprintf(system, system_size, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	snprintf(event, event_size, "%.*s", (int)(end - c2 - 1), c2 + 1);
	if (flt) {
		*filter = flt + 8;
		if (!**filter)
			return rule_bad(text, "filter= is empty");
		for (const char *p = *filter; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
				return rule_bad(text, "a guest's filter is printable ASCII");
		if (strlen(*filter) > FILTER_MAX)
			return rule_bad(text, "a guest's filter is at most 1023 bytes");
	}
	return 0;
}

int tv_flight_guest_rules_check(const char *const *rules, size_t nr, const struct tv_guest_spec *specs,
				size_t nr_guests)
{
	char name[64], sys[64], ev[128];
	const char *filter;

	for (size_t i = 0; i < nr; i++) {
		size_t g = 0;

		if (strncmp(rules[i], "guest=", 6))
			continue;
		if (tv_flight_guest_rule_parse(rules[i], name, sizeof(name), sys, sizeof(sys), ev, sizeof(ev),
					       &filter))
			return -EINVAL;
		while (g < nr_guests && strcmp(specs[g].name, name))
			g++;
		if (g == nr_guests)
			return rule_bad(rules[i], "no --guest of that name (NAME is the guest's, as in --guest ...,name:NAME)");
	}
	return 0;
}

/* START's lines for the rules naming this guest: trigger.N, trigger_filter.N. */
static int start_lines(struct tv_guest_flight *fl, const char *const *rules, size_t nr)
{
	char name[64], sys[64], ev[128];
	const char *filter;
	size_t len = 0;
	FILE *f = open_memstream(&fl->start, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "flight_bytes=%llu\n", (unsigned long long)fl->bytes);
	for (size_t i = 0; i < nr && i < MAX_GUEST_RULES; i++) {
		if (strncmp(rules[i], "guest=", 6) ||
		    tv_flight_guest_rule_parse(rules[i], name, sizeof(name), sys, sizeof(sys), ev, sizeof(ev),
					       &filter) || strcmp(name, fl->io.name))
			continue;
		fl->rule_mask |= 1u << i;
		fprintf(f, "trigger.%zu=%s:%s\n", i, sys, ev);
		if (filter)
			fprintf(f, "trigger_filter.%zu=%s\n", i, filter);
	}
	return fclose(f) ? -ENOMEM : 0;
}

int tv_guest_flight_new(const struct tv_guest_flight_io *io, uint64_t bytes, const char *const *rules,
			size_t nr, struct tv_guest_flight **out)
{
	struct tv_guest_flight *fl = calloc(1, sizeof(*fl));

	*out = NULL;
	if (!fl)
		return -ENOMEM;
	fl->io = *io;
	fl->bytes = bytes;
	pthread_mutex_init(&fl->lock, NULL);
	if (start_lines(fl, rules, nr)) {
		tv_guest_flight_free(fl);
		return -ENOMEM;
	}
	*out = fl;
	return 0;
}

static void snap_close(struct tv_guest_flight *fl, int ncpus)
{
	for (int cpu = 0; fl->fd && cpu < ncpus; cpu++)
		if (fl->fd[cpu] >= 0)
			close(fl->fd[cpu]);
	free(fl->fd);
	fl->fd = NULL;
}

static void snap_free(struct tv_guest_flight *fl, int ncpus)
{
	snap_close(fl, ncpus);
	free(fl->cpu_bytes);
	fl->fd = NULL;
	fl->cpu_bytes = NULL;
}

void tv_guest_flight_free(struct tv_guest_flight *fl)
{
	if (!fl)
		return;
	snap_free(fl, fl->io.gs ? fl->io.gs->ncpus : 0);
	pthread_mutex_destroy(&fl->lock);
	free(fl->start);
	free(fl);
}

const char *tv_guest_flight_start_keys(const struct tv_guest_flight *fl)
{
	return fl->start;
}

/* ------------------------------------------------------ guest thread */

/* One file of DIR/guest-NAME (@rel, checked when it came) into the snapshot's. */
static int copy_file(struct tv_guest_flight *fl, const char *rel)
{
	char src[PATH_MAX + 256], dst[PATH_MAX + 256], buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	snprintf(src, sizeof(src), "%s/%s", fl->io.src_dir, rel);
	snprintf(dst, sizeof(dst), "%s/%s", fl->dir, rel);
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return errno == ENOENT ? 0 : -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0)
		ret = -errno;
	while (!ret && (n = read(in, buf, sizeof(buf))) > 0)
		ret = tv_write_all(out, buf, (size_t)n);
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

/* The formats the agent sent at START: header_page, header_event, events/SYS/EVENT/format. */
static int copy_formats(struct tv_guest_flight *fl)
{
	char path[PATH_MAX + 256], rel[300];
	struct dirent *sys;
	DIR *d;
	int ret = copy_file(fl, "header_page");

	if (!ret)
		ret = copy_file(fl, "header_event");
	if (!ret)
		ret = copy_file(fl, "tsc");
	snprintf(path, sizeof(path), "%s/events", fl->io.src_dir);
	d = ret ? NULL : opendir(path);
	while (d && !ret && (sys = readdir(d))) {
		struct dirent *ev;
		DIR *e;

		if (sys->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", fl->dir, sys->d_name);
		if (mkdir(path, 0755) && errno != EEXIST) {
			ret = -errno;
			break;
		}
		snprintf(path, sizeof(path), "%s/events/%s", fl->io.src_dir, sys->d_name);
		e = opendir(path);
		while (e && !ret && (ev = readdir(e))) {
			if (ev->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/events/%s/%s", fl->dir, sys->d_name, ev->d_name);
			snprintf(rel, sizeof(rel), "events/%.63s/%.63s/format", sys->d_name, ev->d_name);
			if (mkdir(path, 0755) && errno != EEXIST)
				ret = -errno;
			else
				ret = copy_file(fl, rel);
		}
		if (e)
			closedir(e);
	}
	if (d)
		closedir(d);
	return ret;
}

/* The snapshot's directory: formats, one empty file per CPU. */
static int snap_open(struct tv_guest_flight *fl)
{
	int ncpus = fl->io.gs->ncpus;
	char path[PATH_MAX + 64];
	int ret;

	snap_free(fl, ncpus);
	fl->fd = calloc((size_t)ncpus, sizeof(*fl->fd));
	fl->cpu_bytes = calloc((size_t)ncpus, sizeof(*fl->cpu_bytes));
	if (!fl->fd || !fl->cpu_bytes)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/events", fl->dir);
	ret = mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
	for (int cpu = 0; cpu < ncpus; cpu++) {
		snprintf(path, sizeof(path), "%s/cpu%d.raw", fl->dir, cpu);
		fl->fd[cpu] = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fl->fd[cpu] < 0 && !ret)
			ret = -errno;
		/* the guest's budget of open files (TV_GUEST_MAX_OPEN_CPU_FILES) */
		if (cpu >= TV_GUEST_MAX_OPEN_CPU_FILES && fl->fd[cpu] >= 0) {
			close(fl->fd[cpu]);
			fl->fd[cpu] = -1;
		}
	}
	return ret ? ret : copy_formats(fl);
}

/*
 * The request: SNAP sent, then the directory made (the guest's formats
 * copied: seconds under nested TCG, which the guest's 2 s to answer must
 * not include: they count from here).  Failures end it at once.
 */
static void snap_start(struct tv_guest_flight *fl, double now)
{
	int sent, ret;

	fl->got = fl->ust_got = fl->gap_ns = fl->freeze_ns = 0;
	fl->freeze[0] = '\0';
	fl->files = 0;
	fl->have_end = 0;
	fl->dropped = 0;
	fl->status[0] = '\0';
	sent = fl->io.send(fl->io.ctx, TV_MSG_SNAP, fl->id);
	ret = snap_open(fl);
	(void)now;
	/* its frames are read from now on, by this thread */
	fl->asked_at = tv_probe_sched_now();
	fl->deadline = fl->asked_at + TV_GUEST_SNAPSHOT_WAIT_S;
	fl->last_data_at = fl->last_turn_at = fl->asked_at;
	fl->max_data_gap = fl->max_turn_gap = 0;
	if (ret)
		snprintf(fl->status, sizeof(fl->status), "failed: cannot write the snapshot: path=\"%s\", errno=%d (%s)",
			 fl->dir, -ret, strerror(-ret));
	else if (sent)
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: cannot send the snapshot request to the agent: errno=%d (%s)", -sent,
			 strerror(-sent));
}

void tv_guest_flight_counts(const struct tv_guest_flight *fl, struct tv_meta *m)
{
	tv_meta_set(m, "flight_bytes", "%llu", (unsigned long long)fl->bytes);
	tv_meta_set(m, "snapshot_late_bytes", "%llu", (unsigned long long)fl->late_bytes);
	tv_meta_set(m, "triggers", "%u", fl->triggers);
	tv_meta_set(m, "triggers_refused", "%u", fl->triggers_refused);
}

static const char *const agent_keys[] = {
	"kernel_release", "hostname", "machine", "clock", "ncpus", "subbuf_size",
	"long_size", "endian", "buffer_kb", "events", "filters", "agent_version",
};

static int snap_meta(struct tv_guest_flight *fl)
{
	struct tv_meta *m = tv_meta_new();
	char path[PATH_MAX + 8];
	uint64_t total = 0;
	int ret;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(agent_keys) / sizeof(agent_keys[0]); i++) {
		const char *v = tv_meta_get(fl->io.gs->guest_meta, agent_keys[i]);

		if (v)
			tv_meta_set(m, agent_keys[i], "%s", v);
	}
	fl->io.base_meta(fl->io.ctx, m);
	tv_meta_set(m, "status", "%s", fl->status);
	for (int cpu = 0; cpu < fl->io.gs->ncpus; cpu++) {
		char key[32];

		snprintf(key, sizeof(key), "cpu%d.bytes", cpu);
		tv_meta_set(m, key, "%llu", (unsigned long long)fl->cpu_bytes[cpu]);
		total += fl->cpu_bytes[cpu];
	}
	tv_meta_set(m, "bytes_total", "%llu", (unsigned long long)total);
	tv_guest_flight_counts(fl, m);
	tv_meta_set(m, "flight_freeze", "%s", fl->freeze[0] ? fl->freeze : "stop-read-restart");
	tv_meta_set(m, "flight_freeze_ns", "%llu", (unsigned long long)fl->freeze_ns);
	tv_meta_set(m, "flight_gap_ns", "%llu", (unsigned long long)fl->gap_ns);
	tv_meta_set(m, "snapshot_bytes_dropped", "%llu", (unsigned long long)fl->dropped);
	tv_meta_set(m, "snapshot_receive_ns", "%llu", (unsigned long long)((tv_probe_sched_now() - fl->asked_at) * 1e9));
	tv_meta_set(m, "snapshot_max_data_gap_ns", "%llu", (unsigned long long)(fl->max_data_gap * 1e9));
	tv_meta_set(m, "snapshot_max_turn_gap_ns", "%llu", (unsigned long long)(fl->max_turn_gap * 1e9));
	if (!strncmp(fl->status, "truncated", 9))
		tv_meta_set(m, "truncated", "1");
	snprintf(path, sizeof(path), "%s/meta", fl->dir);
	ret = tv_meta_write(m, path);
	tv_meta_free(m);
	return ret;
}

/* The latest a guest's answer may end, by what came so far (flight_guest.h). */
static double snap_cap(const struct tv_guest_flight *fl)
{
	double allowed = TV_GUEST_SNAPSHOT_MAX_S + (double)(fl->got + fl->ust_got) / TV_GUEST_SNAPSHOT_MIN_RATE;

	return fl->asked_at + (allowed < TV_GUEST_SNAPSHOT_LIMIT_S ? allowed : TV_GUEST_SNAPSHOT_LIMIT_S);
}

/* Data came: the guest answers, its deadline moves on (capped: a dripping guest). */
static void snap_progress(struct tv_guest_flight *fl)
{
	double now = tv_probe_sched_now(), next = now + TV_GUEST_SNAPSHOT_PAUSE_S;
	double cap = snap_cap(fl);

	if (now - fl->last_data_at > fl->max_data_gap)
		fl->max_data_gap = now - fl->last_data_at;
	fl->last_data_at = now;
	fl->deadline = next < cap ? next : cap;
}

/* The snapshot ends (SNAP_END, the deadline, a failure): its meta, DONE. */
static void snap_finish(struct tv_guest_flight *fl)
{
	char hp[PATH_MAX + 16];
	int listable;

	snap_close(fl, fl->io.gs->ncpus);
	if (!fl->status[0])
		snprintf(fl->status, sizeof(fl->status), "complete");
	tv_guest_ust_snap_finish(fl->io.gs, strcmp(fl->status, "complete") ? "truncated" : "snapshot",
				 fl->ust_list, sizeof(fl->ust_list));
	snprintf(hp, sizeof(hp), "%s/header_page", fl->dir);
	listable = strncmp(fl->status, "failed", 6) && !access(hp, R_OK) && !snap_meta(fl);
	snap_free(fl, fl->io.gs->ncpus);
	pthread_mutex_lock(&fl->lock);
	fl->listable = listable;
	fl->state = SNAP_DONE;
	pthread_mutex_unlock(&fl->lock);
}

void tv_guest_flight_poll(struct tv_guest_flight *fl, double now)
{
	enum snap_state st;

	pthread_mutex_lock(&fl->lock);
	st = fl->state;
	if (st == SNAP_ASKED)
		fl->state = SNAP_RUNNING;
	pthread_mutex_unlock(&fl->lock);
	if (st == SNAP_ASKED) {
		snap_start(fl, now);
		if (fl->status[0] && !strncmp(fl->status, "failed", 6))
			snap_finish(fl);
		return;
	}
	if (st == SNAP_RUNNING && now - fl->last_turn_at > fl->max_turn_gap)
		fl->max_turn_gap = now - fl->last_turn_at;
	fl->last_turn_at = now;
	if (st != SNAP_RUNNING || now < fl->deadline)
		return;
	if (!fl->status[0] && !fl->got)
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: no SNAP_END from the agent within %.0f s of the request (%llu bytes came)",
			 TV_GUEST_SNAPSHOT_WAIT_S, (unsigned long long)fl->got);
	else if (!fl->status[0] && now >= snap_cap(fl))
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: no SNAP_END from the agent within %.0f s of the request (%.0f s, a second more per %.0f KB that came, %.0f s at most; %llu bytes came)",
			 now - fl->asked_at, TV_GUEST_SNAPSHOT_MAX_S, TV_GUEST_SNAPSHOT_MIN_RATE / 1024,
			 TV_GUEST_SNAPSHOT_LIMIT_S, (unsigned long long)fl->got);
	else if (!fl->status[0])
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: no SNAP_END from the agent, its data stopped for %.0f s (%llu bytes came)",
			 TV_GUEST_SNAPSHOT_PAUSE_S, (unsigned long long)fl->got);
	snap_finish(fl);
}

void tv_guest_flight_set_running(struct tv_guest_flight *fl, int running)
{
	enum snap_state st;

	pthread_mutex_lock(&fl->lock);
	fl->running = running;
	st = fl->state;
	pthread_mutex_unlock(&fl->lock);
	/* a guest that ends during a snapshot: what came is written now */
	if (!running && st == SNAP_RUNNING) {
		if (!fl->status[0])
			snprintf(fl->status, sizeof(fl->status), "truncated: the guest's stream ended during the snapshot (%s)",
				 fl->io.gs->error[0] ? fl->io.gs->error : "channel closed");
		snap_finish(fl);
	} else if (!running && st == SNAP_ASKED) {
		snprintf(fl->status, sizeof(fl->status), "failed: the guest's stream ended before the snapshot");
		pthread_mutex_lock(&fl->lock);
		fl->state = SNAP_DONE;
		fl->listable = 0;
		pthread_mutex_unlock(&fl->lock);
	}
}

static int snap_data(struct tv_guest_flight *fl, uint32_t arg, const unsigned char *p, uint32_t len,
		     char *err, size_t err_size)
{
	const struct tv_guest_stream *gs = fl->io.gs;
	uint32_t cpu = TV_PROTO_SNAP_CPU(arg);
	char path[PATH_MAX + 32];
	int ret;

	if (cpu >= (uint32_t)gs->ncpus || !len || len % gs->subbuf_size) {
		snprintf(err, err_size, "SNAP_DATA for cpu %u of %d with %u bytes (not whole %zu-byte sub-buffers)",
			 cpu, gs->ncpus, len, gs->subbuf_size);
		return -EBADMSG;
	}
	if (fl->state != SNAP_RUNNING || TV_PROTO_SNAP_ID(arg) != (fl->id & 0xffffu) || fl->have_end ||
	    fl->status[0]) {
		fl->late_bytes += len;	/* a snapshot already written, or none asked */
		return 0;
	}
	if (fl->got + len > fl->bytes) {
		fl->dropped += len;	/* past SIZE: a lying guest's */
		return 0;
	}
	if (fl->fd[cpu] < 0) {
		snprintf(path, sizeof(path), "%s/cpu%u.raw", fl->dir, cpu);
		for (int c = 0, open_now = 0; c < gs->ncpus; c++)
			if (fl->fd[c] >= 0 && ++open_now >= TV_GUEST_MAX_OPEN_CPU_FILES) {
				close(fl->fd[c]);
				fl->fd[c] = -1;
			}
		fl->fd[cpu] = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (fl->fd[cpu] < 0) {
			snprintf(fl->status, sizeof(fl->status), "failed: cannot open stream file: path=\"%s\", errno=%d (%s)",
				 path, errno, strerror(errno));
			return 0;
		}
	}
	ret = tv_write_all(fl->fd[cpu], p, len);
	if (ret) {
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: cannot write stream file: path=\"%s/cpu%u.raw\", errno=%d (%s)", fl->dir, cpu,
			 -ret, strerror(-ret));
		return 0;
	}
	fl->got += len;
	fl->cpu_bytes[cpu] += len;
	snap_progress(fl);
	return 0;
}

/* A traced process's sub-buffers: checked, then late, capped or written like SNAP_DATA. */
static int snap_ust(struct tv_guest_flight *fl, uint32_t arg, const unsigned char *p, uint32_t len,
		    char *err, size_t err_size)
{
	struct tv_guest_stream *gs = fl->io.gs;
	int ret;

	if (tv_guest_ust_snap_check(gs, arg, len, err, err_size))
		return -EBADMSG;
	if (fl->state != SNAP_RUNNING || TV_PROTO_SNAP_UST_ID(arg) != (fl->id & 0xffu) || fl->have_end ||
	    fl->status[0]) {
		fl->late_bytes += len;	/* a snapshot already written, or none asked */
		return 0;
	}
	/* the processes share one SIZE beside the kernel's: a guest's snapshot is 2 x SIZE at most */
	if (fl->ust_got + len > fl->bytes) {
		fl->dropped += len;
		snap_progress(fl);
		return 0;
	}
	ret = tv_guest_ust_snap_write(gs, arg, p, len, fl->dir, fl->bytes, &fl->dropped);
	fl->ust_got += len;
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: cannot write a traced process's snapshot: errno=%d (%s)", -ret, strerror(-ret));
	snap_progress(fl);
	return 0;
}

static int snap_file(struct tv_guest_flight *fl, uint32_t id, const unsigned char *p, uint32_t len,
		     char *err, size_t err_size)
{
	char rel[TV_PROTO_MAX_PATH + 1], path[PATH_MAX + TV_PROTO_MAX_PATH + 2];
	const unsigned char *content;
	size_t clen;
	int fd, ret;

	if (tv_proto_file_split(p, len, rel, &content, &clen) ||
	    (strcmp(rel, "saved_cmdlines") && strcmp(rel, "saved_tgids"))) {
		snprintf(err, err_size, "SNAP_FILE other than saved_cmdlines or saved_tgids");
		return -EBADMSG;
	}
	if (fl->state != SNAP_RUNNING || id != (fl->id & 0xffffu) || fl->have_end || fl->status[0] ||
	    ++fl->files > 2) {
		fl->late_bytes += len;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", fl->dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	ret = fd < 0 ? -errno : tv_write_all(fd, content, clen);
	if (fd >= 0)
		close(fd);
	if (ret)
		tv_warn("Cannot write file: path=\"%s\", errno=%d (%s)", path, -ret, strerror(-ret));
	snap_progress(fl);
	return 0;
}

static int end_key(const char *key, const char *val, void *ctx)
{
	struct tv_guest_flight *fl = ctx;
	char *end;

	if (!strcmp(key, "gap_ns")) {
		errno = 0;
		fl->gap_ns = strtoull(val, &end, 10);
		return errno || *end || end == val ? -EINVAL : 0;
	}
	if (!strcmp(key, "freeze")) {
		if (strcmp(val, "snapshot-buffer") && strcmp(val, "stop-read-restart"))
			return -EINVAL;
		snprintf(fl->freeze, sizeof(fl->freeze), "%s", val);
		return 0;
	}
	if (!strcmp(key, "freeze_ns")) {
		errno = 0;
		fl->freeze_ns = strtoull(val, &end, 10);
		return errno || *end || end == val ? -EINVAL : 0;
	}
	if (!strcmp(key, "error") && !fl->status[0])
		snprintf(fl->status, sizeof(fl->status), "failed: the agent could not snapshot: %.200s", val);
	return 0;	/* bytes_total: the host counts its own */
}

static int snap_end(struct tv_guest_flight *fl, uint32_t id, const unsigned char *p, uint32_t len,
		    char *err, size_t err_size)
{
	if (fl->state != SNAP_RUNNING || id != (fl->id & 0xffffu) || fl->have_end)
		return 0;	/* late: that snapshot is written */
	if (tv_proto_kv_parse((const char *)p, len, end_key, fl)) {
		snprintf(err, err_size, "malformed SNAP_END text");
		return -EBADMSG;
	}
	fl->have_end = 1;
	if (fl->dropped && !fl->status[0])
		snprintf(fl->status, sizeof(fl->status),
			 "truncated: the agent sent more than the flight recorder's %llu bytes (%llu dropped)",
			 (unsigned long long)fl->bytes, (unsigned long long)fl->dropped);
	snap_finish(fl);
	return 0;
}

static int trigger_key(const char *key, const char *val, void *ctx)
{
	long long *v = ctx;
	char *end;

	errno = 0;
	if (!strcmp(key, "time"))
		v[0] = (long long)strtoull(val, &end, 10);
	else if (!strcmp(key, "cpu"))
		v[1] = strtoll(val, &end, 10);
	else
		return 0;
	return errno || *end || end == val ? -EINVAL : 0;
}

static int trigger(struct tv_guest_flight *fl, uint32_t rule, const unsigned char *p, uint32_t len,
		   char *err, size_t err_size)
{
	long long v[2] = { -1, -1 };
	double now = tv_probe_sched_now();
	int taken = 0;

	if (rule >= MAX_GUEST_RULES || !(fl->rule_mask & (1u << rule))) {
		snprintf(err, err_size, "TRIGGER for rule %u, not one of this guest's", rule);
		return -EBADMSG;
	}
	if (tv_proto_kv_parse((const char *)p, len, trigger_key, v) || v[0] < 0 ||
	    v[1] < 0 || v[1] >= TV_PROTO_MAX_CPUS) {
		snprintf(err, err_size, "malformed TRIGGER text (time=NS, cpu=N)");
		return -EBADMSG;
	}
	fl->triggers++;
	/* after a refusal, a guest's TRIGGERs wait TRIGGER_QUIET_S unseen: a flood costs no line each */
	if (now < fl->quiet_until) {
		fl->triggers_refused++;
		return 0;
	}
	pthread_mutex_lock(&fl->lock);
	if (fl->flight)
		taken = tv_flight_guest_hit(fl->flight, rule, fl->io.name, (uint64_t)v[0], (int)v[1]) == 1;
	pthread_mutex_unlock(&fl->lock);
	fl->triggers_refused += !taken;
	if (!taken)
		fl->quiet_until = now + TRIGGER_QUIET_S;
	return 0;
}

int tv_guest_flight_frame(void *ctx, const struct tv_proto_hdr *h, const unsigned char *p, char *err,
			  size_t err_size)
{
	struct tv_guest_flight *fl = ctx;

	switch (h->type) {
	case TV_MSG_SNAP_DATA:
		return snap_data(fl, h->arg, p, h->len, err, err_size);
	case TV_MSG_SNAP_FILE:
		return snap_file(fl, h->arg, p, h->len, err, err_size);
	case TV_MSG_SNAP_END:
		return snap_end(fl, h->arg, p, h->len, err, err_size);
	case TV_MSG_SNAP_UST:
		return snap_ust(fl, h->arg, p, h->len, err, err_size);
	case TV_MSG_TRIGGER:
		return trigger(fl, h->arg, p, h->len, err, err_size);
	}
	snprintf(err, err_size, "%s is not a flight recorder's frame", tv_proto_type_name(h->type));
	return -EBADMSG;
}

/* ---------------------------------------------------- session thread */

void tv_guest_flight_attach(struct tv_guest *const *guests, size_t n, struct tv_flight *f)
{
	for (size_t i = 0; i < n; i++) {
		struct tv_guest_flight *fl = guests[i] ? tv_guest_flight_of(guests[i]) : NULL;

		if (!fl)
			continue;
		pthread_mutex_lock(&fl->lock);	/* a trigger being passed on finishes first */
		fl->flight = f;
		pthread_mutex_unlock(&fl->lock);
	}
}

void tv_guest_flight_snapshots_begin(struct tv_guest *const *guests, size_t n,
				     struct tv_session_writer *w, unsigned int id)
{
	double deadline = tv_probe_sched_now() + TV_GUEST_SNAPSHOT_WAIT_S;

	for (size_t i = 0; i < n; i++) {
		struct tv_guest_flight *fl = guests[i] ? tv_guest_flight_of(guests[i]) : NULL;
		char subdir[64], dir[PATH_MAX];
		int ret, busy, running;

		if (!fl)
			continue;
		fl->asked = 0;
		pthread_mutex_lock(&fl->lock);
		busy = fl->state == SNAP_ASKED || fl->state == SNAP_RUNNING;
		running = fl->running;
		pthread_mutex_unlock(&fl->lock);
		if (busy || !running) {
			tv_warn("Guest %s is not in the snapshot: %s", fl->io.name,
				busy ? "its previous snapshot is still being received" : "its recording is not running");
			continue;
		}
		snprintf(subdir, sizeof(subdir), "guest-%s", fl->io.name);
		ret = tv_session_writer_domain_dir(w, subdir, dir, sizeof(dir));
		if (ret)
			continue;	/* logged */
		pthread_mutex_lock(&fl->lock);
		snprintf(fl->dir, sizeof(fl->dir), "%s", dir);
		fl->id = id;
		fl->deadline = deadline;	/* snap_start() sets it again once the request is out */
		fl->asked_at = deadline - TV_GUEST_SNAPSHOT_WAIT_S;
		fl->state = SNAP_ASKED;
		pthread_mutex_unlock(&fl->lock);
		fl->asked = 1;
		tv_guest_wake(guests[i]);
	}
}

/* One guest's end of the snapshot, waited for until @until: 1 listable, 0 not, -1 still running. */
static int snapshot_wait(struct tv_guest_flight *fl, double until)
{
	for (;;) {
		enum snap_state st;
		int listable;

		pthread_mutex_lock(&fl->lock);
		st = fl->state;
		listable = fl->listable;
		if (st == SNAP_DONE)
			fl->state = SNAP_IDLE;
		pthread_mutex_unlock(&fl->lock);
		if (st == SNAP_DONE)
			return listable;
		if (st == SNAP_IDLE)
			return 0;
		if (tv_probe_sched_now() >= until)
			return -1;
		usleep(5000);
	}
}

int tv_guest_flight_snapshots_end(struct tv_guest *const *guests, size_t n, struct tv_session_writer *w)
{
	double until = tv_probe_sched_now() + TV_GUEST_SNAPSHOT_LIMIT_S + WRITE_GRACE_S;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		struct tv_guest_flight *fl = guests[i] ? tv_guest_flight_of(guests[i]) : NULL;
		char subdir[64];
		int listed;

		if (!fl || !fl->asked)
			continue;
		fl->asked = 0;
		listed = snapshot_wait(fl, until);
		snprintf(subdir, sizeof(subdir), "guest-%s", fl->io.name);
		if (listed == 1 && !ret)
			ret = tv_session_writer_add_domain(w, subdir);
		/* its traced processes (written by then: DONE was set after them) */
		for (char *save = NULL, *d = listed == 1 ? strtok_r(fl->ust_list, ",", &save) : NULL; d && !ret;
		     d = strtok_r(NULL, ",", &save))
			ret = tv_session_writer_add_domain(w, d);
		/* its thread is stuck (disk): the snapshot goes without it */
		if (listed < 0)
			tv_warn("Guest %s is not in the snapshot: its thread did not write it within %.0f s",
				fl->io.name, TV_GUEST_SNAPSHOT_LIMIT_S + WRITE_GRACE_S);
		else if (listed && strcmp(fl->status, "complete"))
			tv_warn("Guest %s: snapshot %s", fl->io.name, fl->status);
		else if (!listed)
			tv_warn("Guest %s is not in the snapshot: %s", fl->io.name, fl->status);
	}
	return ret;
}
