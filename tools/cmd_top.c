// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor top: the live VM exit table (kvm/top.c), refreshed every
 * interval on a terminal, or printed per interval (--batch, --json).
 * Signals are taken through a signalfd, blocked before the recorder's
 * threads exist, so Ctrl-C always ends through tv_top_close(): tracing off,
 * the kept session complete, the tracefs instance removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

#define MAX_VMS 32
#define MAX_EVENTS 64
#define MAX_GUESTS 16

enum { OPT_REPLAY = 1000, OPT_SPEED, OPT_BUFFER, OPT_BPF, OPT_TIME_FUNCTION, OPT_GUEST, OPT_XEN };

struct top_cli {
	struct tv_top_opts opts;
	const char *vms[MAX_VMS];
	const char *events[MAX_EVENTS];
	const char *functions[MAX_EVENTS];
	const char *guest_texts[MAX_GUESTS];
	struct tv_guest_spec guests[MAX_GUESTS];
	size_t nr_guests;
	int batch, json, screen;
	int xen;			/* top --xen, or a replay of a Xen session */
	long count;			/* intervals to show; 0: until stopped */
	double cpu_prev;		/* seconds of CPU used by this process */
};

static void top_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor top [--vm NAME|PID]... [--interval S] [--sort total|count|rate|p99]\n"
		"                      [--filter EXPR] [-e EVENT]... [--time-function F]... [--batch]\n"
		"                      [--json] [--count N] [--guest SPEC]...\n"
		"                      [-o DIR | --bpf] [--replay DIR [--speed X]]\n"
		"       tracevisor top --xen [--vm NAME|DOMID]... [--interval S] [--sort KEY] [--batch]\n"
		"                      [--json] [--count N] [-o DIR]\n\n"
		"A live table of the host's VM exits per VM, vCPU and exit reason: count,\n"
		"rate per second, p50, p99, max and total exit->entry latency, refreshed\n"
		"every interval (the numbers of `tracevisor stat` for that interval).\n"
		"Where kvm_exit/kvm_entry do not fire (PVM), user-space exits, port I/O,\n"
		"MMIO, CPUID and emulated instructions, as stat shows them.\n\n"
		"  --vm NAME|PID      only this VM (a name or glob, or the VMM's pid); repeatable\n"
		"  --interval S       seconds per interval (default 1; live: at least 0.01)\n"
		"  --sort KEY         total (default), count, rate or p99\n"
		"  --filter EXPR      evaluated in the kernel: an ftrace filter on the recorded\n"
		"                     events (e.g. 'exit_reason == 0x7b'); with --bpf, conditions\n"
		"                     on exit_reason, vcpu_id, isa, tgid and latency joined by &&\n"
		"                     (e.g. 'latency > 50us && vcpu_id == 1')\n"
		"  -e, --event EVENT  events to record instead of the exit analysis' own\n"
		"  --time-function F  also time kernel function SYMBOL or user function\n"
		"                     PATH:SYMBOL: rows func:SYMBOL per process (as stat);\n"
		"                     with --bpf timed in the kernel (kprobe/kretprobe, else\n"
		"                     fentry/fexit; uprobe/uretprobe), nothing in tracefs\n"
		"  --batch            print a text table per interval (default when stdout is\n"
		"                     not a terminal)\n"
		"  --json             print one JSON object per interval: t_ns, interval_ns, lost,\n"
		"                     rows [vm, vcpu, reason, count, rate, p50_ns, p99_ns, max_ns,\n"
		"                     total_ns]\n"
		"  --count N          stop after N intervals\n"
		"  -g, --guest SPEC   also record this guest through its tracevisor-agent (SPEC as\n"
		"                     record's: vsock:CID[,pid:QEMU_PID][,name:NAME], NAME...;\n"
		"                     repeatable) and join each exit with the guest task (and IRQ,\n"
		"                     softirq or syscall) running on that vCPU then: rows per\n"
		"                     guest task too, JSON rows gain guest_task, guest_pid and\n"
		"                     guest_context; key g on the screen: per vCPU, the guest tasks\n"
		"                     with the most exit time.  Host and guests record with the\n"
		"                     x86-tsc clock (the exact KVM relation); the intervals end\n"
		"                     2 s before now (the guests' events arrive late)\n"
		"  -o, --output DIR   keep the recording as a session in DIR (`tracevisor stat\n"
		"                     DIR` gives the sum of the intervals)\n"
		"  --bpf              aggregate in the kernel (a BPF program on kvm_exit and\n"
		"                     kvm_entry, and on timed functions): no event crosses\n"
		"                     to user space, p50/p99 within 3.1%%; VMX/SVM hosts (PVM\n"
		"                     fires neither exit event)\n"
		"  --xen              Xen's view, in dom0 as root: Xen's trace buffers, rows per\n"
		"                     domain (NAME[DOMID], the xl name; xen: Xen's idle vCPUs)\n"
		"                     and vCPU, as tracevisor stat gives a Xen session: HVM\n"
		"                     exits by reason with latencies (vmexit:REASON), hypercalls\n"
		"                     by name (hypercall:NAME; vcpu all: the domain's), PV\n"
		"                     entries (pv:), HVM handlers (hvm:) and runstates\n"
		"                     (runstate:STATE, timed when they end; SHARE: the part of\n"
		"                     the interval the vCPU spent in it).  JSON rows gain kind\n"
		"                     (exit, hypercall, pv, hvm, runstate), domid and share;\n"
		"                     intervals gain records (Xen's, as stat counts them).\n"
		"                     The last interval (Ctrl-C, --count) ends Xen's tracing and\n"
		"                     reads the rest: summed, the intervals are stat of -o DIR\n"
		"  --replay DIR       play a recorded session through the same view (a Xen\n"
		"                     session: the --xen view)\n"
		"  --speed X          replay speed (default 1: real time; 0: as fast as it reads)\n"
		"  -b, --buffer-kb KB ring buffer per CPU\n"
		"  -h, --help         this help\n\n"
		"Live needs root (tracefs).  Ctrl-C stops and leaves the kept session complete.\n");
}

static int parse_double(const char *s, double min, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || *out < min) ? -1 : 0;
}

/* Does the recorded session hold Xen's records (a domain of kind xen-trace)? */
static bool replay_is_xen(const char *dir)
{
	struct tv_reader *rd;
	bool xen = false;

	tv_cli_log_mute(true);
	if (tv_reader_open(dir, &rd)) {
		tv_cli_log_mute(false);
		return false;	/* the replay itself says why */
	}
	tv_cli_log_mute(false);
	for (size_t d = 0; d < tv_reader_nr_domains(rd) && !xen; d++) {
		const char *kind = tv_meta_get(tv_reader_domain(rd, d)->meta, "kind");

		xen = kind && !strcmp(kind, "xen-trace");
	}
	tv_reader_close(rd);
	return xen;
}

static int parse_top_args(int argc, char **argv, struct top_cli *cli)
{
	static const struct option longopts[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "interval", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "filter", required_argument, NULL, 'f' },
		{ "event", required_argument, NULL, 'e' },
		{ "batch", no_argument, NULL, 'B' },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		{ "speed", required_argument, NULL, OPT_SPEED },
		{ "buffer-kb", required_argument, NULL, 'b' },
		{ "bpf", no_argument, NULL, OPT_BPF },
		{ "time-function", required_argument, NULL, OPT_TIME_FUNCTION },
		{ "guest", required_argument, NULL, 'g' },
		{ "xen", no_argument, NULL, OPT_XEN },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double d;
	char *end;
	int c;

	cli->opts.speed = 1;
	cli->opts.stop_fd = -1;
	while ((c = getopt_long(argc, argv, "v:i:s:f:e:Bjn:o:b:g:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			if (cli->opts.nr_vms == MAX_VMS)
				goto bad;
			cli->vms[cli->opts.nr_vms++] = optarg;
			break;
		case 'i':
			if (parse_double(optarg, 1e-6, &d))
				goto bad;
			cli->opts.interval_ns = (uint64_t)(d * 1e9);
			break;
		case 's':
			if (tv_top_sort_parse(optarg, &cli->opts.sort))
				return -1;
			break;
		case 'f':
			cli->opts.filter = optarg;
			break;
		case 'e':
			if (cli->opts.nr_events == MAX_EVENTS)
				goto bad;
			cli->events[cli->opts.nr_events++] = optarg;
			break;
		case 'B':
			cli->batch = 1;
			break;
		case 'j':
			cli->json = 1;
			break;
		case 'n':
			cli->count = strtol(optarg, &end, 10);
			if (*end || cli->count <= 0)
				goto bad;
			break;
		case 'o':
			cli->opts.outdir = optarg;
			break;
		case OPT_REPLAY:
			cli->opts.replay_dir = optarg;
			break;
		case OPT_BPF:
			cli->opts.bpf = true;
			break;
		case OPT_XEN:
			cli->xen = 1;
			break;
		case OPT_TIME_FUNCTION:
			if (cli->opts.nr_time_functions == MAX_EVENTS)
				goto bad;
			cli->functions[cli->opts.nr_time_functions++] = optarg;
			break;
		case 'g':
			if (cli->nr_guests == MAX_GUESTS) {
				tv_cli_error("top", "too many --guest options (at most %d)", MAX_GUESTS);
				return -1;
			}
			cli->guest_texts[cli->nr_guests++] = optarg;
			break;
		case OPT_SPEED:
			if (parse_double(optarg, 0, &cli->opts.speed))
				goto bad;
			break;
		case 'b':
			cli->opts.buffer_kb = (unsigned int)strtoul(optarg, &end, 10);
			if (*end || !cli->opts.buffer_kb)
				goto bad;
			break;
		case 'h':
			top_usage(stdout);
			exit(0);
		default:
			top_usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		tv_cli_error("top", "unexpected argument: \"%s\"", argv[optind]);
		return -1;
	}
	if (cli->opts.replay_dir && (cli->opts.outdir || cli->opts.nr_events || cli->opts.filter)) {
		tv_cli_error("top", "--replay reads a recorded session: -o, -e and --filter are for live");
		return -1;
	}
	if (cli->nr_guests && (cli->opts.replay_dir || cli->opts.bpf)) {
		tv_cli_error("top", "--guest joins a live recording: not with --replay or --bpf");
		return -1;
	}
	if (cli->xen && (cli->nr_guests || cli->opts.bpf || cli->opts.nr_events || cli->opts.filter ||
			 cli->opts.nr_time_functions)) {
		tv_cli_error("top", "--xen shows Xen's records: not with --guest, --bpf, -e, --filter or --time-function");
		return -1;
	}
	if (cli->xen && cli->opts.replay_dir && !replay_is_xen(cli->opts.replay_dir)) {
		tv_cli_error("top", "--xen --replay: not a Xen session (no domain of kind xen-trace): dir=\"%s\"",
			     cli->opts.replay_dir);
		return -1;
	}
	/* a Xen session plays through the Xen view */
	if (cli->opts.replay_dir && !cli->xen)
		cli->xen = replay_is_xen(cli->opts.replay_dir);
	if (cli->xen && !cli->opts.replay_dir)
		cli->opts.count = (uint64_t)cli->count;	/* the last interval ends the recording */
	for (size_t i = 0; i < cli->nr_guests; i++) {
		/* before anything is recorded: a wrong SPEC leaves nothing */
		if (tv_guest_spec_parse(cli->guest_texts[i], &cli->guests[i]) ||
		    tv_guest_spec_resolve(&cli->guests[i]))
			return -1;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(cli->guests[j].name, cli->guests[i].name)) {
				tv_cli_error("top", "two guests named '%s': give each a name:NAME",
					     cli->guests[i].name);
				return -1;
			}
	}
	cli->opts.vms = cli->vms;
	cli->opts.events = cli->events;
	cli->opts.time_functions = cli->functions;
	cli->screen = !cli->batch && !cli->json && isatty(STDOUT_FILENO);
	return 0;
bad:
	tv_cli_error("top", "invalid value for an option: \"%s\" (see tracevisor top --help)", optarg);
	return -1;
}

static uint64_t interval_exits(const struct tv_top_interval *iv)
{
	uint64_t n = 0;

	for (size_t i = 0; i < iv->stat.nr_rows; i++)
		n += iv->stat.rows[i].count;
	return n;
}

static void print_json_interval(const struct tv_top_interval *iv, const char *source, int guests)
{
	printf("{\"t_ns\":%llu,\"interval_ns\":%llu,\"lost\":%llu,\"mode\":\"%s\",\"source\":\"%s\",",
	       (unsigned long long)iv->t_ns, (unsigned long long)iv->interval_ns,
	       (unsigned long long)iv->lost, iv->stat.mode, source);
	if (!strcmp(iv->stat.mode, "xen"))	/* the interval's Xen records, as stat counts them */
		printf("\"records\":%llu,", (unsigned long long)iv->stat.events);
	printf("\"rows\":[");
	for (size_t i = 0; i < iv->stat.nr_rows; i++) {
		const struct tv_exit_stat_row *r = &iv->stat.rows[i];

		printf("%s{\"vm\":", i ? "," : "");
		tv_cli_json_str(r->vm);
		printf(",\"vcpu\":");
		tv_cli_json_str(r->vcpu);
		printf(",\"reason\":");
		tv_cli_json_str(r->reason);
		if (guests) {	/* as stat --by guest-task --json */
			printf(",\"guest_task\":");
			tv_cli_json_str(r->guest_task);
			if (r->guest_pid >= 0)
				printf(",\"guest_pid\":%d", r->guest_pid);
			else
				printf(",\"guest_pid\":null");
			printf(",\"guest_context\":");
			tv_cli_json_str(r->guest_context);
		}
		if (r->kind[0]) {	/* top --xen */
			printf(",\"kind\":\"%s\"", r->kind);
			if (r->domid >= 0)
				printf(",\"domid\":%d", r->domid);
			else
				printf(",\"domid\":null");
			if (r->share >= 0)
				printf(",\"share\":%.4f", r->share);
			else
				printf(",\"share\":null");
		}
		printf(",\"count\":%llu,\"rate\":%.1f", (unsigned long long)r->count,
		       tv_top_row_rate(iv, r));
		if (r->has_latency)
			printf(",\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu,\"total_ns\":%llu}",
			       (unsigned long long)r->p50_ns, (unsigned long long)r->p99_ns,
			       (unsigned long long)r->max_ns, (unsigned long long)r->total_ns);
		else
			printf(",\"p50_ns\":null,\"p99_ns\":null,\"max_ns\":null,\"total_ns\":null}");
	}
	printf("]}\n");
}

/* Rows of @kind in the interval, counted (top --xen's header). */
static uint64_t interval_kind(const struct tv_top_interval *iv, const char *kind)
{
	uint64_t n = 0;

	for (size_t i = 0; i < iv->stat.nr_rows; i++)
		if (!strcmp(iv->stat.rows[i].kind, kind) && strcmp(iv->stat.rows[i].vcpu, "all"))
			n += iv->stat.rows[i].count;
	return n;
}

static void print_xen_table(struct top_cli *cli, const struct tv_top_interval *iv, const char *dir)
{
	double secs = (double)iv->interval_ns / 1e9;
	char b[4][24], share[16];

	printf("tracevisor top --xen - %s - %.2fs interval: %llu records, %llu exits, %llu hypercalls, %llu runstate changes, %llu lost, top %.1f%% CPU\n",
	       dir, secs, (unsigned long long)iv->stat.events,
	       (unsigned long long)interval_kind(iv, "exit"), (unsigned long long)interval_kind(iv, "hypercall"),
	       (unsigned long long)interval_kind(iv, "runstate"), (unsigned long long)iv->lost,
	       tv_cli_cpu_percent(&cli->cpu_prev, iv->interval_ns));
	printf("%-24s %-6s %-26s %9s %10s %9s %9s %9s %10s %7s\n", "VM", "VCPU", "REASON", "COUNT",
	       "RATE/s", "P50", "P99", "MAX", "TOTAL", "SHARE");
	for (size_t i = 0; i < iv->stat.nr_rows; i++) {
		const struct tv_exit_stat_row *r = &iv->stat.rows[i];

		snprintf(share, sizeof(share), r->share >= 0 ? "%.1f%%" : "-", 100 * r->share);
		printf("%-24s %-6s %-26s %9llu %10.1f %9s %9s %9s %10s %7s\n", tv_cli_text(r->vm),
		       tv_cli_text(r->vcpu), tv_cli_text(r->reason),
		       (unsigned long long)r->count, tv_top_row_rate(iv, r),
		       r->has_latency ? tv_cli_fmt_ns(r->p50_ns, b[0], 24) : "-",
		       r->has_latency ? tv_cli_fmt_ns(r->p99_ns, b[1], 24) : "-",
		       r->has_latency ? tv_cli_fmt_ns(r->max_ns, b[2], 24) : "-",
		       r->has_latency ? tv_cli_fmt_ns(r->total_ns, b[3], 24) : "-", share);
	}
	if (!iv->stat.nr_rows)
		printf("(no Xen records in this interval)\n");
	printf("\n");
}

static void print_table(struct top_cli *cli, const struct tv_top_interval *iv, const char *dir)
{
	uint64_t exits = interval_exits(iv);
	double secs = (double)iv->interval_ns / 1e9;
	char b[4][24];

	printf("tracevisor top - %s - %.2fs interval: %llu exits, %.0f/s, %llu lost, top %.1f%% CPU%s\n",
	       dir, secs, (unsigned long long)exits, secs > 0 ? (double)exits / secs : 0,
	       (unsigned long long)iv->lost, tv_cli_cpu_percent(&cli->cpu_prev, iv->interval_ns),
	       strcmp(iv->stat.mode, "pvm") ? "" : " (PVM: no kvm_exit; user-space exits, I/O, MMIO, CPUID)");
	printf("%-24s %-6s %-26s %9s %10s %9s %9s %9s %10s%s\n", "VM", "VCPU", "REASON", "COUNT",
	       "RATE/s", "P50", "P99", "MAX", "TOTAL", cli->nr_guests ? "  GUEST TASK" : "");
	for (size_t i = 0; i < iv->stat.nr_rows; i++) {
		const struct tv_exit_stat_row *r = &iv->stat.rows[i];
		char task[96] = "";

		if (cli->nr_guests)
			tv_cli_guest_task(r, task, sizeof(task));

		if (!r->has_latency) {
			printf("%-24s %-6s %-26s %9llu %10.1f %9s %9s %9s %10s%s%s\n", tv_cli_text(r->vm),
			       tv_cli_text(r->vcpu), tv_cli_text(r->reason), (unsigned long long)r->count, tv_top_row_rate(iv, r), "-", "-",
			       "-", "-", *task ? "  " : "", task);
			continue;
		}
		printf("%-24s %-6s %-26s %9llu %10.1f %9s %9s %9s %10s%s%s\n", tv_cli_text(r->vm),
		       tv_cli_text(r->vcpu), tv_cli_text(r->reason),
		       (unsigned long long)r->count, tv_top_row_rate(iv, r),
		       tv_cli_fmt_ns(r->p50_ns, b[0], 24), tv_cli_fmt_ns(r->p99_ns, b[1], 24),
		       tv_cli_fmt_ns(r->max_ns, b[2], 24), tv_cli_fmt_ns(r->total_ns, b[3], 24),
		       *task ? "  " : "", task);
	}
	if (!iv->stat.nr_rows)
		printf("(no VM exits in this interval)\n");
	printf("\n");
}

static int run_top(struct top_cli *cli, struct tv_top *top)
{
	struct tv_top_interval iv;
	long shown = 0;
	int ret;

	while ((ret = tv_top_next(top, &iv)) > 0) {
		if (cli->json)
			print_json_interval(&iv, cli->opts.replay_dir ? "replay" : cli->xen ? "xen" :
					    cli->opts.bpf ? "bpf" : "tracefs", cli->nr_guests > 0);
		else if (cli->xen)
			print_xen_table(cli, &iv, tv_top_session_dir(top));
		else
			print_table(cli, &iv, tv_top_session_dir(top));
		fflush(stdout);
		tv_top_interval_free(&iv);
		if (cli->count && ++shown >= cli->count)
			break;
	}
	return ret < 0 ? ret : 0;
}

int cmd_top(int argc, char **argv)
{
	struct top_cli cli = { 0 };
	struct tv_top *top;
	sigset_t mask;
	int sfd, ret, cret;

	if (parse_top_args(argc, argv, &cli))
		return 2;
	/* Block before the recorder's threads exist, so all of them inherit it. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		tv_cli_error("top", "Cannot create signalfd: errno=%d (%s)", errno, strerror(errno));
		return 1;
	}
	cli.opts.stop_fd = sfd;
	if (cli.xen)
		ret = tv_top_xen_open(&cli.opts, &top);
	else
		ret = tv_top_guest_open(&cli.opts, cli.guests, cli.nr_guests, &top);
	if (ret) {
		close(sfd);
		return tv_cli_status(ret);
	}
	tv_cli_cpu_percent(&cli.cpu_prev, 0);
	if (cli.screen) {
		ret = tv_top_start(top);
		if (!ret)
			ret = tv_cli_top_screen(top, sfd, tv_top_session_dir(top), cli.opts.sort);
		cret = tv_top_stop(top);
		ret = ret ? ret : cret;
	} else {
		ret = run_top(&cli, top);
	}
	cret = tv_top_close(top);
	close(sfd);
	if (!ret && cret)
		ret = cret;
	if (!ret && cli.opts.outdir)
		fprintf(stderr, "tracevisor top: session kept in %s (tracevisor stat %s)\n",
			cli.opts.outdir, cli.opts.outdir);
	return tv_cli_status(ret);
}
