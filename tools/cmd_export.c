// SPDX-License-Identifier: GPL-2.0
/* tracevisor export: the combined trace of a session in another format. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void export_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor export --format ctf|perfetto|perfetto-json|html -o OUT [-q] [--domain NAME]... DIR\n\n"
		"Writes every domain of the session DIR, in the reference clock when the\n"
		"session was synchronised (tracevisor sync), as one trace:\n"
		"  ctf       a CTF 1.8 directory OUT (babeltrace2, Trace Compass): one stream\n"
		"            per domain and CPU, event fields typed from the format files\n"
		"  perfetto  Perfetto's native protobuf trace OUT (ui.perfetto.dev,\n"
		"            trace_processor): a process group per layer (host CPUs, each\n"
		"            VM's vCPUs, each guest's CPUs, Xen pCPUs, traced processes),\n"
		"            VM exits as slices named by reason with a flow to the guest,\n"
		"            tasks and running Xen vCPUs as slices, the sync as clock\n"
		"            snapshots (doc/perfetto/trace.proto)\n"
		"  perfetto-json  a trace-event JSON file OUT (ui.perfetto.dev, chrome://tracing):\n"
		"            a track per host CPU, guest CPU and vCPU, VM exits as slices;\n"
		"            a Xen session's dom0 and domUs a process each, with per vCPU\n"
		"            a track of HVM exits (slices by reason) and one of runstates\n"
		"  html      one self-contained HTML file OUT (open it from file://): lanes\n"
		"            per host CPU, vCPU, guest CPU, Xen pCPU/vCPU and traced thread,\n"
		"            zoom/pan, stat's rows, latency histograms, sync and losses\n\n"
		"  -f, --format FORMAT  ctf, perfetto, perfetto-json or html\n"
		"  -o, --output OUT     output directory (ctf) or file (perfetto, perfetto-json, html)\n"
		"  -q, --quiet          no summary\n"
		"  --domain NAME        write this domain only (repeatable): host, xen,\n"
		"                       guest:NAME, ust-PARENT-PID (its traced processes too)\n"
		"  -h, --help           this help\n");
}

static const struct {
	const char *name;
	enum tv_export_format format;
} export_formats[] = {
	{ "ctf", TV_EXPORT_CTF },
	{ "perfetto", TV_EXPORT_PERFETTO },
	{ "perfetto-json", TV_EXPORT_PERFETTO_JSON },
	{ "html", TV_EXPORT_HTML },
};

static int export_format(const char *name, enum tv_export_format *out)
{
	for (size_t i = 0; i < sizeof(export_formats) / sizeof(export_formats[0]); i++) {
		if (!strcmp(name, export_formats[i].name)) {
			*out = export_formats[i].format;
			return 0;
		}
	}
	return -EINVAL;
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "domain", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL, *out = NULL;
	enum tv_export_format fmt = TV_EXPORT_CTF;
	struct tv_export_stats st = { 0 };
	struct tv_reader *rd;
	int quiet = 0, c, ret;

	while ((c = getopt_long(argc, argv, "f:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': out = optarg; break;
		case 'q': quiet = 1; break;
		case 'D':
			if (tv_reader_select_domain(optarg))
				return tv_cli_status(-EINVAL);
			break;
		case 'h': export_usage(stdout); return 0;
		default: export_usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc || !format || !out || export_format(format, &fmt)) {
		export_usage(stderr);
		return 2;
	}
	ret = tv_reader_open(argv[optind], &rd);
	if (ret)
		return tv_cli_status(ret);
	ret = tv_export(rd, argv[optind], out, fmt, &st);
	tv_reader_close(rd);
	if (!ret && !quiet && fmt == TV_EXPORT_CTF)
		fprintf(stderr, "%s: %llu events, %llu streams\n", out,
			(unsigned long long)st.events, (unsigned long long)st.streams);
	else if (!ret && !quiet && fmt == TV_EXPORT_HTML)
		fprintf(stderr, "%s: %llu events, %llu lanes, %llu items drawn one by one\n", out,
			(unsigned long long)st.events, (unsigned long long)st.streams,
			(unsigned long long)st.slices);
	else if (!ret && !quiet)
		fprintf(stderr, "%s: %llu events, %llu tracks, %llu VM exit slices\n", out,
			(unsigned long long)st.events, (unsigned long long)st.streams,
			(unsigned long long)st.slices);
	if (!ret && !quiet && st.runstate_slices)
		fprintf(stderr, "%s: %llu Xen runstate slices\n", out,
			(unsigned long long)st.runstate_slices);
	if (!ret && !quiet && st.unpaired_exits)
		fprintf(stderr, "note: %llu VM exits had no matching entry (recording edges or lost events)\n",
			(unsigned long long)st.unpaired_exits);
	return tv_cli_status(ret);
}
