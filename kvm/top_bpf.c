// SPDX-License-Identifier: LGPL-2.1
/*
 * The live view's in-kernel aggregation: kvm/bpf/top_exits.bpf.c, built
 * into the library as bytes (build/gen/top_exits_bpf.c), loaded with
 * libbpf and attached to kvm:kvm_exit and kvm:kvm_entry.  Each interval
 * reads the rows map and gives the rows of the difference from the last
 * read: counts and totals exact, p50/p99 from the log-linear histogram
 * (within 3.1%), max the top of the highest bucket the interval filled
 * (never above the largest latency seen).
 *
 * Threads: a top_bpf belongs to the thread that reads it; the BPF programs
 * run in the kernel on every CPU (see top_exits.bpf.c for their contract).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <event-parse.h>
#include <tracefs.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "bpf/top_exits.h"
#include "top_bpf.h"

extern const unsigned char tv_top_exits_bpf[];
extern const size_t tv_top_exits_bpf_len;

struct prev_row {
	struct top_key key;
	struct top_val val;
};

struct tv_top_bpf {
	struct bpf_object *obj;
	struct bpf_link *links[2];
	int rows_fd, stats_fd;
	struct prev_row *prev;		/* the last read, to subtract */
	size_t nr_prev, cap_prev;
	unsigned long long lost_prev;
};

/* libbpf's messages (the verifier's log among them) as our debug lines. */
static int libbpf_to_debug(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL, *save = NULL;

	if (level == LIBBPF_DEBUG || vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (char *line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		tv_debug("%s", line);
	free(msg);
	return 0;
}

/* kvm_exit's field offsets on this kernel, from its tracefs format. */
static int exit_fields(struct top_cfg *cfg)
{
	const char *systems[] = { "kvm", NULL };
	struct tep_handle *tep = tracefs_local_events_system(NULL, systems);
	struct tep_event *ev = tep ? tep_find_event_by_name(tep, "kvm", "kvm_exit") : NULL;
	struct tep_format_field *reason, *isa, *vcpu;
	int ret = 0;

	reason = ev ? tep_find_field(ev, "exit_reason") : NULL;
	isa = ev ? tep_find_field(ev, "isa") : NULL;
	vcpu = ev ? tep_find_field(ev, "vcpu_id") : NULL;
	if (!reason || !vcpu || reason->size != 4 || vcpu->size != 4 || (isa && isa->size != 4)) {
		tv_err("Cannot use kvm:kvm_exit for in-kernel aggregation: %s",
		       ev ? "no 4-byte exit_reason and vcpu_id fields" : "no such event (kvm module not loaded?)");
		ret = -ENOENT;
	} else {
		cfg->off_reason = (unsigned int)reason->offset;
		cfg->off_isa = isa ? (unsigned int)isa->offset : 0;
		cfg->off_vcpu = (unsigned int)vcpu->offset;
		cfg->isa_default = TV_KVM_ISA_VMX;	/* kernels before the isa field: VMX */
	}
	tep_free(tep);
	return ret;
}

static int bpf_load(struct tv_top_bpf *b, const struct top_cfg *cfg)
{
	struct bpf_map *rodata;
	struct bpf_program *prog;
	size_t size = 0;
	int i = 0, err;

	b->obj = bpf_object__open_mem(tv_top_exits_bpf, tv_top_exits_bpf_len, NULL);
	if (!b->obj)
		return -errno;
	rodata = bpf_object__find_map_by_name(b->obj, ".rodata");
	if (!rodata || !bpf_map__initial_value(rodata, &size) || size != sizeof(*cfg))
		return -EINVAL;
	/* the program's only read-only data is its const volatile cfg */
	err = bpf_map__set_initial_value(rodata, cfg, sizeof(*cfg));
	if (!err)
		err = bpf_object__load(b->obj);
	if (err)
		return err;
	bpf_object__for_each_program(prog, b->obj) {
		if (i == 2)
			break;
		b->links[i] = bpf_program__attach(prog);
		if (!b->links[i])
			return -errno;
		i++;
	}
	b->rows_fd = bpf_object__find_map_fd_by_name(b->obj, "rows");
	b->stats_fd = bpf_object__find_map_fd_by_name(b->obj, "stats");
	return b->rows_fd < 0 || b->stats_fd < 0 ? -ENOENT : 0;
}

/* "FIELD OP VALUE" at *@p into @c; *@p moves past it.  0 or -EINVAL. */
static int parse_cond(const char **p, struct top_cond *c)
{
	static const struct { const char *name; unsigned int field; } fields[] = {
		{ "exit_reason", TOP_F_REASON }, { "vcpu_id", TOP_F_VCPU }, { "isa", TOP_F_ISA },
		{ "tgid", TOP_F_TGID }, { "latency", TOP_F_LATENCY },
	};
	static const struct { const char *text; unsigned int op; } ops[] = {
		{ "==", TOP_OP_EQ }, { "!=", TOP_OP_NE }, { "<=", TOP_OP_LE }, { ">=", TOP_OP_GE },
		{ "<", TOP_OP_LT }, { ">", TOP_OP_GT },
	};
	static const struct { const char *unit; unsigned long long ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	const char *q = *p + strspn(*p, " \t");
	size_t n = strcspn(q, " \t=!<>");
	size_t i, k;
	char *end;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strlen(fields[i].name) == n && !strncmp(q, fields[i].name, n))
			break;
	if (i == sizeof(fields) / sizeof(fields[0]))
		return -EINVAL;
	c->field = fields[i].field;
	q += n + strspn(q + n, " \t");
	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (!strncmp(q, ops[k].text, strlen(ops[k].text)))
			break;
	if (k == sizeof(ops) / sizeof(ops[0]))
		return -EINVAL;
	c->op = ops[k].op;
	q += strlen(ops[k].text);
	q += strspn(q, " \t");
	errno = 0;
	c->value = strtoull(q, &end, 0);
	if (errno || end == q)
		return -EINVAL;
	for (k = 0; c->field == TOP_F_LATENCY && k < sizeof(units) / sizeof(units[0]); k++) {
		size_t u = strlen(units[k].unit);

		if (!strncmp(end, units[k].unit, u) && !isalnum((unsigned char)end[u])) {
			c->value *= units[k].ns;
			end += u;
			break;
		}
	}
	*p = end + strspn(end, " \t");
	return 0;
}

/* FILTER: conditions joined by && (the names of kvm_exit's fields, and latency). */
static int parse_filter(const char *filter, struct top_cfg *cfg)
{
	const char *p = filter;

	while (p && *p) {
		if (cfg->nr_conds == TOP_MAX_CONDS || parse_cond(&p, &cfg->conds[cfg->nr_conds])) {
			tv_err("Invalid filter for the in-kernel aggregation: \"%s\" (at most %d of FIELD OP VALUE joined by &&; FIELD exit_reason, vcpu_id, isa, tgid or latency [ns|us|ms|s]; OP == != < <= > >=)",
			       filter, TOP_MAX_CONDS);
			return -EINVAL;
		}
		cfg->by_latency |= cfg->conds[cfg->nr_conds].field == TOP_F_LATENCY;
		cfg->nr_conds++;
		if (!strncmp(p, "&&", 2))
			p += 2;
		else if (*p) {
			tv_err("Invalid filter for the in-kernel aggregation: \"%s\" (conditions are joined by &&)",
			       filter);
			return -EINVAL;
		}
	}
	return 0;
}

int tv_top_bpf_open(const char *filter, struct tv_top_bpf **out)
{
	struct tv_top_bpf *b = calloc(1, sizeof(*b));
	struct top_cfg cfg = { 0 };
	int ret;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	libbpf_set_print(libbpf_to_debug);
	ret = parse_filter(filter, &cfg);
	if (!ret)
		ret = exit_fields(&cfg);
	if (!ret) {
		ret = bpf_load(b, &cfg);
		if (ret)
			tv_err("Cannot load the in-kernel aggregation (BPF): errno=%d (%s)", -ret,
			       strerror(-ret));
	}
	if (ret) {
		tv_top_bpf_close(b);
		return ret;
	}
	*out = b;
	return 0;
}

void tv_top_bpf_close(struct tv_top_bpf *b)
{
	if (!b)
		return;
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(b->links[i]);
	bpf_object__close(b->obj);
	free(b->prev);
	free(b);
}

static struct prev_row *prev_find(struct tv_top_bpf *b, const struct top_key *k)
{
	for (size_t i = 0; i < b->nr_prev; i++)
		if (!memcmp(&b->prev[i].key, k, sizeof(*k)))
			return &b->prev[i];
	return NULL;
}

static struct prev_row *prev_add(struct tv_top_bpf *b, const struct top_key *k)
{
	if (tv_array_grow(&b->prev, &b->cap_prev, b->nr_prev, sizeof(*b->prev), 64))
		return NULL;
	memset(&b->prev[b->nr_prev], 0, sizeof(b->prev[0]));
	b->prev[b->nr_prev].key = *k;
	return &b->prev[b->nr_prev++];
}

void tv_top_bucket_range(unsigned int i, uint64_t *lo, uint64_t *hi)
{
	unsigned int shift;

	if (i < TOP_SUB) {
		*lo = i;
		*hi = i + 1;
		return;
	}
	shift = i / TOP_SUB - 1;
	*lo = (uint64_t)(TOP_SUB + i % TOP_SUB) << shift;
	*hi = (uint64_t)(TOP_SUB + i % TOP_SUB + 1) << shift;
}

uint64_t tv_top_hist_percentile(const uint64_t *h, uint64_t n, unsigned int pct)
{
	uint64_t rank = (n * pct + 99) / 100, seen = 0, lo, hi;

	for (unsigned int i = 0; i < TOP_NBUCKETS; i++) {
		seen += h[i];
		if (seen >= rank && h[i]) {
			tv_top_bucket_range(i, &lo, &hi);
			return lo + (hi - lo) / 2;
		}
	}
	return 0;
}

static void row_labels(struct tv_kvm_stat_row *r, const struct top_key *k, const struct top_val *v)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", k->tgid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (!comm[0])	/* the VMM is gone: its thread's name, from the kernel */
		snprintf(comm, sizeof(comm), "%.*s", (int)sizeof(v->comm), v->comm);
	if (comm[0])
		snprintf(r->vm, sizeof(r->vm), "%s[%u]", comm, k->tgid);
	else
		snprintf(r->vm, sizeof(r->vm), "pid%u", k->tgid);
	snprintf(r->vcpu, sizeof(r->vcpu), "%u", k->vcpu);
	tv_kvm_exit_reason_label((enum tv_kvm_isa)k->isa, k->reason, r->reason, sizeof(r->reason));
	r->guest_pid = -1;
}

/* The row of what @cur added since @prev (updated to @cur); 0 if nothing. */
static int row_delta(struct tv_kvm_stat_row *r, const struct top_key *k, const struct top_val *cur,
		     struct top_val *prev)
{
	uint64_t h[TOP_NBUCKETS], lo, hi;
	int top = -1, low = -1;

	memset(r, 0, sizeof(*r));
	r->count = cur->count - prev->count;
	r->total_ns = cur->total_ns - prev->total_ns;
	for (unsigned int i = 0; i < TOP_NBUCKETS; i++) {
		h[i] = cur->hist[i] - prev->hist[i];
		if (h[i] && low < 0)
			low = (int)i;
		if (h[i])
			top = (int)i;
	}
	if (top >= 0) {
		uint64_t n = cur->timed - prev->timed;

		r->has_latency = true;
		tv_top_bucket_range((unsigned int)low, &lo, &hi);
		r->min_ns = lo;
		tv_top_bucket_range((unsigned int)top, &lo, &hi);
		r->max_ns = hi - 1 < cur->max_ns ? hi - 1 : cur->max_ns;
		/* a bucket's middle may pass the largest value seen */
		r->p50_ns = tv_top_hist_percentile(h, n, 50);
		r->p99_ns = tv_top_hist_percentile(h, n, 99);
		r->p50_ns = r->p50_ns < r->max_ns ? r->p50_ns : r->max_ns;
		r->p99_ns = r->p99_ns < r->max_ns ? r->p99_ns : r->max_ns;
	}
	*prev = *cur;
	if (!r->count && !r->has_latency)
		return 0;
	row_labels(r, k, cur);
	return 1;
}

int tv_top_bpf_interval(struct tv_top_bpf *b, struct tv_kvm_stat *out, uint64_t *lost)
{
	struct top_key key, next, *cursor = NULL;
	struct top_val *val = malloc(sizeof(*val));
	unsigned long long total = 0, n;
	size_t cap = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	snprintf(out->mode, sizeof(out->mode), "exits");
	out->have_exit_entry = true;
	if (!val)
		return -ENOMEM;
	while (!ret && !bpf_map_get_next_key(b->rows_fd, cursor, &next)) {
		struct prev_row *p;

		key = next;
		cursor = &key;
		if (bpf_map_lookup_elem(b->rows_fd, &key, val))
			continue;	/* deleted meanwhile: never, rows stay */
		p = prev_find(b, &key);
		if (!p && !(p = prev_add(b, &key))) {
			ret = -ENOMEM;
			break;
		}
		if (out->nr_rows == cap) {
			struct tv_kvm_stat_row *rows;

			cap = cap ? cap * 2 : 32;
			rows = realloc(out->rows, cap * sizeof(*rows));
			if (!rows) {
				ret = -ENOMEM;
				break;
			}
			out->rows = rows;
		}
		if (row_delta(&out->rows[out->nr_rows], &key, val, &p->val))
			out->nr_rows++;
	}
	for (unsigned int s = 0; s < TOP_NSTATS; s++)
		if (!bpf_map_lookup_elem(b->stats_fd, &s, &n))
			total += n;
	*lost = total - b->lost_prev;
	b->lost_prev = total;
	free(val);
	if (ret)
		tv_kvm_stat_free(out);
	return ret;
}
