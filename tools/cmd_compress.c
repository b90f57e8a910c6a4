// SPDX-License-Identifier: GPL-2.0
/* tracevisor compress: the session's raw stream files as zstd. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void compress_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor compress DIR\n\n"
		"Compresses every stream file DIR/DOMAIN/cpuN.raw (and Xen's cpuN.xen) of\n"
		"the session DIR into cpuN.raw.zst (cpuN.xen.zst; zstd: `zstd -d` gives the\n"
		"file back).  report, stat,\n"
		"sync and export read either form.  Each file is replaced only once its\n"
		"compressed copy is on disk.\n\n"
		"  -h, --help     this help\n");
}

/* Also called by `record --compress` once the session is complete. */
int tv_cli_compress(const char *dir)
{
	struct tv_compress_stats st;
	int ret = tv_session_compress(dir, &st);

	if (!ret)
		fprintf(stderr, "tracevisor: compressed %llu stream files: %.1f MB -> %.1f MB (%.1fx)\n",
			(unsigned long long)st.files, (double)st.bytes_in / 1e6,
			(double)st.bytes_out / 1e6,
			st.bytes_out ? (double)st.bytes_in / (double)st.bytes_out : 1.0);
	return ret;
}

int cmd_compress(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			compress_usage(stdout);
			return 0;
		}
		compress_usage(stderr);
		return 2;
	}
	if (optind + 1 != argc) {
		compress_usage(stderr);
		return 2;
	}
	return tv_cli_status(tv_cli_compress(argv[optind]));
}
