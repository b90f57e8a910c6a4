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

/* @s right-aligned (@right) or left-aligned in @width columns, like %*s / %-*s. */
static void append_padded(struct tv_strbuf *sb, const char *s, size_t n, size_t width, int right)
{
	static const char spaces[] = "                                ";
	size_t pad = n < width ? width - n : 0;

	if (pad > sizeof(spaces) - 1)
		pad = sizeof(spaces) - 1;
	if (right)
		tv_strbuf_append_mem(sb, spaces, pad);
	tv_strbuf_append_mem(sb, s, n);
	if (!right)
		tv_strbuf_append_mem(sb, spaces, pad);
}

/* Zero-padded decimal of @v in at least @width digits (%0*llu). */
static void append_zero_padded(struct tv_strbuf *sb, uint64_t v, int width)
{
	char tmp[24];
	int i = (int)sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v || (int)sizeof(tmp) - i < width);
	tv_strbuf_append_mem(sb, tmp + i, sizeof(tmp) - (size_t)i);
}

/*
 * "comm-pid [cpu] s.ns: sys:event info", as trace-cmd prints it.  The line
 * is assembled by hand: printf's format parsing cost as much as the rest.
 */
static void print_text(const struct tv_event *ev, struct trace_seq *seq, struct tv_strbuf *sb,
		       int show_domain)
{
	const char *comm = tep_data_comm_from_pid(ev->tep, ev->pid);
	char num[24];
	int n;

	if (ev->missed_before && show_domain)
		printf("%-12s ", ev->domain);
	if (ev->missed_before < 0)	/* flagged, but the count did not fit */
		printf("CPU:%d [LOST EVENTS]\n", ev->cpu);
	else if (ev->missed_before > 0)
		printf("CPU:%d [LOST %lld EVENTS]\n", ev->cpu, ev->missed_before);
	trace_seq_reset(seq);
	tep_print_event(ev->tep, seq, ev->record, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(seq);
	if (!comm)
		comm = "<...>";
	tv_strbuf_reset(sb);
	if (show_domain) {
		append_padded(sb, ev->domain, strlen(ev->domain), 12, 0);
		tv_strbuf_append_mem(sb, " ", 1);
	}
	append_padded(sb, comm, strlen(comm), 16, 1);
	n = snprintf(num, sizeof(num), "-%d", ev->pid);
	append_padded(sb, num, (size_t)n, 8, 0);
	tv_strbuf_append_mem(sb, " [", 2);
	append_zero_padded(sb, (uint64_t)ev->cpu, 3);
	tv_strbuf_append_mem(sb, "] ", 2);
	tv_strbuf_append_u64(sb, ev->ts / 1000000000ULL);
	tv_strbuf_append_mem(sb, ".", 1);
	append_zero_padded(sb, ev->ts % 1000000000ULL, 9);
	tv_strbuf_append_mem(sb, ": ", 2);
	if (ev->format) {
		tv_strbuf_append_mem(sb, ev->format->system, strlen(ev->format->system));
		tv_strbuf_append_mem(sb, ":", 1);
		tv_strbuf_append_mem(sb, ev->format->name, strlen(ev->format->name));
	} else {
		tv_strbuf_append_mem(sb, "?:?", 3);
	}
	tv_strbuf_append_mem(sb, " ", 1);
	tv_strbuf_append_mem(sb, seq->buffer, seq->len);
	tv_strbuf_append_mem(sb, "\n", 1);
	fwrite(sb->data, 1, sb->len, stdout);
}

#define APPEND_LIT(sb, lit) tv_strbuf_append_mem(sb, lit, sizeof(lit) - 1)

/* Built from fixed pieces: a format string per event costs more than the rest. */
static int print_json(const struct tv_event *ev, struct tv_strbuf *sb)
{
	const char *comm = tep_data_comm_from_pid(ev->tep, ev->pid);
	int ret;

	if (!comm)
		comm = "<...>";
	ret = APPEND_LIT(sb, "{\"ts\":");
	ret = ret ?: tv_strbuf_append_u64(sb, ev->ts);
	ret = ret ?: APPEND_LIT(sb, ",\"domain\":");
	ret = ret ?: tv_strbuf_append_json_string(sb, ev->domain, strlen(ev->domain));
	ret = ret ?: APPEND_LIT(sb, ",\"cpu\":");
	ret = ret ?: tv_strbuf_append_i64(sb, ev->cpu);
	ret = ret ?: APPEND_LIT(sb, ",\"pid\":");
	ret = ret ?: tv_strbuf_append_i64(sb, ev->pid);
	ret = ret ?: APPEND_LIT(sb, ",\"comm\":");
	ret = ret ?: tv_strbuf_append_json_string(sb, comm, strlen(comm));
	ret = ret ?: APPEND_LIT(sb, ",\"event\":\"");
	ret = ret ?: tv_strbuf_append_mem(sb, ev->format->system, strlen(ev->format->system));
	ret = ret ?: APPEND_LIT(sb, ":");
	ret = ret ?: tv_strbuf_append_mem(sb, ev->format->name, strlen(ev->format->name));
	ret = ret ?: APPEND_LIT(sb, "\"");
	if (!ret && ev->missed_before)
		ret = tv_strbuf_append(sb, ",\"lost_before\":%lld", ev->missed_before);
	ret = ret ?: APPEND_LIT(sb, ",\"fields\":");
	ret = ret ?: tv_event_fields_json(ev, sb);
	ret = ret ?: APPEND_LIT(sb, "}\n");
	/* Lines are written in batches: one fwrite per event cost 8%. */
	if (!ret && sb->len >= (1 << 16)) {
		fwrite(sb->data, 1, sb->len, stdout);
		tv_strbuf_reset(sb);
	}
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
			print_text(&ev, &seq, &sb, show_domain);
		if (ret < 0)
			break;
	}
	if (json && sb.len)
		fwrite(sb.data, 1, sb.len, stdout);
	fflush(stdout);
	trace_seq_destroy(&seq);
	tv_strbuf_free(&sb);
	tv_reader_close(rd);
	return tv_cli_status(ret < 0 ? ret : 0);
}
