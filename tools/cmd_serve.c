// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor serve: VM exit metrics for Prometheus (host/serve.c).  The
 * daemon runs in the foreground until SIGTERM or SIGINT, taken through a
 * signalfd that the library polls beside its socket.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

#define SERVE_MAX_GUESTS 16	/* as record's --guest */

static void serve_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor serve [--listen ADDR:PORT] [--per-vcpu] [--max-vms N] [--forget SECONDS]\n"
		"                        [--web.config.file FILE] [--flight-recorder SIZE [-o DIR]\n"
		"                        [--max-snapshots N] [--trigger-holdoff DURATION]\n"
		"                        [--guest SPEC]...]\n"
		"       tracevisor serve --xen [--listen ADDR:PORT] [--per-vcpu] [--max-vms N] [--forget SECONDS]\n"
		"                        [--web.config.file FILE] [--flight-recorder SIZE [-o DIR]\n"
		"                        [--max-snapshots N] [--trigger-holdoff DURATION]\n"
		"                        [--guest SPEC]...]\n\n"
		"Aggregate VM exits in the kernel (the BPF programs of top --bpf) and serve\n"
		"them on /metrics in the Prometheus text format (OpenMetrics when the\n"
		"scraper's Accept asks for it): tracevisor_vm_exits_total{vm,reason} and\n"
		"the histogram tracevisor_vm_exit_latency_seconds{vm,reason}, plus the\n"
		"exporter's health.  Runs in the foreground until SIGTERM or SIGINT, then\n"
		"detaches its programs.  Needs root, and kvm_exit/kvm_entry (VMX/SVM hosts).\n\n"
		"  --listen ADDR:PORT  where to listen (default " TV_SERVE_DEFAULT_LISTEN "; [V6]:PORT)\n"
		"  --xen               Xen's dom0: the exits of Xen's trace records (the\n"
		"                      consumer of record --xen and top --xen), vm label the\n"
		"                      domain's xl name (Domain-0 for dom0), uuid its UUID\n"
		"                      (as xl list -v; none for dom0's nil one); a domain gone\n"
		"                      from xenstore keeps its series --forget seconds;\n"
		"                      --flight-recorder: Xen's (as record --xen)\n"
		"  --per-vcpu          a vcpu label on the exit metrics\n"
		"  --max-vms N         VMs with series of their own (default %d); the\n"
		"                      others' exits are counted under vm=\"_other\"\n"
		"  --forget SECONDS    a gone VMM's series stay this long (default %d)\n"
		"  --web.config.file FILE  TLS (tls_server_config, client certificates) and\n"
		"                      authentication (basic_auth_users, bcrypt; bearer_token_file)\n"
		"                      as Prometheus exporters' web config; without valid\n"
		"                      credentials a request gets 401 and nothing else\n"
		"  --flight-recorder SIZE  keep the host's kvm events (--xen: Xen's records)\n"
		"                      of the last SIZE bytes\n"
		"                      (K, M, G) in memory, as record --flight-recorder, and\n"
		"                      take POST /snapshot: Alertmanager's webhook (version 4)\n"
		"                      writes DIR/snapshot-N, alert= and alert_vm= (the\n"
		"                      alertname, the vm labels) in its session.meta\n"
		"  -o, --output DIR    the flight recorder's session (default " TV_SERVE_DEFAULT_OUTDIR ")\n"
		"      --max-snapshots N  at most N snapshots for POST /snapshot (default: 10);\n"
		"                      then 429: their disk stays under N x about SIZE\n"
		"      --trigger-holdoff DURATION  no snapshot this long after the last one\n"
		"                      (default: 10s); a POST meanwhile gets 429\n"
		"  -g, --guest SPEC    with --flight-recorder: this guest's agent records\n"
		"                      too, its ring kept in the guest and taken by each\n"
		"                      snapshot (as record --flight-recorder --guest), and\n"
		"                      its stream's figures served: tracevisor_guest_*{guest}.\n"
		"                      SPEC as record --guest: a libvirt DOMAIN,\n"
		"                      vsock:CID[:PORT], serial:PATH or xen:DOMAIN, then\n"
		"                      [,pid:QEMU_PID][,name:NAME]; repeatable, at most %d\n"
		"  -h, --help          this help\n",
		TV_SERVE_DEFAULT_MAX_VMS, TV_SERVE_DEFAULT_FORGET_S, SERVE_MAX_GUESTS);
}

/* @arg as an unsigned in [1, @max] into *@v: 0, or -1 (said). */
static int parse_count(const char *opt, const char *arg, unsigned long max, unsigned int *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || !n || n > max || arg[0] == '-') {
		tv_cli_error("serve", "invalid %s: \"%s\" (a whole number from 1 to %lu)", opt, arg, max);
		return -1;
	}
	*v = (unsigned int)n;
	return 0;
}

/* --guest SPEC: parsed and resolved before anything starts, names distinct. */
static int add_guest(const char *text, struct tv_guest_spec *specs, struct tv_serve_opts *o)
{
	struct tv_guest_spec *g = &specs[o->nr_guests];

	if (o->nr_guests == SERVE_MAX_GUESTS) {
		tv_cli_error("serve", "too many --guest options (at most %d)", SERVE_MAX_GUESTS);
		return -1;
	}
	if (tv_guest_spec_parse(text, g) || tv_guest_spec_resolve(g))
		return -1;
	for (size_t j = 0; j < o->nr_guests; j++)
		if (!strcmp(specs[j].name, g->name)) {
			tv_cli_error("serve", "two guests named '%s': give each a name:NAME", g->name);
			return -1;
		}
	o->nr_guests++;
	return 0;
}

static int parse_serve_args(int argc, char **argv, struct tv_serve_opts *o, struct tv_guest_spec *specs)
{
	enum { OPT_LISTEN = 256, OPT_PER_VCPU, OPT_MAX_VMS, OPT_FORGET, OPT_WEB_CONFIG, OPT_FLIGHT,
	       OPT_MAX_SNAPSHOTS, OPT_HOLDOFF, OPT_XEN };
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "per-vcpu", no_argument, NULL, OPT_PER_VCPU },
		{ "max-vms", required_argument, NULL, OPT_MAX_VMS },
		{ "forget", required_argument, NULL, OPT_FORGET },
		{ "web.config.file", required_argument, NULL, OPT_WEB_CONFIG },
		{ "flight-recorder", required_argument, NULL, OPT_FLIGHT },
		{ "max-snapshots", required_argument, NULL, OPT_MAX_SNAPSHOTS },
		{ "trigger-holdoff", required_argument, NULL, OPT_HOLDOFF },
		{ "xen", no_argument, NULL, OPT_XEN },
		{ "guest", required_argument, NULL, 'g' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "hg:o:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			o->listen = optarg;
			break;
		case OPT_PER_VCPU:
			o->per_vcpu = true;
			break;
		case OPT_MAX_VMS:
			if (parse_count("--max-vms", optarg, 100000, &o->max_vms))
				return -1;
			break;
		case OPT_FORGET:
			if (parse_count("--forget", optarg, 86400 * 7, &o->forget_s))
				return -1;
			break;
		case OPT_WEB_CONFIG:
			o->web_config = optarg;
			break;
		case OPT_FLIGHT:
			if (tv_cli_parse_flight_size("serve", optarg, &o->flight_bytes))
				return -1;
			break;
		case OPT_MAX_SNAPSHOTS:
			if (parse_count("--max-snapshots", optarg, 100000, &o->max_snapshots))
				return -1;
			break;
		case OPT_HOLDOFF:
			o->trigger_holdoff = optarg;	/* parsed by the library */
			break;
		case OPT_XEN:
			o->xen = true;
			break;
		case 'g':
			if (add_guest(optarg, specs, o))
				return -1;
			o->guests = specs;
			break;
		case 'o':
			o->outdir = optarg;
			break;
		case 'h':
			serve_usage(stdout);
			exit(0);
		default:
			serve_usage(stderr);
			return -1;
		}
	}
	if (o->outdir && !o->flight_bytes) {
		tv_cli_error("serve", "-o DIR is the flight recorder's: give --flight-recorder SIZE");
		return -1;
	}
	if ((o->max_snapshots || o->trigger_holdoff) && !o->flight_bytes) {
		tv_cli_error("serve", "--max-snapshots and --trigger-holdoff bound the flight recorder's snapshots: give --flight-recorder SIZE");
		return -1;
	}
	if (o->nr_guests && !o->flight_bytes) {
		tv_cli_error("serve", "--guest records the guests in the flight recorder: give --flight-recorder SIZE");
		return -1;
	}
	if (optind != argc) {
		tv_cli_error("serve", "unexpected argument: \"%s\"", argv[optind]);
		return -1;
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static struct tv_guest_spec specs[SERVE_MAX_GUESTS];
	struct tv_serve_opts opts = { 0 };
	sigset_t mask;
	int ret;

	if (parse_serve_args(argc, argv, &opts, specs))
		return 2;
	/* a TLS client that goes away mid-answer: OpenSSL's write must fail, not kill us */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	opts.stop_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (opts.stop_fd < 0) {
		tv_cli_error("serve", "Cannot create signalfd: errno=%d (%s)", errno, strerror(errno));
		return 1;
	}
	ret = tv_serve_run(&opts);
	close(opts.stop_fd);
	return tv_cli_status(ret);
}
