// SPDX-License-Identifier: GPL-2.0
/* tracevisor stat: VM exit analysis of a session (kvm/kvm_stat.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void stat_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor stat [--json] [--hist] [--by guest-task] [--domain NAME]... DIR\n\n"
		"Xen sessions (xen/): per domain and vCPU, time in each runstate, HVM exits\n"
		"by reason timed VMEXIT->VMENTRY, and hypercalls and HVM handlers counted;\n"
		"each domid named by its session domain (host, guest:NAME; JSON key domain).\n"
		"Per VM and vCPU: exit counts and exit->entry latency (min, p50, p99, max,\n"
		"total) per exit reason, sorted by total time.  Where kvm_exit/kvm_entry do\n"
		"not fire (PVM KVM), user-space exits, port I/O, MMIO, CPUID and emulated\n"
		"instructions instead.\n"
		"Traced processes (record --ust): per process, each PROVIDER:EVENT counted, and\n"
		"each begin/end pair (NAME_begin/NAME_end, NAME_entry/NAME_exit in one thread)\n"
		"timed as PROVIDER:NAME.\n\n"
		"  --json      a JSON list of rows: vm, vcpu, reason, count, min_ns, p50_ns,\n"
		"              p99_ns, max_ns, total_ns (null when not timed)\n"
		"  --hist      add a log2 histogram of latencies per row\n"
		"  --by guest-task\n"
		"              each exit attributed to what the guest ran on that vCPU then:\n"
		"              its task, pid, and syscall, IRQ or softirq (a host + guest\n"
		"              session, or Xen + domU, synchronised; JSON rows gain guest_task,\n"
		"              guest_pid, guest_context)\n"
		"  --domain NAME  analyse this domain only (repeatable): host, xen, guest:NAME,\n"
		"              ust-PARENT-PID; a domain's traced processes come with it\n"
		"  -h, --help  this help\n");
}

static void print_hist(const struct tv_exit_stat_row *r)
{
	uint64_t max = 0;

	for (int b = 0; b < 64; b++)
		if (r->hist[b] > max)
			max = r->hist[b];
	for (int b = 0; b < 64; b++) {
		char lo[16], hi[16];
		int bar;

		if (!r->hist[b])
			continue;
		bar = (int)(r->hist[b] * 40 / (max ? max : 1));
		tv_cli_fmt_ns(b ? 1ULL << (b - 1) : 0, lo, sizeof(lo));
		tv_cli_fmt_ns(1ULL << b, hi, sizeof(hi));
		printf("      [%8s, %8s) %10llu %.*s\n", lo, hi, (unsigned long long)r->hist[b],
		       bar ? bar : 1, "########################################");
	}
}

static void print_rows(const struct tv_exit_stat *st, int hist);

/* stat --by guest-task: one more column (text) and three keys (JSON). */
static int by_guest;

/* Rows of KVM's events, not only of timed functions (func:NAME)? */
static int has_kvm_rows(const struct tv_exit_stat *st)
{
	for (size_t i = 0; i < st->nr_rows; i++)
		if (strncmp(st->rows[i].reason, "func:", 5))
			return 1;
	return 0;
}

/*
 * What each Xen domid of the session is: dom0 the host, a domU the guest
 * domain recorded with --guest xen:NAME (its meta's xen_domid), the idle
 * vCPUs Xen's.  Read from the session, up to XEN_DOMS domids.
 */
#define XEN_DOMS 64
static struct {
	unsigned int domid;
	char name[64];
} xen_doms[XEN_DOMS];
static size_t nr_xen_doms;

static void xen_doms_load(const char *dir)
{
	struct tv_reader *rd;

	if (tv_reader_open(dir, &rd))
		return;		/* stat itself read it: no second error */
	for (size_t d = 0; d < tv_reader_nr_domains(rd) && nr_xen_doms < XEN_DOMS; d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);
		long long id = tv_meta_get_ll(di->meta, "xen_domid", -1);

		if (id <= 0)
			continue;
		xen_doms[nr_xen_doms].domid = (unsigned int)id;
		snprintf(xen_doms[nr_xen_doms++].name, sizeof(xen_doms[0].name), "%s", di->name);
	}
	tv_reader_close(rd);
}

/* The session domain of a Xen row's vm (d0, d1..., idle, unknown). */
static const char *xen_row_domain(const char *vm)
{
	unsigned int id;
	char end;

	if (!strcmp(vm, "idle"))
		return "xen";
	if (sscanf(vm, "d%u%c", &id, &end) != 1)
		return NULL;
	if (!id)
		return "host";
	for (size_t i = 0; i < nr_xen_doms; i++)
		if (xen_doms[i].domid == id)
			return xen_doms[i].name;
	return NULL;
}

static void print_table(const char *dir, const struct tv_exit_stat *st, int hist)
{
	printf("VM exit analysis of %s: %llu events, %llu lost\n", dir,
	       (unsigned long long)st->events, (unsigned long long)st->lost);
	if (!st->have_exit_entry && has_kvm_rows(st))
		printf("note: kvm_exit/kvm_entry did not fire on this host (PVM KVM, or not recorded);\n"
		       "      showing user-space exits (timed until the vCPU thread is back in KVM),\n"
		       "      port I/O, MMIO, CPUID leaves and emulated instructions instead.\n");
	else if (st->unmatched_exits)
		printf("note: %llu exits had no matching entry (recording edges or lost events)\n",
		       (unsigned long long)st->unmatched_exits);
	print_rows(st, hist);
	if (!st->nr_rows)
		printf("(no KVM activity in this session)\n");
}

/* Xen sessions: runstate times, HVM exits (exit->entry), hypercall counts. */
static void print_xen_table(const char *dir, const struct tv_exit_stat *st, int hist)
{
	printf("Xen analysis of %s: %llu records, %llu lost\n", dir,
	       (unsigned long long)st->events, (unsigned long long)st->lost);
	if (st->unmatched_exits)
		printf("note: %llu VM exits had no matching entry (recording edges or lost records)\n",
		       (unsigned long long)st->unmatched_exits);
	print_rows(st, hist);
	if (!st->nr_rows)
		printf("(no Xen scheduling, exits or hypercalls in this session)\n");
	printf("\nXen domains: d0 = host (dom0), idle = xen (idle vCPUs)");
	for (size_t i = 0; i < nr_xen_doms; i++)
		printf(", d%u = %s", xen_doms[i].domid, tv_cli_text(xen_doms[i].name));
	printf("\n");
}

#define guest_label tv_cli_guest_task

static void print_rows(const struct tv_exit_stat *st, int hist)
{
	char b[5][24], g[80];

	printf("\n%-24s %-6s %-26s %s%10s %9s %9s %9s %9s %10s\n", "VM", "VCPU", "REASON",
	       by_guest ? "GUEST TASK                     " : "", "COUNT", "MIN", "P50", "P99", "MAX",
	       "TOTAL");
	for (size_t i = 0; i < st->nr_rows; i++) {
		const struct tv_exit_stat_row *r = &st->rows[i];

		printf("%-24s %-6s %-26s ", tv_cli_text(r->vm), tv_cli_text(r->vcpu), tv_cli_text(r->reason));
		if (by_guest)
			printf("%-30s ", guest_label(r, g, sizeof(g)));
		if (!r->has_latency) {
			printf("%10llu %9s %9s %9s %9s %10s\n", (unsigned long long)r->count, "-", "-",
			       "-", "-", "-");
			continue;
		}
		printf("%10llu %9s %9s %9s %9s %10s\n", (unsigned long long)r->count,
		       tv_cli_fmt_ns(r->min_ns, b[0], 24), tv_cli_fmt_ns(r->p50_ns, b[1], 24),
		       tv_cli_fmt_ns(r->p99_ns, b[2], 24), tv_cli_fmt_ns(r->max_ns, b[3], 24),
		       tv_cli_fmt_ns(r->total_ns, b[4], 24));
		if (hist)
			print_hist(r);
	}
}

static void print_json_rows(const struct tv_exit_stat *st, int hist, int *first)
{
	for (size_t i = 0; i < st->nr_rows; i++) {
		const struct tv_exit_stat_row *r = &st->rows[i];

		printf("%s\n{\"vm\":", *first ? "" : ",");
		*first = 0;
		tv_cli_json_str(r->vm);
		printf(",\"vcpu\":");
		tv_cli_json_str(r->vcpu);
		printf(",\"reason\":");
		tv_cli_json_str(r->reason);
		printf(",\"count\":%llu", (unsigned long long)r->count);
		if (r->has_latency)
			printf(",\"min_ns\":%llu,\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu,\"total_ns\":%llu",
			       (unsigned long long)r->min_ns, (unsigned long long)r->p50_ns,
			       (unsigned long long)r->p99_ns, (unsigned long long)r->max_ns,
			       (unsigned long long)r->total_ns);
		else
			printf(",\"min_ns\":null,\"p50_ns\":null,\"p99_ns\":null,\"max_ns\":null,\"total_ns\":null");
		printf(",\"mode\":\"%s\"", st->mode);
		if (!strcmp(st->mode, "xen")) {
			const char *dom = xen_row_domain(r->vm);

			printf(",\"domain\":");
			if (dom)
				tv_cli_json_str(dom);
			else
				printf("null");
		}
		if (by_guest) {
			printf(",\"guest_task\":");
			tv_cli_json_str(r->guest_task);
			printf(",\"guest_pid\":");
			if (r->guest_pid >= 0)
				printf("%d", r->guest_pid);
			else
				printf("null");
			printf(",\"guest_context\":");
			tv_cli_json_str(r->guest_context);
		}
		if (hist && r->has_latency) {
			printf(",\"hist_log2\":[");
			for (int b = 0; b < 64; b++)
				printf("%s%llu", b ? "," : "", (unsigned long long)r->hist[b]);
			printf("]");
		}
		printf("}");
	}
}

static void print_json(const struct tv_exit_stat *kvm, const struct tv_exit_stat *xen,
		       const struct tv_exit_stat *ust, int hist)
{
	int first = 1;

	printf("[");
	print_json_rows(kvm, hist, &first);
	if (xen)
		print_json_rows(xen, hist, &first);
	if (ust)
		print_json_rows(ust, hist, &first);
	printf("\n]\n");
}

/* The traced processes' events: counts, and latencies of begin/end pairs. */
static void print_ust_table(const char *dir, const struct tv_exit_stat *st, int hist)
{
	char b[5][24];

	printf("\nApplication events of %s: %llu events, %llu lost\n", dir,
	       (unsigned long long)st->events, (unsigned long long)st->lost);
	if (st->unmatched_exits)
		printf("note: %llu end events had no open begin (recording edges or lost events)\n",
		       (unsigned long long)st->unmatched_exits);
	printf("\n%-24s %-8s %-34s %10s %9s %9s %9s %9s %10s\n", "DOMAIN", "PID", "EVENT", "COUNT",
	       "MIN", "P50", "P99", "MAX", "TOTAL");
	for (size_t i = 0; i < st->nr_rows; i++) {
		const struct tv_exit_stat_row *r = &st->rows[i];

		printf("%-24s %-8s %-34s %10llu ", tv_cli_text(r->vm), tv_cli_text(r->vcpu),
		       tv_cli_text(r->reason),
		       (unsigned long long)r->count);
		if (!r->has_latency) {
			printf("%9s %9s %9s %9s %10s\n", "-", "-", "-", "-", "-");
			continue;
		}
		printf("%9s %9s %9s %9s %10s\n", tv_cli_fmt_ns(r->min_ns, b[0], 24),
		       tv_cli_fmt_ns(r->p50_ns, b[1], 24), tv_cli_fmt_ns(r->p99_ns, b[2], 24),
		       tv_cli_fmt_ns(r->max_ns, b[3], 24), tv_cli_fmt_ns(r->total_ns, b[4], 24));
		if (hist)
			print_hist(r);
	}
}

int cmd_stat(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "hist", no_argument, NULL, 'H' },
		{ "by", required_argument, NULL, 'B' },
		{ "domain", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tv_stat_opts opts = { 0 };
	struct tv_exit_stat st, xst, ust;
	int json = 0, hist = 0, c, ret, xret, uret;
	bool have_xen;

	while ((c = getopt_long(argc, argv, "jHh", longopts, NULL)) != -1) {
		if (c == 'j') {
			json = 1;
		} else if (c == 'H') {
			hist = 1;
		} else if (c == 'D') {
			if (tv_reader_select_domain(optarg))
				return tv_cli_status(-EINVAL);
		} else if (c == 'B') {
			if (strcmp(optarg, "guest-task")) {
				tv_cli_error("stat", "unknown --by: \"%s\" (guest-task)", optarg);
				return 2;
			}
			opts.by_guest_task = true;
			by_guest = 1;
		} else if (c == 'h') {
			stat_usage(stdout);
			return 0;
		} else {
			stat_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		stat_usage(stderr);
		return 2;
	}
	ret = tv_stat_compute_opts(argv[optind], &opts, &st, &xst, &have_xen);
	if (ret)
		return tv_cli_status(ret);
	/* A session with a Xen domain gets the Xen analysis as well. */
	xret = have_xen ? 0 : -ENOENT;
	if (have_xen)
		xen_doms_load(argv[optind]);
	/* and one with traced processes (record --ust) theirs */
	uret = tv_ust_stat_compute(argv[optind], &ust);
	if (uret && uret != -ENOENT) {
		tv_exit_stat_free(&st);
		tv_exit_stat_free(&xst);
		return tv_cli_status(uret);
	}
	if (json)
		print_json(&st, xret ? NULL : &xst, uret ? NULL : &ust, hist);
	else if (xret && (uret || st.nr_rows))
		print_table(argv[optind], &st, hist);
	if (!json && !xret) {
		if (st.nr_rows)
			print_table(argv[optind], &st, hist);
		print_xen_table(argv[optind], &xst, hist);
	}
	if (!json && !uret)
		print_ust_table(argv[optind], &ust, hist);
	tv_exit_stat_free(&st);
	tv_exit_stat_free(&xst);
	tv_exit_stat_free(&ust);
	return 0;
}
