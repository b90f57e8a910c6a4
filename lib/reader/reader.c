// SPDX-License-Identifier: LGPL-2.1
/*
 * Time-ordered reading of a whole session: every CPU stream of every domain
 * is merged with a binary min-heap keyed on (timestamp, domain, cpu), so
 * memory is one sub-buffer per stream whatever the trace size, and ties are
 * broken the same way on every run.
 *
 * When the session was synchronised (DIR/sync/transforms), each domain's
 * timestamps are mapped to the reference clock as they are read, before
 * the heap compares them: one multiply-shift per event, no buffering.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event-parse.h>

#include "reader_internal.h"

struct tv_reader {
	struct tv_domain *domains;
	size_t nr_domains, cap_domains;
	struct tv_cpu_stream *streams;
	size_t nr_streams;
	struct tv_cpu_stream **heap;
	size_t heap_len;
	struct tv_cpu_stream *current;	/* returned last; advanced on next call */
	struct tv_meta *session_meta;
	int incomplete;		/* no session.meta: its recorder was killed */
	/* Following a session being recorded: streams at their end wait here
	 * for tv_reader_follow_refresh() instead of leaving the merge. */
	int follow;
	struct tv_cpu_stream **waiting;
	size_t nr_waiting;
	const char *only;	/* read this domain alone (tv_reader_open_domain()) */
	int no_ust;		/* without the traced processes' domains */
	int no_xen_records;	/* the xen/ domain there for its line only */
	struct tv_xen_line *line;	/* Xen's common time line (xen_line.c), or NULL */
};

static int stream_before(const struct tv_cpu_stream *a, const struct tv_cpu_stream *b)
{
	if (a->rec.ts != b->rec.ts)
		return a->rec.ts < b->rec.ts;
	if (a->dom != b->dom)
		return a->dom < b->dom;
	return a->cpu < b->cpu;
}

static void heap_sift_down(struct tv_reader *rd, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct tv_cpu_stream *tmp;

		if (l < rd->heap_len && stream_before(rd->heap[l], rd->heap[m]))
			m = l;
		if (r < rd->heap_len && stream_before(rd->heap[r], rd->heap[m]))
			m = r;
		if (m == i)
			return;
		tmp = rd->heap[i];
		rd->heap[i] = rd->heap[m];
		rd->heap[m] = tmp;
		i = m;
	}
}

static void heap_sift_up(struct tv_reader *rd, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		struct tv_cpu_stream *tmp;

		if (!stream_before(rd->heap[i], rd->heap[p]))
			return;
		tmp = rd->heap[i];
		rd->heap[i] = rd->heap[p];
		rd->heap[p] = tmp;
		i = p;
	}
}

/* Streams are decoded by their domain's source; the merge is the same. */
static int stream_open(struct tv_cpu_stream *st, struct tv_domain *dom, int cpu)
{
	return dom->source->open(st, dom, cpu);
}

static int stream_next(struct tv_cpu_stream *st)
{
	return st->dom->source->next(st);
}

static void stream_close(struct tv_cpu_stream *st)
{
	if (st->dom)
		st->dom->source->close(st);
	else
		tv_cpu_stream_close(st);	/* never opened: a zeroed cursor */
}

/* A domain directory as a recorder leaves it before its end: formats written. */
/* DIR/NAME holds a cpuN.xen or cpuN.xen.zst. */
static int has_xen_stream(const char *dir, const char *name)
{
	char path[PATH_MAX + 300];
	struct dirent *de;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	d = opendir(path);
	while (d && !found && (de = readdir(d))) {
		const char *dot = strchr(de->d_name, '.');

		found = !strncmp(de->d_name, "cpu", 3) && dot &&
			(!strcmp(dot, ".xen") || !strcmp(dot, ".xen.zst"));
	}
	if (d)
		closedir(d);
	return found;
}

static int is_domain_dir(const char *dir, const char *name)
{
	char path[PATH_MAX + 300];
	struct stat st;

	if (name[0] == '.' || strchr(name, ','))
		return 0;
	snprintf(path, sizeof(path), "%s/%s/header_page", dir, name);
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	snprintf(path, sizeof(path), "%s/%s/events", dir, name);
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return 1;
	/* record --xen's xen/ has no events/ (formats=builtin): its meta, or
	 * its meta not written yet, its streams */
	snprintf(path, sizeof(path), "%s/%s/meta", dir, name);
	return (!stat(path, &st) && S_ISREG(st.st_mode)) || has_xen_stream(dir, name);
}

static int domain_order(const struct dirent **a, const struct dirent **b)
{
	int ha = !strcmp((*a)->d_name, "host"), hb = !strcmp((*b)->d_name, "host");

	if (ha != hb)
		return hb - ha;	/* the host first: it is the reference */
	return strcmp((*a)->d_name, (*b)->d_name);
}

/*
 * No session.meta: a recorder killed (SIGKILL, power loss) before its end
 * leaves domain directories with their formats and stream files.  Read what
 * reached the disk, with one warning; a directory with nothing of a session
 * keeps the error.
 */
static int incomplete_session(struct tv_reader *rd, const char *dir)
{
	struct tv_strbuf list = { 0 };
	struct dirent **names;
	int n, found = 0, ret = 0;

	n = scandir(dir, &names, NULL, domain_order);
	for (int i = 0; i < n; i++) {
		if (is_domain_dir(dir, names[i]->d_name)) {
			tv_strbuf_append(&list, "%s%s", found ? "," : "", names[i]->d_name);
			found++;
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (!found) {
		tv_strbuf_free(&list);
		tv_err("Not a complete tracevisor session: path=\"%s\" has no session.meta (recording interrupted, or wrong directory)", dir);
		return -ENOENT;
	}
	rd->session_meta = tv_meta_new();
	if (!rd->session_meta || !list.data ||
	    tv_meta_set(rd->session_meta, "domains", "%s", list.data) ||
	    tv_meta_set(rd->session_meta, "reference", "%.*s", (int)strcspn(list.data, ","),
			list.data))
		ret = -ENOMEM;
	tv_strbuf_free(&list);
	if (ret)
		return ret;
	rd->incomplete = 1;
	if (!rd->follow)	/* followed: being recorded, not cut short */
		tv_warn("Incomplete session: path=\"%s\" has no session.meta (the recording did not finish): showing what reached the disk", dir);
	return 0;
}

/*
 * The domains to read (tv_reader_select_domains()): process-wide, like the
 * log settings, because a command reads its session through several
 * readers (sync's passes, stat's analyses) that must all see the same
 * subset.  Set before readers are opened, by one thread.
 */
static char **selected;
static size_t nr_selected;

int tv_reader_select_domain(const char *name)
{
	char **grown, *copy;

	if (!name) {
		for (size_t i = 0; i < nr_selected; i++)
			free(selected[i]);
		free(selected);
		selected = NULL;
		nr_selected = 0;
		return 0;
	}
	if (!*name || strchr(name, '/') || strchr(name, ',')) {
		tv_err("Invalid domain name: \"%s\" (host, xen, guest:NAME, guest-NAME or a traced process's ust-PARENT-PID)",
		       name);
		return -EINVAL;
	}
	copy = strdup(name);
	grown = realloc(selected, (nr_selected + 1) * sizeof(*selected));
	if (!copy || !grown) {
		free(copy);
		if (grown)
			selected = grown;
		return -ENOMEM;
	}
	/* guest:NAME as reports show it is the directory guest-NAME */
	if (!strncmp(copy, "guest:", 6))
		copy[5] = '-';
	selected = grown;
	selected[nr_selected++] = copy;
	return 0;
}

/* Is @subdir a traced process (ust-PARENT-PID or ust-PARENT-PID.N) of @parent? */
static int ust_child_of(const char *subdir, const char *parent)
{
	size_t n = strlen(parent);
	const char *p;

	if (strncmp(subdir, "ust-", 4) || strncmp(subdir + 4, parent, n) || subdir[4 + n] != '-')
		return 0;
	p = subdir + 5 + n;
	if (!*p)
		return 0;
	for (; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			return 0;
	return 1;
}

/* Domain @subdir is read: selected by name, or as a selected domain's traced process. */
static int domain_selected(const char *subdir, unsigned char *matched)
{
	int yes = !nr_selected;

	for (size_t i = 0; i < nr_selected; i++) {
		if (!strcmp(subdir, selected[i]) || ust_child_of(subdir, selected[i])) {
			matched[i] = 1;
			yes = 1;
		}
	}
	return yes;
}

/*
 * A message said once per process: a command reads a session in several
 * passes (sync, stat), and each would say again that a domain is left out.
 */
static int said_before(const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char *said[256];
	static size_t nr_said;
	int seen = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nr_said && !seen; i++)
		seen = !strcmp(said[i], msg);
	if (!seen && nr_said < sizeof(said) / sizeof(said[0]))
		said[nr_said] = strdup(msg), nr_said += said[nr_said] != NULL;
	pthread_mutex_unlock(&lock);
	return seen;
}

static void warn_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn_once(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!said_before(msg))
		tv_warn("%s", msg);
}

/*
 * Only a guest's domains (its kernel's, its traced processes') are
 * quarantined: their content comes from a guest, which may be hostile or
 * broken, and must never cost the host or another guest its trace.  The
 * host's, Xen's and the host's traced processes' domains are written by
 * this recorder from the local kernel and hypervisor: damage there is a
 * damaged or tampered session, and stays an error, as a reader must not
 * quietly read a session without its reference clock.
 */
static int domain_quarantinable(const char *subdir)
{
	return !strncmp(subdir, "guest-", 6) || !strncmp(subdir, "ust-guest-", 10);
}

/*
 * Load guest domain @d, or leave it out with one warning: a recorder said
 * it rejected it (meta status=rejected: WHY), or what the reader would
 * have refused (its error, captured).  Return: 1 loaded, 0 left out, -errno.
 */
static int reader_load_guest(struct tv_reader *rd, struct tv_domain *dom, const char *dir,
			     const char *d)
{
	char path[PATH_MAX + 300], name[96];
	struct tv_log_capture cap;
	const char *status;
	int ret;

	snprintf(path, sizeof(path), "%s/%s/meta", dir, d);
	snprintf(name, sizeof(name), "%s%s", strncmp(d, "guest-", 6) ? d : "guest:",
		 strncmp(d, "guest-", 6) ? "" : d + 6);
	tv_log_capture_begin(&cap);
	ret = rd->incomplete && access(path, F_OK) ? 0 : tv_meta_read(path, &dom->meta);
	status = tv_meta_get(dom->meta, "status");
	if (!ret && status && !strncmp(status, "rejected", 8)) {
		tv_log_capture_end(&cap);
		warn_once("Domain quarantined, not read: domain=\"%s\", path=\"%s/%s\": %s", name, dir,
			  d, status);
		tv_domain_unload(dom);
		return 0;
	}
	if (!ret)
		ret = tv_domain_load(dom, dir, d);
	tv_log_capture_end(&cap);
	if (!ret || ret == -ENOMEM) {
		if (ret && cap.errors)
			tv_err("%s", cap.first);
		return ret ? ret : 1;
	}
	warn_once("Domain quarantined, not read: domain=\"%s\", path=\"%s/%s\": %s", name, dir, d,
		  cap.errors ? cap.first : strerror(-ret));
	tv_domain_unload(dom);
	return 0;
}

/* Load domain @d into the next slot; 1 loaded, 0 left out (quarantined), -errno. */
static int reader_load_one(struct tv_reader *rd, const char *dir, const char *d)
{
	struct tv_domain *dom;
	int ret;

	if (rd->nr_domains == rd->cap_domains)
		return -EINVAL;	/* sized from the list: cannot happen */
	dom = &rd->domains[rd->nr_domains];
	memset(dom, 0, sizeof(*dom));
	dom->incomplete = rd->incomplete;
	dom->no_streams = rd->no_xen_records && !strcmp(d, "xen");
	dom->skip_bad_pages = domain_quarantinable(d);
	if (dom->skip_bad_pages) {
		ret = reader_load_guest(rd, dom, dir, d);
		if (ret > 0)
			rd->nr_domains++;
		return ret;
	}
	ret = tv_domain_load(dom, dir, d);
	rd->nr_domains++;	/* unloaded by tv_reader_close() */
	return ret ? ret : 1;
}

/* Every name given to tv_reader_select_domains() is a domain of the session. */
static int reader_check_selection(const char *dir, const unsigned char *matched)
{
	for (size_t i = 0; i < nr_selected; i++) {
		if (!matched[i]) {
			tv_err("No such domain in session: path=\"%s\", domain=\"%s\"", dir,
			       selected[i]);
			return -ENOENT;
		}
	}
	return 0;
}

static int reader_load_domains(struct tv_reader *rd, const char *dir)
{
	char path[PATH_MAX + 16];
	const char *list;
	char *copy, *save = NULL;
	unsigned char *matched;
	struct stat st;
	int ret;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		ret = stat(dir, &st) ? -errno : -ENOTDIR;
		tv_err("Cannot open session directory: path=\"%s\", errno=%d (%s)", dir, -ret, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/session.meta", dir);
	if (access(path, F_OK)) {
		ret = incomplete_session(rd, dir);
		if (ret)
			return ret;
	} else {
		ret = tv_meta_read(path, &rd->session_meta);
		if (ret)
			return ret;
	}
	list = tv_meta_get(rd->session_meta, "domains");
	if (!list || !*list) {
		tv_err("Session lists no domains: path=\"%s\"", path);
		return -EINVAL;
	}
	/* as many as the list names: no limit, and never moved (a domain
	 * points into itself: info.name, info.vcpus) */
	rd->cap_domains = 1;
	for (const char *c = list; *c; c++)
		rd->cap_domains += *c == ',';
	rd->domains = calloc(rd->cap_domains, sizeof(*rd->domains));
	copy = strdup(list);
	matched = calloc(nr_selected + 1, 1);
	if (!copy || !matched || !rd->domains) {
		free(copy);
		free(matched);
		return -ENOMEM;
	}
	for (char *d = strtok_r(copy, ",", &save); d && ret >= 0; d = strtok_r(NULL, ",", &save)) {
		if (strchr(d, '/') || d[0] == '.' || strlen(d) >= sizeof(rd->domains->subdir)) {
			tv_err("Invalid domain in session: path=\"%s\", domain=\"%s\"", path, d);
			ret = -EINVAL;
			break;
		}
		if (rd->only ? strcmp(d, rd->only) != 0 : !domain_selected(d, matched))
			continue;
		if (rd->no_ust && !strncmp(d, "ust-", 4))
			continue;
		ret = reader_load_one(rd, dir, d);
	}
	free(copy);
	if (ret >= 0 && !rd->only)
		ret = reader_check_selection(dir, matched);
	free(matched);
	if (ret >= 0 && !rd->nr_domains && !rd->only) {
		tv_err("No domain left to read: path=\"%s\" (every domain chosen is quarantined)", dir);
		ret = -ENOENT;
	}
	return ret < 0 ? ret : 0;
}

/*
 * The next event of the stream's piece of time (all of it but for a clock
 * synchronised in pieces), mapped to the reference clock, the raw time kept.
 */
static int stream_advance(struct tv_cpu_stream *st)
{
	int ret;

	do {
		ret = stream_next(st);
		if (ret > 0 && st->dom->line_moved)
			st->rec.ts = tv_xen_line_move(st->dom->line,
						      st->dom->line_domid << 16 | (uint32_t)st->cpu,
						      st->dom->pvclock_ns, st->rec.ts,
						      &st->line_cursor);
		st->raw_ts = st->rec.ts;
	} while (ret > 0 && (st->raw_ts < st->raw_from || st->raw_ts >= st->raw_to));
	if (ret > 0 && st->dom->mapped)
		st->rec.ts = tv_sync_domain_apply_stream(&st->dom->sync, st->cpu, st->rec.ts,
							 &st->tsc_cursor);
	return ret;
}

/*
 * Cursors per CPU file: one, or one per piece of a clock synchronised in
 * pieces.  A piece's map is increasing, so each cursor's events come out
 * in reference-clock order even where the clock jumped back at a piece's
 * start, and the merge stays exact.  Each cursor reads the whole file (a
 * CPU's raw times are not strictly ordered), skipping other pieces' events.
 */
static size_t stream_cursors(const struct tv_domain *dom)
{
	return dom->mapped && dom->sync.nr_pieces > 1 ? dom->sync.nr_pieces : 1;
}

static void stream_set_piece(struct tv_cpu_stream *st, size_t k)
{
	const struct tv_sync_domain *s = &st->dom->sync;

	st->raw_from = 0;
	st->raw_to = UINT64_MAX;
	if (stream_cursors(st->dom) == 1)
		return;
	if (k)
		st->raw_from = (uint64_t)(s->pieces[k].from_dom > 0 ? s->pieces[k].from_dom : 0);
	if (k + 1 < s->nr_pieces)
		st->raw_to = (uint64_t)(s->pieces[k + 1].from_dom > 0 ? s->pieces[k + 1].from_dom : 0);
}

/*
 * A traced process stamps its events with its parent's trace clock when it
 * was configured before it first traced (lib/ust/ust_abi.h); one that kept
 * another clock cannot be mapped with its parent's transform.
 */
static int ust_clock_matches(const struct tv_reader *rd, const struct tv_domain *dom)
{
	const char *mine = tv_meta_get(dom->meta, "clock");

	for (size_t d = 0; d < rd->nr_domains; d++) {
		const char *theirs = tv_meta_get(rd->domains[d].meta, "clock");

		if (strcmp(rd->domains[d].subdir, dom->clock_of))
			continue;
		if (mine && theirs && !strcmp(mine, theirs))
			return 1;
		tv_warn("Traced process in another clock than its domain, its events stay in their own clock: domain=\"%s\", clock=%s, %s's clock=%s",
			dom->subdir, mine ? mine : "?", dom->clock_of, theirs ? theirs : "?");
		return 0;
	}
	return 1;	/* its parent is not read (a domain read alone): its own map, if any */
}

static void reader_use_line(struct tv_reader *rd, const struct tv_sync_result *res);

static void reader_use_sync(struct tv_reader *rd, const struct tv_sync_result *res, int warn)
{
	reader_use_line(rd, res);
	for (size_t d = 0; d < rd->nr_domains; d++) {
		struct tv_domain *dom = &rd->domains[d];

		const char *key = dom->clock_of[0] ? dom->clock_of : dom->subdir;

		if (dom->clock_of[0] && !ust_clock_matches(rd, dom))
			continue;
		for (size_t i = 0; i < res->nr; i++) {
			if (strcmp(res->domains[i].domain, key))
				continue;
			if (!tv_sync_domain_usable(&res->domains[i])) {
				if (warn)
					tv_warn("Domain not synchronised, its events stay in its own clock: domain=\"%s\", quality=%s",
						dom->subdir,
						tv_sync_quality_name(res->domains[i].est.quality));
				break;
			}
			tv_sync_domain_release(&dom->sync);
			if (tv_sync_domain_copy(&dom->sync, &res->domains[i])) {
				tv_warn("Out of memory for the TSC offsets, its events stay in its own clock: domain=\"%s\"",
					dom->subdir);
				break;
			}
			dom->mapped = strcmp(dom->sync.method, "reference") != 0;
		}
	}
}

static void reader_apply_sync(struct tv_reader *rd, const char *dir)
{
	struct tv_sync_result res;
	int ret = tv_sync_read(dir, &res);

	if (ret == -ENOENT)
		return;	/* never synchronised */
	if (ret) {
		tv_warn("Cannot use the sync transforms, every domain stays in its own clock: path=\"%s/sync/transforms\", errno=%d (%s)",
			dir, -ret, strerror(-ret));
		return;
	}
	reader_use_sync(rd, &res, 1);
	tv_sync_result_free(&res);
}

static int reader_open_streams(struct tv_reader *rd)
{
	size_t total = 0;
	int ret = 0;

	for (size_t d = 0; d < rd->nr_domains; d++)
		total += (size_t)rd->domains[d].nr_cpus * stream_cursors(&rd->domains[d]);
	rd->streams = calloc(total, sizeof(*rd->streams));
	rd->heap = calloc(total, sizeof(*rd->heap));
	rd->waiting = calloc(total, sizeof(*rd->waiting));
	if (!rd->streams || !rd->heap || !rd->waiting)
		return -ENOMEM;
	for (size_t d = 0; d < rd->nr_domains && !ret; d++) {
		size_t cursors = stream_cursors(&rd->domains[d]);

		if (rd->domains[d].no_streams)
			continue;
		for (size_t i = 0; i < (size_t)rd->domains[d].nr_cpus * cursors && !ret; i++) {
			struct tv_cpu_stream *st = &rd->streams[rd->nr_streams++];

			ret = stream_open(st, &rd->domains[d], (int)(i / cursors));
			if (!ret) {
				stream_set_piece(st, i % cursors);
				ret = stream_advance(st);
			}
			if (ret > 0) {
				rd->heap[rd->heap_len] = st;
				heap_sift_up(rd, rd->heap_len++);
				ret = 0;
			} else if (!ret && rd->follow) {
				rd->waiting[rd->nr_waiting++] = st;
			}
		}
	}
	return ret;
}

/*
 * Xen's common time line: read from the xen/ domain's records, its
 * records stamped on it.  Not when following a recording (what the
 * scales and runs will be is not known yet): then each pCPU's own time.
 */
static int reader_load_line(struct tv_reader *rd)
{
	struct tv_domain *xen = NULL;
	int ret;

	for (size_t d = 0; d < rd->nr_domains; d++)
		if (!strcmp(rd->domains[d].source->kind, "xen-trace"))
			xen = &rd->domains[d];
	if (!xen || rd->follow)
		return 0;
	ret = tv_xen_line_load(xen, &rd->line);
	xen->line = rd->line;
	return ret;
}

/*
 * A pvclock domain that sync put on Xen's line: its events are moved to it
 * by its constant (@res), whatever its map (the reference's included).
 */
static void reader_use_line(struct tv_reader *rd, const struct tv_sync_result *res)
{
	for (size_t d = 0; rd->line && d < rd->nr_domains; d++) {
		struct tv_domain *dom = &rd->domains[d];
		long long domid = tv_meta_get_ll(dom->meta, "xen_domid", -1);

		for (size_t i = 0; i < res->nr; i++) {
			if (strcmp(res->domains[i].domain, dom->subdir) || !res->domains[i].xen_line)
				continue;
			dom->line = rd->line;
			dom->line_moved = 1;
			dom->line_domid = domid < 0 ? 0 : (uint32_t)domid;	/* dom0: host */
			dom->pvclock_ns = res->domains[i].pvclock_ns;
		}
	}
}

const struct tv_xen_line *tv_reader_xen_line(const struct tv_reader *rd)
{
	return rd->line;
}

/* Every domain of a followed session must be of a kind that can be followed. */
static int reader_set_follow(struct tv_reader *rd, const char *dir)
{
	for (size_t d = 0; d < rd->nr_domains; d++) {
		if (!rd->domains[d].source->refresh) {
			tv_err("Cannot follow a session being recorded: path=\"%s\", domain=\"%s\" (kind %s is read only once recorded)",
			       dir, rd->domains[d].subdir, rd->domains[d].source->kind);
			return -EOPNOTSUPP;
		}
		rd->domains[d].follow = 1;
	}
	return 0;
}

/* What a reader is opened for (reader_open()). */
struct open_how {
	int raw;			/* never synchronised */
	int follow;			/* being recorded (raw too) */
	const struct tv_sync_result *res;	/* transforms to use; NULL: DIR/sync/transforms unless raw */
	const char *only;		/* this domain alone; NULL: all */
	const struct tv_sync_result *line;	/* raw, pvclock domains moved to Xen's line */
	int no_ust;			/* without the traced processes' domains */
	int no_xen_records;		/* the xen/ domain's records not read (with line) */
};

static int reader_open(const char *dir, const struct open_how *how, struct tv_reader **out)
{
	struct tv_reader *rd = calloc(1, sizeof(*rd));
	int ret;

	*out = NULL;
	if (!rd)
		return -ENOMEM;
	rd->follow = how->follow;
	rd->only = how->only;
	rd->no_ust = how->no_ust;
	rd->no_xen_records = how->no_xen_records;
	ret = reader_load_domains(rd, dir);
	if (!ret && how->only && !rd->nr_domains) {
		tv_err("No such domain in session: path=\"%s\", domain=\"%s\"", dir, how->only);
		ret = -ENOENT;
	}
	if (!ret && how->follow)
		ret = reader_set_follow(rd, dir);
	if (!ret)
		ret = reader_load_line(rd);
	for (size_t d = 0; !ret && how->no_xen_records && d < rd->nr_domains; d++)
		rd->domains[d].no_streams = !strcmp(rd->domains[d].source->kind, "xen-trace");
	if (!ret && how->line)
		reader_use_line(rd, how->line);
	else if (!ret && how->res)
		reader_use_sync(rd, how->res, 0);
	else if (!ret && !how->raw)
		reader_apply_sync(rd, dir);
	if (!ret)
		ret = reader_open_streams(rd);
	if (ret) {
		tv_reader_close(rd);
		return ret;
	}
	*out = rd;
	return 0;
}

int tv_reader_open(const char *dir, struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ 0 }, out);
}

int tv_reader_open_raw(const char *dir, struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .raw = 1 }, out);
}

int tv_reader_open_domain(const char *dir, const char *subdir, struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .only = subdir }, out);
}

int tv_reader_open_on_line(const char *dir, const struct tv_sync_result *res,
			   struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .raw = 1, .line = res }, out);
}

int tv_reader_open_probes(const char *dir, const struct tv_sync_result *line,
			  struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .raw = 1, .line = line, .no_ust = 1 }, out);
}

int tv_reader_open_moved(const char *dir, const struct tv_sync_result *line, int no_ust,
			 struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .raw = 1, .line = line, .no_ust = no_ust,
						    .no_xen_records = 1 }, out);
}

int tv_reader_open_follow(const char *dir, struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .raw = 1, .follow = 1 }, out);
}

int tv_reader_open_synced(const char *dir, const struct tv_sync_result *res,
			  struct tv_reader **out)
{
	return reader_open(dir, &(struct open_how){ .res = res }, out);
}

/* Put @st back into the merge after it moved on (1), or aside (0, followed). */
static void reader_requeue(struct tv_reader *rd, struct tv_cpu_stream *st, int ret)
{
	if (ret > 0) {
		rd->heap[rd->heap_len] = st;
		heap_sift_up(rd, rd->heap_len++);
	} else if (rd->follow) {
		rd->waiting[rd->nr_waiting++] = st;
	}
}

int tv_reader_next_before(struct tv_reader *rd, uint64_t limit, struct tv_event *ev)
{
	struct tv_cpu_stream *st;
	int ret;

	if (rd->current) {
		ret = stream_advance(rd->current);
		if (ret < 0)
			return ret;
		reader_requeue(rd, rd->current, ret);
		rd->current = NULL;
	}
	if (rd->heap_len == 0 || rd->heap[0]->rec.ts >= limit)
		return 0;
	st = rd->heap[0];
	rd->heap[0] = rd->heap[--rd->heap_len];
	heap_sift_down(rd, 0);
	rd->current = st;

	ev->ts = st->rec.ts;
	ev->cpu = st->cpu;
	ev->tep = st->dom->tep;
	ev->record = &st->rec;
	ev->format = st->event;
	ev->pid = st->pid;
	ev->domain = st->dom->name;
	ev->missed_before = st->rec.missed_events;
	ev->ts_raw = st->raw_ts;
	ev->domain_index = (int)(st->dom - rd->domains);
	ev->domain_info = &st->dom->info;
	ev->time_ambiguous = st->dom->line_moved && st->line_cursor.ambiguous;
	return 1;
}

int tv_reader_next(struct tv_reader *rd, struct tv_event *ev)
{
	return tv_reader_next_before(rd, UINT64_MAX, ev);
}

int tv_reader_follow_refresh(struct tv_reader *rd)
{
	size_t kept = 0;
	int ret = 0;

	if (!rd->follow)
		return -EINVAL;
	for (size_t d = 0; d < rd->nr_domains; d++)
		tv_domain_reload_task_maps(&rd->domains[d]);
	for (size_t i = 0; i < rd->nr_streams && !ret; i++)
		ret = rd->streams[i].dom->source->refresh(&rd->streams[i]);
	for (size_t i = 0; i < rd->nr_waiting; i++) {
		struct tv_cpu_stream *st = rd->waiting[i];
		int r = ret ? 0 : stream_advance(st);

		if (r < 0)
			ret = r;
		if (r > 0) {
			rd->heap[rd->heap_len] = st;
			heap_sift_up(rd, rd->heap_len++);
		} else {
			rd->waiting[kept++] = st;
		}
	}
	rd->nr_waiting = kept;
	return ret;
}

static void stream_release_read(const struct tv_cpu_stream *st)
{
	uint64_t done = st->dom->source->done_bytes ? st->dom->source->done_bytes(st) : 0;
	int fd;

	if (!done)
		return;
	fd = open(st->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;		/* not ours to write: keep it */
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)done)) {
		int err = errno;

		tv_debug("Cannot free read space: path=\"%s\", errno=%d (%s)", st->path, err,
			 strerror(err));
		errno = err;
	}
	close(fd);
}

void tv_reader_follow_release_read(const struct tv_reader *rd)
{
	for (size_t i = 0; rd->follow && i < rd->nr_streams; i++)
		stream_release_read(&rd->streams[i]);
}

/*
 * The sub-buffers of a guest's domain left for failing validation, said
 * once per domain: a CPU file read by several cursors (a clock in pieces)
 * counts once, as the most any of them left.
 */
static void reader_say_bad_pages(const struct tv_reader *rd)
{
	for (size_t d = 0; d < rd->nr_domains; d++) {
		const struct tv_cpu_stream *first = NULL, *cpu_max = NULL;
		uint64_t total = 0;

		for (size_t i = 0; i <= rd->nr_streams; i++) {
			const struct tv_cpu_stream *st = i < rd->nr_streams ? &rd->streams[i] : NULL;

			if (cpu_max && (!st || st->dom != cpu_max->dom || st->cpu != cpu_max->cpu)) {
				total += cpu_max->bad_pages;
				if (cpu_max->bad_pages && !first)
					first = cpu_max;
				cpu_max = NULL;
			}
			if (st && st->dom == &rd->domains[d] &&
			    (!cpu_max || st->bad_pages > cpu_max->bad_pages))
				cpu_max = st;
		}
		if (total)
			warn_once("Corrupt sub-buffers skipped: domain=\"%s\", count=%llu, the first: path=\"%s\", offset=%llu: %s",
				  rd->domains[d].name[0] && rd->domains[d].clock_of[0] ?
				  rd->domains[d].subdir : rd->domains[d].name,
				  (unsigned long long)total, first->path,
				  (unsigned long long)first->bad_off, first->bad_why);
	}
}

void tv_reader_close(struct tv_reader *rd)
{
	if (!rd)
		return;
	reader_say_bad_pages(rd);
	for (size_t i = 0; i < rd->nr_streams; i++)
		stream_close(&rd->streams[i]);
	for (size_t d = 0; d < rd->nr_domains; d++)
		tv_domain_unload(&rd->domains[d]);
	free(rd->streams);
	free(rd->heap);
	free(rd->waiting);
	free(rd->domains);
	tv_xen_line_free(rd->line);
	tv_meta_free(rd->session_meta);
	free(rd);
}

size_t tv_reader_nr_domains(const struct tv_reader *rd)
{
	return rd->nr_domains;
}

const struct tv_domain_info *tv_reader_domain(const struct tv_reader *rd, size_t i)
{
	return i < rd->nr_domains ? &rd->domains[i].info : NULL;
}

const struct tv_domain_info *tv_reader_event_domain(const struct tv_reader *rd,
						    const struct tv_event *ev)
{
	for (size_t d = 0; d < rd->nr_domains; d++)
		if (ev->tep == rd->domains[d].tep)
			return &rd->domains[d].info;
	return NULL;
}
