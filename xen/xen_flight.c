// SPDX-License-Identifier: LGPL-2.1
/*
 * Xen in the flight recorder (xen_flight.h): the per-CPU rings dom0 keeps
 * instead of writing cpuN.xen, and the exit-latency watch over the same
 * records.
 *
 * The ring holds whole records so that a snapshot starts on a record
 * boundary; Xen writes whole records into its buffers (a record that would
 * cross the end of the data area is preceded by a WRAP_BUFFER record of
 * the exact size left), but a window is cut where the producer was, so a
 * partial record is carried over to the next feed all the same.
 *
 * The watch pairs each vCPU's VMEXIT with its next VMENTRY, or with the
 * vCPU becoming runnable before it (xen/xen_stat.c's rule, xenalyze's):
 * the exit's vCPU is the one running on the record's pCPU, learned from
 * the scheduler records by the decoder (tv_xen_rec_to_event).  An exit
 * still open is seen past its limit by the latest TSC any CPU's records
 * reached: Xen stamps every CPU's records with the same synchronised TSC,
 * so a stall shows as soon as a drain brings later records from anywhere
 * (at most DRAIN_POLL_MS, 100 ms, after), or at the latest when it ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exit_tracker.h"
#include "xen_flight.h"

static unsigned int hdr_size(uint32_t hdr)
{
	return 4 + ((hdr >> 31) ? 8 : 0) + 4 * ((hdr >> 28) & 7);
}

static uint32_t get_word(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

/*
 * The whole records at @p (@len bytes) after completing @part: calls
 * @fn(@ctx, record, size) for each, keeps a cut-off tail in @part.
 */
typedef void (*rec_fn)(void *ctx, const unsigned char *p, size_t size);

static void walk_records(unsigned char *part, unsigned int *part_len, const unsigned char *p,
			 size_t len, rec_fn fn, void *ctx)
{
	while (*part_len && len) {
		unsigned int want = *part_len < 4 ? 4 : hdr_size(get_word(part));
		size_t n = want - *part_len < len ? want - *part_len : len;

		memcpy(part + *part_len, p, n);
		*part_len += (unsigned int)n;
		p += n;
		len -= n;
		if (*part_len >= 4 && *part_len == hdr_size(get_word(part))) {
			fn(ctx, part, *part_len);
			*part_len = 0;
		}
	}
	while (len >= 4 && hdr_size(get_word(p)) <= len) {
		unsigned int size = hdr_size(get_word(p));

		fn(ctx, p, size);
		p += size;
		len -= size;
	}
	memcpy(part + *part_len, p, len);
	*part_len += (unsigned int)len;
}

int tv_xen_fring_init(struct tv_xen_fring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	if (cap < TV_XEN_FRING_MIN_BYTES || cap > TV_XEN_FRING_MAX_BYTES)
		return -EINVAL;
	r->buf = malloc(cap);
	if (!r->buf)
		return -ENOMEM;
	r->cap = cap;
	return 0;
}

/* The header word of the oldest record (it may straddle the ring's end). */
static uint32_t fring_head_word(const struct tv_xen_fring *r)
{
	unsigned char w[4];

	for (size_t i = 0; i < 4; i++)
		w[i] = r->buf[(r->head + i) % r->cap];
	return get_word(w);
}

static void fring_pop(struct tv_xen_fring *r)
{
	unsigned int size = hdr_size(fring_head_word(r));

	r->head = (r->head + size) % r->cap;
	r->len -= size;
	r->dropped++;
}

static void fring_push(void *ctx, const unsigned char *p, size_t size)
{
	struct tv_xen_fring *r = ctx;
	size_t tail, first;
	bool popped = false;

	r->fed++;
	while (r->len + size > r->cap) {
		fring_pop(r);
		popped = true;
	}
	tail = (r->head + r->len) % r->cap;
	first = size < r->cap - tail ? size : r->cap - tail;
	memcpy(r->buf + tail, p, first);
	memcpy(r->buf, p + first, size - first);
	r->len += size;
	/* records without a TSC take the one before them: that one went */
	while (popped && r->len && !(fring_head_word(r) >> 31))
		fring_pop(r);
}

void tv_xen_fring_feed(struct tv_xen_fring *r, const unsigned char *p, size_t len)
{
	walk_records(r->part, &r->part_len, p, len, fring_push, r);
}

size_t tv_xen_fring_copy(const struct tv_xen_fring *r, unsigned char *out)
{
	size_t first = r->len < r->cap - r->head ? r->len : r->cap - r->head;

	memcpy(out, r->buf + r->head, first);
	memcpy(out + first, r->buf, r->len - first);
	return r->len;
}

void tv_xen_fring_free(struct tv_xen_fring *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

#define HIT_QUEUE 64
#define CLOSED_KEPT 16

struct watch_cpu {
	struct tv_xen_cpu_state cs;
	unsigned char part[XT_REC_MAX];
	unsigned int part_len;
};

/* A reported exit that closed since: what _closed() answers. */
struct closed_exit {
	uint64_t key, exit_tsc, latency_ns;
};

/*
 * Slots of @open: exit_ts the VMEXIT's TSC, data[0] its reason, data[1]
 * its pCPU, label 1 once reported.
 */
struct tv_xen_exit_watch {
	struct tv_xen_exit_rule rule;
	uint64_t khz;
	struct {			/* pCPU 0's scale in force: clock xen-system */
		uint64_t tsc0, stime0;
		uint32_t mul;
		int8_t shift;
		int known;
	} scale;
	int ncpus;
	struct watch_cpu *cpus;
	int feed_cpu;			/* the CPU of the records being walked */
	struct tv_exit_tracker open;
	uint64_t now_tsc;		/* the latest TSC of any CPU's records */
	struct closed_exit closed[CLOSED_KEPT];
	unsigned int closed_next;
	struct tv_xen_exit_hit q[HIT_QUEUE];
	unsigned int q_head, q_len;
	uint64_t overflow;
	int efd;
	/* tv_xen_exit_watch_count(): rows, open addressing by (dom, vcpu, reason) */
	bool counting;
	struct tv_xen_exit_count *counts;
	size_t nr_counts, cap_counts;
	unsigned int *count_idx;	/* row + 1, 0 free; COUNT_IDX_SIZE slots */
	uint64_t counts_lost;
	pthread_mutex_t lock;		/* everything: feed, pass, take, closed, counts */
};

/* Twice the rows at most: probes stay short. */
#define COUNT_IDX_SIZE (2 * TV_XEN_EXIT_MAX_COUNTS)

int tv_xen_exit_watch_new(const struct tv_xen_exit_rule *rule, int ncpus, uint64_t khz,
			  struct tv_xen_exit_watch **out)
{
	struct tv_xen_exit_watch *w = NULL;

	*out = NULL;
	if (!rule->limit_ns || ncpus <= 0 || !khz)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->rule = *rule;
	w->khz = khz;
	w->ncpus = ncpus;
	w->cpus = calloc((size_t)ncpus, sizeof(*w->cpus));
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&w->lock, NULL);
	if (!w->cpus || w->efd < 0) {
		tv_xen_exit_watch_free(w);
		return -ENOMEM;
	}
	for (int i = 0; i < ncpus; i++)
		tv_xen_cpu_state_init(&w->cpus[i].cs);
	*out = w;
	return 0;
}

unsigned int tv_xen_exit_bucket(uint64_t ns)
{
	unsigned int b = ns <= 1 ? 0 : 64 - (unsigned int)__builtin_clzll(ns - 1);

	return b < TV_XEN_EXIT_NBUCKETS ? b : TV_XEN_EXIT_NBUCKETS - 1;
}

int tv_xen_exit_watch_count(struct tv_xen_exit_watch *w)
{
	unsigned int *idx = calloc(COUNT_IDX_SIZE, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	pthread_mutex_lock(&w->lock);
	free(w->count_idx);
	w->count_idx = idx;
	w->nr_counts = 0;
	w->counting = true;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static size_t count_slot(const struct tv_xen_exit_watch *w, unsigned int dom, unsigned int vcpu,
			 uint32_t reason)
{
	size_t i = (((size_t)dom << 20 ^ (size_t)vcpu << 12 ^ reason) * 2654435761u) & (COUNT_IDX_SIZE - 1);

	while (w->count_idx[i]) {
		const struct tv_xen_exit_count *c = &w->counts[w->count_idx[i] - 1];

		if (c->domid == dom && c->vcpu == vcpu && c->reason == reason)
			break;
		i = (i + 1) & (COUNT_IDX_SIZE - 1);
	}
	return i;
}

/* Under the lock: the row of (@dom, @vcpu, @reason), new if room, else NULL (lost). */
static struct tv_xen_exit_count *count_row(struct tv_xen_exit_watch *w, unsigned int dom, unsigned int vcpu,
					   uint32_t reason)
{
	size_t i = count_slot(w, dom, vcpu, reason);
	struct tv_xen_exit_count *c;

	if (w->count_idx[i])
		return &w->counts[w->count_idx[i] - 1];
	if (w->nr_counts == TV_XEN_EXIT_MAX_COUNTS ||
	    tv_array_grow(&w->counts, &w->cap_counts, w->nr_counts, sizeof(*w->counts), 64))
		return NULL;
	c = &w->counts[w->nr_counts++];
	memset(c, 0, sizeof(*c));
	c->domid = dom;
	c->vcpu = vcpu;
	c->reason = reason;
	w->count_idx[i] = (unsigned int)w->nr_counts;
	return c;
}

/* Under the lock: a VMEXIT (@dur_ns UINT64_MAX) or an exit's end after @dur_ns. */
static void count_exit(struct tv_xen_exit_watch *w, uint64_t key, uint32_t reason, uint64_t dur_ns)
{
	struct tv_xen_exit_count *c;

	if (!w->counting)
		return;
	c = count_row(w, (unsigned int)(key >> 16), (unsigned int)(key & 0xffff), reason);
	if (!c) {
		w->counts_lost += dur_ns == UINT64_MAX;
		return;
	}
	if (dur_ns == UINT64_MAX) {
		c->count++;
		return;
	}
	c->timed++;
	c->sum_ns += dur_ns;
	c->hist[tv_xen_exit_bucket(dur_ns)]++;
}

int tv_xen_exit_watch_counts(struct tv_xen_exit_watch *w, struct tv_xen_exit_count **rows, size_t *nr,
			     uint64_t *lost)
{
	int ret = 0;

	pthread_mutex_lock(&w->lock);
	*nr = w->nr_counts;
	*lost = w->counts_lost;
	*rows = malloc((w->nr_counts ? w->nr_counts : 1) * sizeof(**rows));
	if (*rows)
		memcpy(*rows, w->counts, w->nr_counts * sizeof(**rows));
	else
		ret = -ENOMEM;
	pthread_mutex_unlock(&w->lock);
	if (ret)
		*nr = 0;
	return ret;
}

void tv_xen_exit_watch_forget(struct tv_xen_exit_watch *w, unsigned int domid)
{
	size_t out = 0;

	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->nr_counts; i++)
		if (w->counts[i].domid != domid)
			w->counts[out++] = w->counts[i];
	if (out != w->nr_counts && w->count_idx) {
		/* rows moved: index them again */
		w->nr_counts = out;
		memset(w->count_idx, 0, COUNT_IDX_SIZE * sizeof(*w->count_idx));
		for (size_t i = 0; i < out; i++)
			w->count_idx[count_slot(w, w->counts[i].domid, w->counts[i].vcpu, w->counts[i].reason)] =
				(unsigned int)i + 1;
	}
	pthread_mutex_unlock(&w->lock);
}

static bool rule_matches(const struct tv_xen_exit_rule *r, unsigned int dom, uint32_t reason)
{
	if (r->domid >= 0 && dom != (unsigned int)r->domid)
		return false;
	return r->match_reason ? reason == r->reason : reason != r->hlt;
}

/* Under the lock: a hit queued for the taker, the eventfd written. */
static void watch_report(struct tv_xen_exit_watch *w, const struct tv_exit_slot *s, uint64_t latency_tsc,
			 int open)
{
	struct tv_xen_exit_hit *h;
	uint64_t one = 1;

	if (w->q_len == HIT_QUEUE) {
		w->overflow++;
		return;
	}
	h = &w->q[(w->q_head + w->q_len++) % HIT_QUEUE];
	memset(h, 0, sizeof(*h));
	h->domid = (unsigned int)((s->key - 1) >> 16);
	h->vcpu = (unsigned int)((s->key - 1) & 0xffff);
	h->reason = (unsigned int)s->data[0];
	h->pcpu = (unsigned int)s->data[1];
	h->exit_tsc = s->exit_ts;
	h->exit_ns = w->scale.known ? tv_xen_tsc_to_stime(s->exit_ts, w->scale.tsc0, w->scale.stime0,
							 w->scale.mul, w->scale.shift)
				    : tv_xen_tsc_to_ns(s->exit_ts, w->khz);
	h->latency_ns = tv_xen_tsc_to_ns(latency_tsc, w->khz);
	h->open = open;
	h->system_time = w->scale.known;
	tv_debug("Xen exit past the limit: dom=%u, vcpu=%u, reason=0x%x, latency_ns=%llu, open=%d", h->domid,
		 h->vcpu, h->reason, (unsigned long long)h->latency_ns, open);
	if (write(w->efd, &one, sizeof(one)) < 0)
		tv_debug("Cannot signal a Xen exit hit: errno=%d", errno);
}

/* The vCPU @key's open exit ends at @tsc (its entry, or it became runnable). */
static void watch_close(struct tv_xen_exit_watch *w, uint64_t key, uint64_t tsc)
{
	struct tv_exit_slot *s = tv_exit_tracker_find(&w->open, key);
	uint64_t exit_tsc, dur;
	int reported;

	if (!s || !s->open || tsc < s->exit_ts)
		return;		/* none open, or the end of an earlier exit (watch_record) */
	exit_tsc = s->exit_ts;
	reported = s->label == 1;
	if (!tv_exit_tracker_close(&w->open, s, tsc, &dur))
		return;
	count_exit(w, key, (uint32_t)s->data[0], tv_xen_tsc_to_ns(dur, w->khz));
	if (reported) {
		struct closed_exit *c = &w->closed[w->closed_next++ % CLOSED_KEPT];

		c->key = key;
		c->exit_tsc = exit_tsc;
		c->latency_ns = tv_xen_tsc_to_ns(dur, w->khz);
	} else if (tv_xen_tsc_to_ns(dur, w->khz) > w->rule.limit_ns &&
		   rule_matches(&w->rule, (unsigned int)(key >> 16), (uint32_t)s->data[0])) {
		s->exit_ts = exit_tsc;	/* the report's, as the slot had it */
		watch_report(w, s, dur, 0);
	}
}

static uint64_t vcpu_key(unsigned int dom, unsigned int vcpu)
{
	return (uint64_t)(dom & 0xffff) << 16 | (vcpu & 0xffff);
}

/* One whole record of w->feed_cpu. */
static void watch_record(void *ctx, const unsigned char *p, size_t size)
{
	struct tv_xen_exit_watch *w = ctx;
	struct watch_cpu *c = &w->cpus[w->feed_cpu];
	unsigned char ev[TV_XEN_EVENT_MAX];
	struct tv_xen_rec rec;
	struct tv_exit_slot *s;
	uint64_t tsc;

	if (!tv_xen_rec_parse(p, size, &rec))
		return;
	/* pCPU 0 recalibrated: the hits' times follow (xen-system; stock Xen writes none) */
	if (rec.event == XT_TSCALE && w->feed_cpu == 0 && w->scale.known && rec.nr_extra >= 6) {
		w->scale.tsc0 = rec.extra[0] | (uint64_t)rec.extra[1] << 32;
		w->scale.stime0 = rec.extra[2] | (uint64_t)rec.extra[3] << 32;
		w->scale.mul = rec.extra[4];
		w->scale.shift = (int8_t)rec.extra[5];
		return;
	}
	if (!tv_xen_rec_to_event(&c->cs, &rec, ev, &tsc) || !c->cs.have_tsc)
		return;
	if (tsc > w->now_tsc)
		w->now_tsc = tsc;
	switch (tv_xen_event_of(rec.event)) {
	case TV_XEN_EV_VMEXIT:
		if (c->cs.cur_dom == 0xffff)
			break;		/* whose it is is not known yet */
		/*
		 * The pCPUs' records come a drain at a time, each pCPU's whole:
		 * a vCPU that moved within a drain has its later exit fed
		 * before the earlier run's exit and entry on its first pCPU
		 * (lab, xen-flight-guest: d2 on pCPU 1 then 0, paused 1.3 s in
		 * an exit on pCPU 0 that pCPU 1's older exit replaced, and its
		 * entry closed: no trigger).  An exit older than the open one
		 * is counted, not tracked; an end older than it is ignored
		 * (watch_close).
		 */
		s = tv_exit_tracker_find(&w->open, vcpu_key(c->cs.cur_dom, c->cs.cur_vcpu));
		if (s && s->open && tsc < s->exit_ts) {
			count_exit(w, vcpu_key(c->cs.cur_dom, c->cs.cur_vcpu), rec.extra[0], UINT64_MAX);
			break;
		}
		s = tv_exit_tracker_exit(&w->open, vcpu_key(c->cs.cur_dom, c->cs.cur_vcpu), tsc);
		if (s) {
			s->data[0] = rec.extra[0];
			s->data[1] = (uint64_t)w->feed_cpu;
			s->label = 0;
		}
		count_exit(w, vcpu_key(c->cs.cur_dom, c->cs.cur_vcpu), rec.extra[0], UINT64_MAX);
		break;
	case TV_XEN_EV_VMENTRY:
		if (c->cs.cur_dom != 0xffff)
			watch_close(w, vcpu_key(c->cs.cur_dom, c->cs.cur_vcpu), tsc);
		break;
	case TV_XEN_EV_RUNSTATE:
		/* -> runnable: the wait for a CPU is not the exit's (xen stat) */
		if (((rec.event >> 4) & 0xf) == 1)
			watch_close(w, vcpu_key(rec.extra[0] >> 16, rec.extra[0] & 0xffff), tsc);
		break;
	}
}

void tv_xen_exit_watch_set_scale(struct tv_xen_exit_watch *w, uint64_t tsc0, uint64_t stime0,
				 uint32_t mul, int8_t shift)
{
	pthread_mutex_lock(&w->lock);
	w->scale.tsc0 = tsc0;
	w->scale.stime0 = stime0;
	w->scale.mul = mul;
	w->scale.shift = shift;
	w->scale.known = mul != 0;
	pthread_mutex_unlock(&w->lock);
}

void tv_xen_exit_watch_feed(struct tv_xen_exit_watch *w, int cpu, const unsigned char *p, size_t len)
{
	if (cpu < 0 || cpu >= w->ncpus)
		return;
	pthread_mutex_lock(&w->lock);
	w->feed_cpu = cpu;
	walk_records(w->cpus[cpu].part, &w->cpus[cpu].part_len, p, len, watch_record, w);
	pthread_mutex_unlock(&w->lock);
}

void tv_xen_exit_watch_pass(struct tv_xen_exit_watch *w)
{
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->open.cap; i++) {
		struct tv_exit_slot *s = &w->open.slots[i];
		uint64_t dur;

		if (!s->key || !s->open || s->label == 1 || w->now_tsc <= s->exit_ts)
			continue;
		dur = w->now_tsc - s->exit_ts;
		if (tv_xen_tsc_to_ns(dur, w->khz) <= w->rule.limit_ns ||
		    !rule_matches(&w->rule, (unsigned int)((s->key - 1) >> 16), (uint32_t)s->data[0]))
			continue;
		s->label = 1;
		watch_report(w, s, dur, 1);
	}
	pthread_mutex_unlock(&w->lock);
}

int tv_xen_exit_watch_fd(const struct tv_xen_exit_watch *w)
{
	return w->efd;
}

int tv_xen_exit_watch_take(struct tv_xen_exit_watch *w, struct tv_xen_exit_hit *hit)
{
	uint64_t v;
	int got = 0;

	pthread_mutex_lock(&w->lock);
	if (w->q_len) {
		*hit = w->q[w->q_head];
		w->q_head = (w->q_head + 1) % HIT_QUEUE;
		w->q_len--;
		got = 1;
	}
	if (!w->q_len && read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		tv_debug("Cannot read the Xen exit eventfd: errno=%d", errno);
	pthread_mutex_unlock(&w->lock);
	return got;
}

int tv_xen_exit_watch_closed(struct tv_xen_exit_watch *w, const struct tv_xen_exit_hit *hit,
			     uint64_t *latency_ns)
{
	uint64_t key = vcpu_key(hit->domid, hit->vcpu);
	struct tv_exit_slot *s;
	int ret = -ENOENT;

	pthread_mutex_lock(&w->lock);
	s = tv_exit_tracker_find(&w->open, key);
	if (s && s->open && s->exit_ts == hit->exit_tsc)
		ret = 0;
	for (unsigned int i = 0; i < CLOSED_KEPT && ret; i++)
		if (w->closed[i].key == key && w->closed[i].exit_tsc == hit->exit_tsc) {
			*latency_ns = w->closed[i].latency_ns;
			ret = 1;
		}
	/* closed as it was reported (the report came at its entry) */
	if (ret < 0 && !hit->open) {
		*latency_ns = hit->latency_ns;
		ret = 1;
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

uint64_t tv_xen_exit_watch_overflow(const struct tv_xen_exit_watch *w)
{
	return w->overflow;
}

void tv_xen_exit_watch_free(struct tv_xen_exit_watch *w)
{
	if (!w)
		return;
	tv_exit_tracker_free(&w->open);
	if (w->efd >= 0)
		close(w->efd);
	pthread_mutex_destroy(&w->lock);
	free(w->counts);
	free(w->count_idx);
	free(w->cpus);
	free(w);
}
