// SPDX-License-Identifier: LGPL-2.1
/*
 * The live view's in-kernel aggregation: kvm/bpf/top_exits_btf.bpf.c
 * (tp_btf programs on the tracepoints' arguments, CO-RE through the kvm
 * modules' BTF) or, where that does not load, kvm/bpf/top_exits.bpf.c
 * (tracepoint programs on the records), built into the library as bytes
 * (build/gen/kvm/top_exits*_bpf.c), loaded with libbpf and attached to
 * kvm:kvm_exit and kvm:kvm_entry; and, for
 * --time-function, kvm/bpf/top_funcs.bpf.c on each function's entry and
 * return (kprobe/kretprobe through perf events where the kernel has
 * kprobes, else fentry/fexit through BTF; uprobe/uretprobe for
 * PATH:SYMBOL), whose rows have the same key and value.  Each interval
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
#include <limits.h>
#include <unistd.h>
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
#include "bpf/top_funcs.h"
#include "probes.h"
#include "top_bpf.h"
#include "vcpu_scan.h"
#include "bpf_dl.h"

extern const unsigned char tv_top_exits_bpf[];
extern const size_t tv_top_exits_bpf_len;
extern const unsigned char tv_top_exits_btf_bpf[];
extern const size_t tv_top_exits_btf_bpf_len;
extern const unsigned char tv_top_funcs_bpf[];
extern const size_t tv_top_funcs_bpf_len;

#define KPROBE_PMU "/sys/bus/event_source/devices/kprobe/type"
#define FN_NAME_MAX 64

struct prev_row {
	struct top_key key;
	struct top_val val;
};

struct tv_top_bpf {
	struct bpf_object *obj;		/* exits; NULL: functions only */
	struct bpf_link *links[2];
	int rows_fd, stats_fd;
	int counters_fd, free_ids_fd;	/* rows_fd's ids -> counters */
	/* --time-function: fobj owns the maps and the k/uprobe programs;
	 * each fentry/fexit function has a copy of its own (fentry_objs) */
	struct bpf_object *fobj;
	struct bpf_object **fentry_objs;
	size_t nr_fentry, cap_fentry;
	struct bpf_link **flinks;
	size_t nr_flinks, cap_flinks;
	int fn_rows_fd, fn_stats_fd;
	char (*fn_names)[FN_NAME_MAX];	/* index: a function row's reason */
	size_t nr_funcs;
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

/*
 * kvm_exit's field offsets on this kernel, from its tracefs format.
 * @optional: no kvm_exit event is -ENOENT, not an error (functions only).
 */
static int exit_fields(struct top_cfg *cfg, bool optional)
{
	const char *systems[] = { "kvm", NULL };
	struct tep_handle *tep = tracefs_local_events_system(NULL, systems);
	struct tep_event *ev = tep ? tep_find_event_by_name(tep, "kvm", "kvm_exit") : NULL;
	struct tep_format_field *reason, *isa, *vcpu;
	int ret = 0;

	reason = ev ? tep_find_field(ev, "exit_reason") : NULL;
	isa = ev ? tep_find_field(ev, "isa") : NULL;
	vcpu = ev ? tep_find_field(ev, "vcpu_id") : NULL;
	if (!ev && optional) {
		ret = -ENOENT;
	} else if (!reason || !vcpu || reason->size != 4 || vcpu->size != 4 || (isa && isa->size != 4)) {
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

/*
 * Every row id free (kvm/bpf/top_exits.h): before the programs are
 * attached, so that their first exit finds one.
 */
static int ids_fill(struct tv_top_bpf *b)
{
	for (unsigned int id = 0; id < TOP_MAX_ROWS; id++)
		if (bpf_map_update_elem(b->free_ids_fd, NULL, &id, BPF_ANY))
			return -errno;
	return 0;
}

/* The loaded exit programs' maps, the row ids free. */
static int exit_maps(struct tv_top_bpf *b)
{
	b->rows_fd = bpf_object__find_map_fd_by_name(b->obj, "rows");
	b->stats_fd = bpf_object__find_map_fd_by_name(b->obj, "stats");
	b->counters_fd = bpf_object__find_map_fd_by_name(b->obj, "counters");
	b->free_ids_fd = bpf_object__find_map_fd_by_name(b->obj, "free_ids");
	if (b->rows_fd < 0 || b->stats_fd < 0 || b->counters_fd < 0 || b->free_ids_fd < 0)
		return -ENOENT;
	return ids_fill(b);
}

/* One flavour of the exit programs (@bytes) loaded with @cfg and attached. */
static int bpf_load(struct tv_top_bpf *b, const unsigned char *bytes, size_t len,
		    const struct top_cfg *cfg)
{
	struct bpf_map *rodata;
	struct bpf_program *prog;
	size_t size = 0;
	int i = 0, err;

	b->obj = bpf_object__open_mem(bytes, len, NULL);
	if (!b->obj)
		return -errno;
	rodata = bpf_object__find_map_by_name(b->obj, ".rodata");
	if (!rodata || !bpf_map__initial_value(rodata, &size) || size != sizeof(*cfg))
		return -EINVAL;
	/* the program's only read-only data is its const volatile cfg */
	err = bpf_map__set_initial_value(rodata, cfg, sizeof(*cfg));
	if (!err)
		err = bpf_object__load(b->obj);
	if (!err)
		err = exit_maps(b);
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
	return 0;
}

static void bpf_unload(struct tv_top_bpf *b)
{
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(b->links[i]);
		b->links[i] = NULL;
	}
	bpf_object__close(b->obj);
	b->obj = NULL;
	b->rows_fd = b->stats_fd = b->counters_fd = b->free_ids_fd = -1;
}

/*
 * Why the BTF flavour cannot be tried here, or NULL: it needs the BTF of
 * kvm (struct kvm_vcpu, the tracepoints) and of the vendor module whose
 * exit reason it reads.  TV_BPF_TRACEPOINT=1 takes the tracepoint
 * flavour anyway, so that a test reaches it on a kernel with BTF (the
 * lab's).
 */
static const char *btf_flavour_unusable(void)
{
	const char *force = getenv("TV_BPF_TRACEPOINT");

	if (force && !strcmp(force, "1"))
		return "TV_BPF_TRACEPOINT=1";
	if (access("/sys/kernel/btf/kvm", R_OK))
		return "no BTF for the kvm module (/sys/kernel/btf/kvm)";
	/*
	 * SVM only: its exit code read through BTF was checked against exact
	 * counts in the lab's L1; no VMX host was there to check VMX's read,
	 * and a wrong one would miscount silently.  VMX keeps the tracepoint
	 * flavour, whose fields come from the tracepoint's own format.
	 */
	if (access("/sys/kernel/btf/kvm_amd", R_OK))
		return "no BTF for kvm_amd (/sys/kernel/btf; the BTF flavour is SVM's only)";
	return NULL;
}

/*
 * The exit programs: the tp_btf flavour where the kernel takes it (no
 * trace record built per exit), else the tracepoint flavour; the choice
 * and why at debug level (TRACEVISOR_DEBUG=1).
 */
static int exits_load(struct tv_top_bpf *b, const struct top_cfg *cfg)
{
	const char *why = btf_flavour_unusable();
	int err;

	if (!why) {
		err = bpf_load(b, tv_top_exits_btf_bpf, tv_top_exits_btf_bpf_len, cfg);
		if (!err) {
			tv_debug("top --bpf: exits aggregated by tp_btf programs (kvm_exit/kvm_entry arguments through BTF)");
			return 0;
		}
		bpf_unload(b);
		tv_debug("top --bpf: the tp_btf programs do not load here: errno=%d (%s)", -err,
			 strerror(-err));
		why = "the tp_btf programs did not load";
	}
	tv_debug("top --bpf: exits aggregated by tracepoint programs on the kvm_exit/kvm_entry records (%s)",
		 why);
	return bpf_load(b, tv_top_exits_bpf, tv_top_exits_bpf_len, cfg);
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

/* A C name (what the rows call the function), or NULL. */
static const char *func_name(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	const char *name = colon ? colon + 1 : spec;
	size_t n = strlen(name);

	if (!n || n >= FN_NAME_MAX || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return NULL;
	return name;
}

/* Is @sym a function of the running kernel (/proc/kallsyms)? */
static bool kernel_has_function(const char *sym)
{
	char line[512], type, name[256];
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "re");

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %c %255s", &type, name) == 2 &&
			(type == 't' || type == 'T') && !strcmp(name, sym);
	if (f)
		fclose(f);
	return found;
}

static int flink_add(struct tv_top_bpf *b, struct bpf_link *link)
{
	if (tv_array_grow(&b->flinks, &b->cap_flinks, b->nr_flinks, sizeof(*b->flinks), 8)) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	b->flinks[b->nr_flinks++] = link;
	return 0;
}

/* Entry and return of @spec's function through perf events (k/uprobe). */
static int attach_probe_pair(struct tv_top_bpf *b, const char *spec, unsigned int idx)
{
	struct bpf_program *entry = bpf_object__find_program_by_name(b->fobj, "tv_fn_entry");
	struct bpf_program *ret = bpf_object__find_program_by_name(b->fobj, "tv_fn_return");
	bool user = strchr(spec, ':') != NULL;
	unsigned long long offset = 0;
	char path[PATH_MAX];
	int err = 0;

	if (user && (err = tv_probe_uprobe_target(spec, spec, path, sizeof(path), &offset)))
		return err;
	for (int r = 0; r < 2 && !err; r++) {
		struct bpf_link *link;

		if (user) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = idx, .retprobe = r);

			link = bpf_program__attach_uprobe_opts(r ? ret : entry, -1, path, (size_t)offset, &uo);
		} else {
			LIBBPF_OPTS(bpf_kprobe_opts, ko, .bpf_cookie = idx, .retprobe = r);

			link = bpf_program__attach_kprobe_opts(r ? ret : entry, spec, &ko);
		}
		if (!link) {
			err = -errno;
			tv_err("Cannot time function \"%s\" (%s): errno=%d (%s)", spec,
			       user ? (r ? "uretprobe" : "uprobe") : (r ? "kretprobe" : "kprobe"), -err,
			       strerror(-err));
		} else {
			err = flink_add(b, link);
		}
	}
	return err;
}

/* One more copy of the functions' object, its fentry/fexit on @sym, sharing the maps. */
static int attach_fentry_pair(struct tv_top_bpf *b, const char *sym, unsigned int idx)
{
	static const char *const maps[] = { "fn_open", "fn_rows", "fn_zero", "fn_stats" };
	struct bpf_object *obj = bpf_object__open_mem(tv_top_funcs_bpf, tv_top_funcs_bpf_len, NULL);
	struct bpf_map *rodata = obj ? bpf_object__find_map_by_name(obj, ".rodata") : NULL;
	struct bpf_program *prog;
	int err = obj ? 0 : -errno;

	if (!err && tv_array_grow(&b->fentry_objs, &b->cap_fentry, b->nr_fentry,
				  sizeof(*b->fentry_objs), 8))
		err = -ENOMEM;
	if (err) {
		bpf_object__close(obj);
		return err;
	}
	b->fentry_objs[b->nr_fentry++] = obj;	/* closed by tv_top_bpf_close() */
	err = rodata ? bpf_map__set_initial_value(rodata, &idx, sizeof(idx)) : -EINVAL;
	for (size_t i = 0; !err && i < sizeof(maps) / sizeof(maps[0]); i++)
		err = bpf_map__reuse_fd(bpf_object__find_map_by_name(obj, maps[i]),
					bpf_object__find_map_fd_by_name(b->fobj, maps[i]));
	bpf_object__for_each_program(prog, obj) {
		bool fentry = bpf_program__type(prog) == BPF_PROG_TYPE_TRACING;

		if (!err)
			err = bpf_program__set_autoload(prog, fentry);
		if (!err && fentry)
			err = bpf_program__set_attach_target(prog, 0, sym);
	}
	if (!err)
		err = bpf_object__load(obj);
	bpf_object__for_each_program(prog, obj) {
		struct bpf_link *link;

		if (err || bpf_program__type(prog) != BPF_PROG_TYPE_TRACING)
			continue;
		link = bpf_program__attach(prog);
		err = link ? flink_add(b, link) : -errno;
	}
	if (err)
		tv_err("Cannot time function \"%s\" (fentry/fexit through BTF; this kernel has no kprobes): errno=%d (%s)%s",
		       sym, -err, strerror(-err),
		       err == -EPERM ? ": the kernel refuses BPF trampolines here" :
		       err == -ESRCH ? ": not in the kernel's BTF" : "");
	return err;
}

static int attach_function(struct tv_top_bpf *b, const char *spec, unsigned int idx)
{
	const char *name = func_name(spec);

	if (!name) {
		tv_err("Invalid function to time: \"%s\" (SYMBOL or PATH:SYMBOL, a C name of at most %d characters)",
		       spec, FN_NAME_MAX - 1);
		return -EINVAL;
	}
	snprintf(b->fn_names[idx], FN_NAME_MAX, "%s", name);
	if (strchr(spec, ':'))
		return attach_probe_pair(b, spec, idx);
	if (!kernel_has_function(spec)) {
		tv_err("Cannot time kernel function: symbol=\"%s\", errno=%d (no such function in /proc/kallsyms)",
		       spec, ENOENT);
		return -ENOENT;
	}
	/*
	 * kprobes reach any function; trampolines need it in BTF.
	 * TV_BPF_FENTRY=1 takes trampolines where both exist, so that a test
	 * reaches that path on a kernel with kprobes (the lab's).
	 */
	if (access(KPROBE_PMU, R_OK) || (getenv("TV_BPF_FENTRY") && !strcmp(getenv("TV_BPF_FENTRY"), "1")))
		return attach_fentry_pair(b, spec, idx);
	return attach_probe_pair(b, spec, idx);
}

/* The functions' object (maps, k/uprobe programs), then every function attached. */
static int funcs_open(struct tv_top_bpf *b, const char *const *funcs, size_t nr)
{
	struct bpf_program *prog;
	int err = 0;

	if (nr > TOP_FN_MAX) {
		tv_err("Too many functions to time in the kernel: %zu (at most %d)", nr, TOP_FN_MAX);
		return -EINVAL;
	}
	b->fn_names = calloc(nr, sizeof(*b->fn_names));
	b->fobj = b->fn_names ? bpf_object__open_mem(tv_top_funcs_bpf, tv_top_funcs_bpf_len, NULL) : NULL;
	if (!b->fobj)
		return b->fn_names ? -errno : -ENOMEM;
	b->nr_funcs = nr;
	/* fentry/fexit need a target at load time: only in their copies */
	bpf_object__for_each_program(prog, b->fobj)
		if (!err && bpf_program__type(prog) == BPF_PROG_TYPE_TRACING)
			err = bpf_program__set_autoload(prog, false);
	if (!err)
		err = bpf_object__load(b->fobj);
	if (err) {
		tv_err("Cannot load the in-kernel function timing (BPF): errno=%d (%s)", -err,
		       strerror(-err));
		return err;
	}
	b->fn_rows_fd = bpf_object__find_map_fd_by_name(b->fobj, "fn_rows");
	b->fn_stats_fd = bpf_object__find_map_fd_by_name(b->fobj, "fn_stats");
	for (size_t i = 0; !err && i < nr; i++)
		err = attach_function(b, funcs[i], (unsigned int)i);
	return err;
}

int tv_top_bpf_open(const char *filter, const char *const *funcs, size_t nr_funcs,
		    struct tv_top_bpf **out)
{
	struct tv_top_bpf *b = NULL;
	struct top_cfg cfg = { 0 };
	int ret;

	*out = NULL;
	ret = tv_bpf_load();
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->rows_fd = b->stats_fd = b->counters_fd = b->free_ids_fd = -1;
	b->fn_rows_fd = b->fn_stats_fd = -1;
	libbpf_set_print(libbpf_to_debug);
	ret = parse_filter(filter, &cfg);
	if (!ret)
		ret = exit_fields(&cfg, nr_funcs > 0);
	if (ret == -ENOENT && nr_funcs) {
		tv_info("No kvm:kvm_exit event here (kvm module not loaded): timing functions only");
		ret = 0;
	} else if (!ret) {
		ret = exits_load(b, &cfg);
		if (ret)
			tv_err("Cannot load the in-kernel aggregation (BPF): errno=%d (%s)", -ret,
			       strerror(-ret));
	}
	if (!ret && nr_funcs)
		ret = funcs_open(b, funcs, nr_funcs);
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
	bpf_unload(b);
	for (size_t i = 0; i < b->nr_flinks; i++)
		bpf_link__destroy(b->flinks[i]);
	for (size_t i = 0; i < b->nr_fentry; i++)
		bpf_object__close(b->fentry_objs[i]);
	bpf_object__close(b->fobj);
	free(b->flinks);
	free(b->fentry_objs);
	free(b->fn_names);
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

static void row_labels(const struct tv_top_bpf *b, struct tv_exit_stat_row *r,
		       const struct top_key *k, const struct top_val *v)
{
	char name[64] = "", gone[24];

	/* As the recorder's vCPU map names it (so as stat and top's tracefs path do). */
	tv_kvm_vm_name("/proc", (pid_t)k->tgid, name, sizeof(name));
	snprintf(gone, sizeof(gone), "pid%u", k->tgid);
	if (!strcmp(name, gone))	/* the VMM is gone: its thread's name, from the kernel */
		snprintf(name, sizeof(name), "%.*s", (int)sizeof(v->comm), v->comm);
	if (name[0])
		snprintf(r->vm, sizeof(r->vm), "%s[%u]", name, k->tgid);
	else
		snprintf(r->vm, sizeof(r->vm), "pid%u", k->tgid);
	r->guest_pid = -1;
	if (k->isa == TOP_KEY_FUNC) {
		/* per process, as stat's function rows of a thread that is no vCPU */
		snprintf(r->vcpu, sizeof(r->vcpu), "-");
		snprintf(r->reason, sizeof(r->reason), "func:%s",
			 k->reason < b->nr_funcs ? b->fn_names[k->reason] : "?");
		return;
	}
	snprintf(r->vcpu, sizeof(r->vcpu), "%u", k->vcpu);
	tv_kvm_exit_reason_label((enum tv_kvm_isa)k->isa, k->reason, r->reason, sizeof(r->reason));
	r->guest_pid = -1;
}

/* The row of what @cur added since @prev (updated to @cur); 0 if nothing. */
static int row_delta(const struct tv_top_bpf *b, struct tv_exit_stat_row *r,
		     const struct top_key *k, const struct top_val *cur, struct top_val *prev)
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
		uint64_t n = 0;	/* the exits timed: the histogram's sum */

		for (int i = low; i <= top; i++)
			n += h[i];
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
	row_labels(b, r, k, cur);
	return 1;
}

/*
 * The counters of row @key of rows map @fd into @val: through its id
 * into @counters_fd (the exit rows), or the map's own value
 * (@counters_fd < 0: the function rows).  0 or -errno.
 */
static int row_read(int fd, int counters_fd, const struct top_key *key, struct top_val *val)
{
	unsigned int id;

	if (counters_fd < 0)
		return bpf_map_lookup_elem(fd, key, val) ? -errno : 0;
	if (bpf_map_lookup_elem(fd, key, &id) || bpf_map_lookup_elem(counters_fd, &id, val))
		return -errno;
	return 0;
}

/* Append to @out the rows map @fd (@counters_fd: row_read()) gained since the last read. */
static int read_rows(struct tv_top_bpf *b, int fd, int counters_fd, struct tv_exit_stat *out,
		     size_t *cap, struct top_val *val)
{
	struct top_key key, next, *cursor = NULL;

	while (!bpf_map_get_next_key(fd, cursor, &next)) {
		struct prev_row *p;

		key = next;
		cursor = &key;
		if (row_read(fd, counters_fd, &key, val))
			continue;	/* deleted meanwhile: never, rows stay */
		p = prev_find(b, &key);
		if (!p && !(p = prev_add(b, &key)))
			return -ENOMEM;
		if (out->nr_rows == *cap) {
			size_t n = *cap ? *cap * 2 : 32;
			struct tv_exit_stat_row *rows = realloc(out->rows, n * sizeof(*rows));

			if (!rows)
				return -ENOMEM;
			out->rows = rows;
			*cap = n;
		}
		if (row_delta(b, &out->rows[out->nr_rows], &key, val, &p->val))
			out->nr_rows++;
	}
	return 0;
}

static unsigned long long read_lost(int fd)
{
	unsigned long long total = 0, n;

	for (unsigned int s = 0; fd >= 0 && s < TOP_NSTATS; s++)
		if (!bpf_map_lookup_elem(fd, &s, &n))
			total += n;
	return total;
}

int tv_top_bpf_interval(struct tv_top_bpf *b, struct tv_exit_stat *out, uint64_t *lost)
{
	struct top_val *val = malloc(sizeof(*val));
	unsigned long long total;
	size_t cap = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	snprintf(out->mode, sizeof(out->mode), "exits");
	out->have_exit_entry = true;
	if (!val)
		return -ENOMEM;
	/* function keys never equal exit keys (TOP_KEY_FUNC): one prev list */
	if (b->rows_fd >= 0)
		ret = read_rows(b, b->rows_fd, b->counters_fd, out, &cap, val);
	if (!ret && b->fn_rows_fd >= 0)
		ret = read_rows(b, b->fn_rows_fd, -1, out, &cap, val);
	total = read_lost(b->stats_fd) + read_lost(b->fn_stats_fd);
	*lost = total - b->lost_prev;
	b->lost_prev = total;
	free(val);
	if (ret)
		tv_exit_stat_free(out);
	return ret;
}

int tv_top_bpf_rows(struct tv_top_bpf *b, struct top_val *val,
		    int (*fn)(void *ctx, const struct top_key *k, const struct top_val *v), void *ctx)
{
	struct top_key key, next, *cursor = NULL;
	int ret = 0;

	while (!ret && b->rows_fd >= 0 && !bpf_map_get_next_key(b->rows_fd, cursor, &next)) {
		key = next;
		cursor = &key;
		if (!row_read(b->rows_fd, b->counters_fd, &key, val))
			ret = fn(ctx, &key, val);
	}
	return ret;
}

/*
 * The row leaves the hash first, so no program finds its id any more;
 * its counters are zeroed before the id is free again (their key too:
 * no thread's cached id passes for the row now, kvm/bpf/top_exits_prog.h,
 * struct row_cache).  An exit of the gone VMM still open on a thread
 * (none: its threads are gone) would add its latency to the id's next
 * row.
 */
int tv_top_bpf_forget(struct tv_top_bpf *b, const struct top_key *k)
{
	struct top_val *zero = NULL;
	unsigned int id;
	int ret = 0;

	if (bpf_map_lookup_elem(b->rows_fd, k, &id) || bpf_map_delete_elem(b->rows_fd, k))
		return -errno;
	zero = calloc(1, sizeof(*zero));
	if (!zero)
		return -ENOMEM;	/* the id stays taken: one row fewer */
	if (bpf_map_update_elem(b->counters_fd, &id, zero, BPF_ANY) ||
	    bpf_map_update_elem(b->free_ids_fd, NULL, &id, BPF_ANY))
		ret = -errno;
	free(zero);
	return ret;
}

void tv_top_bpf_lost_by_cause(struct tv_top_bpf *b, uint64_t *lost)
{
	for (unsigned int s = 0; s < TOP_NSTATS; s++) {
		unsigned long long n = 0;

		if (b->stats_fd >= 0)
			bpf_map_lookup_elem(b->stats_fd, &s, &n);
		lost[s] = n;
	}
}

unsigned int tv_top_bpf_nr_programs(const struct tv_top_bpf *b)
{
	return (b->links[0] != NULL) + (b->links[1] != NULL) + (unsigned int)b->nr_flinks;
}

int tv_top_bpf_exit_fields(struct top_cfg *cfg)
{
	return exit_fields(cfg, false);
}
