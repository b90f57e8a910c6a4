// SPDX-License-Identifier: LGPL-2.1
/*
 * Salvage of a killed host recorder's trace.
 *
 * A recorder killed with SIGKILL (or by the OOM killer, or a crash) leaves
 * its tracefs instance behind, tracing still on, holding the events its
 * capture threads had not yet written (at most TV_CAPTURE_FLUSH_MS of them:
 * kvm/capture.c) and everything traced since.  Those are appended to the
 * session's stream files, the host meta is rewritten with status=recovered
 * and the kernel's counts, and the instance is removed.
 *
 * The tie between a session and its instance, written when the instance is
 * created (doc/session-format.md, "recorder"):
 *   DIR/recorder                 pid, pid_start, boot_id, instance,
 *                                instance_created_ns, session
 *   /run/tracevisor/instances/INSTANCE  the same: lets the next `record` find the
 *                                session of a leftover instance
 * A recorder is dead when its pid is gone, or runs another process (its
 * start time differs), or the machine restarted (boot_id).  The instance is
 * its own when its directory's ctime is the one noted at creation: a pid
 * reused by a later recorder names a later instance.
 *
 * Every step is checked first; the session is locked (flock on DIR/recorder)
 * so that two recorders starting at once cannot both append.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <tracefs.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "capture.h"
#include "recover.h"
#include "session_files.h"

#define RECORDER_FILE "recorder"
#define INSTANCE_PREFIX "tracevisor-"

struct tie {
	int pid;
	unsigned long long pid_start;	/* /proc/PID/stat starttime, clock ticks since boot */
	char boot_id[64];
	char instance[64];
	long long instance_ns;		/* the instance directory's ctime */
	char session[PATH_MAX];
};

static void read_boot_id(char *buf, size_t size)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

/*
 * starttime, the 22nd field of /proc/PID/stat (the comm before may hold
 * spaces), and the state, the 3rd.
 */
static int pid_stat(int pid, unsigned long long *out, char *state)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, ret = -EINVAL;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* fields 3..21 skipped, 22 read */
	if (p && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			state, out) == 2)
		ret = 0;
	return ret;
}

static int pid_start_time(int pid, unsigned long long *out)
{
	char state;

	return pid_stat(pid, out, &state);
}

static long long instance_created_ns(const char *tracing_dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/instances/%s", tracing_dir, name);
	if (lstat(path, &st) || !S_ISDIR(st.st_mode))
		return -1;
	return (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
}

/* The "Threads:" count of /proc/PID/status; 0 when unknown. */
static int pid_threads(int pid)
{
	char path[64], line[128];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * Is the recorder of @t still running: same boot, same pid, same start, not
 * a zombie (killed, not yet reaped by its parent)?
 */
static bool tie_alive(const struct tie *t)
{
	char boot_id[64], state = 0;
	unsigned long long start;

	read_boot_id(boot_id, sizeof(boot_id));
	if (strcmp(boot_id, t->boot_id))
		return false;
	if (kill(t->pid, 0) < 0 && errno == ESRCH)
		return false;
	/* pid reused by another process: the recorder is dead */
	if (pid_stat(t->pid, &start, &state) || start != t->pid_start)
		return false;
	/* a zombie is dead once its last thread is (they may still hold the instance) */
	return !(state == 'X' || (state == 'Z' && pid_threads(t->pid) <= 1));
}

static bool same_boot(const struct tie *t)
{
	char boot_id[64];

	read_boot_id(boot_id, sizeof(boot_id));
	return !strcmp(boot_id, t->boot_id);
}

/* A tie file: untrusted (a session may come from anywhere), checked. */
static int tie_read(const char *path, struct tie *t)
{
	struct tv_meta *m;
	const char *inst, *boot, *sess;
	char want[64];
	int ret = tv_meta_read(path, &m);

	if (ret)
		return ret;
	memset(t, 0, sizeof(*t));
	t->pid = (int)tv_meta_get_ll(m, "pid", -1);
	t->pid_start = (unsigned long long)tv_meta_get_ll(m, "pid_start", 0);
	t->instance_ns = tv_meta_get_ll(m, "instance_created_ns", -1);
	inst = tv_meta_get(m, "instance");
	boot = tv_meta_get(m, "boot_id");
	sess = tv_meta_get(m, "session");
	snprintf(want, sizeof(want), INSTANCE_PREFIX "%d", t->pid);
	/* the instance is ours by name: never a path, never another's */
	if (t->pid <= 0 || !inst || strcmp(inst, want) || !boot || strlen(boot) >= sizeof(t->boot_id) ||
	    (sess && strlen(sess) >= sizeof(t->session))) {
		tv_err("Invalid recorder file: path=\"%s\" (pid, instance or boot_id)", path);
		ret = -EINVAL;
	} else {
		snprintf(t->instance, sizeof(t->instance), "%s", inst);
		snprintf(t->boot_id, sizeof(t->boot_id), "%s", boot);
		snprintf(t->session, sizeof(t->session), "%s", sess ? sess : "");
	}
	tv_meta_free(m);
	return ret;
}

static bool same_tie(const struct tie *a, const struct tie *b)
{
	return a->pid == b->pid && a->pid_start == b->pid_start && !strcmp(a->boot_id, b->boot_id) &&
	       !strcmp(a->instance, b->instance) && a->instance_ns == b->instance_ns;
}

static void registry_path(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, TV_RECOVER_REGISTRY "/%s", name);
}

/* Optional: without it only `recover DIR` finds the instance (a warning). */
static void registry_write(const struct tv_meta *m, const char *name, const char *session_dir)
{
	char path[PATH_MAX];
	int err = 0;

	if ((mkdir(TV_RECOVER_RUN_DIR, 0755) && errno != EEXIST) ||
	    (mkdir(TV_RECOVER_REGISTRY, 0700) && errno != EEXIST))
		err = errno;
	registry_path(name, path, sizeof(path));
	if (err || tv_meta_write(m, path))
		tv_warn("Cannot register the session: path=\"%s\", errno=%d (%s) (if this recorder is killed, only `tracevisor recover %s` salvages its trace)",
			path, err ? err : errno, strerror(err ? err : errno), session_dir);
}

int tv_recover_tie_write(const char *session_dir, const char *tracing_dir, const char *name)
{
	struct tv_meta *m = tv_meta_new();
	char path[PATH_MAX + 16], abs[PATH_MAX], boot_id[64];
	unsigned long long start = 0;
	int ret;

	if (!m)
		return -ENOMEM;
	if (!realpath(session_dir, abs))
		snprintf(abs, sizeof(abs), "%s", session_dir);
	read_boot_id(boot_id, sizeof(boot_id));
	pid_start_time((int)getpid(), &start);
	tv_meta_set(m, "pid", "%d", (int)getpid());
	tv_meta_set(m, "pid_start", "%llu", start);
	tv_meta_set(m, "boot_id", "%s", boot_id);
	tv_meta_set(m, "instance", "%s", name);
	tv_meta_set(m, "instance_created_ns", "%lld", instance_created_ns(tracing_dir, name));
	tv_meta_set(m, "session", "%s", abs);
	snprintf(path, sizeof(path), "%s/" RECORDER_FILE, session_dir);
	ret = tv_meta_write(m, path);
	if (!ret)
		registry_write(m, name, session_dir);
	tv_meta_free(m);
	return ret;
}

void tv_recover_tie_remove(const char *session_dir, const char *name)
{
	char path[PATH_MAX + 16];

	registry_path(name, path, sizeof(path));
	unlink(path);
	snprintf(path, sizeof(path), "%s/" RECORDER_FILE, session_dir);
	unlink(path);
}

static bool host_meta_recovered(const char *dir)
{
	char path[PATH_MAX + 16];
	struct tv_meta *m;
	const char *status;
	bool ret = false;

	snprintf(path, sizeof(path), "%s/host/meta", dir);
	if (access(path, F_OK) || tv_meta_read(path, &m))
		return false;
	status = tv_meta_get(m, "status");
	ret = status && !strcmp(status, "recovered");
	tv_meta_free(m);
	return ret;
}

static bool file_exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

/* The host meta as the recorder wrote it at its start, or the bare keys. */
static struct tv_meta *recover_host_meta(const char *host_dir, size_t subbuf_size, int ncpus)
{
	char path[PATH_MAX + 16];
	struct tv_meta *m = NULL;

	snprintf(path, sizeof(path), "%s/meta", host_dir);
	if (access(path, F_OK) || tv_meta_read(path, &m)) {
		m = tv_meta_new();
		if (!m)
			return NULL;
		tv_meta_set(m, "domain", "host");
		tv_meta_set(m, "kind", "linux-ftrace");
		tv_meta_set(m, "long_size", "%zu", sizeof(long));
		tv_meta_set(m, "endian", "little");
	}
	tv_meta_set(m, "ncpus", "%d", ncpus);
	tv_meta_set(m, "subbuf_size", "%zu", subbuf_size);
	return m;
}

static uint64_t read_events(struct tracefs_instance *inst, int cpu, uint64_t *lost)
{
	char file[64];
	uint64_t events = 0, l = 0;
	char *s;

	snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
	s = tracefs_instance_file_read(inst, file, NULL);
	if (s)
		tv_capture_parse_stats(s, &events, &l);
	free(s);
	if (lost)
		*lost = l;
	return events;
}

static int recover_cpu(struct tracefs_instance *inst, const char *inst_dir, const char *host_dir,
		       int cpu, size_t subbuf_size, size_t max_pages, struct tv_meta *m,
		       struct tv_recover_stats *st)
{
	char raw[PATH_MAX + 64], out[PATH_MAX + 32], key[48];
	uint64_t before, after, lost, added = 0;
	struct stat sb;
	int ret;

	snprintf(raw, sizeof(raw), "%s/per_cpu/cpu%d/trace_pipe_raw", inst_dir, cpu);
	if (access(raw, F_OK))
		return 0;	/* no such CPU */
	snprintf(out, sizeof(out), "%s/cpu%d.raw", host_dir, cpu);
	before = read_events(inst, cpu, NULL);
	ret = tv_capture_salvage(raw, out, subbuf_size, max_pages, &added);
	if (ret)
		return ret;
	after = read_events(inst, cpu, &lost);
	st->bytes += added;
	st->salvaged_events += after - before;
	st->events += after;
	st->lost += lost;
	snprintf(key, sizeof(key), "cpu%d.bytes", cpu);
	tv_meta_set(m, key, "%lld", stat(out, &sb) ? 0LL : (long long)sb.st_size);
	snprintf(key, sizeof(key), "cpu%d.events", cpu);
	tv_meta_set(m, key, "%" PRIu64, after);
	snprintf(key, sizeof(key), "cpu%d.lost", cpu);
	tv_meta_set(m, key, "%" PRIu64, lost);
	return 0;
}

static long long instance_number(struct tracefs_instance *inst, const char *file, long long def)
{
	long long v = 0;

	return tracefs_instance_file_read_number(inst, file, &v) == 0 && v > 0 ? v : def;
}

/*
 * DIR/host must be the session's own directory, and the files rewritten in
 * it are replaced, never written through a link planted there: a root
 * process writes into a directory that came from anywhere.
 */
static int recover_check_dir(const char *host_dir)
{
	static const char *const replaced[] = { "meta.tmp", "saved_cmdlines", "saved_tgids" };
	char path[PATH_MAX + 32];
	struct stat st;

	if (lstat(host_dir, &st) || !S_ISDIR(st.st_mode)) {
		tv_err("Not a domain directory: path=\"%s\" (missing, or a symlink)", host_dir);
		return -ENOTDIR;
	}
	for (size_t i = 0; i < sizeof(replaced) / sizeof(replaced[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", host_dir, replaced[i]);
		if (unlink(path) && errno != ENOENT) {
			int err = errno;

			tv_err("Cannot replace file: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
			return -err;
		}
	}
	return 0;
}

/* Everything left in the instance into @dir/host, the meta fixed, the instance removed. */
static int recover_instance(const char *dir, const struct tie *t, const char *tracing_dir,
			    struct tv_recover_stats *st)
{
	struct tracefs_instance *inst = tracefs_instance_alloc(NULL, t->instance);
	char host_dir[PATH_MAX], path[PATH_MAX + 16], *inst_dir;
	int ncpus = (int)sysconf(_SC_NPROCESSORS_CONF), ret = 0;
	size_t subbuf_size, max_pages;
	uint64_t bytes = 0;
	struct tv_meta *m;

	if (!inst)
		return -ENOMEM;
	inst_dir = tracefs_instance_get_dir(inst);
	/* No more events: what is there is all there will be. */
	tracefs_trace_off(inst);
	subbuf_size = (size_t)instance_number(inst, "buffer_subbuf_size_kb", 0) * 1024;
	if (!subbuf_size)
		subbuf_size = (size_t)sysconf(_SC_PAGESIZE);
	/* the ring's pages and a few the reader holds */
	max_pages = (size_t)instance_number(inst, "buffer_size_kb", 1 << 16) * 1024 / subbuf_size + 16;
	snprintf(host_dir, sizeof(host_dir), "%s/host", dir);
	ret = recover_check_dir(host_dir);
	m = ret ? NULL : recover_host_meta(host_dir, subbuf_size, ncpus);
	if (!ret && (!m || !inst_dir))
		ret = -ENOMEM;
	for (int cpu = 0; cpu < ncpus && !ret; cpu++)
		ret = recover_cpu(inst, inst_dir, host_dir, cpu, subbuf_size, max_pages, m, st);
	if (!ret) {
		for (int cpu = 0; cpu < ncpus; cpu++) {
			snprintf(path, sizeof(path), "cpu%d.bytes", cpu);
			bytes += (uint64_t)tv_meta_get_ll(m, path, 0);
		}
		st->pid = t->pid;
		st->ncpus = ncpus;
		snprintf(st->instance, sizeof(st->instance), "%s", t->instance);
		tv_meta_set(m, "status", "recovered");
		tv_meta_set(m, "recovered_pid", "%d", t->pid);
		tv_meta_set(m, "recovered_events", "%" PRIu64, st->salvaged_events);
		tv_meta_set(m, "recovered_bytes", "%" PRIu64, st->bytes);
		tv_meta_set(m, "events_total", "%" PRIu64, st->events);
		tv_meta_set(m, "lost_total", "%" PRIu64, st->lost);
		tv_meta_set(m, "bytes_total", "%" PRIu64, bytes);
		/* the comm and tgid of the tasks seen, as they are now */
		tv_session_write_task_maps(host_dir, tracing_dir);
		snprintf(path, sizeof(path), "%s/meta", host_dir);
		ret = tv_meta_write(m, path);
	}
	tv_meta_free(m);
	free(inst_dir);
	/* gone meanwhile: removed by a tracevisor without recovery */
	if (!ret && tracefs_instance_destroy(inst) && instance_created_ns(tracing_dir, t->instance) >= 0) {
		ret = errno ? -errno : -EIO;
		tv_err("Cannot remove tracefs instance: name=\"%s\", errno=%d (%s) (its data is in the session)",
		       t->instance, -ret, strerror(-ret));
	}
	tracefs_instance_free(inst);
	if (!ret) {
		registry_path(t->instance, path, sizeof(path));
		unlink(path);
	}
	return ret;
}

/* flock on DIR/recorder: one salvage of a session at a time.  Return the fd. */
static int session_lock(const char *dir)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/" RECORDER_FILE, dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;

		close(fd);
		return err == EWOULDBLOCK ? -EBUSY : -err;
	}
	return fd;
}

/* The checks of tv_session_recover(), quiet: 0 when @dir can be recovered from @t. */
static int recoverable(const char *dir, const struct tie *t, const char *tracing_dir,
		       const char **why)
{
	if (file_exists(dir, "session.meta"))
		return *why = "the session is complete", -EEXIST;
	if (host_meta_recovered(dir))
		return *why = "already recovered", -EALREADY;
	if (!same_boot(t))
		return *why = "the machine restarted since the recording", -ENOENT;
	if (tie_alive(t))
		return *why = "its recorder is running", -EBUSY;
	if (instance_created_ns(tracing_dir, t->instance) < 0)
		return *why = "removed", -ENOENT;
	if (instance_created_ns(tracing_dir, t->instance) != t->instance_ns)
		return *why = "the instance of that name is a later recorder's", -ENOENT;
	return 0;
}

int tv_session_recover(const char *dir, struct tv_recover_stats *st)
{
	char path[PATH_MAX + 16];
	const char *tracing_dir = tracefs_tracing_dir(), *why = "";
	struct stat sb;
	struct tie t;
	int ret, lock;

	memset(st, 0, sizeof(*st));
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		ret = stat(dir, &sb) ? -errno : -ENOTDIR;
		tv_err("Cannot open session directory: path=\"%s\", errno=%d (%s)", dir, -ret, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/" RECORDER_FILE, dir);
	if (!file_exists(dir, RECORDER_FILE)) {
		if (file_exists(dir, "session.meta"))
			tv_err("Session is complete: path=\"%s\" (nothing to recover)", dir);
		else
			tv_err("Not a recording to recover: path=\"%s\" has no recorder file (not a session, or recorded before `tracevisor recover` existed)",
			       dir);
		return -ENOENT;
	}
	ret = tie_read(path, &t);
	if (ret)
		return ret;
	if (!tracing_dir) {
		tv_err("Cannot find tracefs: not mounted at /sys/kernel/tracing");
		return -ENOENT;
	}
	ret = recoverable(dir, &t, tracing_dir, &why);
	if (ret == -EEXIST)
		tv_err("Session is complete: path=\"%s\" (nothing to recover)", dir);
	else if (ret == -EALREADY)
		tv_err("Session already recovered: path=\"%s\" (host/meta says status=recovered)", dir);
	else if (ret == -EBUSY)
		tv_err("Recorder still running: pid=%d, session=\"%s\" (stop it with Ctrl-C or SIGTERM; recover is for a killed recorder)",
		       t.pid, dir);
	else if (ret)
		tv_err("Cannot recover: instance gone: path=\"%s/instances/%s\" (%s)", tracing_dir,
		       t.instance, why);
	if (ret)
		return ret;
	lock = session_lock(dir);
	if (lock < 0) {
		tv_err("Cannot lock session: path=\"%s\", errno=%d (%s) (another recover or record salvaging it?)",
		       path, -lock, strerror(-lock));
		return lock;
	}
	/* again under the lock: another process may have salvaged it meanwhile */
	ret = recoverable(dir, &t, tracing_dir, &why);
	if (ret)
		tv_err("Cannot recover: path=\"%s\" (%s)", dir, why);
	else
		ret = recover_instance(dir, &t, tracing_dir, st);
	close(lock);
	return ret;
}

enum tv_stale_state tv_recover_stale(const char *tracing_dir, const char *name, int pid)
{
	char path[PATH_MAX + 16];
	struct tv_recover_stats st = { 0 };
	struct tie reg, own;
	const char *why;
	int lock, ret;

	registry_path(name, path, sizeof(path));
	if (access(path, F_OK) || tie_read(path, &reg) || reg.pid != pid)
		return kill(pid, 0) < 0 && errno == ESRCH ? TV_STALE_DEAD : TV_STALE_ALIVE;
	if (tie_alive(&reg))
		return TV_STALE_ALIVE;
	/* dead: salvage only into the session that names this very instance */
	snprintf(path, sizeof(path), "%s/" RECORDER_FILE, reg.session);
	if (!reg.session[0] || access(path, F_OK) || tie_read(path, &own) || !same_tie(&reg, &own) ||
	    recoverable(reg.session, &reg, tracing_dir, &why)) {
		registry_path(name, path, sizeof(path));
		unlink(path);
		return TV_STALE_DEAD;
	}
	lock = session_lock(reg.session);
	if (lock < 0)
		return TV_STALE_ALIVE;	/* being salvaged by another process */
	ret = recoverable(reg.session, &reg, tracing_dir, &why);
	if (!ret)
		ret = recover_instance(reg.session, &reg, tracing_dir, &st);
	close(lock);
	if (ret) {
		tv_warn("Cannot salvage a killed recorder's trace: session=\"%s\", instance=\"%s\" (kept: try `tracevisor recover %s`)",
			reg.session, name, reg.session);
		return TV_STALE_ALIVE;
	}
	tv_info("Recovered a killed recorder's trace: session=\"%s\", pid=%d: %" PRIu64
		" more events (%" PRIu64 " bytes) from its tracefs instance, now removed",
		reg.session, pid, st.salvaged_events, st.bytes);
	return TV_STALE_DONE;
}

void tv_recover_prune_registry(const char *tracing_dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(TV_RECOVER_REGISTRY);

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)) ||
		    instance_created_ns(tracing_dir, de->d_name) >= 0)
			continue;
		/* written after the instance is created: without it, stale */
		registry_path(de->d_name, path, sizeof(path));
		unlink(path);
	}
	if (d)
		closedir(d);
}
