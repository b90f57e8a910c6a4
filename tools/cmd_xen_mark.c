// SPDX-License-Identifier: GPL-2.0
/* tracevisor xen-mark: a sync point in Xen's trace, from dom0. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void mark_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor xen-mark [--event N] [WORD...]\n\n"
		"Writes a guest record (TRC_GUEST | N, up to 7 32-bit WORDs) into Xen's\n"
		"trace buffers through HVMOP_xentrace, and prints dom0's CLOCK_MONOTONIC\n"
		"(ns) just before and after: a sync point between dom0 and Xen.  On the\n"
		"patched hypervisor (xen/patches/) the record carries Xen's TSC.\n\n"
		"  --event N   0..4095 (default 1)\n"
		"  -h, --help  this help\n");
}

int cmd_xen_mark(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long event = 1;
	uint32_t words[7];
	unsigned int nr = 0;
	uint64_t mono[2];
	char *end;
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'e') {
			event = strtoul(optarg, &end, 0);
			if (*end || event > 4095) {
				tv_cli_error("xen-mark", "invalid --event: '%s' (0..4095)", optarg);
				return 2;
			}
		} else {
			mark_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	for (; optind < argc; optind++) {
		if (nr == 7) {
			tv_cli_error("xen-mark", "at most 7 words");
			return 2;
		}
		words[nr++] = (uint32_t)strtoul(argv[optind], &end, 0);
		if (*end) {
			tv_cli_error("xen-mark", "invalid word: '%s'", argv[optind]);
			return 2;
		}
	}
	ret = tv_xen_inject((unsigned int)event, words, nr, mono);
	if (!ret)
		printf("mono_before_ns=%llu mono_after_ns=%llu\n", (unsigned long long)mono[0],
		       (unsigned long long)mono[1]);
	return tv_cli_status(ret);
}
