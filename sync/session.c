// SPDX-License-Identifier: LGPL-2.1
/*
 * Clock synchronisation of a whole session: read every domain's probes in
 * its own clock, estimate each (guest, peer) relation with the convex-hull
 * estimator (or the exact TSC relation), keep for each domain the path to
 * the reference with the smallest composed bound, then check causality of
 * every probe pair under the final transforms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "probes.h"
#include "tsc.h"

#define MAX_DOMAINS 64

/* One probe timestamp. @guest is the probed domain, @peer the prober. */
struct probe {
	uint64_t seq;
	uint64_t ts;
	int guest, peer;
	int type;
	int cpu;		/* the CPU that wrote it: a guest's vCPU */
};

/* A constraint point of one (guest, peer) relation. */
struct point {
	int guest, peer, below;
	int64_t x, y;
};

struct dom_scan {
	struct tep_event *raw_data, *hypercall, *write_tsc, *xen_guest;
	int64_t first, last;
	int is_guest;
	size_t xen_untimed;	/* Xen probe records without a TSC (stock Xen) */
	int guest_index;	/* among guest-* domains, -1 otherwise */
};

struct scan {
	struct tv_reader *rd;
	size_t nr_domains;
	struct dom_scan dom[MAX_DOMAINS];
	int guest_dom[MAX_DOMAINS];	/* guest index -> domain */
	size_t nr_guests;
	int xen_dom;		/* the xen/ domain, -1 if none */
	struct probe *probes;
	size_t nr_probes, cap_probes;
	struct tv_tsc_segments tsc[MAX_DOMAINS];
};

static int scan_push(struct scan *sc, struct probe p)
{
	if (tv_array_grow(&sc->probes, &sc->cap_probes, sc->nr_probes, sizeof(*sc->probes), 1024))
		return -ENOMEM;
	sc->probes[sc->nr_probes++] = p;
	return 0;
}

static void scan_init_domains(struct scan *sc)
{
	sc->nr_domains = tv_reader_nr_domains(sc->rd);
	sc->xen_dom = -1;
	for (size_t d = 0; d < sc->nr_domains && d < MAX_DOMAINS; d++) {
		const struct tv_domain_info *info = tv_reader_domain(sc->rd, d);
		struct dom_scan *ds = &sc->dom[d];

		ds->raw_data = tep_find_event_by_name(info->tep, "ftrace", "raw_data");
		ds->hypercall = tep_find_event_by_name(info->tep, "kvm", "kvm_hypercall");
		ds->write_tsc = tep_find_event_by_name(info->tep, "kvm", "kvm_write_tsc_offset");
		ds->xen_guest = tep_find_event_by_name(info->tep, "xen", "xen_guest");
		if (!strcmp(info->subdir, "xen"))
			sc->xen_dom = (int)d;
		ds->first = -1;
		ds->guest_index = -1;
		if (!strncmp(info->subdir, "guest-", 6)) {
			ds->is_guest = 1;
			ds->guest_index = (int)sc->nr_guests;
			sc->guest_dom[sc->nr_guests++] = (int)d;
		}
	}
}

/* The domain a host-side probe of guest index @g is about, or -1. */
static int scan_guest_domain(const struct scan *sc, unsigned int g)
{
	return g < sc->nr_guests ? sc->guest_dom[g] : -1;
}

static int scan_marker(struct scan *sc, const struct tv_event *ev, int d)
{
	struct tv_sync_marker m;
	int guest;

	if (tv_sync_marker_of_event(ev, &m) || m.type < TV_SYNC_PING_SEND ||
	    m.type > TV_SYNC_XEN_AFTER)
		return 0;
	/* dom0 brackets a record it injects into Xen: Xen is the probed side. */
	if (m.type == TV_SYNC_XEN_BEFORE || m.type == TV_SYNC_XEN_AFTER) {
		if (sc->xen_dom < 0 || sc->xen_dom == d || sc->dom[d].is_guest)
			return 0;
		return scan_push(sc, (struct probe){ m.seq, ev->ts_raw, sc->xen_dom, d, m.type,
						     ev->cpu });
	}
	if (m.type == TV_SYNC_PING_SEND || m.type == TV_SYNC_PONG_RECV) {
		guest = scan_guest_domain(sc, m.guest);
		if (guest < 0 || guest == d)
			return 0;
		return scan_push(sc, (struct probe){ m.seq, ev->ts_raw, guest, d, m.type, ev->cpu });
	}
	if (!sc->dom[d].is_guest)
		return 0;
	return scan_push(sc, (struct probe){ m.seq, ev->ts_raw, d, -1, m.type, ev->cpu });
}

static int scan_hypercall(struct scan *sc, const struct tv_event *ev, int d)
{
	uint64_t nr, a0, a1;
	int guest;

	if (tv_event_field_u64(ev, "nr", &nr) || nr != TV_SYNC_HCALL_NR ||
	    tv_event_field_u64(ev, "a0", &a0) || tv_event_field_u64(ev, "a1", &a1) ||
	    (a1 & ~0xffULL) != TV_SYNC_HCALL_TAG)
		return 0;
	guest = scan_guest_domain(sc, (unsigned int)(a1 & 0xff));
	if (guest < 0 || guest == d)
		return 0;
	return scan_push(sc, (struct probe){ a0, ev->ts_raw, guest, d, TV_PROBE_HCALL_HOST,
					     ev->cpu });
}

/* The u32 at index @i of @ev's data[] array field, or -ENOENT. */
static int data_word(const struct tv_event *ev, unsigned int i, uint32_t *val)
{
	struct tep_format_field *f = tep_find_field(ev->format, "data");

	if (!f || f->size < 4 * (int)(i + 1) || f->offset + 4 * (i + 1) > (unsigned)ev->record->size)
		return -ENOENT;
	*val = (uint32_t)tep_read_number(ev->tep, (char *)ev->record->data + f->offset + 4 * i, 4);
	return 0;
}

/*
 * The Xen side of a dom0/Xen probe: TRC_GUEST | TV_SYNC_XEN_EVENT with
 * { magic, seq low, seq high }.  Only a record Xen stamped with the TSC
 * (our patch) is on Xen's time line; stock Xen gives it the previous
 * record's time, which is no constraint at all, so it is only counted.
 */
static int scan_xen_guest(struct scan *sc, const struct tv_event *ev, int d)
{
	uint64_t id, nr, has_tsc, seq;
	uint32_t w[3];

	if (d != sc->xen_dom || tv_event_field_u64(ev, "xen_event", &id) ||
	    (id & 0xfff) != TV_SYNC_XEN_EVENT || tv_event_field_u64(ev, "nr_data", &nr) ||
	    nr < 3 || tv_event_field_u64(ev, "has_tsc", &has_tsc))
		return 0;
	for (unsigned int i = 0; i < 3; i++)
		if (data_word(ev, i, &w[i]))
			return 0;
	if (w[0] != TV_SYNC_MAGIC)
		return 0;
	if (!has_tsc) {
		sc->dom[d].xen_untimed++;
		return 0;
	}
	seq = w[1] | (uint64_t)w[2] << 32;
	return scan_push(sc, (struct probe){ seq, ev->ts_raw, d, -1, TV_PROBE_XEN_RECORD,
					     ev->cpu });
}

/* kvm_write_tsc_offset belongs to the guest whose vCPU thread wrote it. */
static int scan_write_tsc(struct scan *sc, const struct tv_event *ev, int d)
{
	const struct tv_domain_info *info = tv_reader_domain(sc->rd, (size_t)d);
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(info->vcpus, ev->pid);
	uint64_t prev, next, vcpu;
	int guest = -1;

	if (tv_event_field_u64(ev, "next_tsc_offset", &next) ||
	    tv_event_field_u64(ev, "previous_tsc_offset", &prev) ||
	    tv_event_field_u64(ev, "vcpu_id", &vcpu))
		return 0;
	for (size_t g = 0; g < sc->nr_guests; g++) {
		const struct tv_domain_info *gi = tv_reader_domain(sc->rd, (size_t)sc->guest_dom[g]);

		if ((t && !strcmp(gi->subdir + 6, t->vm_name)) || sc->nr_guests == 1)
			guest = sc->guest_dom[g];
	}
	if (guest < 0)
		return 0;
	return tv_tsc_segments_add(&sc->tsc[guest], (uint32_t)vcpu, ev->ts_raw, prev, next);
}

static int scan_event(struct scan *sc, const struct tv_event *ev)
{
	int d = ev->domain_index;
	struct dom_scan *ds = &sc->dom[d];

	if (ds->first < 0)
		ds->first = (int64_t)ev->ts_raw;
	ds->last = (int64_t)ev->ts_raw;
	if (!ev->format)
		return 0;
	if (ev->format == ds->raw_data)
		return scan_marker(sc, ev, d);
	if (ev->format == ds->hypercall)
		return scan_hypercall(sc, ev, d);
	if (ev->format == ds->write_tsc)
		return scan_write_tsc(sc, ev, d);
	if (ev->format == ds->xen_guest)
		return scan_xen_guest(sc, ev, d);
	return 0;
}

static int scan_session(struct scan *sc, const char *dir)
{
	struct tv_event ev;
	int ret;

	ret = tv_reader_open_raw(dir, &sc->rd);
	if (ret)
		return ret;
	if (tv_reader_nr_domains(sc->rd) > MAX_DOMAINS)
		return -E2BIG;
	scan_init_domains(sc);
	while ((ret = tv_reader_next(sc->rd, &ev)) > 0) {
		ret = scan_event(sc, &ev);
		if (ret < 0)
			return ret;
	}
	return ret;
}

static int cmp_probe(const void *a, const void *b)
{
	const struct probe *x = a, *y = b;

	if (x->guest != y->guest)
		return x->guest - y->guest;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->type - y->type;
}

/* One probe round: the timestamps of each type, -1 when missing. */
struct round {
	int guest, peer[TV_PROBE_NR_TYPES], cpu[TV_PROBE_NR_TYPES];
	int64_t ts[TV_PROBE_NR_TYPES];
};

/* Fill @r from the sorted probes at *@i; advances *@i past the round. */
static void next_round(const struct scan *sc, size_t *i, struct round *r)
{
	const struct probe *p0 = &sc->probes[*i];

	r->guest = p0->guest;
	for (int t = 0; t < TV_PROBE_NR_TYPES; t++) {
		r->ts[t] = -1;
		r->peer[t] = -1;
		r->cpu[t] = -1;
	}
	for (; *i < sc->nr_probes && sc->probes[*i].guest == p0->guest &&
	       sc->probes[*i].seq == p0->seq; (*i)++) {
		r->ts[sc->probes[*i].type] = (int64_t)sc->probes[*i].ts;
		r->peer[sc->probes[*i].type] = sc->probes[*i].peer;
		r->cpu[sc->probes[*i].type] = sc->probes[*i].cpu;
	}
}

typedef int (*round_fn)(const struct round *r, int guest_t, int peer_t, int below, void *ctx);

/*
 * Every send/receive pair of a round, as (guest-side type, peer-side type,
 * below): below means the guest timestamp is the receive side.
 */
static int for_each_pair(const struct scan *sc, round_fn fn, void *ctx)
{
	static const int pairs[][3] = {
		{ TV_SYNC_PING_RECV, TV_SYNC_PING_SEND, 1 },
		{ TV_SYNC_PONG_SEND, TV_SYNC_PONG_RECV, 0 },
		{ TV_SYNC_HCALL_BEFORE, TV_PROBE_HCALL_HOST, 0 },
		{ TV_SYNC_HCALL_AFTER, TV_PROBE_HCALL_HOST, 1 },
		{ TV_PROBE_XEN_RECORD, TV_SYNC_XEN_BEFORE, 1 },
		{ TV_PROBE_XEN_RECORD, TV_SYNC_XEN_AFTER, 0 },
	};
	struct round r;
	int ret = 0;

	for (size_t i = 0; i < sc->nr_probes && !ret;) {
		next_round(sc, &i, &r);
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]) && !ret; k++)
			if (r.ts[pairs[k][0]] >= 0 && r.ts[pairs[k][1]] >= 0)
				ret = fn(&r, pairs[k][0], pairs[k][1], pairs[k][2], ctx);
	}
	return ret;
}

struct points {
	struct point *p;
	size_t n, cap;
};

static int collect_point(const struct round *r, int gt, int pt, int below, void *ctx)
{
	struct points *pts = ctx;

	if (pts->n == pts->cap) {
		size_t cap = pts->cap ? pts->cap * 2 : 1024;
		struct point *grown = realloc(pts->p, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pts->p = grown;
		pts->cap = cap;
	}
	pts->p[pts->n++] = (struct point){ r->guest, r->peer[pt], below, r->ts[gt], r->ts[pt] };
	return 0;
}

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	if (x->guest != y->guest)
		return x->guest - y->guest;
	if (x->peer != y->peer)
		return x->peer - y->peer;
	if (x->below != y->below)
		return x->below - y->below;
	return (x->x > y->x) - (x->x < y->x);
}

/* An estimated edge guest -> peer. */
struct edge {
	int valid;
	size_t nr_pairs;
	struct tv_sync_estimate est;	/* with pieces: the worst piece's quality and bound */
	struct tv_sync_piece *pieces;	/* no line fits the whole trace, but these do */
	size_t nr_pieces;
};

struct graph {
	struct edge e[MAX_DOMAINS][MAX_DOMAINS];	/* [guest][peer] */
};

static int hull_add_point(struct tv_sync_hull *h, const struct point *p)
{
	return p->below ? tv_sync_hull_add_below(h, p->x, p->y)
			: tv_sync_hull_add_above(h, p->x, p->y);
}

/* The estimate over [lo, hi] of the points [from, to) of @p. */
static int estimate_points(const struct point *p, size_t from, size_t to, int64_t lo,
			   int64_t hi, struct tv_sync_estimate *est)
{
	struct tv_sync_hull *h = tv_sync_hull_new();
	int ret = h ? 0 : -ENOMEM;

	for (size_t i = from; i < to && !ret; i++)
		ret = hull_add_point(h, &p[i]);
	if (!ret)
		ret = tv_sync_hull_estimate(h, lo, hi, est);
	tv_sync_hull_free(h);
	return ret;
}

static int cmp_point_x(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return (x->x > y->x) - (x->x < y->x);
}

/* Pieces a clock may jump into (a suspended VM, a clock step) before we call it noise. */
#define MAX_PIECES 16

/*
 * Where no line fits the whole trace, the clock may still be linear in
 * pieces: in time order, a new piece starts at each probe that no line
 * through the current piece's probes admits.  Return: the number of
 * pieces, with their first probes in @start, or 0 when there are more
 * than MAX_PIECES; -errno.
 */
static int split_pieces(const struct point *p, size_t n, size_t start[MAX_PIECES])
{
	struct tv_sync_hull *h = tv_sync_hull_new();
	struct tv_sync_estimate est;
	int nr = 1, ret = h ? 0 : -ENOMEM;

	start[0] = 0;
	for (size_t i = 0; i < n && !ret && nr; i++) {
		ret = hull_add_point(h, &p[i]);
		if (!ret)
			ret = tv_sync_hull_estimate(h, p[start[nr - 1]].x, p[i].x, &est);
		if (ret || est.quality != TV_SYNC_FAILED)
			continue;
		tv_sync_hull_free(h);
		h = tv_sync_hull_new();
		if (!h || nr == MAX_PIECES) {
			ret = h ? 0 : -ENOMEM;
			nr = 0;
			break;
		}
		start[nr++] = i;
		ret = hull_add_point(h, &p[i]);
	}
	tv_sync_hull_free(h);
	return ret ? ret : nr;
}

/* How far back a piece's start is moved, at most (probes). */
#define PIECE_BACKTRACK 64

/*
 * A piece starts at the first probe its predecessor's lines cannot take,
 * but the clock may have jumped a few probes before: probes that both
 * admit (a forward jump shows only in probes sent from the domain).  Move
 * each start back over the probes the later piece admits too, so that
 * only the inside of one probe round stays ambiguous.
 */
static int backtrack_pieces(const struct point *p, size_t n, size_t *start, int nr)
{
	for (int k = 1; k < nr; k++) {
		size_t to = k + 1 < nr ? start[k + 1] : n, floor = start[k - 1] + 1;

		for (size_t j = start[k]; j > floor && start[k] - j < PIECE_BACKTRACK; j--) {
			struct tv_sync_estimate est;
			int ret = estimate_points(p, j - 1, to, p[j - 1].x, p[to - 1].x, &est);

			if (ret)
				return ret;
			if (est.quality == TV_SYNC_FAILED)
				break;
			start[k] = j - 1;
		}
	}
	return 0;
}

/* Each piece's own estimate, over its stretch of the domain's time. */
static int estimate_pieces(const struct dom_scan *ds, const struct point *p, size_t n,
			   const size_t *start, int nr, struct tv_sync_piece *pc)
{
	for (int k = 0; k < nr; k++) {
		size_t to = k + 1 < nr ? start[k + 1] : n;
		int64_t lo = k ? p[start[k]].x : ds->first;
		int64_t hi = k + 1 < nr ? p[start[k + 1]].x : ds->last;
		struct tv_sync_estimate est;
		int ret = estimate_points(p, start[k], to, lo, hi, &est);

		if (ret)
			return ret;
		pc[k] = (struct tv_sync_piece){ lo, est.map, est.bound_ns, est.quality };
	}
	return 0;
}

/* Summary of usable pieces in @e->est: the worst quality and bound, the breaks. */
static void describe_pieces(struct edge *e, const struct dom_scan *ds)
{
	struct tv_sync_estimate *est = &e->est;
	size_t off;

	est->quality = TV_SYNC_EXACT;
	est->bound_ns = 0;
	est->map = e->pieces[0].map;
	est->span_lo = ds->first;
	est->span_hi = ds->last;
	for (size_t k = 0; k < e->nr_pieces; k++) {
		if (e->pieces[k].quality > est->quality)
			est->quality = e->pieces[k].quality;
		if (e->pieces[k].bound_ns < 0 || est->bound_ns < 0)
			est->bound_ns = -1;
		else if (e->pieces[k].bound_ns > est->bound_ns)
			est->bound_ns = e->pieces[k].bound_ns;
	}
	off = (size_t)snprintf(est->message, sizeof(est->message),
			       "no line fits the whole trace; %zu linear pieces, each bounded, from x=",
			       e->nr_pieces);
	for (size_t k = 1; k < e->nr_pieces && off < sizeof(est->message); k++)
		off += (size_t)snprintf(est->message + off, sizeof(est->message) - off, "%s%lld",
					k > 1 ? "," : "", (long long)e->pieces[k].from_dom);
}

/*
 * Pieces for an edge whose probes no line fits: kept only when there are at
 * most MAX_PIECES and each is approximate or better; else the edge stays
 * failed, with its first message.
 */
static int try_pieces(const struct dom_scan *ds, const struct point *sorted, size_t n,
		      struct edge *e)
{
	struct point *p = malloc(n * sizeof(*p));
	size_t start[MAX_PIECES];
	int nr, ret = 0;

	if (!p)
		return -ENOMEM;
	memcpy(p, sorted, n * sizeof(*p));
	qsort(p, n, sizeof(*p), cmp_point_x);
	nr = split_pieces(p, n, start);
	if (nr > 1)
		ret = backtrack_pieces(p, n, start, nr);
	if (nr > 1 && !ret)
		e->pieces = calloc((size_t)nr, sizeof(*e->pieces));
	if (nr > 1 && !ret && !e->pieces)
		nr = -ENOMEM;
	if (nr > 1 && !ret)
		ret = estimate_pieces(ds, p, n, start, nr, e->pieces);
	for (int k = 0; nr > 1 && !ret && k < nr; k++)
		if (e->pieces[k].quality > TV_SYNC_APPROXIMATE)
			nr = 0;
	if (nr > 1 && !ret) {
		e->nr_pieces = (size_t)nr;
		describe_pieces(e, ds);
	} else {
		free(e->pieces);
		e->pieces = NULL;
	}
	free(p);
	return nr < 0 ? nr : ret;
}

static int estimate_edge(const struct scan *sc, const struct point *p, size_t n,
			 struct edge *e)
{
	const struct dom_scan *ds = &sc->dom[p[0].guest];
	int ret = estimate_points(p, 0, n, ds->first, ds->last, &e->est);

	if (!ret && e->est.quality == TV_SYNC_FAILED)
		ret = try_pieces(ds, p, n, e);
	e->valid = !ret;
	e->nr_pairs = n;
	return ret;
}

static int estimate_edges(const struct scan *sc, struct graph *g)
{
	struct points pts = { 0 };
	int ret = for_each_pair(sc, collect_point, &pts);

	if (!ret && pts.n)
		qsort(pts.p, pts.n, sizeof(*pts.p), cmp_point);
	for (size_t i = 0, j; !ret && i < pts.n; i = j) {
		for (j = i; j < pts.n && pts.p[j].guest == pts.p[i].guest &&
			    pts.p[j].peer == pts.p[i].peer; j++)
			;
		ret = estimate_edge(sc, &pts.p[i], j - i,
				    &g->e[pts.p[i].guest][pts.p[i].peer]);
	}
	free(pts.p);
	return ret;
}

/*
 * DIR/guest-NAME/tsc (debugfs at the end of recording): "vcpu offset ratio
 * frac_bits" lines; ratio and frac_bits are "-" where the host has no TSC
 * scaling (SVM without TscRateMsr): the guest TSC then runs at the host's.
 * A vCPU whose offset never changed during the trace has no
 * kvm_write_tsc_offset: its offset is this file's, from host time 0.
 * Return: 1 when the file gave anything, 0 if not, -ENOMEM.
 */
static int tsc_read_file(const char *dir, struct tv_tsc_segments *s, struct tv_tsc_params *p)
{
	char path[4096], line[256];
	int found = 0, ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tsc", dir);
	f = fopen(path, "re");
	while (f && !ret && fgets(line, sizeof(line), f)) {
		char ratio[32], frac[32];
		unsigned long long off;
		unsigned int vcpu;

		if (sscanf(line, "%u %llu %31s %31s", &vcpu, &off, ratio, frac) != 4)
			continue;
		if (!found && strcmp(ratio, "-") && strcmp(frac, "-")) {
			uint64_t r = strtoull(ratio, NULL, 10);
			unsigned long fb = strtoul(frac, NULL, 10);

			if (!r || fb >= 64)
				continue;	/* not a scaling KVM could use */
			p->ratio = r;
			p->frac_bits = (unsigned int)fb;
		}
		found = 1;
		if (!tv_tsc_segments_has(s, vcpu))
			ret = tv_tsc_segments_add(s, vcpu, 0, off, off);
	}
	if (f)
		fclose(f);
	return ret ?: found;
}

/* Exact TSC relation for @d when both sides trace with the TSC clock. */
static int tsc_method(struct scan *sc, int d, int ref, struct tv_sync_domain *out)
{
	const struct tv_domain_info *gi = tv_reader_domain(sc->rd, (size_t)d);
	const struct tv_domain_info *ri = tv_reader_domain(sc->rd, (size_t)ref);
	const char *gc = tv_meta_get(gi->meta, "clock"), *rc = tv_meta_get(ri->meta, "clock");
	struct tv_tsc_segments *s = &sc->tsc[d];
	int ret;

	if (!gc || !rc || strcmp(gc, "x86-tsc") || strcmp(rc, "x86-tsc"))
		return 0;
	/* No scaling unless the file says otherwise: guest = host + offset. */
	out->tsc.ratio = 1;
	out->tsc.frac_bits = 0;
	ret = tsc_read_file(gi->dir, s, &out->tsc);
	if (ret < 0)
		return ret;
	if (!ret && !s->n)
		return 0;
	ret = tv_tsc_segments_sort(s);
	if (ret)
		return ret;
	out->tsc.offset = s->seg[0].offset;
	out->tsc_segments = s->seg;	/* the result owns them now */
	out->nr_tsc_segments = s->n;
	memset(s, 0, sizeof(*s));
	snprintf(out->method, sizeof(out->method), "tsc");
	snprintf(out->via, sizeof(out->via), "%s", ri->subdir);
	out->est.quality = TV_SYNC_EXACT;
	out->est.bound_ns = 0;
	out->est.map.slope_q48 = TV_SLOPE_ONE;
	out->est.span_lo = sc->dom[d].first;
	out->est.span_hi = sc->dom[d].last;
	out->hull_tsc_diff = -1;
	out->hull_bound = -1;
	return 1;
}

static int edge_usable(const struct edge *e)
{
	return e->valid && e->est.quality <= TV_SYNC_APPROXIMATE;
}

/* A bound to rank paths with; a path without a bound ranks last. */
static int64_t edge_cost(const struct edge *e)
{
	return e->est.bound_ns >= 0 ? e->est.bound_ns + 2 : INT64_MAX / 64;
}

/* Relax paths towards the reference (Bellman-Ford on at most 64 nodes). */
static void resolve_paths(const struct scan *sc, const struct graph *g, int ref,
			  struct tv_sync_domain *res)
{
	int64_t cost[MAX_DOMAINS];
	size_t n = sc->nr_domains;

	for (size_t d = 0; d < n; d++)
		cost[d] = (int)d == ref || !strcmp(res[d].method, "tsc") ? 0 : -1;
	for (size_t round = 0; round < n; round++) {
		for (size_t d = 0; d < n; d++) {
			for (size_t p = 0; p < n; p++) {
				const struct edge *e = &g->e[d][p];
				int64_t c;

				if (!edge_usable(e) || cost[p] < 0 || cost[d] == 0)
					continue;
				c = cost[p] + edge_cost(e);
				if (cost[d] >= 0 && c >= cost[d])
					continue;
				cost[d] = c;
				res[d].est = e->est;
				res[d].nr_probes = e->nr_pairs;
				snprintf(res[d].method, sizeof(res[d].method), "hull");
				snprintf(res[d].via, sizeof(res[d].via), "%s",
					 tv_reader_domain(sc->rd, p)->subdir);
			}
		}
	}
}

static int domain_index(const struct scan *sc, const char *subdir)
{
	for (size_t v = 0; v < sc->nr_domains; v++)
		if (!strcmp(tv_reader_domain(sc->rd, v)->subdir, subdir))
			return (int)v;
	return -1;
}

/* |error| of inner, seen through outer's slope, plus outer's own: ceiling. */
static int64_t compose_bound(int64_t inner, int64_t outer, int64_t outer_slope_q48)
{
	__int128 scaled;

	if (inner < 0 || outer < 0)
		return -1;	/* no bound on one leg: none for the path */
	scaled = ((__int128)inner * outer_slope_q48 + TV_SLOPE_ONE - 1) >> 48;
	return (int64_t)scaled + outer + 2;	/* +2: the composed map's rounding */
}

/*
 * Make @d's map go to the reference: first its via domain's (depth first,
 * so each domain is composed once), then compose.  @state: 0 new,
 * 1 in progress (a cycle), 2 done.
 */
static void compose_one(const struct scan *sc, struct tv_sync_domain *res, int ref, int d,
			char *state)
{
	struct tv_sync_domain *r = &res[d];
	int v = domain_index(sc, r->via);

	if (state[d])
		return;
	state[d] = 1;
	if (strcmp(r->method, "hull") || v < 0 || v == ref) {
		state[d] = 2;
		return;
	}
	compose_one(sc, res, ref, v, state);
	/*
	 * A cycle, or a TSC-exact middle domain whose relation is not a line;
	 * or a middle clock in pieces (its breaks would need mapping: not done).
	 */
	if (state[v] != 2 || strcmp(res[v].method, "hull") || res[v].nr_pieces) {
		snprintf(r->method, sizeof(r->method), "none");
		snprintf(r->est.message, sizeof(r->est.message), "synchronised only against %s, %s",
			 r->via, res[v].nr_pieces ? "whose clock is linear only in pieces"
						  : "which has no linear path to the reference");
		r->est.quality = TV_SYNC_INSUFFICIENT;
		state[d] = 2;
		return;
	}
	tv_clock_map_compose(&res[v].est.map, &r->est.map, &r->est.map);
	r->est.bound_ns = compose_bound(r->est.bound_ns, res[v].est.bound_ns,
					res[v].est.map.slope_q48);
	if (res[v].est.quality > r->est.quality)
		r->est.quality = res[v].est.quality;
	for (size_t k = 0; k < r->nr_pieces; k++) {
		struct tv_sync_piece *pc = &r->pieces[k];

		tv_clock_map_compose(&res[v].est.map, &pc->map, &pc->map);
		pc->bound_ns = compose_bound(pc->bound_ns, res[v].est.bound_ns,
					     res[v].est.map.slope_q48);
		if (res[v].est.quality > pc->quality)
			pc->quality = res[v].est.quality;
	}
	state[d] = 2;
}

/* A hull result takes its edge's pieces, if it has any (before composing). */
static int attach_pieces(const struct scan *sc, const struct graph *g, struct tv_sync_domain *res)
{
	for (size_t d = 0; d < sc->nr_domains; d++) {
		int v = domain_index(sc, res[d].via);
		const struct edge *e = v >= 0 ? &g->e[d][v] : NULL;

		if (strcmp(res[d].method, "hull") || !e || !e->nr_pieces)
			continue;
		res[d].pieces = malloc(e->nr_pieces * sizeof(*e->pieces));
		if (!res[d].pieces)
			return -ENOMEM;
		memcpy(res[d].pieces, e->pieces, e->nr_pieces * sizeof(*e->pieces));
		res[d].nr_pieces = e->nr_pieces;
	}
	return 0;
}

/*
 * Compose each hull result with its via domain's, so all map to the
 * reference; via keeps naming the domain the probes were exchanged with.
 */
static void compose_paths(const struct scan *sc, struct tv_sync_domain *res, int ref)
{
	char state[MAX_DOMAINS] = { 0 };

	for (size_t d = 0; d < sc->nr_domains; d++)
		compose_one(sc, res, ref, (int)d, state);
}

/* Why a domain has no transform: the best edge's message, or no probes. */
static void explain_missing(const struct scan *sc, const struct graph *g, size_t d,
			    struct tv_sync_domain *r)
{
	const struct edge *best = NULL;

	snprintf(r->method, sizeof(r->method), "none");
	for (size_t p = 0; p < sc->nr_domains; p++)
		if (g->e[d][p].valid && (!best || g->e[d][p].est.quality < best->est.quality))
			best = &g->e[d][p];
	if (best) {
		r->est = best->est;
		r->nr_probes = best->nr_pairs;
		return;
	}
	r->est.quality = TV_SYNC_INSUFFICIENT;
	r->est.bound_ns = -1;
	if (sc->dom[d].xen_untimed) {
		snprintf(r->est.message, sizeof(r->est.message),
			 "%zu dom0/Xen sync records carry no TSC (stock Xen): their time is the previous record's, so no bound can be given; record on the patched Xen (xen/patches/)",
			 sc->dom[d].xen_untimed);
		return;
	}
	if ((int)d == sc->xen_dom) {
		snprintf(r->est.message, sizeof(r->est.message),
			 "no dom0/Xen sync probes: record host/ and xen/ together (`tracevisor record --xen -e EVENT ...`) with Xen's guest class traced");
		return;
	}
	snprintf(r->est.message, sizeof(r->est.message),
		 "no sync probes (ftrace:raw_data markers or kvm_hypercall 0x7476) for this domain: record with `tracevisor record --guest ...`");
}

struct causality {
	struct tv_sync_domain *res;
	const struct graph *g;
};

/*
 * Cross-check of an exact TSC relation: the probes' own convex-hull line
 * (guest TSC -> host TSC) should put each probe where the TSC relation does,
 * within the hull's bound.  It only holds where the guest TSC is a line of
 * the host's: KVM on a host whose TSC is unstable restarts a guest's TSC
 * where it stopped at every vCPU load, and the hull cannot see that.
 */
static void hull_cross_check(const struct causality *c, const struct round *r, int gt,
			     int pt, struct tv_sync_domain *g, uint64_t gts)
{
	int via = r->peer[pt];
	const struct edge *e;
	int64_t diff;

	if (strcmp(g->method, "tsc") || via < 0)
		return;
	e = &c->g->e[r->guest][via];
	if (!e->valid || e->est.quality > TV_SYNC_APPROXIMATE || e->est.bound_ns < 0 ||
	    e->nr_pieces)
		return;
	diff = (int64_t)(gts - tv_clock_map_apply(&e->est.map, (uint64_t)r->ts[gt]));
	if (diff < 0)
		diff = -diff;
	if (diff > g->hull_tsc_diff)
		g->hull_tsc_diff = diff;
	g->hull_bound = e->est.bound_ns;
}

static int check_pair(const struct round *r, int gt, int pt, int below, void *ctx)
{
	struct causality *c = ctx;
	struct tv_sync_domain *g = &c->res[r->guest], *p = &c->res[r->peer[pt]];
	uint64_t gts = tv_sync_domain_apply_cpu(g, r->cpu[gt], (uint64_t)r->ts[gt]);
	uint64_t pts = tv_sync_domain_apply_cpu(p, r->cpu[pt], (uint64_t)r->ts[pt]);

	if (!tv_sync_domain_usable(g) || !tv_sync_domain_usable(p))
		return 0;
	g->nr_pairs_checked++;
	hull_cross_check(c, r, gt, pt, g, gts);
	/* below: the guest received what the peer sent, so it may not be earlier. */
	if (below ? gts < pts : gts > pts)
		g->causality_violations++;
	return 0;
}

/*
 * Say in the message whether the probes agree with the TSC relation; @e is
 * the probes' edge to the via domain, when there is one.
 */
static void describe_cross_check(struct tv_sync_domain *r, const struct edge *e)
{
	if (strcmp(r->method, "tsc"))
		return;
	if (r->hull_tsc_diff >= 0)
		snprintf(r->est.message, sizeof(r->est.message),
			 "exact TSC relation (%zu offset segments); the probe hull puts probes at most %lld from it, hull bound %lld%s",
			 r->nr_tsc_segments, (long long)r->hull_tsc_diff, (long long)r->hull_bound,
			 r->hull_tsc_diff <= r->hull_bound ? ": they agree" :
			 ": they disagree (the guest TSC is not a line of the host's: offsets changed)");
	else if (e && e->valid)
		snprintf(r->est.message, sizeof(r->est.message),
			 "exact TSC relation (%zu offset segments); the probe hull (%zu pairs) is %s, no cross-check: %s",
			 r->nr_tsc_segments, e->nr_pairs, tv_sync_quality_name(e->est.quality),
			 e->est.message);
	else
		snprintf(r->est.message, sizeof(r->est.message),
			 "exact TSC relation (%zu offset segments); no probe hull to cross-check it",
			 r->nr_tsc_segments);
}

static int reference_index(const struct scan *sc, const char *dir)
{
	char path[4096];
	struct tv_meta *m = NULL;
	const char *name;
	int ref = 0;

	snprintf(path, sizeof(path), "%s/session.meta", dir);
	if (tv_meta_read(path, &m))
		return 0;
	name = tv_meta_get(m, "reference_domain");
	for (size_t d = 0; name && d < sc->nr_domains; d++)
		if (!strcmp(tv_reader_domain(sc->rd, d)->subdir, name))
			ref = (int)d;
	tv_meta_free(m);
	return ref;
}

static int sync_compute(struct scan *sc, const char *dir, struct tv_sync_result *out)
{
	struct graph *g = calloc(1, sizeof(*g));
	struct causality c;
	int ref = reference_index(sc, dir), ret;

	out->domains = calloc(sc->nr_domains, sizeof(*out->domains));
	if (!g || !out->domains) {
		free(g);
		return -ENOMEM;
	}
	out->nr = sc->nr_domains;
	snprintf(out->reference, sizeof(out->reference), "%s",
		 tv_reader_domain(sc->rd, (size_t)ref)->subdir);
	qsort(sc->probes, sc->nr_probes, sizeof(*sc->probes), cmp_probe);
	ret = estimate_edges(sc, g);
	for (size_t d = 0; d < sc->nr_domains && !ret; d++) {
		struct tv_sync_domain *r = &out->domains[d];

		snprintf(r->domain, sizeof(r->domain), "%s", tv_reader_domain(sc->rd, d)->subdir);
		if ((int)d == ref) {
			snprintf(r->method, sizeof(r->method), "reference");
			snprintf(r->via, sizeof(r->via), "%s", r->domain);
			r->est.map.slope_q48 = TV_SLOPE_ONE;
		} else {
			ret = tsc_method(sc, (int)d, ref, r);
			ret = ret < 0 ? ret : 0;
		}
	}
	if (!ret) {
		resolve_paths(sc, g, ref, out->domains);
		ret = attach_pieces(sc, g, out->domains);
	}
	if (!ret) {
		compose_paths(sc, out->domains, ref);
		for (size_t d = 0; d < sc->nr_domains; d++) {
			if (!out->domains[d].method[0])
				explain_missing(sc, g, d, &out->domains[d]);
			else if (!strcmp(out->domains[d].method, "tsc") && g->e[d][ref].valid)
				out->domains[d].nr_probes = g->e[d][ref].nr_pairs;
		}
		c.res = out->domains;
		c.g = g;
		ret = for_each_pair(sc, check_pair, &c);
		for (size_t d = 0; d < sc->nr_domains && !ret; d++) {
			int v = domain_index(sc, out->domains[d].via);

			describe_cross_check(&out->domains[d], v >= 0 ? &g->e[d][v] : NULL);
		}
	}
	for (size_t d = 0; d < MAX_DOMAINS; d++)
		for (size_t p = 0; p < MAX_DOMAINS; p++)
			free(g->e[d][p].pieces);
	free(g);
	return ret;
}

int tv_sync_session(const char *dir, struct tv_sync_result *out)
{
	struct scan *sc = calloc(1, sizeof(*sc));
	int ret;

	memset(out, 0, sizeof(*out));
	if (!sc)
		return -ENOMEM;
	ret = scan_session(sc, dir);
	if (!ret)
		ret = sync_compute(sc, dir, out);
	if (!ret)
		ret = tv_sync_check_vcpus(dir, out);
	if (ret)
		tv_sync_result_free(out);
	tv_reader_close(sc->rd);
	for (size_t d = 0; d < MAX_DOMAINS; d++)
		tv_tsc_segments_free(&sc->tsc[d]);
	free(sc->probes);
	free(sc);
	return ret;
}
