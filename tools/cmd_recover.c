// SPDX-License-Identifier: GPL-2.0
/* tracevisor recover: salvage a killed recorder's trace into its session. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void recover_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor recover DIR\n\n"
		"Salvages what a killed `tracevisor record -o DIR` (SIGKILL, OOM, crash) left\n"
		"in its tracefs instance: the events still in the kernel's buffers are\n"
		"appended to DIR/host/cpuN.raw, DIR/host/meta says status=recovered with the\n"
		"kernel's counts, and the instance is removed.  The next `tracevisor record`\n"
		"does the same by itself.  Refused while the recorder runs.  Needs root.\n\n"
		"  -h, --help     this help\n");
}

int cmd_recover(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tv_recover_stats st;
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			recover_usage(stdout);
			return 0;
		}
		recover_usage(stderr);
		return 2;
	}
	if (optind + 1 != argc) {
		recover_usage(stderr);
		return 2;
	}
	ret = tv_session_recover(argv[optind], &st);
	if (!ret)
		fprintf(stderr,
			"tracevisor recover: %s: %" PRIu64 " more events (%" PRIu64
			" bytes) from instance %s of killed recorder %d; %" PRIu64
			" events in all, %" PRIu64 " lost\n",
			argv[optind], st.salvaged_events, st.bytes, st.instance, st.pid, st.events,
			st.lost);
	return tv_cli_status(ret);
}
