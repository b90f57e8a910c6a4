// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor record: drive the recorder until COMMAND exits, the duration
 * ends, or SIGINT/SIGTERM/SIGHUP.  Signals are taken through a signalfd so
 * that stopping always runs the same path: tracing off, every CPU drained,
 * metadata written, tracefs instance removed.  The signalfd is watched
 * through every wait, the library's for the guests included (opts.cancel):
 * the first signal stops (within 10 s whatever the guests do), a second
 * one cuts the guests' end short.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

#define MAX_EVENTS TV_SESSION_MAX_EVENTS
#define MAX_GUESTS 16

/* Exit statuses besides 0, 1 (error) and COMMAND's (doc/man/tracevisor-record.1). */
#define EXIT_USAGE 2		/* invalid command line */
#define EXIT_INCOMPLETE 3	/* recorded, but a guest's stream is not complete */

/* Long-only options (no short letter). */
enum {
	OPT_GUEST_EVENTS = 1000,
	OPT_GUEST_BUFFER,
	OPT_GUEST_LIMIT,
	OPT_SYNC_INTERVAL,
	OPT_COMPRESS,
	OPT_TIME_FUNCTION,
	OPT_UST,
	OPT_UST_SOCKET,
	OPT_FLIGHT,
	OPT_UST_MODE,
	OPT_UST_BUFFER,
	OPT_TRIGGER,
	OPT_POST,
	OPT_HOLDOFF,
	OPT_MAX_SNAPSHOTS,
};

#define MAX_TRIGGERS 16

struct record_cli {
	struct tv_session_record_opts so;	/* host opts in so.host */
	const char *events[MAX_EVENTS];
	const char *filters[MAX_EVENTS];	/* -f after events[i] */
	const char *functions[MAX_EVENTS];	/* --time-function */
	double duration;
	char **command;
	int quiet;
	int compress;			/* --compress: cpuN.raw -> .zst once recorded */
	const char *guest_specs[MAX_GUESTS];
	size_t nr_guests;
	char *guest_events;		/* every --guest-events, joined with ',' */
	size_t guest_items;		/* items in guest_events */
	size_t last_guest_first, last_guest_n;	/* the last --guest-events' items */
	int last_was_guest;		/* the last event option was --guest-events */
	int guest_refused;		/* an agent refused what it was asked: said even with -q */
	int sfd;			/* the signalfd (SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1) */
	double deadline;		/* --duration: CLOCK_MONOTONIC seconds, 0: none */
	int why_signal;			/* the signal that stopped the recording, 0: none */
	int second_signal;		/* the one that cut the stop short, 0: none */
	int stopping;			/* in tv_session_record_stop(): a signal cuts it short */
	int signal_err;			/* reading the signalfd failed: -errno (said) */
	const char *guest_filters[TV_GUEST_MAX_FILTERED_ITEMS];
	struct tv_guest_spec specs[MAX_GUESTS];
	const char *ust_patterns[MAX_EVENTS];
	char flight_file[4200];		/* DIR/flight-recorder: pid and snapshots, for `tracevisor snapshot` */
	char flight_link[64];		/* /run/tracevisor/flight-PID -> DIR */
	unsigned int snapshots, snapshot_errors;
	uint64_t flight_bytes;		/* --flight-recorder SIZE, 0: none */
	const char *triggers[MAX_TRIGGERS];
};

static void record_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor record [-o DIR] [-e EVENT]... [-f FILTER] [-b KB_PER_CPU]\n"
		"                         [--clock CLOCK] [--duration SECONDS] [-q] [--compress]\n"
		"                         [--guest SPEC]... [--guest-events LIST [-f FILTER]]...\n"
		"                         [--guest-buffer KB] [--guest-limit MB] [--sync-interval SECONDS]\n"
		"                         [--ust [PATTERN]...] [--ust-socket PATH]\n"
		"                         [--ust-mode MODE] [--ust-buffer SIZE[xN]]\n"
		"                         [--flight-recorder SIZE [--trigger RULE]... [--post DURATION]\n"
		"                          [--trigger-holdoff DURATION] [--max-snapshots N]]\n"
		"                         [-- COMMAND [ARGS]]\n\n"
		"Records host kernel events (default: every kvm event) into the session\n"
		"directory DIR, until COMMAND exits, SECONDS pass, or Ctrl-C; with --guest,\n"
		"also each guest's kernel events through its tracevisor-agent, into DIR/guest-NAME.\n\n"
		"  -o, --output DIR        session directory to create (default: tracevisor-session)\n"
		"  -e, --event EVENT       SYSTEM, SYSTEM:EVENT or a glob (repeatable; default: kvm),\n"
		"                          or a dynamic probe, recorded as probes:NAME:\n"
		"                            kprobe:NAME=SYMBOL[+OFFS] [FETCHARGS]\n"
		"                            kretprobe:NAME=SYMBOL [$retval]\n"
		"                            uprobe:NAME=PATH:SYMBOL|OFFSET [FETCHARGS]\n"
		"                            uretprobe:NAME=PATH:SYMBOL|OFFSET [FETCHARGS]\n"
		"  -f, --filter FILTER     ftrace filter evaluated in the kernel, e.g. 'vcpu_id==0',\n"
		"                          for the -e or --guest-events it follows (before any:\n"
		"                          for every host event)\n"
		"      --time-function F   time kernel function SYMBOL or user function PATH:SYMBOL\n"
		"                          (entry and return probes; stat gives its latency rows)\n"
		"  -b, --buffer KB         ring buffer per CPU in KB (default: %d)\n"
		"      --clock CLOCK       trace clock: local, global, mono, boot, x86-tsc... (default: local)\n"
		"      --duration SECONDS  stop SECONDS after the start (the wait for the guests included)\n"
		"  -q, --quiet             no progress or summary\n"
		"      --compress          compress the stream files (zstd) once recorded, as\n"
		"                          `tracevisor compress DIR` does\n"
		"      --xen               (in a Xen dom0) record the hypervisor's trace buffers into\n"
		"                          DIR/xen/; without -e only Xen is recorded, with -e dom0's\n"
		"                          kernel events too (DIR/host/), with dom0/Xen clock-sync\n"
		"                          probes every --sync-interval for `tracevisor sync`\n"
		"      --xen-events CLASSES  gen,sched,dom0op,hvm,mem,pv,shadow,hw,guest, all or a\n"
		"                          hex mask (default: all, as xentrace)\n"
		"      --xen-cpus LIST     physical CPUs to trace, e.g. 0-3,6 (default: all)\n"
		"      --xen-pages N       buffer pages per CPU if Xen has none yet (default: %d)\n"
		"      --ust [PATTERN]...  user-space events of the host's processes traced with\n"
		"                          libtracevisor-ust: enable the globs on PROVIDER:EVENT\n"
		"                          (default *) in every process that registers, into\n"
		"                          DIR/ust-host-PID/ (the clock defaults to mono; local\n"
		"                          and global cannot be read from user space)\n"
		"      --ust-socket PATH   registration socket (default $TRACEVISOR_UST_SOCK or\n"
		"                          /run/tracevisor/ust.sock)\n"
		"      --ust-mode MODE     with --ust: what a traced process does when its buffer\n"
		"                          is full: discard (the default; counted as lost),\n"
		"                          blocking (waits for the recorder) or overwrite; asked\n"
		"                          of the host's processes and the guests' (their agents)\n"
		"      --ust-buffer SIZE[xN]  with --ust: N sub-buffers (a power of two, 2..4096;\n"
		"                          default 8) of SIZE bytes (a power of two, 4K..1M; K, M\n"
		"                          suffixes; default 64K) per CPU of each traced process.\n"
		"                          A process's own TRACEVISOR_UST_MODE, _SUBBUF_SIZE and\n"
		"                          _NR_SUBBUFS override both; the summary says each process's policy\n"
		"      --flight-recorder SIZE  keep only the last SIZE bytes (K, M, G suffixes), in\n"
		"                          memory, of the host kernel's events (SIZE split over\n"
		"                          the CPUs, shown at the start), with --xen of Xen's\n"
		"                          records (SIZE split over the pCPUs, in dom0), with\n"
		"                          --guest of each guest's (kept by its agent, SIZE per\n"
		"                          guest) and, with\n"
		"                          --ust, of each traced process; SIGUSR1 or `tracevisor snapshot DIR`\n"
		"                          writes them to DIR/snapshot-N/ while the recording\n"
		"                          goes on, and the end into DIR\n"
		"      --trigger RULE      (repeatable) a snapshot when RULE fires:\n"
		"                            event=SYSTEM:EVENT[,filter=FILTER]  a host event\n"
		"                            guest=NAME:SYSTEM:EVENT[,filter=FILTER]  an event of\n"
		"                            guest NAME, seen by its agent\n"
		"                            exit-latency>DURATION[,vm=NAME][,reason=REASON]  a VM\n"
		"                            exit open longer than DURATION (seen in the kernel, by\n"
		"                            BPF, while open; with --xen, on Xen's records as\n"
		"                            dom0 drains them; hlt exits only with reason=hlt)\n"
		"      --post DURATION     keep recording this long after the trigger (an exit's:\n"
		"                          after its end) before the snapshot (default: 100ms)\n"
		"      --trigger-holdoff DURATION  no trigger counts this long after a snapshot\n"
		"                          (default: 10s)\n"
		"      --max-snapshots N   at most N triggered snapshots (default: 10)\n"
		"  -h, --help              this help\n\n"
		"Guests (doc/agent-protocol.md):\n"
		"  -g, --guest SPEC        record this guest too (repeatable, at most %d). SPEC is\n"
		"                          NAME                  a libvirt domain on qemu:///system%s\n"
		"                          vsock:CID[:PORT][,pid:QEMU_PID][,name:NAME]\n"
		"                          serial:PATH[,pid:QEMU_PID][,name:NAME]\n"
		"                          xen:DOMAIN[,name:NAME]  a Xen domU (with --xen, in dom0):\n"
		"                          its domid, vCPUs and agent channel from xenstore; without\n"
		"                          -e, dom0's events are sched_switch and sched_wakeup\n"
		"                          PORT defaults to %d; PATH is the host end (unix socket\n"
		"                          or pty) of the guest's virtio-serial port %s;\n"
		"                          QEMU_PID labels its vCPU threads NAME in host/vcpus;\n"
		"                          NAME ([A-Za-z0-9_.-], default cidN or serial) names guest-NAME/.\n"
		"                          kvm:kvm_hypercall and kvm:kvm_write_tsc_offset are added to\n"
		"                          the host events (sync probes) when -e does not cover them.\n"
		"      --guest-events LIST guest events, comma-separated SYSTEM or SYSTEM:EVENT or\n"
		"                          dynamic probes as for -e (repeatable: the lists add up;\n"
		"                          a -f after one filters each of its events in the guest;\n"
		"                          default: sched_switch, sched_wakeup, irq handlers,\n"
		"                          softirqs, raw_syscalls enter/exit; for xen: guests\n"
		"                          sched_switch and sched_wakeup only, as their PV console\n"
		"                          carries tens of KB/s)\n"
		"      --guest-buffer KB   guest ring buffer per CPU (default: 2048)\n"
		"      --guest-limit MB    most data accepted per guest (default: %d)\n"
		"      --sync-interval S   seconds between clock-sync probe rounds (default: 1)\n\n"
		"Stopping takes 10 s at most (each guest's END awaited 7 s); a second Ctrl-C\n"
		"stops at once, the session kept.  Exit status: 0 recorded, every guest\n"
		"complete; 1 error; 2 invalid command line; COMMAND's when it fails on its own\n"
		"(128+N: killed by signal N); 128+N when a signal N cut the stop short;\n"
		"3 recorded, but a guest's stream incomplete (truncated, failed or rejected:\n"
		"named on stderr).\n",
		TV_RECORD_DEFAULT_BUFFER_KB, TV_XEN_DEFAULT_PAGES, MAX_GUESTS,
#ifdef TV_HAVE_LIBVIRT
		"",
#else
		" (not in this build)",
#endif
		7476, "org.tracevisor.0", TV_GUEST_DEFAULT_LIMIT_MB);
}

/* --guest-events LIST: one more list, joined to those before it. */
static int guest_events_add(struct record_cli *cli, const char *list)
{
	size_t old = cli->guest_events ? strlen(cli->guest_events) : 0;
	char *joined = realloc(cli->guest_events, old + 1 + strlen(list) + 1);

	if (!joined) {
		tv_cli_error("record", "out of memory");
		return -1;
	}
	sprintf(joined + old, "%s%s", old ? "," : "", list);
	cli->guest_events = joined;
	cli->last_guest_first = cli->guest_items;
	cli->last_guest_n = 1;
	for (const char *p = list; *p; p++)
		cli->last_guest_n += *p == ',';
	cli->guest_items += cli->last_guest_n;
	cli->last_was_guest = 1;
	return 0;
}

/* -f after --guest-events: the filter of each item of that list. */
static int guest_filter_set(struct record_cli *cli, const char *filter)
{
	size_t end = cli->last_guest_first + cli->last_guest_n;

	if (end > TV_GUEST_MAX_FILTERED_ITEMS) {
		tv_cli_error("record", "-f '%s': guest event lists with filters have at most %d items in all",
			     filter, TV_GUEST_MAX_FILTERED_ITEMS);
		return -1;
	}
	for (size_t i = cli->last_guest_first; i < end; i++)
		cli->guest_filters[i] = filter;
	if (end > cli->so.guest_opts.nr_event_filters)
		cli->so.guest_opts.nr_event_filters = end;
	cli->so.guest_opts.event_filters = cli->guest_filters;
	return 0;
}

static int add_ust_pattern(struct record_cli *cli, const char *pattern)
{
	if (cli->so.nr_ust_patterns == MAX_EVENTS || !*pattern ||
	    strlen(pattern) >= 224 /* TV_UST_MSG_ARG_MAX */) {
		tv_cli_error("record", "invalid --ust pattern: '%s' (at most %d, each 1..223 bytes)",
			     pattern, MAX_EVENTS);
		return -1;
	}
	cli->ust_patterns[cli->so.nr_ust_patterns++] = pattern;
	cli->so.ust_patterns = cli->ust_patterns;
	return 0;
}

/* SIZE: bytes with an optional K, M or G (powers of 1024), 64K..64G. */
/* A number of bytes with an optional K, M or G suffix at the start of @arg; *@end after it. */
static int parse_bytes(const char *arg, unsigned long long *v, char **end)
{
	int shift = 0;

	errno = 0;
	*v = strtoull(arg, end, 10);
	if (errno || *end == arg)
		return -1;
	if (**end == 'K' || **end == 'k')
		shift = 10;
	else if (**end == 'M' || **end == 'm')
		shift = 20;
	else if (**end == 'G' || **end == 'g')
		shift = 30;
	if (*v > (~0ull >> shift))
		return -1;	/* would overflow */
	*v <<= shift;
	*end += shift > 0;
	return 0;
}

int tv_cli_parse_flight_size(const char *cmd, const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (parse_bytes(arg, &v, &end) || *end || v < (64ull << 10) || v > (64ull << 30)) {
		tv_cli_error(cmd, "invalid --flight-recorder size: '%s' (bytes with K, M or G, 64K..64G)", arg);
		return -1;
	}
	*out = v;
	return 0;
}

/* --ust-buffer SIZE[xN]: the syntax; the library checks the values (powers of two, ranges). */
static int parse_ust_buffer(const char *arg, uint32_t *subbuf_size, uint32_t *nr_subbufs)
{
	char *end;
	unsigned long long v, n = 0;

	if (parse_bytes(arg, &v, &end))
		return -1;
	if (*end == 'x' || *end == 'X') {
		const char *num = end + 1;

		n = strtoull(num, &end, 10);
		if (errno || end == num || !n)
			return -1;
	}
	if (*end || !v || v > UINT32_MAX || n > UINT32_MAX)
		return -1;
	*subbuf_size = (uint32_t)v;
	*nr_subbufs = (uint32_t)n;
	return 0;
}

static int parse_record_args(int argc, char **argv, struct record_cli *cli)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "filter", required_argument, NULL, 'f' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "clock", required_argument, NULL, 'C' },
		{ "duration", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "guest", required_argument, NULL, 'g' },
		{ "guest-events", required_argument, NULL, OPT_GUEST_EVENTS },
		{ "guest-buffer", required_argument, NULL, OPT_GUEST_BUFFER },
		{ "guest-limit", required_argument, NULL, OPT_GUEST_LIMIT },
		{ "sync-interval", required_argument, NULL, OPT_SYNC_INTERVAL },
		{ "compress", no_argument, NULL, OPT_COMPRESS },
		{ "time-function", required_argument, NULL, OPT_TIME_FUNCTION },
		{ "ust", optional_argument, NULL, OPT_UST },
		{ "ust-socket", required_argument, NULL, OPT_UST_SOCKET },
		{ "flight-recorder", required_argument, NULL, OPT_FLIGHT },
		{ "ust-mode", required_argument, NULL, OPT_UST_MODE },
		{ "ust-buffer", required_argument, NULL, OPT_UST_BUFFER },
		{ "trigger", required_argument, NULL, OPT_TRIGGER },
		{ "post", required_argument, NULL, OPT_POST },
		{ "trigger-holdoff", required_argument, NULL, OPT_HOLDOFF },
		{ "max-snapshots", required_argument, NULL, OPT_MAX_SNAPSHOTS },
		{ "xen", no_argument, NULL, 'X' },
		{ "xen-events", required_argument, NULL, 'E' },
		{ "xen-cpus", required_argument, NULL, 'P' },
		{ "xen-pages", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	cli->so.host.outdir = "tracevisor-session";
	while ((c = getopt_long(argc, argv, "+o:e:f:b:qhg:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			cli->so.host.outdir = optarg;
			break;
		case 'e':
			if (cli->so.host.nr_events == MAX_EVENTS) {
				tv_cli_error("record", "too many -e options (at most %d)", MAX_EVENTS);
				return -1;
			}
			cli->events[cli->so.host.nr_events++] = optarg;
			cli->last_was_guest = 0;
			break;
		case 'f':
			/* trace-cmd's rule: a filter belongs to the -e before it */
			if (cli->last_was_guest) {
				if (guest_filter_set(cli, optarg))
					return -1;
			} else if (cli->so.host.nr_events)
				cli->filters[cli->so.host.nr_events - 1] = optarg;
			else
				cli->so.host.filter = optarg;
			break;
		case OPT_TIME_FUNCTION:
			if (cli->so.host.nr_time_functions == MAX_EVENTS) {
				tv_cli_error("record", "too many --time-function options (at most %d)", MAX_EVENTS);
				return -1;
			}
			cli->functions[cli->so.host.nr_time_functions++] = optarg;
			break;
		case 'b': {
			unsigned long kb = strtoul(optarg, &end, 10);

			if (*end || kb < 4 || kb > 64UL * 1024 * 1024) {
				tv_cli_error("record", "invalid buffer size: '%s' (KB per CPU, 4 or more)", optarg);
				return -1;
			}
			cli->so.host.buffer_kb = (unsigned int)kb;
			break;
		}
		case 'C':
			cli->so.host.clock = optarg;
			break;
		case 'd':
			cli->duration = strtod(optarg, &end);
			if (*end || cli->duration <= 0) {
				tv_cli_error("record", "invalid duration: '%s' (seconds, > 0)", optarg);
				return -1;
			}
			break;
		case 'q':
			cli->quiet = 1;
			break;
		case 'g':
			if (cli->nr_guests == MAX_GUESTS) {
				tv_cli_error("record", "too many --guest options (at most %d)", MAX_GUESTS);
				return -1;
			}
			cli->guest_specs[cli->nr_guests++] = optarg;
			break;
		case OPT_GUEST_EVENTS:
			if (guest_events_add(cli, optarg))
				return -1;
			break;
		case OPT_GUEST_BUFFER: {
			unsigned long kb = strtoul(optarg, &end, 10);

			if (*end || kb < 4 || kb > 1024UL * 1024) {
				tv_cli_error("record", "invalid guest buffer size: '%s' (KB per CPU, 4 or more)", optarg);
				return -1;
			}
			cli->so.guest_opts.buffer_kb = (unsigned int)kb;
			break;
		}
		case OPT_GUEST_LIMIT: {
			unsigned long mb = strtoul(optarg, &end, 10);

			if (*end || mb < 1 || mb > 1024UL * 1024) {
				tv_cli_error("record", "invalid guest limit: '%s' (MB, 1 or more)", optarg);
				return -1;
			}
			cli->so.guest_opts.max_bytes = (uint64_t)mb << 20;
			break;
		}
		case OPT_SYNC_INTERVAL:
			cli->so.guest_opts.sync_interval = strtod(optarg, &end);
			if (*end || cli->so.guest_opts.sync_interval < 0.01) {
				tv_cli_error("record", "invalid sync interval: '%s' (seconds, 0.01 or more)", optarg);
				return -1;
			}
			break;
		case OPT_COMPRESS:
			cli->compress = 1;
			break;
		case OPT_UST:
			/* --ust PAT PAT... : the words up to the next option are patterns */
			cli->so.ust = true;
			if (optarg && add_ust_pattern(cli, optarg))
				return -1;
			while (optind < argc && argv[optind][0] != '-')
				if (add_ust_pattern(cli, argv[optind++]))
					return -1;
			break;
		case OPT_FLIGHT:
			if (tv_cli_parse_flight_size("record", optarg, &cli->flight_bytes))
				return -1;
			break;
		case OPT_TRIGGER:
			if (cli->so.nr_triggers == MAX_TRIGGERS) {
				tv_cli_error("record", "too many --trigger options (at most %d)", MAX_TRIGGERS);
				return -1;
			}
			cli->triggers[cli->so.nr_triggers++] = optarg;
			cli->so.triggers = cli->triggers;
			break;
		case OPT_POST:
			cli->so.trigger_post = optarg;
			break;
		case OPT_HOLDOFF:
			cli->so.trigger_holdoff = optarg;
			break;
		case OPT_MAX_SNAPSHOTS: {
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !*optarg || n < 1 || n > 100000) {
				tv_cli_error("record", "invalid --max-snapshots: '%s' (1..100000)", optarg);
				return -1;
			}
			cli->so.max_snapshots = (unsigned int)n;
			break;
		}
		case OPT_UST_SOCKET:
			cli->so.ust_socket = optarg;
			break;
		case OPT_UST_MODE:
			cli->so.ust_mode = optarg;	/* checked by the library, before anything starts */
			break;
		case OPT_UST_BUFFER:
			if (parse_ust_buffer(optarg, &cli->so.ust_subbuf_size, &cli->so.ust_nr_subbufs)) {
				tv_cli_error("record", "invalid --ust-buffer: '%s' (SIZE[xN]: SIZE bytes with K or M, N sub-buffers, e.g. 256Kx16)",
					     optarg);
				return -1;
			}
			break;
		case 'X':
			cli->so.xen = true;
			break;
		case 'E':
			cli->so.xen_opts.evt_mask = tv_xen_parse_events(optarg);
			if (!cli->so.xen_opts.evt_mask) {
				tv_cli_error("record", "invalid --xen-events: '%s'", optarg);
				return -1;
			}
			break;
		case 'P':
			if (!tv_xen_cpu_in_list(optarg, (int)strtol(optarg, NULL, 10))) {
				tv_cli_error("record", "invalid --xen-cpus: '%s' (e.g. 0-3,6)", optarg);
				return -1;
			}
			cli->so.xen_opts.cpus = optarg;
			break;
		case 'G': {
			unsigned long pages = strtoul(optarg, &end, 10);

			if (*end || pages < 1 || pages > 65535) {
				tv_cli_error("record", "invalid --xen-pages: '%s'", optarg);
				return -1;
			}
			cli->so.xen_opts.pages = (unsigned int)pages;
			break;
		}
		case 'h':
			record_usage(stdout);
			exit(0);
		default:
			record_usage(stderr);
			return -1;
		}
	}
	cli->so.host.events = cli->events;
	cli->so.host.event_filters = cli->filters;
	cli->so.guest_opts.events = cli->guest_events;
	cli->so.host.time_functions = cli->functions;
	if ((cli->so.xen_opts.evt_mask || cli->so.xen_opts.cpus || cli->so.xen_opts.pages) && !cli->so.xen) {
		tv_cli_error("record", "--xen-events, --xen-cpus and --xen-pages need --xen");
		return -1;
	}
	if (!cli->flight_bytes && (cli->so.nr_triggers || cli->so.trigger_post || cli->so.trigger_holdoff ||
				  cli->so.max_snapshots)) {
		tv_cli_error("record", "--trigger, --post, --trigger-holdoff and --max-snapshots need --flight-recorder SIZE");
		return -1;
	}
	if (cli->flight_bytes && cli->so.host.buffer_kb) {
		tv_cli_error("record", "--flight-recorder SIZE sets the host's buffers (SIZE split over the CPUs): not with -b");
		return -1;
	}
	cli->so.host.flight_bytes = cli->flight_bytes;
	if (cli->so.xen)
		cli->so.xen_opts.flight_bytes = cli->flight_bytes;	/* Xen's rings, in dom0 */
	if (cli->so.ust)
		cli->so.ust_flight_bytes = cli->flight_bytes;
	if (optind < argc)
		cli->command = &argv[optind];
	return 0;
}

/* The open-file limit record was started with: the library raises it (host/recorder.c), COMMAND gets this. */
static struct rlimit caller_nofile;
static int caller_nofile_known;

/* Fork COMMAND; report exec failure through a close-on-exec pipe. */
static pid_t start_command(char **command, const sigset_t *saved_mask)
{
	int status_pipe[2], err = 0;
	pid_t pid;

	if (pipe2(status_pipe, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, saved_mask, NULL);
		if (caller_nofile_known)
			setrlimit(RLIMIT_NOFILE, &caller_nofile);
		execvp(command[0], command);
		err = errno;
		if (write(status_pipe[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(status_pipe[1]);
	if (pid > 0 && read(status_pipe[0], &err, sizeof(err)) == sizeof(err)) {
		waitpid(pid, NULL, 0);
		errno = err;
		pid = -1;
	}
	close(status_pipe[0]);
	return pid;
}

/*
 * Host bytes reach the disk when a CPU's ring buffer is half full (the splice
 * wake-up threshold), so a slow host shows 0 for a while; guests stream as
 * they go: both are shown.
 */
static void show_progress(const struct tv_session_record *srec, double secs)
{
	const struct tv_recorder *rec = tv_session_record_host(srec);
	uint64_t guest = 0;

	for (size_t i = 0; i < tv_session_record_nr_guests(srec); i++) {
		struct tv_guest_stats st;

		tv_guest_get_stats(tv_session_record_guest(srec, i), &st);
		guest += st.bytes;
	}
	fprintf(stderr, "\rtracevisor record: %.1f s, host %.1f MB on disk", secs,
		rec ? (double)tv_recorder_bytes(rec) / 1e6 : 0.0);
	if (tv_session_record_nr_guests(srec))
		fprintf(stderr, ", guests %.1f MB", (double)guest / 1e6);
	fputs("  ", stderr);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * DIR/flight-recorder (key=value, rewritten whole after each snapshot): the
 * recorder's pid and its snapshots so far, which `tracevisor snapshot`
 * reads to find it and to know when its request was served.
 */
static int flight_state(struct record_cli *cli, const char *last, const char *error)
{
	struct tv_meta *m = tv_meta_new();
	int ret;

	if (!m)
		return -ENOMEM;
	tv_meta_set(m, "pid", "%d", (int)getpid());
	tv_meta_set(m, "size", "%llu", (unsigned long long)cli->flight_bytes);
	tv_meta_set(m, "snapshots", "%u", cli->snapshots);
	tv_meta_set(m, "errors", "%u", cli->snapshot_errors);
	if (last)
		tv_meta_set(m, "last", "%s", last);
	if (error)
		tv_meta_set(m, "last_error", "%s", error);
	ret = tv_meta_write(m, cli->flight_file);
	tv_meta_free(m);
	return ret;
}

/*
 * The per-CPU sizes the library derived from SIZE, as DIR/DOMAIN/meta has
 * them: the host kernel's instance (host/meta) and Xen's rings (xen/meta,
 * written at the start of a flight recorder).
 */
static void flight_show(const struct record_cli *cli, const char *domain)
{
	char path[4200];
	struct tv_meta *m;
	long long ncpus;

	snprintf(path, sizeof(path), "%s/%s/meta", cli->so.host.outdir, domain);
	if (tv_meta_read(path, &m))
		return;
	ncpus = tv_meta_get_ll(m, "ncpus", 0);
	if (!strcmp(domain, "host")) {
		long long kb = tv_meta_get_ll(m, "buffer_kb", 0);

		fprintf(stderr, "tracevisor record: flight recorder: host kernel %.1f MB = %lld KB x %lld CPUs in memory, frozen by %s\n",
			(double)(kb * ncpus) / 1024.0, kb, ncpus,
			tv_meta_get(m, "flight_freeze") ? tv_meta_get(m, "flight_freeze") : "?");
	} else {
		long long ring = tv_meta_get_ll(m, "flight_ring_bytes", 0);

		fprintf(stderr, "tracevisor record: flight recorder: Xen %.1f MB = %lld KB x %lld pCPUs in dom0 memory\n",
			(double)(ring * ncpus) / 1048576.0, ring / 1024, ncpus);
	}
	tv_meta_free(m);
}

static int flight_begin(struct record_cli *cli, const struct tv_recorder *rec)
{
	char abs[4096];
	int ret;

	if (rec && !cli->quiet)
		flight_show(cli, "host");
	if (cli->so.xen && !cli->quiet)
		flight_show(cli, "xen");
	snprintf(cli->flight_file, sizeof(cli->flight_file), "%s/flight-recorder", cli->so.host.outdir);
	ret = flight_state(cli, NULL, NULL);
	if (ret) {
		tv_cli_error("record", "Cannot write the flight recorder's state: path=\"%s\", errno=%d (%s)",
			     cli->flight_file, -ret, strerror(-ret));
		return ret;
	}
	/* `tracevisor snapshot PID` finds the session through this link (best effort) */
	if (realpath(cli->so.host.outdir, abs)) {
		mkdir("/run/tracevisor", 0755);
		snprintf(cli->flight_link, sizeof(cli->flight_link), "/run/tracevisor/flight-%d", (int)getpid());
		unlink(cli->flight_link);
		if (symlink(abs, cli->flight_link))
			cli->flight_link[0] = '\0';
	}
	return 0;
}

static void flight_end(struct record_cli *cli)
{
	if (cli->flight_file[0])
		unlink(cli->flight_file);
	if (cli->flight_link[0])
		unlink(cli->flight_link);
}

/* SIGUSR1: one snapshot; said on stderr and in DIR/flight-recorder. */
static void flight_snapshot(struct record_cli *cli, struct tv_session_record *srec)
{
	char path[4200], error[64];
	int ret;

	if (!cli->flight_bytes) {
		tv_cli_error("record", "SIGUSR1 ignored: not a flight recorder (no --flight-recorder)");
		return;
	}
	ret = tv_session_record_snapshot(srec, path, sizeof(path));
	if (ret) {
		cli->snapshot_errors++;
		snprintf(error, sizeof(error), "errno=%d (%s)", -ret, strerror(-ret));
		flight_state(cli, NULL, error);
		return;
	}
	cli->snapshots++;
	flight_state(cli, path, NULL);
	if (!cli->quiet)
		fprintf(stderr, "tracevisor record: snapshot -> %s\n", path);
}

/* A trigger's snapshot or refusals: said, and counted in DIR/flight-recorder. */
static void flight_note(struct record_cli *cli, enum tv_session_note note, const char *path, int err,
			const char *detail)
{
	char error[64];

	if (note == TV_SESSION_TRIGGER_REFUSED) {
		fprintf(stderr, "tracevisor record: %d trigger%s not taken (%s)\n", err, err == 1 ? "" : "s",
			detail);
		return;
	}
	if (note == TV_SESSION_TRIGGER_FIRED) {
		if (!cli->quiet)
			fprintf(stderr, "tracevisor record: trigger fired: %s; writing the snapshot\n",
				tv_cli_text(detail));
		return;
	}
	if (!path) {
		cli->snapshot_errors++;
		snprintf(error, sizeof(error), "errno=%d (%s)", -err, strerror(-err));
		flight_state(cli, NULL, error);
		fprintf(stderr, "tracevisor record: trigger '%s': snapshot not written: %s; still armed\n",
			tv_cli_text(detail), error);
		return;
	}
	cli->snapshots++;
	flight_state(cli, path, NULL);
	if (!cli->quiet)
		fprintf(stderr, "tracevisor record: trigger '%s' -> %s\n", tv_cli_text(detail), path);
}

static int is_stop_signal(int signo)
{
	return signo == SIGINT || signo == SIGTERM || signo == SIGHUP;
}

static const char *stop_signal_name(int signo)
{
	return signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : signo == SIGHUP ? "SIGHUP" : "signal";
}

/*
 * One pending signal from the signalfd into @si.  Return: 1, 0 when none is
 * pending, or -errno: a signalfd that cannot be read cannot stop the
 * recording, so that is fatal (said once here, the session then stopped).
 */
static int next_signal(struct record_cli *cli, struct signalfd_siginfo *si)
{
	ssize_t n = read(cli->sfd, si, sizeof(*si));

	if (n == (ssize_t)sizeof(*si))
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (!cli->signal_err) {
		cli->signal_err = n < 0 ? -errno : -EIO;
		tv_cli_error("record", "Cannot read signalfd: fd=%d, errno=%d (%s)", cli->sfd,
			     -cli->signal_err, strerror(-cli->signal_err));
	}
	return cli->signal_err;
}

/*
 * opts.cancel: a signal while the library waits for the guests (start or
 * stop).  At start, a stop signal stops the recording; during the stop
 * (after a signal, --duration or COMMAND's end) it cuts the guests' end
 * short; both give up the library's wait.
 */
static int record_cancel(void *ctx)
{
	struct record_cli *cli = ctx;
	struct signalfd_siginfo si;
	int ret;

	while ((ret = next_signal(cli, &si)) > 0) {
		int signo = (int)si.ssi_signo;

		if (signo == SIGUSR1) {
			tv_cli_error("record", "SIGUSR1 ignored: the recording is starting or stopping");
		} else if (is_stop_signal(signo) && !cli->stopping) {
			cli->why_signal = signo;
			if (!cli->quiet)
				fprintf(stderr, "tracevisor record: %s while waiting for the guests: stopping\n",
					stop_signal_name(signo));
			return 1;
		} else if (is_stop_signal(signo)) {
			cli->second_signal = signo;
			fprintf(stderr, "tracevisor record: %s%s: stopping now, without waiting for the guests' END\n",
				stop_signal_name(signo), cli->why_signal ? " again" : " during the stop");
			return 1;
		}
	}
	return ret < 0;
}

/* Milliseconds to wait for: the next tick, or the end of --duration. */
static int wait_timeout_ms(const struct record_cli *cli, struct tv_session_record *srec, int *over)
{
	int ms = tv_session_record_tick_ms(srec);
	double left;

	*over = 0;
	if (cli->deadline <= 0)
		return ms;
	left = cli->deadline - now_s();
	if (left <= 0)
		*over = 1;
	return left <= 0 ? 0 : left * 1000 < ms ? (int)(left * 1000) + 1 : ms;
}

/*
 * Wait for the end of the recording: COMMAND's exit (its wait status in
 * *@status), the end of --duration, or a stop signal (cli->why_signal).
 * Return: 0, or -errno when the wait itself failed (said; stop then).
 */
static int wait_for_stop(struct record_cli *cli, struct tv_session_record *srec, pid_t child,
			 int *status)
{
	struct pollfd pfd[2] = { { .fd = cli->sfd, .events = POLLIN },
				 { .fd = tv_session_record_wait_fd(srec), .events = POLLIN } };
	int progress = !cli->quiet && isatty(STDERR_FILENO);
	double start = now_s();
	int ret = 0, over;

	while (!ret) {
		struct signalfd_siginfo si;
		int n = poll(pfd, pfd[1].fd >= 0 ? 2 : 1, wait_timeout_ms(cli, srec, &over)), got = 0;

		if (over)
			break;
		if (n < 0 && errno != EINTR) {
			ret = -errno;
			tv_cli_error("record", "Cannot wait for signals: fd=%d, errno=%d (%s)", cli->sfd,
				     -ret, strerror(-ret));
			break;
		}
		tv_session_record_tick(srec);	/* probes, vCPU rescans */
		if (progress)
			show_progress(srec, now_s() - start);
		while (n > 0 && pfd[0].revents && (got = next_signal(cli, &si)) > 0) {
			if (si.ssi_signo == SIGUSR1) {
				flight_snapshot(cli, srec);
			} else if (is_stop_signal((int)si.ssi_signo)) {
				cli->why_signal = (int)si.ssi_signo;
				break;
			} else if (child > 0 && waitpid(child, status, WNOHANG) == child) {
				break;
			}
		}
		if (got < 0)
			ret = got;
		if (cli->why_signal || *status != -1)
			break;
	}
	if (progress)
		fputc('\n', stderr);
	return ret;
}

static void print_summary(const struct record_cli *cli, const struct tv_recorder *rec)
{
	uint64_t events = 0, lost = 0, bytes = 0;
	int ncpus = tv_recorder_nr_cpus(rec);

	for (int cpu = 0; cpu < ncpus; cpu++) {
		const struct tv_record_cpu_stats *st = tv_recorder_cpu_stats(rec, cpu);

		events += st->events;
		lost += st->lost;
		bytes += st->bytes;
		if (st->lost)
			fprintf(stderr, "tracevisor record: warning: CPU %d lost %llu events (buffer full: raise -b)\n",
				cpu, (unsigned long long)st->lost);
	}
	if (!cli->quiet)
		fprintf(stderr, "tracevisor record: %llu events, %.1f MB on %d CPUs, %llu lost -> %s\n",
			(unsigned long long)events, (double)bytes / 1e6, ncpus,
			(unsigned long long)lost, cli->so.host.outdir);
}

static void print_xen_summary(const struct record_cli *cli)
{
	char path[4200];
	struct tv_meta *m;

	snprintf(path, sizeof(path), "%s/xen/meta", cli->so.host.outdir);
	if (tv_meta_read(path, &m))
		return;
	if (tv_meta_get_ll(m, "lost_total", 0))
		fprintf(stderr, "tracevisor record: warning: Xen lost %lld records (TRC_LOST_RECORDS; raise --xen-pages before Xen allocates its buffers)\n",
			tv_meta_get_ll(m, "lost_total", 0));
	if (tv_meta_get(m, "missing"))
		fprintf(stderr, "tracevisor record: note: this Xen lacks %s\n", tv_meta_get(m, "missing"));
	if (!cli->quiet)
		fprintf(stderr, "tracevisor record: xen: %lld records, %.1f MB on %lld CPUs, %lld lost -> %s/xen\n",
			tv_meta_get_ll(m, "events_total", 0),
			(double)tv_meta_get_ll(m, "bytes_total", 0) / 1e6,
			tv_meta_get_ll(m, "ncpus", 0), tv_meta_get_ll(m, "lost_total", 0),
			cli->so.host.outdir);
	tv_meta_free(m);
}

static void end_command(pid_t child, int *status, int why_signal)
{
	if (child <= 0 || *status != -1)
		return;
	/* Recording stopped first (signal or duration): pass the signal on. */
	kill(child, why_signal ? why_signal : SIGTERM);
	for (int i = 0; i < 50 && waitpid(child, status, WNOHANG) == 0; i++)
		usleep(20000);
}

/*
 * A command that failed on its own makes record fail the way time(1) and
 * strace(1) do (its status, 128+N for signal N), so `tracevisor record --
 * make test` in a script still says whether the tests passed; the session
 * is kept: it is often the failure one wants to look at.
 */
static int command_status(const struct record_cli *cli, int status)
{
	int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);

	if (code)
		fprintf(stderr, "tracevisor record: command '%s' %s %d; the session is kept\n",
			cli->command[0], WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return code;
}

/* Before anything is created: a wrong SPEC must not leave a session. */
static int parse_guests(struct record_cli *cli)
{
	int ret;

	for (size_t i = 0; i < cli->nr_guests; i++) {
		ret = tv_guest_spec_parse(cli->guest_specs[i], &cli->specs[i]);
		if (!ret)
			ret = tv_guest_spec_resolve(&cli->specs[i]);
		for (size_t j = 0; !ret && j < i; j++)
			if (!strcmp(cli->specs[j].name, cli->specs[i].name)) {
				tv_cli_error("record", "two guests named '%s': give each a name:NAME",
					     cli->specs[i].name);
				ret = -EINVAL;
			}
		if (ret)
			return ret;
	}
	return 0;
}

/* How long the start waits for the guests, in seconds. */
static double ready_timeout_s(const struct record_cli *cli)
{
	return (cli->so.guest_ready_timeout_ms ? cli->so.guest_ready_timeout_ms
					       : TV_SESSION_GUEST_READY_TIMEOUT_MS) / 1000.0;
}

/* What the session recorder says a user should hear. */
static void record_notify(void *ctx, enum tv_session_note note, const char *name, int err,
			  const char *detail)
{
	struct record_cli *cli = ctx;

	if (note == TV_SESSION_SNAPSHOT || note == TV_SESSION_TRIGGER_REFUSED ||
	    note == TV_SESSION_TRIGGER_FIRED) {
		flight_note(cli, note, name, err, detail);
		return;
	}
	if (note == TV_SESSION_GUEST_NOT_READY && err == -ECANCELED)
		cli->guest_refused = 1;	/* bad input (a guest filter...): the rest is kept */
	if (cli->quiet && !cli->guest_refused)
		return;
	if (note == TV_SESSION_GUEST_NOT_READY && err != -ETIMEDOUT && detail && strstr(detail, ": ") &&
	    !strncmp(strstr(detail, ": ") + 2, "rejected: ", 10))
		/* its domain is one the readers would refuse: the one line at once */
		fprintf(stderr, "tracevisor record: guest %s rejected, its domain will not be read: %s; recording the rest\n",
			tv_cli_text(name), tv_cli_text(strstr(detail, ": ") + 12));
	else if (note == TV_SESSION_GUEST_NOT_READY && err != -ETIMEDOUT && detail && strstr(detail, ": "))
		/* the one line that says why (a guest filter its kernel refused...),
		 * after the status word ("failed: ", "truncated: ") */
		fprintf(stderr, "tracevisor record: guest %s failed: %s; recording the rest\n",
			tv_cli_text(name), tv_cli_text(strstr(detail, ": ") + 2));	/* the guest's text */
	else if (note == TV_SESSION_GUEST_NOT_READY && err == -ETIMEDOUT)
		fprintf(stderr, "tracevisor record: warning: guest %s is not recording yet (no answer in %.3g s); going on\n",
			tv_cli_text(name), ready_timeout_s(cli));
	else if (note == TV_SESSION_GUEST_NOT_READY)
		fprintf(stderr, "tracevisor record: warning: guest %s is not recording yet (failed); going on\n",
			tv_cli_text(name));
	else if (note == TV_SESSION_GUEST_WAITING && err)
		fprintf(stderr, "tracevisor record: waiting for guest %s: cannot connect to its agent yet: errno=%d (%s); trying until %.3g s after the start\n",
			tv_cli_text(name), -err, strerror(-err), ready_timeout_s(cli));
	else if (note == TV_SESSION_GUEST_WAITING)
		fprintf(stderr, "tracevisor record: waiting for guest %s: connected, its agent has not started tracing yet; waiting until %.3g s after the start\n",
			tv_cli_text(name), ready_timeout_s(cli));
	else if (note == TV_SESSION_XEN_PROBES_FAILED)
		fprintf(stderr, "tracevisor record: warning: dom0/Xen sync probes failed; `tracevisor sync` will lack them\n");
}

/*
 * A guest's traced processes: every one it announced, and in parentheses
 * the ones not complete, by why (each said before: cut off, rejected).
 */
static void print_guest_ust(struct tv_guest *g, const struct tv_guest_stats *st)
{
	const struct { unsigned int n; const char *what; } parts[] = {
		{ st->ust_cut, "cut off" },
		{ st->ust_rejected, "rejected" },
		{ st->ust_unended, "not ended by the agent" },
		{ st->ust_other, "ended incomplete" },
	};
	char why[160] = "";
	size_t len = 0;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i].n && len < sizeof(why))
			len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%u %s",
						len ? ", " : " (", parts[i].n, parts[i].what);
	if (len && len < sizeof(why))
		snprintf(why + len, sizeof(why) - len, ")");
	fprintf(stderr, "tracevisor record: guest %s: ust: %u processes%s, %llu events, %llu lost\n",
		tv_cli_text(tv_guest_name(g)), st->ust_procs, why, (unsigned long long)st->ust_events,
		(unsigned long long)st->ust_lost);
}

static void print_guest_summary(const struct record_cli *cli, const struct tv_session_record *srec)
{
	for (size_t i = 0; i < cli->nr_guests && !cli->quiet; i++) {
		struct tv_guest *g = tv_session_record_guest(srec, i);
		struct tv_guest_stats st;

		if (!g)
			continue;
		tv_guest_get_stats(g, &st);
		char counts[64] = "event and loss counts unknown (no END)";

		if (st.counts_known == 1)
			snprintf(counts, sizeof(counts), "%llu events, %llu lost",
				 (unsigned long long)st.events, (unsigned long long)st.lost);
		else if (st.counts_known == 2)
			snprintf(counts, sizeof(counts), "events unknown (no END), %llu lost",
				 (unsigned long long)st.lost);
		fprintf(stderr, "tracevisor record: guest %s: %s, %.1f MB, %u/%u pings, %u/%u hypercall probes: %s%s\n",
			tv_cli_text(tv_guest_name(g)), counts,
			(double)st.bytes / 1e6, st.pongs, st.pings,
			st.hcalls_done, st.hcalls_asked, tv_cli_text(st.status),	/* may quote the agent */
			st.listed ? "" : " (not in the session)");
		if (st.pongs_dropped || st.hcalls_dropped)
			fprintf(stderr, "tracevisor record: guest %s: warning: %llu PONGs and %llu HCALL_DONEs dropped: they answered no outstanding request\n",
				tv_cli_text(tv_guest_name(g)), (unsigned long long)st.pongs_dropped,
				(unsigned long long)st.hcalls_dropped);
		if (cli->so.ust)
			print_guest_ust(g, &st);
	}
}

/* One traced process's domain (DIR/NAME/meta): the policy it ran with and what it recorded. */
static void print_ust_process(const struct record_cli *cli, const char *name)
{
	char path[4400];
	struct tv_meta *m = NULL;
	const char *mode, *asked = cli->so.ust_mode;
	unsigned long long sb, nr;
	int own;

	snprintf(path, sizeof(path), "%s/%s/meta", cli->so.host.outdir, name);
	if (tv_meta_read(path, &m) || !tv_meta_get(m, "kind") || strcmp(tv_meta_get(m, "kind"), "ust")) {
		tv_meta_free(m);
		return;
	}
	mode = tv_meta_get(m, "mode") ? tv_meta_get(m, "mode") : "?";
	sb = (unsigned long long)tv_meta_get_ll(m, "subbuf_size", 0);
	nr = (unsigned long long)tv_meta_get_ll(m, "nr_subbufs", 0);
	/* asked something else: its environment won, or it traced before registering */
	own = (asked && strcmp(asked, mode)) || (cli->so.ust_subbuf_size && cli->so.ust_subbuf_size != sb) ||
	      (cli->so.ust_nr_subbufs && cli->so.ust_nr_subbufs != nr);
	fprintf(stderr, "tracevisor record: ust: %s pid %lld (%s): %s, %llu x %llu KiB per CPU, %lld events, %lld lost%s\n",
		tv_meta_get(m, "parent") ? tv_cli_text(tv_meta_get(m, "parent")) : "?",
		tv_meta_get_ll(m, "pid", 0), tv_cli_text(tv_meta_get(m, "comm") ? tv_meta_get(m, "comm") : "?"),
		mode, nr, sb >> 10, tv_meta_get_ll(m, "events_total", 0), tv_meta_get_ll(m, "lost_total", 0),
		own ? " (its own setting, not the --ust-mode/--ust-buffer asked)" : "");
	tv_meta_free(m);
}

/* Every traced process of the session, host's and guests', in name order. */
static void print_ust_processes(const struct record_cli *cli)
{
	struct dirent **names = NULL;
	int n = scandir(cli->so.host.outdir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		if (!strncmp(names[i]->d_name, "ust-", 4))
			print_ust_process(cli, names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

static void print_ust_summary(const struct record_cli *cli, const struct tv_session_record *srec)
{
	uint64_t events, lost;
	size_t procs;

	tv_session_record_ust_summary(srec, &procs, &events, &lost);
	if (lost)
		fprintf(stderr, "tracevisor record: warning: traced processes discarded %llu events (their buffers were full)\n",
			(unsigned long long)lost);
	if (!cli->quiet)
		fprintf(stderr, "tracevisor record: ust: %zu processes, %llu events, %llu lost -> %s/ust-host-*\n",
			procs, (unsigned long long)events, (unsigned long long)lost, cli->so.host.outdir);
	if (!cli->quiet)
		print_ust_processes(cli);
}

/*
 * Guests whose stream is not complete (status truncated, failed or
 * rejected: the session reads without what they lack), as "NAME (WORD)"
 * into @names, for the one line that explains the exit status.
 * Return: how many.
 */
static size_t find_incomplete(const struct record_cli *cli, const struct tv_session_record *srec,
			      char *names, size_t size)
{
	size_t n = 0, len = 0;

	names[0] = '\0';

	for (size_t i = 0; i < cli->nr_guests; i++) {
		struct tv_guest *g = tv_session_record_guest(srec, i);
		struct tv_guest_stats st;

		if (!g)
			continue;
		tv_guest_get_stats(g, &st);
		if (!strcmp(st.status, "complete"))
			continue;
		n++;
		if (len < size)
			len += (size_t)snprintf(names + len, size - len, "%s%s (%.*s)",
						n > 1 ? ", " : "", tv_guest_name(g),
						(int)strcspn(st.status, ":"), st.status);
	}
	return n;
}

/* COMMAND, unless a signal or the end of --duration came first (during the guests' wait). */
static int run_command(struct record_cli *cli, const sigset_t *saved, pid_t *child)
{
	if (!cli->command || cli->why_signal)
		return 0;
	if (cli->deadline > 0 && now_s() >= cli->deadline) {
		tv_cli_error("record", "--duration ended while waiting for the guests: command '%s' not run",
			     cli->command[0]);
		return 0;
	}
	*child = start_command(cli->command, saved);
	if (*child < 0) {
		int err = errno;

		tv_cli_error("record", "Cannot run command: name=\"%s\", errno=%d (%s)",
			     cli->command[0], err, strerror(err));
		return -err;
	}
	return 0;
}

/*
 * The exit status (doc/man/tracevisor-record.1, EXIT STATUS), first that
 * applies: 1 an error; COMMAND's failure; 128+N when a signal N cut the
 * stop short; EXIT_INCOMPLETE when a guest is incomplete; else 0.
 */
static int record_status(struct record_cli *cli, int ret, int command_ended_itself, int status,
			 size_t incomplete)
{
	int code;

	if (ret)
		return tv_cli_status(ret);
	if (command_ended_itself && (code = command_status(cli, status)))
		return code;
	if (cli->second_signal)
		return 128 + cli->second_signal;
	return incomplete ? EXIT_INCOMPLETE : 0;
}

int cmd_record(int argc, char **argv)
{
	struct record_cli cli = { 0 };
	struct tv_session_record *srec = NULL;
	struct tv_recorder *rec;
	sigset_t mask, saved;
	pid_t child = 0;
	int ret, status = -1, command_ended_itself, code;
	char incomplete_names[1024];
	size_t incomplete;

	if (parse_record_args(argc, argv, &cli))
		return EXIT_USAGE;
	if (parse_guests(&cli))
		return EXIT_USAGE;
	/* Block before any thread exists so all of them inherit the mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGUSR1);	/* a flight recorder's snapshot */
	/* before any guest can take descriptors: the stop depends on it */
	if (sigprocmask(SIG_BLOCK, &mask, &saved) ||
	    (cli.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		tv_cli_error("record", "Cannot create signalfd: errno=%d (%s)", errno, strerror(errno));
		return 1;
	}
	cli.so.guests = cli.specs;
	cli.so.nr_guests = cli.nr_guests;
	cli.so.notify = record_notify;
	cli.so.notify_ctx = &cli;
	cli.so.cancel = record_cancel;
	cli.so.cancel_fd = cli.sfd;
	/* --duration counts from the start: the guests' wait is part of it */
	if (cli.duration > 0) {
		cli.deadline = now_s() + cli.duration;
		if (cli.duration * 1000 < TV_SESSION_GUEST_READY_TIMEOUT_MS)
			cli.so.guest_ready_timeout_ms = (int)(cli.duration * 1000) + 1;
	}
	caller_nofile_known = !getrlimit(RLIMIT_NOFILE, &caller_nofile);
	ret = tv_session_record_start(&cli.so, &srec);
	if (ret) {
		close(cli.sfd);
		return tv_cli_status(ret);
	}
	rec = tv_session_record_host(srec);
	/* the command's processes register where we listen */
	if (cli.so.ust && cli.so.ust_socket)
		setenv("TRACEVISOR_UST_SOCK", cli.so.ust_socket, 1);
	ret = run_command(&cli, &saved, &child);
	if (!ret && cli.flight_bytes)
		ret = flight_begin(&cli, rec);
	if (!ret && !cli.command && !cli.quiet && cli.duration <= 0 && !cli.why_signal)
		fprintf(stderr, "tracevisor record: recording to %s; press Ctrl-C to stop\n",
			cli.so.host.outdir);
	if (!ret && !cli.why_signal)
		ret = wait_for_stop(&cli, srec, child, &status);
	command_ended_itself = child > 0 && status != -1;
	end_command(child, &status, cli.why_signal);
	flight_end(&cli);
	if (cli.why_signal && cli.nr_guests && !cli.quiet)
		fprintf(stderr, "tracevisor record: stopping: the guests' END awaited 7 s at most (Ctrl-C again to stop at once)\n");
	cli.stopping = 1;
	ret = tv_session_record_stop(srec) ? -1 : ret;
	if (!ret && cli.signal_err)
		ret = cli.signal_err;	/* said when it happened */
	if (!ret && rec)
		print_summary(&cli, rec);
	if (!ret && tv_session_record_xen(srec))
		print_xen_summary(&cli);
	print_guest_summary(&cli, srec);
	if (cli.so.ust)
		print_ust_summary(&cli, srec);
	incomplete = find_incomplete(&cli, srec, incomplete_names, sizeof(incomplete_names));
	tv_session_record_destroy(srec);
	free(cli.guest_events);
	close(cli.sfd);
	if (!ret && cli.compress)
		ret = tv_cli_compress(cli.so.host.outdir);
	code = record_status(&cli, ret, command_ended_itself, status, incomplete);
	/* -q or not: these explain a non-zero exit status */
	if (incomplete && code == EXIT_INCOMPLETE)
		fprintf(stderr, "tracevisor record: %zu of %zu guests incomplete: %s; exit status %d\n",
			incomplete, cli.nr_guests, incomplete_names, code);
	else if (incomplete)
		fprintf(stderr, "tracevisor record: %zu of %zu guests incomplete: %s\n", incomplete,
			cli.nr_guests, incomplete_names);
	if (!ret && cli.second_signal)
		fprintf(stderr, "tracevisor record: the stop was cut short by %s%s: the session holds what reached the disk; exit status %d\n",
			cli.why_signal ? "a second " : "", stop_signal_name(cli.second_signal), code);
	return code;
}
