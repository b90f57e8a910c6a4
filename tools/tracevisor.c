// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor: the command-line front end.  Each subcommand lives in its own
 * file (cmd_*.c) and is dispatched from the table below; this file only
 * installs the library's log callback and routes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, "record KVM and host kernel events into a session directory" },
	{ "snapshot", cmd_snapshot, "write a running flight recorder's last events (record --ust --flight-recorder)" },
	{ "report", cmd_report, "print a session's events in time order (text or JSON lines)" },
	{ "import", cmd_import, "convert a recording of another tool (xentrace) into a session" },
	{ "xen-mark", cmd_xen_mark, "(Xen dom0) write a sync point into Xen's trace buffers" },
	{ "stat", cmd_stat, "VM exit analysis: counts and exit->entry latency per VM, vCPU, reason" },
	{ "top", cmd_top, "live VM exit table per VM, vCPU, reason: rate, p50, p99, max (or a replay)" },
	{ "serve", cmd_serve, "VM exit metrics for Prometheus: counts and latency histograms on /metrics" },
	{ "sync", cmd_sync, "estimate each domain's clock against the host's (offset, drift, bound)" },
	{ "export", cmd_export, "write the combined trace as CTF (babeltrace2, Trace Compass) or Perfetto JSON, or one HTML page" },
	{ "compress", cmd_compress, "compress a session's stream files (zstd); every command reads them" },
	{ "recover", cmd_recover, "salvage a killed recorder's events from its tracefs instance into its session" },
};

static const char *current_cmd = "tracevisor";
/*
 * Errors said so far (the library's through the log callback, the CLI's
 * own through tv_cli_error()) and the last failure given to tv_cli_status():
 * main() says the failure itself when nobody did.  Atomic: the library logs
 * from its own threads too.
 */
static atomic_int errors_said;
static int last_error;

/* "tracevisor CMD: PREFIXMSG" with @msg escaped for the terminal, whole. */
static void print_escaped(const char *cmd, const char *prefix, const char *msg)
{
	struct tv_strbuf sb = { 0 };

	if (tv_strbuf_append_text(&sb, msg, strlen(msg)))
		fprintf(stderr, "tracevisor %s: %s(message lost: out of memory)\n", cmd, prefix);
	else
		fprintf(stderr, "tracevisor %s: %s%s\n", cmd, prefix, sb.data ? sb.data : "");
	tv_strbuf_free(&sb);
}

static void log_to_stderr(enum tv_log_level level, const char *msg, void *ctx)
{
	static const char *const prefix[] = { "", "warning: ", "", "debug: " };

	(void)ctx;
	/* A warning is said once, however many passes read the session. */
	if (level == TV_LOG_WARN) {
		static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		static char last_warning[256];	/* under lock: threads log too */
		int again;

		pthread_mutex_lock(&lock);
		again = !strncmp(last_warning, msg, sizeof(last_warning) - 1);
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
		pthread_mutex_unlock(&lock);
		if (again)
			return;
	}
	if (level == TV_LOG_ERROR)
		atomic_fetch_add_explicit(&errors_said, 1, memory_order_relaxed);
	/* Messages quote recorded names and guests' error texts. */
	print_escaped(current_cmd, prefix[level], msg);
}

const char *tv_cli_text(const char *s)
{
	static __thread char ring[8][1024];
	static __thread unsigned int next;

	return tv_text_escape(ring[next++ % 8], sizeof(ring[0]), s ? s : "(null)");
}

void tv_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	int n;

	atomic_fetch_add_explicit(&errors_said, 1, memory_order_relaxed);
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	/* Its arguments may be recorded names: escaped like the library's. */
	print_escaped(cmd, "", n < 0 ? "(message lost: out of memory)" : msg);
	free(msg);
}

const char *tv_cli_guest_task(const struct tv_exit_stat_row *r, char *buf, size_t size)
{
	/* The guest names its tasks: escaped. */
	if (r->guest_pid < 0)
		snprintf(buf, size, "%s", tv_cli_text(r->guest_task));
	else
		snprintf(buf, size, "%s[%d]%s%s", tv_cli_text(r->guest_task), r->guest_pid,
			 r->guest_context[0] ? " " : "", tv_cli_text(r->guest_context));
	return buf;
}

int tv_cli_status(int err)
{
	if (err)
		last_error = err;
	return err ? 1 : 0;
}

const char *tv_cli_fmt_ns(uint64_t ns, char *buf, size_t size)
{
	if (ns < 10000)
		snprintf(buf, size, "%lluns", (unsigned long long)ns);
	else if (ns < 10000000)
		snprintf(buf, size, "%.1fus", (double)ns / 1e3);
	else if (ns < 10000000000ULL)
		snprintf(buf, size, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", (double)ns / 1e9);
	return buf;
}

double tv_cli_cpu_percent(double *prev, uint64_t interval_ns)
{
	struct rusage ru;
	double now, used;

	getrusage(RUSAGE_SELF, &ru);
	now = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	used = now - *prev;
	*prev = now;
	return interval_ns ? used * 1e11 / (double)interval_ns : 0;
}

void tv_cli_json_str(const char *s)
{
	struct tv_strbuf sb = { 0 };

	tv_strbuf_append_json_string(&sb, s, strlen(s));
	fputs(sb.data, stdout);
	tv_strbuf_free(&sb);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: tracevisor COMMAND [OPTIONS]\n\n"
		     "Trace virtualised systems: host kernel, KVM, guests.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'tracevisor COMMAND --help' or 'man tracevisor-COMMAND' for details.\n");
}

void tv_cli_log_mute(bool mute)
{
	tv_log_set_callback(mute ? NULL : log_to_stderr, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("tracevisor %s\n", TV_VERSION);
		return 0;
	}
	tv_log_set_callback(log_to_stderr, NULL);
	tv_log_set_level(getenv("TRACEVISOR_DEBUG") ? TV_LOG_DEBUG : TV_LOG_INFO);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			int status;

			current_cmd = commands[i].name;
			status = commands[i].run(argc - 1, argv + 1);
			/* Never a non-zero exit without a message (e.g. -ENOMEM). */
			if (status == 1 && last_error &&
			    !atomic_load_explicit(&errors_said, memory_order_relaxed)) {
				int e = last_error < 0 ? -last_error : last_error;

				tv_cli_error(current_cmd, "Failed: errno=%d (%s)", e, strerror(e));
			}
			return status;
		}
	}
	fprintf(stderr, "tracevisor: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
