// SPDX-License-Identifier: GPL-2.0
/* tracevisor import: convert other tools' recordings into a session. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void import_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor import xentrace FILE -o DIR [--cpu-khz KHZ]\n\n"
		"Converts a file written by Xen's xentrace into the session DIR (domain\n"
		"xen/), to be read by report, stat and export like a recording.\n\n"
		"  -o, --output DIR   session directory to create\n"
		"      --cpu-khz KHZ  TSC frequency for TSC -> ns (default: xc_physinfo's\n"
		"                     when run in a Xen dom0, else 2400000 with a warning)\n"
		"  -h, --help         this help\n");
}

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "cpu-khz", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *outdir = NULL;
	unsigned long long khz = 0;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outdir = optarg;
			break;
		case 'k':
			khz = strtoull(optarg, &end, 10);
			if (*end || !khz) {
				tv_cli_error("import", "invalid --cpu-khz: '%s'", optarg);
				return 2;
			}
			break;
		case 'h':
			import_usage(stdout);
			return 0;
		default:
			import_usage(stderr);
			return 2;
		}
	}
	if (optind + 2 != argc || !outdir || strcmp(argv[optind], "xentrace")) {
		import_usage(stderr);
		return 2;
	}
	return tv_cli_status(tv_xen_import_xentrace(argv[optind + 1], outdir, khz));
}
