// SPDX-License-Identifier: LGPL-2.1
/*
 * Loading one domain of a session: its metadata, a tep handle built from the
 * recorded header_page and format files (never from the local tracefs, so a
 * session decodes on any machine), and the task maps.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <event-parse.h>
#include <trace-seq.h>

#include "reader_internal.h"
#include "xen_trace.h"
#include "proto.h"

#define MAX_EVENT_ID 65536
#define BOUNDS_BLOCK 256
#define MAX_FORMAT_BYTES (1 << 20)
#define FORMAT_TRIAL_SECONDS 20

/* NULL with errno set; a file that is not a regular file inside the
 * session fails with EINVAL (TV_EUNSAFE), logged. */
static char *read_whole(const struct tv_domain *dom, const char *path, size_t max, size_t *len)
{
	int fd = tv_domain_open_file(dom, path);
	FILE *f;
	char *buf;
	size_t n;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		int err = errno;

		close(fd);
		errno = err;
		return NULL;
	}
	buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, max, f);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* Offset and size of field @name in a header_page text; 0 when found. */
static int header_field(const char *text, const char *name, unsigned int *off, unsigned int *size)
{
	for (const char *p = text; (p = strstr(p, "field:")); p++) {
		const char *semi = strchr(p, ';'), *o, *s;
		size_t n = strlen(name);

		if (!semi || (size_t)(semi - p) < n || strncmp(semi - n, name, n) ||
		    (semi[-(long)n - 1] != ' ' && semi[-(long)n - 1] != '\t'))
			continue;
		o = strstr(semi, "offset:");
		s = strstr(semi, "size:");
		if (!o || !s || sscanf(o, "offset:%u", off) != 1 || sscanf(s, "size:%u", size) != 1)
			return -1;
		return 0;
	}
	return -1;
}

/*
 * The decoder (cpu_stream.c) reads a sub-buffer as: 8-byte time stamp at 0,
 * commit word of long_size bytes at 8, data from 8 + long_size to at most
 * the end of the sub-buffer.  libtraceevent accepts any text as a header
 * page (it keeps its defaults), so say it when the file does not match.
 */
static int header_page_check(const struct tv_domain *dom, const char *text, const char *path)
{
	unsigned int ts_off, ts_size, c_off, c_size, d_off, d_size;
	unsigned int ls = (unsigned int)dom->long_size;

	if (header_field(text, "timestamp", &ts_off, &ts_size) ||
	    header_field(text, "commit", &c_off, &c_size) ||
	    header_field(text, "data", &d_off, &d_size)) {
		tv_err("Corrupt header page format: path=\"%s\": no timestamp, commit and data fields",
		       path);
		return -EINVAL;
	}
	if (ts_off != 0 || ts_size != 8 || c_off != 8 || c_size != ls || d_off != 8 + ls ||
	    !d_size || d_size > dom->subbuf_size - d_off) {
		tv_err("Corrupt header page format: path=\"%s\": timestamp %u+%u, commit %u+%u, data %u+%u, "
		       "the decoder needs timestamp 0+8, commit 8+%u, data %u+(1..%zu)", path, ts_off,
		       ts_size, c_off, c_size, d_off, d_size, ls, 8 + ls, dom->subbuf_size - 8 - ls);
		return -EINVAL;
	}
	return 0;
}

static int load_header_page(struct tv_domain *dom)
{
	char path[PATH_MAX + 16];
	size_t len;
	char *buf;
	int ret;

	snprintf(path, sizeof(path), "%s/header_page", dom->dir);
	buf = read_whole(dom, path, MAX_FORMAT_BYTES, &len);
	if (!buf) {
		int err = errno;

		if (err == TV_EUNSAFE)
			return -err;
		tv_err("Cannot read header page format: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
		return -err;
	}
	ret = tep_parse_header_page(dom->tep, buf, len, dom->long_size);
	if (!ret)
		ret = header_page_check(dom, buf, path);
	else
		tv_err("Cannot parse header page format: path=\"%s\"", path);
	free(buf);
	return ret ? -EINVAL : 0;
}

/*
 * Parse one format file into dom->tep.  @report_fd >= 0 (the trial child,
 * formats_trial()) gets the path before the parser sees the file, so the
 * parent can name the file the parser crashed on.
 */
static int load_format(struct tv_domain *dom, const char *system, const char *path, int report_fd)
{
	size_t len;
	char *buf = read_whole(dom, path, MAX_FORMAT_BYTES, &len);
	int ret;

	if (!buf) {
		int err = errno;

		if (err == TV_EUNSAFE)
			return -err;
		tv_err("Cannot read event format: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
		return -err;
	}
	if (tv_format_text_check(buf, len, path) ||
	    tv_format_long_size_check(buf, dom->long_size, path)) {
		free(buf);
		return -EINVAL;
	}
	if (report_fd >= 0 && dprintf(report_fd, "%s\n", path) < 0)
		_exit(3);
	ret = tep_parse_event(dom->tep, buf, len, system);
	free(buf);
	if (ret) {
		tv_err("Cannot parse event format: path=\"%s\", tep_errno=%d", path, ret);
		return -EINVAL;
	}
	return 0;
}

/*
 * @fn on each of @dom's format files, until one fails: 0, or its -errno
 * (logged unless @quiet: the pass that parses them says it).
 */
static int formats_walk(struct tv_domain *dom, bool quiet,
			int (*fn)(struct tv_domain *dom, const char *system, const char *path, void *arg),
			void *arg)
{
	char path[PATH_MAX + 300];
	struct dirent *sys, *ev;
	DIR *sd, *ed;
	int ret = 0, n = 0;

	snprintf(path, sizeof(path), "%s/events", dom->dir);
	sd = opendir(path);
	if (!sd) {
		int err = errno;

		if (!quiet)
			tv_err("Cannot open event formats: path=\"%s\", errno=%d (%s)", path, err,
			       strerror(err));
		return -err;
	}
	while (!ret && (sys = readdir(sd))) {
		if (sys->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", dom->dir, sys->d_name);
		ed = opendir(path);
		if (!ed)
			continue;
		while (!ret && (ev = readdir(ed))) {
			if (ev->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/events/%s/%s/format", dom->dir,
				 sys->d_name, ev->d_name);
			ret = fn(dom, sys->d_name, path, arg);
			n++;
		}
		closedir(ed);
	}
	closedir(sd);
	if (!ret && n == 0) {
		if (!quiet)
			tv_err("No event formats in session: path=\"%s/events\"", dom->dir);
		ret = -ENOENT;
	}
	return ret;
}

static int load_format_walked(struct tv_domain *dom, const char *system, const char *path, void *arg)
{
	return load_format(dom, system, path, *(int *)arg);
}

static int load_formats(struct tv_domain *dom, int report_fd)
{
	return formats_walk(dom, false, load_format_walked, &report_fd);
}

/*
 * A xen-trace domain's events are synthesized by this library, not by the
 * recorder: a session written by an older tracevisor lacks the formats of
 * the events added since, which its records now decode into.  Those come
 * from the library itself (trusted text, no trial parse needed).
 */
static int load_builtin_xen_formats(struct tv_domain *dom)
{
	for (int id = 1; id < tv_xen_event_count(); id++) {
		size_t len = 0;
		char *text;
		int ret;

		if (!tv_xen_event_name(id) || tep_find_event(dom->tep, id))
			continue;
		text = tv_xen_format_text(id, &len);
		if (!text)
			return -ENOMEM;
		ret = tep_parse_event(dom->tep, text, len, "xen");
		free(text);
		if (ret) {
			tv_err("Cannot parse built-in Xen event format: id=%d, tep_errno=%d", id, ret);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * A xen-trace domain from `record --xen` has no events/ (meta
 * formats=builtin, doc/session-format.md): its formats are all built in.
 */
static bool xen_builtin_formats(const struct tv_domain *dom)
{
	const char *f = tv_meta_get(dom->meta, "formats");

	return dom->source == &tv_xen_source && f && !strcmp(f, "builtin");
}

static void quiet_log(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	(void)ctx;
}

/* The trial child: parse every format, die quietly if the parser crashes. */
static void formats_trial_child(struct tv_domain *dom, int report_fd)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM };
	struct rlimit no_core = { 0, 0 };

	/* default actions, so a crash ends this child only (and no sanitizer
	 * or fuzzer handler inherited from the parent reports it as its own) */
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
	setrlimit(RLIMIT_CORE, &no_core);
	tv_log_set_callback(quiet_log, NULL);	/* the parent says what went wrong */
	alarm(FORMAT_TRIAL_SECONDS);
	_exit(load_formats(dom, report_fd) ? 2 : 0);
}

/*
 * Format sets this process has seen parsed by a trial child without a
 * crash: a session's formats are tried once per process, not once per
 * reader (sync opens four readers on a session and stat three; each
 * forked a child to parse Xen's 174 formats again, 46M instructions).
 * Keyed by a digest of the domain's long size and of every format file's
 * path and bytes, read again for each reader: a file changed by one byte
 * is tried again.
 */
#define TRIAL_KEPT 32
static struct {
	pthread_mutex_t lock;
	uint64_t digest[TRIAL_KEPT];
	unsigned int nr, next;
} trial_ok = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

/*
 * One file's path and bytes, added to *@arg (order-free: readdir's order
 * may differ).  Not a regular file, or a symlink: no digest, the trial and
 * the parse say what is wrong with it.
 */
static int format_digest_add(struct tv_domain *dom, const char *system, const char *path, void *arg)
{
	uint64_t h = fnv1a(0xcbf29ce484222325ull, path, strlen(path) + 1);
	unsigned char buf[16384];
	size_t total = 0;
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	(void)dom;
	(void)system;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0 && total <= MAX_FORMAT_BYTES) {
		h = fnv1a(h, buf, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
	if (n < 0)
		return -EIO;
	h = fnv1a(h, &total, sizeof(total));
	*(uint64_t *)arg += h * 0xff51afd7ed558ccdull;
	return 0;
}

/* The digest of @dom's formats: 0, or -errno (then no trial is skipped). */
static int formats_digest(struct tv_domain *dom, uint64_t *digest)
{
	*digest = fnv1a(0xcbf29ce484222325ull, &dom->long_size, sizeof(dom->long_size));
	return formats_walk(dom, true, format_digest_add, digest);
}

static bool trial_known(uint64_t digest)
{
	bool known = false;

	pthread_mutex_lock(&trial_ok.lock);
	for (unsigned int i = 0; i < trial_ok.nr && !known; i++)
		known = trial_ok.digest[i] == digest;
	pthread_mutex_unlock(&trial_ok.lock);
	return known;
}

static void trial_keep(uint64_t digest)
{
	pthread_mutex_lock(&trial_ok.lock);
	trial_ok.digest[trial_ok.next] = digest;
	trial_ok.next = (trial_ok.next + 1) % TRIAL_KEPT;
	if (trial_ok.nr < TRIAL_KEPT)
		trial_ok.nr++;
	pthread_mutex_unlock(&trial_ok.lock);
}

/*
 * Run libtraceevent's format parser on this domain's formats in a child
 * process before the reader runs it for real: the formats are untrusted,
 * and that parser has crashed on malformed text more than once (see
 * format_check.c).  The parser is deterministic, so formats the child
 * parsed without crashing are safe to parse here.  A child that failed
 * without crashing is not an error here: the real pass logs the reason.
 */
static int formats_trial(struct tv_domain *dom)
{
	char last[PATH_MAX + 300] = "", line[sizeof(last)];
	int fds[2], status, have_digest;
	uint64_t digest;
	FILE *report;
	pid_t pid;

	have_digest = formats_digest(dom, &digest) == 0;
	if (have_digest && trial_known(digest))
		return 0;	/* the same bytes parsed without a crash already */
	if (pipe2(fds, O_CLOEXEC))
		return 0;	/* no sandbox possible: the checks above still hold */
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		tv_debug("Cannot fork to check event formats: errno=%d (%s); parsing them directly",
			 err, strerror(err));
		return 0;
	}
	if (pid == 0) {
		close(fds[0]);
		formats_trial_child(dom, fds[1]);
	}
	close(fds[1]);
	report = fdopen(fds[0], "r");
	while (report && fgets(line, sizeof(line), report))
		memcpy(last, line, sizeof(last));
	if (report)
		fclose(report);
	else
		close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (have_digest && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		trial_keep(digest);
	if (!WIFSIGNALED(status))
		return 0;
	last[strcspn(last, "\n")] = '\0';
	tv_err("Cannot parse event format: path=\"%s\": libtraceevent %s on it (signal %d)", last,
	       WTERMSIG(status) == SIGALRM ? "did not finish" : "crashed", WTERMSIG(status));
	return -EINVAL;
}

/*
 * kvm_userspace_exit's print format tests "errno < 0", which libtraceevent
 * 1.7 evaluates on the unsigned field: an interrupted KVM_RUN would print
 * as a KVM_EXIT_INTR.  Print it the way the kernel means it.
 */
int tv_append_userspace_exit(struct tv_strbuf *sb, uint64_t reason, uint64_t err)
{
	const char *name = tv_kvm_userspace_exit_name(reason);
	int e = (int)(int32_t)err;

	if (e < 0)
		return tv_strbuf_append(sb, "reason %s (%d)", e == -4 ? "restart" : "error", -e);
	if (!name)
		return tv_strbuf_append(sb, "reason %llu (%llu)", (unsigned long long)reason,
					(unsigned long long)reason);
	/* The common case, once per KVM_RUN: no format string. */
	return tv_strbuf_append_mem(sb, "reason KVM_EXIT_", 16) ?:
	       tv_strbuf_append_mem(sb, name, strlen(name)) ?:
	       tv_strbuf_append_mem(sb, " (", 2) ?:
	       tv_strbuf_append_u64(sb, reason) ?:
	       tv_strbuf_append_mem(sb, ")", 1);
}

int tv_domain_print_userspace_exit(struct trace_seq *s, struct tep_record *record,
				   struct tep_event *event, void *context)
{
	unsigned long long reason = 0, err = 0;
	struct tv_strbuf sb = { 0 };

	(void)context;
	if (tep_get_field_val(s, event, "reason", record, &reason, 1) ||
	    tep_get_field_val(s, event, "errno", record, &err, 1))
		return 0;
	if (!tv_append_userspace_exit(&sb, reason, err))
		trace_seq_puts(s, sb.data);
	tv_strbuf_free(&sb);
	return 0;	/* non-zero would make libtraceevent print the format too */
}

static const char *const marker_names[] = {
	[TV_SYNC_PING_SEND] = "ping_send",	[TV_SYNC_PING_RECV] = "ping_recv",
	[TV_SYNC_PONG_SEND] = "pong_send",	[TV_SYNC_PONG_RECV] = "pong_recv",
	[TV_SYNC_HCALL_BEFORE] = "hcall_before", [TV_SYNC_HCALL_AFTER] = "hcall_after",
	[TV_SYNC_XEN_BEFORE] = "xen_before",	[TV_SYNC_XEN_AFTER] = "xen_after",
	[TV_SYNC_CLOCK_REALTIME] = "clock_realtime",
};

/*
 * Our sync markers (doc/sync-probes.md) by name instead of ftrace's hex
 * id; any other raw_data record as its format says (return 1).
 */
static int print_sync_marker(struct trace_seq *s, struct tep_record *record,
			     struct tep_event *event, void *context)
{
	char date[TV_WALL_CLOCK_LEN];
	struct tv_sync_marker m;

	(void)event;
	(void)context;
	if (record->size < 0 || tv_sync_marker_decode(record->data, (size_t)record->size, &m) ||
	    m.type >= sizeof(marker_names) / sizeof(marker_names[0]) || !marker_names[m.type])
		return 1;
	if (m.type != TV_SYNC_CLOCK_REALTIME)
		trace_seq_printf(s, "tracevisor %s guest=%u seq=%llu", marker_names[m.type], m.guest,
				 (unsigned long long)m.seq);
	else
		trace_seq_printf(s, "tracevisor clock_realtime seq=%llu %s",
				 (unsigned long long)m.seq, tv_wall_clock_format(m.aux, date));
	return 0;
}

static void register_printers(struct tv_domain *dom)
{
	struct tep_event *ev = tep_find_event_by_name(dom->tep, "kvm", "kvm_userspace_exit");

	if (ev && tep_find_field(ev, "errno"))
		tep_register_event_handler(dom->tep, -1, "kvm", "kvm_userspace_exit",
					   tv_domain_print_userspace_exit, NULL);
	if (tep_find_event_by_name(dom->tep, "ftrace", "raw_data"))
		tep_register_event_handler(dom->tep, -1, "ftrace", "raw_data", print_sync_marker,
					   NULL);
}

static int cmp_tid(const void *a, const void *b)
{
	const struct tid_tgid *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * saved_cmdlines' "PID COMM" lines.  A comm may hold a newline (anyone may
 * name a task so: prctl(PR_SET_NAME)), which the kernel writes as is, so its
 * tail comes as a line of its own: skipped here, where
 * tep_parse_saved_cmdlines() stops at it and every later task stays "<...>".
 */
static void load_cmdlines(struct tv_domain *dom, char *buf)
{
	char *save = NULL;

	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		long pid = strtol(line, &end, 10);

		if (end != line && *end == ' ' && pid >= 0 && pid <= INT_MAX)
			tep_register_comm(dom->tep, end + 1, (int)pid);
	}
}

static void load_task_maps(struct tv_domain *dom)
{
	char path[PATH_MAX + 32];
	char *buf, *save = NULL;	/* strtok_r: no hidden state shared between threads */
	size_t cap = 0;

	snprintf(path, sizeof(path), "%s/saved_cmdlines", dom->dir);
	buf = read_whole(dom, path, 16 << 20, NULL);
	if (buf)
		load_cmdlines(dom, buf);
	free(buf);
	snprintf(path, sizeof(path), "%s/saved_tgids", dom->dir);
	buf = read_whole(dom, path, 16 << 20, NULL);

	for (char *line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end;
		long tid, tgid;

		/* strtol, not sscanf: saved_tgids has a line per possible pid. */
		tid = strtol(line, &end, 10);
		if (end == line || *end != ' ')
			continue;
		line = end;
		tgid = strtol(line, &end, 10);
		if (end == line || tid < INT_MIN || tid > INT_MAX || tgid < INT_MIN || tgid > INT_MAX)
			continue;
		if (dom->nr_tgids == cap) {
			struct tid_tgid *grown;

			cap = cap ? cap * 2 : 256;
			grown = realloc(dom->tgids, cap * sizeof(*grown));
			if (!grown)
				break;
			dom->tgids = grown;
		}
		dom->tgids[dom->nr_tgids++] = (struct tid_tgid){ (int)tid, (int)tgid };
	}
	free(buf);
	if (dom->tgids)
		qsort(dom->tgids, dom->nr_tgids, sizeof(*dom->tgids), cmp_tid);
	snprintf(path, sizeof(path), "%s/vcpus", dom->dir);
	tv_vcpu_map_read(&dom->vcpus, path);
}

void tv_domain_reload_task_maps(struct tv_domain *dom)
{
	free(dom->tgids);
	dom->tgids = NULL;
	dom->nr_tgids = 0;
	tv_vcpu_map_free(&dom->vcpus);
	load_task_maps(dom);
}

static pid_t domain_tgid_of(const struct tv_domain_info *info, pid_t tid)
{
	const struct tv_domain *dom = (const struct tv_domain *)info;
	struct tid_tgid key = { tid, 0 };
	const struct tid_tgid *hit;
	const struct tv_vcpu_thread *t;

	hit = dom->tgids ? bsearch(&key, dom->tgids, dom->nr_tgids, sizeof(key), cmp_tid) : NULL;
	if (hit && hit->tgid > 0)
		return hit->tgid;
	t = tv_vcpu_map_find(&dom->vcpus, tid);
	return t ? t->vm_pid : tid;
}

static const char *domain_display_name(const char *subdir, char *buf, size_t size)
{
	if (!strncmp(subdir, "guest-", 6))
		snprintf(buf, size, "guest:%s", subdir + 6);
	else
		snprintf(buf, size, "%s", subdir);
	return buf;
}

/*
 * A traced process's domain (kind ust) is shown as its parent's (host,
 * guest:NAME) and reads its parent's clock: the reader maps it with the
 * parent's transform (lib/reader/reader.c).
 */
static int domain_ust_parent(struct tv_domain *dom, const char *path)
{
	const char *parent = tv_meta_get(dom->meta, "parent");

	if (!parent || !*parent || strlen(parent) >= sizeof(dom->clock_of) || strchr(parent, '/') ||
	    strchr(parent, ',') || parent[0] == '.' || !strncmp(parent, "ust-", 4)) {
		tv_err("Invalid domain metadata: path=\"%s\": kind ust needs a parent domain", path);
		return -EINVAL;
	}
	snprintf(dom->clock_of, sizeof(dom->clock_of), "%s", parent);
	domain_display_name(parent, dom->name, sizeof(dom->name));
	return 0;
}

static int domain_kind(struct tv_domain *dom, const char *path)
{
	const char *kind = tv_meta_get(dom->meta, "kind");

	dom->source = tv_stream_source_find(kind);
	if (!dom->source) {
		tv_err("Unknown domain kind: path=\"%s\", kind=\"%s\"", path, kind);
		return -EINVAL;
	}
	return dom->source == &tv_ust_source ? domain_ust_parent(dom, path) : 0;
}

/*
 * The meta of a domain whose recorder was killed before writing it: the CPU
 * count from the stream files' names, the word and sub-buffer sizes from
 * the header page (checked again when it is loaded), the kind from the
 * files' suffix.  Clock, losses and the rest are unknown.
 */
static int incomplete_meta(struct tv_domain *dom, struct tv_meta **out)
{
	char path[PATH_MAX + 16];
	unsigned int c_off, c_size, d_off, d_size;
	struct dirent *de;
	int ncpus = 0, xen = 0, ust = 0;
	size_t len;
	char *hp;
	DIR *d;

	d = opendir(dom->dir);
	if (!d) {
		int err = errno;

		tv_err("Cannot open domain directory: path=\"%s\", errno=%d (%s)", dom->dir, err,
		       strerror(err));
		return -err;
	}
	while ((de = readdir(d))) {
		char *end;
		long cpu;

		if (strncmp(de->d_name, "cpu", 3))
			continue;
		cpu = strtol(de->d_name + 3, &end, 10);
		if (end == de->d_name + 3 || cpu < 0 || cpu >= 65536 ||
		    (strcmp(end, ".raw") && strcmp(end, ".raw.zst") && strcmp(end, ".xen") &&
		     strcmp(end, ".xen.zst") && strcmp(end, ".ust")))
			continue;
		xen |= !strncmp(end, ".xen", 4);
		ust |= !strcmp(end, ".ust");
		if (cpu + 1 > ncpus)
			ncpus = (int)cpu + 1;
	}
	closedir(d);
	snprintf(path, sizeof(path), "%s/header_page", dom->dir);
	hp = read_whole(dom, path, MAX_FORMAT_BYTES, &len);
	if (!hp)
		return -errno;
	*out = tv_meta_new();
	if (!*out) {
		free(hp);
		return -ENOMEM;
	}
	tv_meta_set(*out, "kind", "%s", ust ? "ust" : xen ? "xen-trace" : "linux-ftrace");
	/* a recorder's xen/ has no events/ (formats=builtin) and no meta yet */
	snprintf(path, sizeof(path), "%s/events", dom->dir);
	if (xen && access(path, F_OK))
		tv_meta_set(*out, "formats", "builtin");
	/* ust-PARENT-PID: the parent is all but the last "-PID" */
	if (ust && !strncmp(dom->subdir, "ust-", 4) && strrchr(dom->subdir, '-') > dom->subdir + 4)
		tv_meta_set(*out, "parent", "%.*s", (int)(strrchr(dom->subdir, '-') - dom->subdir - 4),
			    dom->subdir + 4);
	tv_meta_set(*out, "ncpus", "%d", ncpus ? ncpus : 1);
	if (!header_field(hp, "commit", &c_off, &c_size) &&
	    !header_field(hp, "data", &d_off, &d_size) && c_size <= 8 && d_off <= 64 &&
	    d_size <= (64u << 20)) {
		tv_meta_set(*out, "long_size", "%u", c_size);
		tv_meta_set(*out, "subbuf_size", "%u", d_off + d_size);
	}
	free(hp);
	return 0;
}

/*
 * What a domain's meta (@path, for errors) says about its streams, then
 * its tep handle from the header page and formats: everything that makes
 * the domain decodable or not.
 */
static int domain_decoder_load(struct tv_domain *dom, const char *path)
{
	int ret = domain_kind(dom, path);

	if (ret)
		return ret;
	dom->long_size = (int)tv_meta_get_ll(dom->meta, "long_size", 8);
	dom->subbuf_size = (size_t)tv_meta_get_ll(dom->meta, "subbuf_size", 4096);
	dom->nr_cpus = (int)tv_meta_get_ll(dom->meta, "ncpus", 0);
	if ((dom->long_size != 4 && dom->long_size != 8) || dom->subbuf_size < 64 ||
	    dom->subbuf_size > (64 << 20) || dom->nr_cpus <= 0 || dom->nr_cpus > 65536) {
		tv_err("Invalid domain metadata: path=\"%s\" (long_size, subbuf_size or ncpus)", path);
		return -EINVAL;
	}
	dom->tep = tep_alloc();
	dom->bounds = calloc(MAX_EVENT_ID / BOUNDS_BLOCK, sizeof(*dom->bounds));
	if (!dom->tep || !dom->bounds)
		return -ENOMEM;
	tep_set_long_size(dom->tep, dom->long_size);
	dom->swap = tep_is_file_bigendian(dom->tep) != tep_is_local_bigendian(dom->tep);
	tep_set_page_size(dom->tep, (int)dom->subbuf_size);
	tep_set_flag(dom->tep, TEP_NSEC_OUTPUT);
	ret = load_header_page(dom);
	/*
	 * A xen/ domain whose records are not read (there for Xen's line:
	 * tv_reader_open_moved()) has no event to decode: its 174 formats
	 * were a second parse of them in sync, 45M instructions.
	 */
	if (!ret && dom->no_streams && dom->source == &tv_xen_source)
		return 0;
	if (!ret && !xen_builtin_formats(dom))
		ret = formats_trial(dom);
	if (!ret && !xen_builtin_formats(dom))
		ret = load_formats(dom, -1);
	if (!ret && dom->source == &tv_xen_source)
		ret = load_builtin_xen_formats(dom);
	return ret;
}

static void domain_set_names(struct tv_domain *dom, const char *session_dir, const char *subdir)
{
	snprintf(dom->dir, sizeof(dom->dir), "%s/%s", session_dir, subdir);
	domain_display_name(subdir, dom->name, sizeof(dom->name));
	snprintf(dom->subdir, sizeof(dom->subdir), "%s", subdir);
}

int tv_domain_load(struct tv_domain *dom, const char *session_dir, const char *subdir)
{
	char path[PATH_MAX + 16];
	int ret;

	domain_set_names(dom, session_dir, subdir);
	snprintf(path, sizeof(path), "%s/meta", dom->dir);
	if (!dom->meta) {
		if (dom->incomplete && access(path, F_OK))
			ret = incomplete_meta(dom, &dom->meta);
		else
			ret = tv_meta_read(path, &dom->meta);
		if (ret)
			return ret;
	}
	ret = domain_decoder_load(dom, path);
	if (ret)
		return ret;
	register_printers(dom);
	load_task_maps(dom);
	dom->info.name = dom->name;
	dom->info.subdir = dom->subdir;
	dom->info.dir = dom->dir;
	dom->info.tep = dom->tep;
	dom->info.meta = dom->meta;
	dom->info.vcpus = &dom->vcpus;
	dom->info.tgid_of = domain_tgid_of;
	return 0;
}

int tv_domain_check(const char *dir, const struct tv_meta *meta, char *why, size_t size)
{
	struct tv_domain *dom = calloc(1, sizeof(*dom));
	char session[PATH_MAX], path[PATH_MAX + 16];
	const char *slash = strrchr(dir, '/');
	struct tv_log_capture cap;
	int ret;

	if (!dom)
		return -ENOMEM;
	snprintf(session, sizeof(session), "%.*s", slash ? (int)(slash - dir) : 1,
		 slash ? dir : ".");
	domain_set_names(dom, session, slash ? slash + 1 : dir);
	snprintf(path, sizeof(path), "%s/meta", dom->dir);
	tv_log_capture_begin(&cap);
	ret = meta ? 0 : tv_meta_read(path, &dom->meta);
	if (meta)
		dom->meta = (struct tv_meta *)meta;	/* the caller's: not freed below */
	if (!ret)
		ret = domain_decoder_load(dom, path);
	tv_log_capture_end(&cap);
	if (ret && why)
		snprintf(why, size, "%s", cap.errors ? cap.first : strerror(-ret));
	if (meta)
		dom->meta = NULL;
	tv_domain_unload(dom);
	free(dom);
	return ret;
}

void tv_domain_unload(struct tv_domain *dom)
{
	if (dom->tep)
		tep_free(dom->tep);
	tv_meta_free(dom->meta);
	tv_vcpu_map_free(&dom->vcpus);
	free(dom->tgids);
	for (int blk = 0; dom->bounds && blk < MAX_EVENT_ID / BOUNDS_BLOCK; blk++) {
		for (int i = 0; dom->bounds[blk] && i < BOUNDS_BLOCK; i++)
			tv_json_layout_free(dom->bounds[blk][i].json);
		free(dom->bounds[blk]);
	}
	free(dom->bounds);
	tv_info_cache_free(dom->info_cache);
	tv_sync_domain_release(&dom->sync);
	memset(dom, 0, sizeof(*dom));
}

static void compute_bounds(struct tep_event *event, struct event_bounds *b)
{
	struct tep_format_field *f;

	b->checked = 1;
	b->event = event;
	for (f = event->format.common_fields; f; f = f->next) {
		if (f->offset + f->size > b->min_size)
			b->min_size = f->offset + f->size;
		if (!strcmp(f->name, "common_pid") && f->size <= 8) {
			b->pid_off = f->offset;
			b->pid_size = f->size;
		}
	}
	for (f = event->format.fields; f; f = f->next) {
		if (f->offset + f->size > b->min_size)
			b->min_size = f->offset + f->size;
		if ((f->flags & TEP_FIELD_IS_DYNAMIC) && b->nr_dynamic < 16)
			b->dynamic[b->nr_dynamic++] = f;
	}
}

/* A __data_loc word: offset in the low 16 bits, length in the high 16. */
static int dynamic_field_ok(struct tep_handle *tep, struct tep_record *rec,
			    struct tep_format_field *f)
{
	unsigned int loc = (unsigned int)tep_read_number(tep, (char *)rec->data + f->offset, 4);
	unsigned int off = loc & 0xffff, len = loc >> 16;

	if (f->flags & TEP_FIELD_IS_RELATIVE)
		off += (unsigned int)(f->offset + f->size);
	return off + len <= (unsigned int)rec->size;
}

struct event_bounds *tv_domain_bounds(struct tv_domain *dom, unsigned int id)
{
	struct event_bounds **blk = &dom->bounds[(id / BOUNDS_BLOCK) % (MAX_EVENT_ID / BOUNDS_BLOCK)];

	if (!*blk)
		*blk = calloc(BOUNDS_BLOCK, sizeof(**blk));
	return *blk ? &(*blk)[id % BOUNDS_BLOCK] : NULL;
}

struct tep_event *tv_domain_checked_event(struct tv_domain *dom, struct tep_record *rec, int *pid,
					  const char **why)
{
	struct tep_event *event;
	struct event_bounds *b;
	int id;

	if (rec->size < 8) {
		*why = "record shorter than the common fields";
		return NULL;
	}
	id = (int)(dom->swap ? tep_read_number(dom->tep, rec->data, 2)
			     : *(const uint16_t *)rec->data);
	/* a block is made only for known ids: a guest's random ids make none */
	b = dom->bounds[id / BOUNDS_BLOCK] ? &dom->bounds[id / BOUNDS_BLOCK][id % BOUNDS_BLOCK]
					   : NULL;
	event = b && b->checked ? b->event : tep_find_event(dom->tep, id);
	if (!event) {
		*why = "unknown event id";
		return NULL;
	}
	if (!b && !(b = tv_domain_bounds(dom, (unsigned int)id))) {
		*why = "out of memory";
		return NULL;
	}
	if (!b->checked)
		compute_bounds(event, b);
	if (rec->size < b->min_size) {
		*why = "record shorter than its format";
		return NULL;
	}
	for (int i = 0; i < b->nr_dynamic; i++) {
		if (!dynamic_field_ok(dom->tep, rec, b->dynamic[i])) {
			*why = "dynamic field outside the record";
			return NULL;
		}
	}
	/* common_pid is signed: idle is 0, but a swapper-less -1 can happen. */
	if (b->pid_size == 4 && !dom->swap)	/* the usual int, read in place */
		memcpy(pid, (const char *)rec->data + b->pid_off, 4);
	else
		*pid = b->pid_size ? (int)(int32_t)tep_read_number(dom->tep,
								    (char *)rec->data + b->pid_off,
								    b->pid_size)
				   : 0;
	return event;
}

/* A session file opened inside the session of @dom (its parent directory). */
int tv_domain_open_file(const struct tv_domain *dom, const char *path)
{
	char root[PATH_MAX];
	char *slash;

	snprintf(root, sizeof(root), "%s", dom->dir);
	slash = strrchr(root, '/');
	if (slash && slash != root)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
	else
		snprintf(root, sizeof(root), ".");
	return tv_session_open_file(root, path);
}
