// SPDX-License-Identifier: GPL-2.0
/* tracevisor report: a session's events, merged in time order. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include <trace-seq.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void report_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor report [--json] DIR\n\n"
		"Prints every event of the session DIR in time order, one per line:\n"
		"time, CPU, task, system:event and its fields.\n\n"
		"  --json      JSON lines: ts (ns), domain, cpu, pid, comm, event, fields\n"
		"  -h, --help  this help\n");
}

static void print_text(const struct tv_event *ev, struct trace_seq *seq, int show_domain)
{
	const char *comm = tep_data_comm_from_pid(ev->tep, ev->pid);

	if (ev->missed_before && show_domain)
		printf("%-12s ", ev->domain);
	if (ev->missed_before < 0)	/* flagged, but the count did not fit */
		printf("CPU:%d [LOST EVENTS]\n", ev->cpu);
	else if (ev->missed_before > 0)
		printf("CPU:%d [LOST %lld EVENTS]\n", ev->cpu, ev->missed_before);
	trace_seq_reset(seq);
	tep_print_event(ev->tep, seq, ev->record, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(seq);
	if (show_domain)
		printf("%-12s ", ev->domain);
	printf("%16s-%-7d [%03d] %llu.%09llu: %s:%s %s\n", comm ? comm : "<...>", ev->pid, ev->cpu,
	       (unsigned long long)(ev->ts / 1000000000ULL),
	       (unsigned long long)(ev->ts % 1000000000ULL),
	       ev->format ? ev->format->system : "?", ev->format ? ev->format->name : "?",
	       seq->buffer);
}

static int print_json(const struct tv_event *ev, struct tv_strbuf *sb)
{
	const char *comm = tep_data_comm_from_pid(ev->tep, ev->pid);
	int ret;

	tv_strbuf_reset(sb);
	ret = tv_strbuf_append(sb, "{\"ts\":%llu,\"domain\":", (unsigned long long)ev->ts);
	if (!ret)
		ret = tv_strbuf_append_json_string(sb, ev->domain, strlen(ev->domain));
	if (!ret)
		ret = tv_strbuf_append(sb, ",\"cpu\":%d,\"pid\":%d,\"comm\":", ev->cpu, ev->pid);
	if (!ret)
		ret = tv_strbuf_append_json_string(sb, comm ? comm : "<...>",
						   strlen(comm ? comm : "<...>"));
	if (!ret)
		ret = tv_strbuf_append(sb, ",\"event\":\"%s:%s\"", ev->format->system,
				       ev->format->name);
	if (!ret && ev->missed_before)
		ret = tv_strbuf_append(sb, ",\"lost_before\":%lld", ev->missed_before);
	if (!ret)
		ret = tv_strbuf_append(sb, ",\"fields\":");
	if (!ret)
		ret = tv_event_fields_json(ev, sb);
	if (!ret)
		ret = tv_strbuf_append(sb, "}\n");
	if (!ret)
		fwrite(sb->data, 1, sb->len, stdout);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char outbuf[1 << 20];
	struct tv_strbuf sb = { 0 };
	struct trace_seq seq;
	struct tv_reader *rd;
	struct tv_event ev;
	int json = 0, c, ret, show_domain;

	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		if (c == 'j') {
			json = 1;
		} else if (c == 'h') {
			report_usage(stdout);
			return 0;
		} else {
			report_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		report_usage(stderr);
		return 2;
	}
	ret = tv_reader_open(argv[optind], &rd);
	if (ret)
		return tv_cli_status(ret);
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	trace_seq_init(&seq);
	show_domain = tv_reader_nr_domains(rd) > 1;
	while ((ret = tv_reader_next(rd, &ev)) > 0) {
		if (json)
			ret = print_json(&ev, &sb);
		else
			print_text(&ev, &seq, show_domain);
		if (ret < 0)
			break;
	}
	fflush(stdout);
	trace_seq_destroy(&seq);
	tv_strbuf_free(&sb);
	tv_reader_close(rd);
	return tv_cli_status(ret < 0 ? ret : 0);
}
