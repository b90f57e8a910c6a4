// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor record: drive the recorder until COMMAND exits, the duration
 * ends, or SIGINT/SIGTERM/SIGHUP.  Signals are taken through a signalfd so
 * that stopping always runs the same path: tracing off, every CPU drained,
 * metadata written, tracefs instance removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

#define MAX_EVENTS 256

struct record_cli {
	struct tv_record_opts opts;
	const char *events[MAX_EVENTS];
	double duration;
	char **command;
	int quiet;
	int xen;			/* --xen: Xen's trace buffers too */
	struct tv_xen_record_opts xen_opts;
};

static void record_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor record [-o DIR] [-e EVENT]... [-f FILTER] [-b KB_PER_CPU]\n"
		"                         [--clock CLOCK] [--duration SECONDS] [-q] [-- COMMAND [ARGS]]\n\n"
		"Records host kernel events (default: every kvm event) into the session\n"
		"directory DIR, until COMMAND exits, SECONDS pass, or Ctrl-C.\n\n"
		"  -o, --output DIR        session directory to create (default: tracevisor-session)\n"
		"  -e, --event EVENT       SYSTEM, SYSTEM:EVENT or a glob (repeatable; default: kvm)\n"
		"  -f, --filter FILTER     ftrace filter applied in the kernel, e.g. 'vcpu_id==0'\n"
		"  -b, --buffer KB         ring buffer per CPU in KB (default: %d)\n"
		"      --clock CLOCK       trace clock: local, global, mono, boot, x86-tsc... (default: local)\n"
		"      --duration SECONDS  stop after SECONDS\n"
		"  -q, --quiet             no progress or summary\n"
		"      --xen               (in a Xen dom0) record the hypervisor's trace buffers into\n"
		"                          DIR/xen/; without -e only Xen is recorded, with -e dom0's\n"
		"                          kernel events too (DIR/host/)\n"
		"      --xen-events CLASSES  gen,sched,dom0op,hvm,mem,pv,shadow,hw,guest, all or a\n"
		"                          hex mask (default: all, as xentrace)\n"
		"      --xen-cpus LIST     physical CPUs to trace, e.g. 0-3,6 (default: all)\n"
		"      --xen-pages N       buffer pages per CPU if Xen has none yet (default: %d)\n"
		"  -h, --help              this help\n",
		TV_RECORD_DEFAULT_BUFFER_KB, TV_XEN_DEFAULT_PAGES);
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
		{ "xen", no_argument, NULL, 'X' },
		{ "xen-events", required_argument, NULL, 'E' },
		{ "xen-cpus", required_argument, NULL, 'P' },
		{ "xen-pages", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	cli->opts.outdir = "tracevisor-session";
	while ((c = getopt_long(argc, argv, "+o:e:f:b:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			cli->opts.outdir = optarg;
			break;
		case 'e':
			if (cli->opts.nr_events == MAX_EVENTS) {
				tv_cli_error("record", "too many -e options (at most %d)", MAX_EVENTS);
				return -1;
			}
			cli->events[cli->opts.nr_events++] = optarg;
			break;
		case 'f':
			cli->opts.filter = optarg;
			break;
		case 'b': {
			unsigned long kb = strtoul(optarg, &end, 10);

			if (*end || kb < 4 || kb > 64UL * 1024 * 1024) {
				tv_cli_error("record", "invalid buffer size: '%s' (KB per CPU, 4 or more)", optarg);
				return -1;
			}
			cli->opts.buffer_kb = (unsigned int)kb;
			break;
		}
		case 'C':
			cli->opts.clock = optarg;
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
		case 'X':
			cli->xen = 1;
			break;
		case 'E':
			cli->xen_opts.evt_mask = tv_xen_parse_events(optarg);
			if (!cli->xen_opts.evt_mask) {
				tv_cli_error("record", "invalid --xen-events: '%s'", optarg);
				return -1;
			}
			break;
		case 'P':
			if (!tv_xen_cpu_in_list(optarg, (int)strtol(optarg, NULL, 10))) {
				tv_cli_error("record", "invalid --xen-cpus: '%s' (e.g. 0-3,6)", optarg);
				return -1;
			}
			cli->xen_opts.cpus = optarg;
			break;
		case 'G': {
			unsigned long pages = strtoul(optarg, &end, 10);

			if (*end || pages < 1 || pages > 65535) {
				tv_cli_error("record", "invalid --xen-pages: '%s'", optarg);
				return -1;
			}
			cli->xen_opts.pages = (unsigned int)pages;
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
	cli->opts.events = cli->events;
	cli->xen_opts.outdir = cli->opts.outdir;
	if ((cli->xen_opts.evt_mask || cli->xen_opts.cpus || cli->xen_opts.pages) && !cli->xen) {
		tv_cli_error("record", "--xen-events, --xen-cpus and --xen-pages need --xen");
		return -1;
	}
	if (optind < argc)
		cli->command = &argv[optind];
	return 0;
}

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

static int arm_duration(double seconds)
{
	struct itimerspec its = { 0 };
	int fd;

	if (seconds <= 0)
		return -1;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (fd < 0)
		return -1;
	its.it_value.tv_sec = (time_t)seconds;
	its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime(fd, 0, &its, NULL);
	return fd;
}

static void show_progress(const struct tv_recorder *rec, double secs)
{
	fprintf(stderr, "\rtracevisor record: %.1f s, %.1f MB captured ", secs,
		(double)tv_recorder_bytes(rec) / 1e6);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for the end of the recording. Return the command's wait status or -1. */
static int wait_for_stop(struct record_cli *cli, struct tv_recorder *rec, int sfd,
			 pid_t child, int *why_signal)
{
	int tfd = arm_duration(cli->duration);
	struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN }, { .fd = tfd, .events = POLLIN } };
	int progress = !cli->quiet && isatty(STDERR_FILENO);
	double start = now_s();
	int status = -1;

	for (;;) {
		struct signalfd_siginfo si;
		int n = poll(pfd, tfd >= 0 ? 2 : 1, 1000);

		if (n < 0 && errno == EINTR)
			continue;
		if (progress && rec)
			show_progress(rec, now_s() - start);
		if (n == 0 && rec)	/* once a second: VMs started since the last scan */
			tv_recorder_scan_vcpus(rec);
		if (n <= 0)
			continue;
		if (tfd >= 0 && (pfd[1].revents & POLLIN))
			break;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD) {
			*why_signal = (int)si.ssi_signo;
			break;
		}
		if (child > 0 && waitpid(child, &status, WNOHANG) == child)
			break;
	}
	if (progress)
		fputc('\n', stderr);
	if (tfd >= 0)
		close(tfd);
	return status;
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
			(unsigned long long)lost, cli->opts.outdir);
}

static void print_xen_summary(const struct record_cli *cli)
{
	char path[4200];
	struct tv_meta *m;

	snprintf(path, sizeof(path), "%s/xen/meta", cli->opts.outdir);
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
			cli->opts.outdir);
	tv_meta_free(m);
}

/* Host recorder (when -e or no --xen) then Xen's, into the same session. */
static int start_recorders(struct record_cli *cli, struct tv_recorder **rec,
			   struct tv_xen_recorder **xrec)
{
	int ret = 0;

	if (!cli->xen || cli->opts.nr_events) {
		ret = tv_recorder_create(&cli->opts, rec);
		if (ret)
			return ret;
		cli->xen_opts.in_session = true;
	}
	if (cli->xen)
		ret = tv_xen_recorder_create(&cli->xen_opts, xrec);
	if (!ret && *rec)
		ret = tv_recorder_start(*rec);
	if (!ret && *xrec)
		ret = tv_xen_recorder_start(*xrec);
	return ret;
}

static int stop_recorders(const struct record_cli *cli, struct tv_recorder *rec,
			  struct tv_xen_recorder *xrec)
{
	int ret = 0;

	if (xrec)
		ret = tv_xen_recorder_stop(xrec) ? -1 : 0;
	if (rec && tv_recorder_stop(rec))
		ret = -1;
	/* Both: session.meta (written by the host recorder) must list xen too. */
	if (!ret && rec && xrec)
		ret = tv_session_write_domains(cli->opts.outdir, "host,xen", "host");
	return ret;
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

int cmd_record(int argc, char **argv)
{
	struct record_cli cli = { 0 };
	struct tv_recorder *rec = NULL;
	struct tv_xen_recorder *xrec = NULL;
	sigset_t mask, saved;
	pid_t child = 0;
	int sfd, ret, status, why_signal = 0;

	if (parse_record_args(argc, argv, &cli))
		return 2;
	/* Block before any thread exists so all of them inherit the mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &saved);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		tv_cli_error("record", "Cannot create signalfd: errno=%d", errno);
		return 1;
	}
	ret = start_recorders(&cli, &rec, &xrec);
	if (ret) {
		tv_xen_recorder_destroy(xrec);
		tv_recorder_destroy(rec);
		return tv_cli_status(ret);
	}
	if (cli.command) {
		child = start_command(cli.command, &saved);
		if (child < 0) {
			tv_cli_error("record", "Cannot run command: name=\"%s\", errno=%d (%s)",
				     cli.command[0], errno, strerror(errno));
			ret = -errno;
		}
	}
	if (!ret && !cli.command && !cli.quiet && cli.duration <= 0)
		fprintf(stderr, "tracevisor record: recording to %s; press Ctrl-C to stop\n",
			cli.opts.outdir);
	status = ret ? -1 : wait_for_stop(&cli, rec, sfd, child, &why_signal);
	end_command(child, &status, why_signal);
	ret = stop_recorders(&cli, rec, xrec) ? -1 : ret;
	if (!ret && rec)
		print_summary(&cli, rec);
	if (!ret && xrec)
		print_xen_summary(&cli);
	tv_xen_recorder_destroy(xrec);
	tv_recorder_destroy(rec);
	close(sfd);
	if (!ret && child > 0 && status != -1 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fprintf(stderr, "tracevisor record: warning: command '%s' %s %d\n", cli.command[0],
			WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return tv_cli_status(ret);
}
