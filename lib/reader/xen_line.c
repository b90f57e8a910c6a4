// SPDX-License-Identifier: LGPL-2.1
/*
 * One time line for a Xen session whose physical CPUs' system times differ
 * (doc/sync-probes.md, "vCPUs free to move").  Each pCPU stamps Xen's
 * records, and a domain's pvclock reads, the system time of the pCPU that
 * runs it: stime_p(tsc), by the stamp and scale pCPU p recalibrates every
 * second (the patched Xen's TRC_TRACE_TSCALE).  The TSC itself is one
 * counter for all of them, so the common line is common(tsc) = pCPU 0's
 * system time by its scale in force at that TSC (a session pinned on
 * pCPU 0 keeps its times).  Xen's records go to it by their TSC
 * (lib/reader/xen_stream.c); an event of a pvclock domain (dom0, a domU) is moved
 * by d_p(tsc) = common(tsc) - stime_p(tsc), p the pCPU its vCPU ran on
 * then, found from Xen's runstate records (runs paired per pCPU, in TSC
 * order) by a cursor that walks them in the stream's order.
 *
 * The line is read once from the xen/ domain's files when a reader opens
 * (not when following a recording: what the scales and runs will be is not
 * known yet); afterwards it is read only, shared by every stream.
 *
 * One line per process and session, not per reader: `sync` opens four
 * readers on a session (two probe scans, the vCPU check, the runstate
 * check) and `stat` three, and each used to read the whole xen/ domain
 * again to build the same line (issue 28: 0.27 s of a 1.2M-record
 * session's 0.55 s; what the line adds now: doc/sync-probes.md, "Its
 * cost", bench/xen-line-cost).  The last line built is kept (line_cache), keyed by
 * its directory and every file in it (inode, size, modification time: a
 * session recovered or recompressed in between is read again), and handed
 * to the next reader of that directory with a reference; the last
 * tv_xen_line_free() of a line that left the cache frees it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_internal.h"
#include "xen_trace.h"

#define LINE_MAX_PCPUS 256
#define RUNSTATE_RUNNING 0

/* A pCPU's scale, in force from TSC @from_tsc (system time @from_st) on. */
struct line_scale {
	uint64_t from_tsc, from_st;
	uint64_t tsc0, stime0;
	uint32_t mul;
	int8_t shift;
};

struct line_pcpu {
	struct line_scale *s;
	size_t nr, cap;
};

/* One run of a vCPU on one pCPU, [tsc_from, tsc_to); UINT64_MAX: still open. */
struct line_run {
	uint32_t key;		/* domid << 16 | vcpu */
	uint32_t pcpu;
	uint64_t tsc_from, tsc_to;
	uint64_t st_from, st_to;	/* the same in that pCPU's system time */
};

struct tv_xen_line {
	int refs;		/* atomic: readers holding it, and the cache */
	int nr_pcpus;
	struct line_pcpu pcpu[LINE_MAX_PCPUS];
	struct line_run *runs;	/* by key, then tsc_from */
	size_t nr_runs, cap_runs;
	size_t nr_tscales;
};

static uint64_t scale_apply(const struct line_scale *s, uint64_t tsc)
{
	return tv_xen_tsc_to_stime(tsc, s->tsc0, s->stime0, s->mul, s->shift);
}

/* The TSC at which scale @s reaches system time @st (the inverse of scale_apply). */
static uint64_t scale_invert(const struct line_scale *s, uint64_t st)
{
	unsigned __int128 d = (unsigned __int128)(st > s->stime0 ? st - s->stime0 : s->stime0 - st) << 32;
	uint64_t delta;

	if (!s->mul)
		return s->tsc0;
	d /= s->mul;
	delta = d > UINT64_MAX ? UINT64_MAX : (uint64_t)d;
	if (s->shift < 0)
		delta <<= -s->shift;
	else
		delta >>= s->shift;
	return st >= s->stime0 ? s->tsc0 + delta : s->tsc0 - delta;
}

static int line_add_scale(struct line_pcpu *p, uint64_t from_tsc, const struct line_scale *sc)
{
	struct line_scale s = *sc;

	if (tv_array_grow(&p->s, &p->cap, p->nr, sizeof(*p->s), 16))
		return -ENOMEM;
	s.from_tsc = from_tsc;
	s.from_st = scale_apply(&s, from_tsc);
	p->s[p->nr++] = s;
	return 0;
}

/*
 * The scale of @p in force at TSC @key (@by_st false) or at its system time
 * @key (true; its times only go forward): the last one from at or before it.
 */
static const struct line_scale *scale_find(const struct line_pcpu *p, uint64_t key, bool by_st)
{
	size_t lo = 0, hi = p->nr;

	while (hi - lo > 1) {
		size_t m = lo + (hi - lo) / 2;

		if ((by_st ? p->s[m].from_st : p->s[m].from_tsc) <= key)
			lo = m;
		else
			hi = m;
	}
	return &p->s[lo];
}

static const struct line_scale *scale_at_tsc(const struct line_pcpu *p, uint64_t tsc)
{
	return scale_find(p, tsc, false);
}

static const struct line_scale *scale_at_st(const struct line_pcpu *p, uint64_t st)
{
	return scale_find(p, st, true);
}

/* The line's time at @tsc: pCPU 0's system time by its scale then. */
static uint64_t line_common(const struct tv_xen_line *l, uint64_t tsc)
{
	return scale_apply(scale_at_tsc(&l->pcpu[0], tsc), tsc);
}

void tv_xen_line_span_at(const struct tv_xen_line *l, uint64_t tsc, struct tv_xen_line_span *span)
{
	const struct line_pcpu *p = &l->pcpu[0];
	const struct line_scale *s = scale_at_tsc(p, tsc);
	size_t i = (size_t)(s - p->s);

	/* the TSCs for which scale_at_tsc() finds index i (the scales in TSC order) */
	*span = (struct tv_xen_line_span){
		.lo = s->from_tsc, .hi = i + 1 < p->nr ? p->s[i + 1].from_tsc : UINT64_MAX,
		.tsc0 = s->tsc0, .stime0 = s->stime0, .mul = s->mul, .shift = s->shift,
	};
}

int64_t tv_xen_line_pcpu_offset(const struct tv_xen_line *l, int cpu, uint64_t common_ns)
{
	uint64_t tsc;

	if (!l || cpu <= 0 || cpu >= l->nr_pcpus || !l->pcpu[cpu].nr)
		return 0;
	tsc = scale_invert(scale_at_st(&l->pcpu[0], common_ns), common_ns);
	return (int64_t)(scale_apply(scale_at_tsc(&l->pcpu[cpu], tsc), tsc) - common_ns);
}

/* This CPU's last run of @key (its runs are from index @first on), or NULL. */
static struct line_run *line_last_run(struct tv_xen_line *l, uint32_t key, size_t first)
{
	for (size_t i = l->nr_runs; i-- > first;)
		if (l->runs[i].key == key)
			return &l->runs[i];
	return NULL;
}

static int line_runstate(struct tv_xen_line *l, const struct tv_xen_rec *rec, int cpu,
			 size_t first, uint64_t st)
{
	unsigned int old = (rec->event >> 8) & 0xf, new = (rec->event >> 4) & 0xf;
	uint32_t key = rec->extra[0];
	struct line_run *r;

	if (new == RUNSTATE_RUNNING) {
		if (tv_array_grow(&l->runs, &l->cap_runs, l->nr_runs, sizeof(*l->runs), 1024))
			return -ENOMEM;
		l->runs[l->nr_runs++] = (struct line_run){ key, (uint32_t)cpu, rec->tsc, UINT64_MAX,
							   st, UINT64_MAX };
		return 0;
	}
	if (old != RUNSTATE_RUNNING)
		return 0;
	r = line_last_run(l, key, first);
	if (r && r->tsc_to != UINT64_MAX)
		return 0;	/* its start was lost: a run of unknown extent, left out */
	if (!r) {	/* running since before this CPU's first record */
		if (tv_array_grow(&l->runs, &l->cap_runs, l->nr_runs, sizeof(*l->runs), 1024))
			return -ENOMEM;
		r = &l->runs[l->nr_runs++];
		*r = (struct line_run){ key, (uint32_t)cpu, 0, 0, 0, 0 };
	}
	r->tsc_to = rec->tsc;
	r->st_to = st;
	return 0;
}

/* The records the line is made of: time scales and runstate changes. */
static bool line_wants(uint32_t event)
{
	return event == XT_TSCALE || (event & ~0xff0u) == XT_SCHED_RUNSTATE;
}

/* pCPU @cpu's scales and runs, from its file read through the Xen stream. */
static int line_read_cpu(struct tv_xen_line *l, struct tv_domain *xen, int cpu)
{
	struct tv_cpu_stream st;
	const struct tv_xen_rec *rec;
	size_t first = l->nr_runs;
	int ret;

	ret = tv_xen_stream_open(&st, xen, cpu);
	if (ret)
		return ret;
	/* its records alone: making each one's event was most of the line's cost */
	while (!st.done && (ret = tv_xen_stream_next_record(&st, line_wants)) > 0) {
		rec = tv_xen_stream_last(&st);
		if (rec->event == XT_TSCALE && rec->nr_extra >= 6) {
			struct line_scale sc = {
				.tsc0 = rec->extra[0] | (uint64_t)rec->extra[1] << 32,
				.stime0 = rec->extra[2] | (uint64_t)rec->extra[3] << 32,
				.mul = rec->extra[4], .shift = (int8_t)rec->extra[5],
			};

			ret = line_add_scale(&l->pcpu[cpu], rec->tsc, &sc);
			l->nr_tscales++;
		} else if ((rec->event & ~0xff0u) == XT_SCHED_RUNSTATE && rec->nr_extra >= 1) {
			ret = line_runstate(l, rec, cpu, first, st.rec.ts);
		}
		if (ret < 0)
			break;
	}
	tv_xen_stream_close(&st);
	return ret < 0 ? ret : 0;
}

static int run_cmp(const void *a, const void *b)
{
	const struct line_run *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->tsc_from != y->tsc_from)
		return x->tsc_from < y->tsc_from ? -1 : 1;
	return x->pcpu < y->pcpu ? -1 : x->pcpu > y->pcpu;
}

void tv_xen_line_free(struct tv_xen_line *l)
{
	if (!l || __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (int c = 0; c < l->nr_pcpus; c++)
		free(l->pcpu[c].s);
	free(l->runs);
	free(l);
}

/* ------------------------------------------------- one line per session */

/* What a line was built from: its directory and a digest of every file in it. */
struct line_key {
	char dir[PATH_MAX];
	uint64_t digest;
	int valid;
};

static struct {
	pthread_mutex_t lock;
	struct line_key key;
	struct tv_xen_line *line;	/* one reference; NULL: nothing to correct there */
} line_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t line_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* @xen's files as they are now (name, inode, size, mtime): 0 or -errno. */
static int line_key_read(const struct tv_domain *xen, struct line_key *k)
{
	DIR *d = opendir(xen->dir);
	struct dirent *e;
	uint64_t h = 0;

	memset(k, 0, sizeof(*k));
	if (!d)
		return -errno;
	/* order-free (a sum of per-file digests): readdir's order may differ */
	while ((e = readdir(d))) {
		struct stat st;
		uint64_t f = 0;

		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		for (const char *c = e->d_name; *c; c++)
			f = line_mix(f, (unsigned char)*c);
		f = line_mix(f, (uint64_t)st.st_ino);
		f = line_mix(f, (uint64_t)st.st_size);
		f = line_mix(f, (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec);
		h += f;
	}
	closedir(d);
	snprintf(k->dir, sizeof(k->dir), "%s", xen->dir);
	k->digest = h;
	k->valid = 1;
	return 0;
}

static struct tv_xen_line *line_ref(struct tv_xen_line *l)
{
	if (l)
		__atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
	return l;
}

/* The cache's line at exit (a leak checker sees none). */
__attribute__((destructor)) static void line_cache_drop(void)
{
	tv_xen_line_free(line_cache.line);
	line_cache.line = NULL;
}

static int line_build(struct tv_domain *xen, struct tv_xen_line **out);

int tv_xen_line_load(struct tv_domain *xen, struct tv_xen_line **out)
{
	const char *clock = tv_meta_get(xen->meta, "clock");
	struct line_key key;
	int ret;

	*out = NULL;
	/* stock Xen (TSC / cpu_khz) is one line already; so is one pCPU */
	if (!clock || strcmp(clock, "xen-system") || xen->nr_cpus < 2 ||
	    xen->nr_cpus > LINE_MAX_PCPUS)
		return 0;
	/* held while building: a second reader of the same session waits for this line */
	pthread_mutex_lock(&line_cache.lock);
	if (line_key_read(xen, &key) == 0 && line_cache.key.valid && line_cache.key.digest == key.digest &&
	    !strcmp(line_cache.key.dir, key.dir)) {
		*out = line_ref(line_cache.line);
		pthread_mutex_unlock(&line_cache.lock);
		return 0;
	}
	ret = line_build(xen, out);
	if (!ret && key.valid) {
		tv_xen_line_free(line_cache.line);
		line_cache.line = line_ref(*out);
		line_cache.key = key;
	}
	pthread_mutex_unlock(&line_cache.lock);
	return ret;
}

/* Read the line from @xen's files (tv_xen_line_load() checked @xen is one to read). */
static int line_build(struct tv_domain *xen, struct tv_xen_line **out)
{
	struct tv_xen_line *l;
	int ret = 0;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->refs = 1;
	l->nr_pcpus = xen->nr_cpus;
	for (int c = 0; c < l->nr_pcpus && !ret; c++) {
		char key[64];
		struct line_scale sc;

		snprintf(key, sizeof(key), "cpu%d.tsc_to_system_mul", c);
		sc.mul = (uint32_t)tv_meta_get_ll(xen->meta, key, 0);
		snprintf(key, sizeof(key), "cpu%d.tsc_shift", c);
		sc.shift = (int8_t)tv_meta_get_ll(xen->meta, key, 0);
		snprintf(key, sizeof(key), "cpu%d.tsc_timestamp", c);
		sc.tsc0 = (uint64_t)tv_meta_get_ll(xen->meta, key, 0);
		snprintf(key, sizeof(key), "cpu%d.system_time", c);
		sc.stime0 = (uint64_t)tv_meta_get_ll(xen->meta, key, 0);
		if (sc.mul)
			ret = line_add_scale(&l->pcpu[c], 0, &sc);
	}
	for (int c = 0; c < l->nr_pcpus && !ret; c++)
		ret = line_read_cpu(l, xen, c);
	/* without a recalibration recorded, nothing says how the pCPUs differ */
	if (ret || !l->nr_tscales || !l->pcpu[0].nr) {
		tv_xen_line_free(l);
		return ret;
	}
	qsort(l->runs, l->nr_runs, sizeof(*l->runs), run_cmp);
	*out = l;
	return 0;
}

/* The runs of vCPU @key: [*lo, *hi). */
static void line_runs_of(const struct tv_xen_line *l, uint32_t key, size_t *lo, size_t *hi)
{
	size_t a = 0, b = l->nr_runs;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (l->runs[m].key < key)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	for (b = a; b < l->nr_runs && l->runs[b].key == key; b++)
		;
	*hi = b;
}

/* How far system time @st is from run @r, in its pCPU's time: 0 inside it. */
static uint64_t run_distance(const struct line_run *r, uint64_t st)
{
	if (st < r->st_from)
		return r->st_from - st;
	return st > r->st_to ? st - r->st_to : 0;
}

/*
 * The pCPU vCPU @key ran on at its own system time @st, walking its runs in
 * TSC order with @cur: the first run, from the current one on, that holds
 * @st; else, between runs, the run nearest to @st in its own pCPU's time.
 * The later runs are searched past the next one: runs on pCPUs whose
 * times differ are not in the order of their starts (lab run F1: a run on
 * pCPU 0 whose start, in pCPU 0's time, is after the events of the next
 * run, on pCPU 1, 26 ms behind), until a run starts LINE_LOOKAHEAD_NS
 * after @st, beyond any difference of the pCPUs' times.  Nearest, not the
 * last run started before @st: at a move from pCPU 0 to pCPU 1, 3.3 ms
 * behind, an event 0.9 us after the run on pCPU 0 ended is "after the
 * start" of the run on pCPU 1 in pCPU 1's time too, and moving it by that
 * pCPU put it 3.3 ms outside both runs (CI, xen-domu-sync, PV d1).  Never
 * back: where two pCPUs' times overlap at a move, the stream's order
 * decides.  -1: no run known.
 */
#define LINE_LOOKAHEAD_NS 200000000ULL

/*
 * Two runs whose pCPUs' offsets to the line differ by less than this put
 * an event at the same place, as far as any bound is concerned.
 */
#define LINE_AMBIGUOUS_NS 50000

static int64_t run_offset(const struct tv_xen_line *l, const struct line_run *r, uint64_t st);

/*
 * Whether another run than @best, from it on, holds @st too and moves it
 * elsewhere: where the pCPUs' times differ by more than the gap between
 * two runs of the vCPU on them, an event near the move fits both (lab,
 * xen-domu-sync under load: dom0's ping and pong fit its run on pCPU 0
 * and its next on pCPU 1, 10-17 ms apart on the line), and the stream's
 * order cannot say which held it.
 */
static int line_ambiguous(const struct tv_xen_line *l, const struct tv_xen_line_cursor *cur, size_t best,
			  uint64_t st)
{
	int64_t off = run_offset(l, &l->runs[best], st);

	for (size_t k = best + 1; k < cur->hi && l->runs[k].st_from <= st + LINE_LOOKAHEAD_NS; k++) {
		int64_t d;

		if (l->runs[k].pcpu == l->runs[best].pcpu || run_distance(&l->runs[k], st))
			continue;
		d = run_offset(l, &l->runs[k], st) - off;
		if (d > LINE_AMBIGUOUS_NS || d < -LINE_AMBIGUOUS_NS)
			return 1;
	}
	return 0;
}

static int line_walk(const struct tv_xen_line *l, uint32_t key, uint64_t st,
		     struct tv_xen_line_cursor *cur)
{
	uint64_t best_d = UINT64_MAX;
	size_t best, k;

	if (!cur->valid || cur->key != key) {
		size_t lo, hi;

		line_runs_of(l, key, &lo, &hi);
		*cur = (struct tv_xen_line_cursor){ .valid = 1, .key = key, .lo = lo, .hi = hi, .i = lo };
	}
	if (cur->lo == cur->hi)
		return -1;
	best = cur->i;
	for (k = cur->i; k < cur->hi; k++) {
		uint64_t d;

		if (k > cur->i && l->runs[k].st_from > st + LINE_LOOKAHEAD_NS)
			break;
		d = run_distance(&l->runs[k], st);
		if (d < best_d) {
			best_d = d;
			best = k;
		}
		if (!d)
			break;
	}
	cur->i = best;
	cur->ambiguous = best_d == 0 && line_ambiguous(l, cur, best, st);
	return (int)l->runs[best].pcpu;
}

/* The line minus pCPU @p's system time, at its system time @st. */
static int64_t pcpu_offset(const struct tv_xen_line *l, int p, uint64_t st)
{
	const struct line_scale *sc;

	if (p <= 0 || p >= l->nr_pcpus || !l->pcpu[p].nr)
		return 0;	/* on pCPU 0, the line's own scale, or unknown */
	sc = scale_at_st(&l->pcpu[p], st);
	return (int64_t)(line_common(l, scale_invert(sc, st)) - st);
}

static int64_t run_offset(const struct tv_xen_line *l, const struct line_run *r, uint64_t st)
{
	return pcpu_offset(l, (int)r->pcpu, st);
}

uint64_t tv_xen_line_move(const struct tv_xen_line *l, uint32_t key, int64_t pvclock_ns,
			  uint64_t ts, struct tv_xen_line_cursor *cur)
{
	int64_t s = (int64_t)ts + pvclock_ns;
	int p;

	cur->ambiguous = 0;
	if (s < 0)
		return ts;
	p = line_walk(l, key, (uint64_t)s, cur);
	return (uint64_t)((int64_t)ts + pcpu_offset(l, p, (uint64_t)s));
}
