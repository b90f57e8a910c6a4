// SPDX-License-Identifier: GPL-2.0
/* tracevisor report: a session's events, merged in time order. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event-parse.h>
#include <trace-seq.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void report_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor report [--json] [--date] [--domain NAME]... DIR\n\n"
		"Prints every event of the session DIR in time order, one per line:\n"
		"time, CPU, task, system:event and its fields.  Recorded text is escaped\n"
		"for the terminal (control bytes as \\n, \\t, \\r, \\xNN); --json keeps the bytes.\n\n"
		"  --json      JSON lines: ts (ns), domain, cpu, pid, comm, event, fields\n"
		"  --date      the wall-clock time (UTC) instead of the trace clock's seconds;\n"
		"              with --json, a \"date\" key beside ts\n"
		"  --domain NAME  read this domain only (repeatable): host, xen, guest:NAME,\n"
		"              ust-PARENT-PID; a domain's traced processes come with it\n"
		"  -h, --help  this help\n");
}

/* @n bytes of @s right-aligned (@right) or left-aligned in @width columns at @out. */
static char *put_padded(char *out, const char *s, size_t n, size_t width, int right)
{
	size_t pad = n < width ? width - n : 0;

	if (right) {
		memset(out, ' ', pad);
		out += pad;
	}
	memcpy(out, s, n);
	out += n;
	if (!right) {
		memset(out, ' ', pad);
		out += pad;
	}
	return out;
}

/*
 * Lines are written in batches straight to fd 1: one fwrite per event cost
 * 8%, and stdio's buffer was one more copy.  A failed write (a closed pipe,
 * a full disk) ends the report with an error.
 */
static int flush_batch(struct tv_strbuf *sb, int all)
{
	size_t done = 0;

	if (sb->len < (1 << 18) && !(all && sb->len))
		return 0;
	while (done < sb->len) {
		ssize_t n = write(STDOUT_FILENO, sb->data + done, sb->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			tv_cli_error("report", "Cannot write the report: errno=%d (%s)", e, strerror(e));
			return -e;
		}
		done += (size_t)n;
	}
	tv_strbuf_reset(sb);
	return 0;
}

/* The last task looked up: a CPU runs one task for many events in a row. */
struct comm_cache {
	struct tep_handle *tep;
	int pid;
	const char *comm;
	size_t len;
	struct tv_strbuf json;		/* comm as a JSON string, "" while stale */
	struct tv_strbuf text;		/* comm escaped for the terminal, "" while stale */
	const char *domain;
	struct tv_strbuf json_domain;	/* domain as a JSON string */
	const char *text_domain_of;
	struct tv_strbuf text_domain;	/* domain escaped for the terminal */
	/* "sys:name" escaped, by event type: enter/exit pairs alternate. */
	struct {
		const struct tep_event *format;
		struct tv_strbuf text;
	} names[16];
};

/* @ev's "sys:name" escaped for the terminal, made once per type (slot). */
static const struct tv_strbuf *lookup_event_name(struct comm_cache *cc, const struct tv_event *ev)
{
	size_t slot = ((uintptr_t)ev->format >> 6) % (sizeof(cc->names) / sizeof(cc->names[0]));
	struct tv_strbuf *t = &cc->names[slot].text;
	const char *sys = ev->format ? ev->format->system : "?";
	const char *name = ev->format ? ev->format->name : "?";

	if (cc->names[slot].format == ev->format && ev->format && t->len)
		return t;
	cc->names[slot].format = ev->format;
	tv_strbuf_reset(t);
	if (tv_strbuf_append_text(t, sys, strlen(sys)) || tv_strbuf_append_mem(t, ":", 1) ||
	    tv_strbuf_append_text(t, name, strlen(name)))
		return NULL;
	return t;
}

static void lookup_comm(struct comm_cache *cc, const struct tv_event *ev)
{
	if (cc->comm && cc->tep == ev->tep && cc->pid == ev->pid)
		return;
	cc->tep = ev->tep;
	cc->pid = ev->pid;
	cc->comm = tep_data_comm_from_pid(ev->tep, ev->pid);
	if (!cc->comm)
		cc->comm = "<...>";
	cc->len = strlen(cc->comm);
	tv_strbuf_reset(&cc->json);
	tv_strbuf_reset(&cc->text);
}

/*
 * The recorded names of the text line, escaped for the terminal once per
 * change (a guest names its tasks, its event formats and, through the
 * session's files, maybe its domain): tv_strbuf_append_text().
 */
static int lookup_text_names(struct comm_cache *cc, const struct tv_event *ev, int show_domain)
{
	int ret = 0;

	lookup_comm(cc, ev);
	if (!cc->text.len)
		ret = tv_strbuf_append_text(&cc->text, cc->comm, cc->len);
	if (show_domain && (cc->text_domain_of != ev->domain || !cc->text_domain.len)) {
		cc->text_domain_of = ev->domain;
		tv_strbuf_reset(&cc->text_domain);
		ret = ret ?: tv_strbuf_append_text(&cc->text_domain, ev->domain, strlen(ev->domain));
	}
	return ret;
}

/* The event's comm and domain as JSON strings, escaped once per change. */
static int lookup_json_names(struct comm_cache *cc, const struct tv_event *ev)
{
	lookup_comm(cc, ev);
	if (!cc->json.len && tv_strbuf_append_json_string(&cc->json, cc->comm, cc->len))
		return -ENOMEM;
	if (cc->domain == ev->domain && cc->json_domain.len)
		return 0;
	cc->domain = ev->domain;
	tv_strbuf_reset(&cc->json_domain);
	return tv_strbuf_append_json_string(&cc->json_domain, ev->domain, strlen(ev->domain));
}

/*
 * "comm-pid [cpu] s.ns: sys:event info", as trace-cmd prints it.  The
 * prefix is assembled by hand in one go and the info is compiled
 * (tv_event_append_info): printf's format parsing cost more than the rest.
 */
/* The event's time: trace-clock seconds, or with --date (@wall) the wall clock. */
static char *put_time(char *out, const struct tv_event *ev, const struct tv_wall_clock *wall)
{
	if (wall) {
		tv_wall_clock_format(tv_wall_clock_ns(wall, ev->ts), out);
		return out + strlen(out);
	}
	out = tv_put_u64(out, ev->ts / 1000000000ULL, 1);
	*out++ = '.';
	return tv_put_u64(out, ev->ts % 1000000000ULL, 9);
}

static int print_text(const struct tv_event *ev, struct comm_cache *cc, struct tv_strbuf *sb,
		      int show_domain, const struct tv_wall_clock *wall)
{
	const struct tv_strbuf *event_name = lookup_event_name(cc, ev);
	size_t dlen, info;
	char num[24], *out;
	int ret = event_name ? lookup_text_names(cc, ev, show_domain) : -ENOMEM;

	dlen = show_domain ? cc->text_domain.len : 0;
	if (!ret && ev->missed_before && show_domain)
		ret = tv_strbuf_append(sb, "%-12s ", cc->text_domain.data);
	if (ev->missed_before < 0)	/* flagged, but the count did not fit */
		ret = ret ?: tv_strbuf_append(sb, "CPU:%d [LOST EVENTS]\n", ev->cpu);
	else if (ev->missed_before > 0)
		ret = ret ?: tv_strbuf_append(sb, "CPU:%d [LOST %lld EVENTS]\n", ev->cpu,
					      ev->missed_before);
	if (ret || tv_strbuf_reserve(sb, dlen + cc->text.len + event_name->len + 128))
		return -ENOMEM;
	out = sb->data + sb->len;
	if (show_domain) {
		out = put_padded(out, cc->text_domain.data, dlen, 12, 0);
		*out++ = ' ';
	}
	out = put_padded(out, cc->text.data, cc->text.len, 16, 1);
	num[0] = '-';
	if (ev->pid < 0) {
		num[1] = '-';
		out = put_padded(out, num, (size_t)(tv_put_u64(num + 2, -(uint64_t)ev->pid, 1) - num), 8, 0);
	} else {
		out = put_padded(out, num, (size_t)(tv_put_u64(num + 1, (uint64_t)ev->pid, 1) - num), 8, 0);
	}
	*out++ = ' ';
	*out++ = '[';
	out = tv_put_u64(out, (uint64_t)ev->cpu, 3);
	*out++ = ']';
	*out++ = ' ';
	out = put_time(out, ev, wall);
	*out++ = ':';
	*out++ = ' ';
	memcpy(out, event_name->data, event_name->len);
	out += event_name->len;
	*out++ = ' ';
	sb->len = (size_t)(out - sb->data);
	info = sb->len;
	/* The info escaped whole: its strings are recorded, and so is its print
	 * format (a guest's format file); the line's own newline comes after. */
	if (tv_event_append_info(ev, sb) || tv_strbuf_escape_from(sb, info) ||
	    tv_strbuf_append_mem(sb, "\n", 1))
		return -ENOMEM;
	return flush_batch(sb, 0);
}

#define APPEND_LIT(sb, lit) tv_strbuf_append_mem(sb, lit, sizeof(lit) - 1)

/* Built from fixed pieces: a format string per event costs more than the rest. */
static int print_json(const struct tv_event *ev, struct comm_cache *cc, struct tv_strbuf *sb,
		      const struct tv_wall_clock *wall, bool open)
{
	char date[TV_WALL_CLOCK_LEN];
	int ret = lookup_json_names(cc, ev);

	ret = ret ?: APPEND_LIT(sb, "{\"ts\":");
	ret = ret ?: tv_strbuf_append_u64(sb, ev->ts);
	if (wall) {
		tv_wall_clock_format(tv_wall_clock_ns(wall, ev->ts), date);
		ret = ret ?: APPEND_LIT(sb, ",\"date\":\"");
		ret = ret ?: tv_strbuf_append_mem(sb, date, strlen(date));
		ret = ret ?: APPEND_LIT(sb, "\"");
	}
	ret = ret ?: APPEND_LIT(sb, ",\"domain\":");
	ret = ret ?: tv_strbuf_append_mem(sb, cc->json_domain.data, cc->json_domain.len);
	ret = ret ?: APPEND_LIT(sb, ",\"cpu\":");
	ret = ret ?: tv_strbuf_append_i64(sb, ev->cpu);
	ret = ret ?: APPEND_LIT(sb, ",\"pid\":");
	ret = ret ?: tv_strbuf_append_i64(sb, ev->pid);
	ret = ret ?: APPEND_LIT(sb, ",\"comm\":");
	ret = ret ?: tv_strbuf_append_mem(sb, cc->json.data, cc->json.len);
	ret = ret ?: APPEND_LIT(sb, ",\"event\":\"");
	ret = ret ?: tv_strbuf_append_mem(sb, ev->format->system, strlen(ev->format->system));
	ret = ret ?: APPEND_LIT(sb, ":");
	ret = ret ?: tv_strbuf_append_mem(sb, ev->format->name, strlen(ev->format->name));
	ret = ret ?: APPEND_LIT(sb, "\"");
	if (!ret && ev->missed_before)
		ret = tv_strbuf_append(sb, ",\"lost_before\":%lld", ev->missed_before);
	ret = ret ?: APPEND_LIT(sb, ",\"fields\":");
	ret = ret ?: tv_event_fields_json(ev, sb);
	if (open)	/* the trigger's mark closes it */
		return ret;
	ret = ret ?: APPEND_LIT(sb, "}\n");
	return ret ?: flush_batch(sb, 0);
}

/*
 * A triggered snapshot (session.meta's trigger keys, record --trigger):
 * the event that fired, found in a first pass as the host event of the
 * trigger's kind (its event, the exit's kvm_exit on its thread, or on Xen
 * the VMEXIT record of its domain's vCPU, in the xen-tsc clock; for a
 * guest= rule the guest's event on its CPU, in the guest's clock) whose
 * own time stamp is nearest trigger_time, within 1 ms (the trigger's time
 * comes from its own instance or from BPF's clock: a few microseconds off),
 * 10 ms for a KVM exit rule: BPF's program and the ring's event are two
 * callbacks of the tracepoint, and a nested L1 whose vCPU the host
 * descheduled between them stamped them 2.5 ms apart (lab kvm-svm-flight).
 */
struct trigger_mark {
	struct tv_meta *meta;		/* NULL: not a triggered snapshot */
	const char *rule;
	char system[64], name[128];
	int cpu, tid;			/* -1: any */
	int domid, vcpu;		/* a Xen exit's (trigger_domid): -1 none */
	char guest[80];			/* a guest= rule's domain, guest-NAME; "": the host's */
	uint64_t time;
	uint64_t best_n, best_d;	/* the nearest so far: its ordinal (from 1), distance */
};

#define TRIGGER_WINDOW_NS 1000000ULL
#define TRIGGER_EXIT_WINDOW_NS 10000000ULL

/* A Xen exit rule's VMEXIT: its vCPU's, in the xen domain (trigger_time is in its raw clock). */
static int trigger_matches_xen(const struct trigger_mark *t, const struct tv_event *ev)
{
	unsigned long long dom = ~0ULL, vcpu = ~0ULL;

	if (strcmp(ev->domain_info->name, "xen") || strcmp(ev->format->name, "xen_vmexit"))
		return 0;
	if (tep_get_field_val(NULL, ev->format, "cur_dom", ev->record, &dom, 0) ||
	    tep_get_field_val(NULL, ev->format, "cur_vcpu", ev->record, &vcpu, 0))
		return 0;
	return dom == (uint64_t)t->domid && vcpu == (uint64_t)t->vcpu;
}

static int trigger_matches(const struct trigger_mark *t, const struct tv_event *ev)
{
	if (t->domid >= 0)
		return trigger_matches_xen(t, ev);
	if (strcmp(ev->domain_info->subdir, t->guest[0] ? t->guest : "host"))
		return 0;
	return (t->cpu < 0 || ev->cpu == t->cpu) &&
	       (t->tid < 0 || ev->pid == t->tid) && !strcmp(ev->format->system, t->system) &&
	       !strcmp(ev->format->name, t->name);
}

/* The trigger keys of DIR's session.meta; 0 also when there are none (t->meta NULL). */
static int trigger_find(const char *dir, struct trigger_mark *t)
{
	char path[4200];
	const char *what;
	struct tv_reader *rd;
	struct tv_event ev;
	uint64_t n = 0;
	int ret;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/session.meta", dir);
	/* no session.meta: the reader's own words say what that means */
	if (access(path, F_OK) || tv_meta_read(path, &t->meta) ||
	    !(t->rule = tv_meta_get(t->meta, "trigger")))
		return 0;
	t->time = (uint64_t)tv_meta_get_ll(t->meta, "trigger_time", 0);
	t->cpu = (int)tv_meta_get_ll(t->meta, "trigger_cpu", -1);
	t->tid = (int)tv_meta_get_ll(t->meta, "trigger_tid", -1);
	t->domid = (int)tv_meta_get_ll(t->meta, "trigger_domid", -1);
	t->vcpu = (int)tv_meta_get_ll(t->meta, "trigger_vcpu", -1);
	if (tv_meta_get(t->meta, "trigger_guest"))
		snprintf(t->guest, sizeof(t->guest), "guest-%s", tv_meta_get(t->meta, "trigger_guest"));
	what = tv_meta_get(t->meta, "trigger_event");
	if (!what)
		what = t->domid >= 0 ? "xen:xen_vmexit" : t->tid >= 0 ? "kvm:kvm_exit" : "";
	if (sscanf(what, "%63[^:]:%127s", t->system, t->name) != 2)
		return 0;
	ret = tv_reader_open(dir, &rd);
	if (ret)
		return ret;
	t->best_d = (t->tid >= 0 && t->domid < 0 ? TRIGGER_EXIT_WINDOW_NS : TRIGGER_WINDOW_NS) + 1;
	while ((ret = tv_reader_next(rd, &ev)) > 0) {
		uint64_t d = ev.ts_raw > t->time ? ev.ts_raw - t->time : t->time - ev.ts_raw;

		n++;
		if (d < t->best_d && trigger_matches(t, &ev)) {
			t->best_d = d;
			t->best_n = n;
		}
	}
	tv_reader_close(rd);
	return ret < 0 ? ret : 0;
}

/* After the triggering event's line: what fired. */
static int trigger_put(const struct trigger_mark *t, struct tv_strbuf *sb, int json)
{
	const char *lat = tv_meta_get(t->meta, "trigger_latency_ns");

	int ret;

	if (json) {	/* inside the event's object, before its closing brace */
		ret = tv_strbuf_append(sb, ",\"trigger\":");
		ret = ret ?: tv_strbuf_append_json_string(sb, t->rule, strlen(t->rule));
		return ret ?: tv_strbuf_append(sb, "}\n");
	}
	return tv_strbuf_append(sb, "  ^ trigger: %s%s%s%s\n", tv_cli_text(t->rule),
				lat ? " (exit latency " : "", lat ? lat : "", lat ? " ns)" : "");
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "date", no_argument, NULL, 'd' },
		{ "domain", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tv_strbuf sb = { 0 };
	struct comm_cache cc = { 0 };
	struct tv_reader *rd;
	struct tv_event ev;
	struct tv_wall_clock wall_clock, *wall = NULL;
	struct trigger_mark trig;
	uint64_t n = 0;
	int json = 0, date = 0, c, ret, show_domain;

	while ((c = getopt_long(argc, argv, "jdh", longopts, NULL)) != -1) {
		if (c == 'j') {
			json = 1;
		} else if (c == 'd') {
			date = 1;
		} else if (c == 'D') {
			if (tv_reader_select_domain(optarg))
				return tv_cli_status(-EINVAL);
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
	if (date) {
		ret = tv_wall_clock_find(argv[optind], &wall_clock);
		if (ret)
			return tv_cli_status(ret);
		wall = &wall_clock;
	}
	ret = trigger_find(argv[optind], &trig);
	if (!ret)
		ret = tv_reader_open(argv[optind], &rd);
	if (ret) {
		tv_meta_free(trig.meta);
		return tv_cli_status(ret);
	}
	show_domain = tv_reader_nr_domains(rd) > 1;
	while ((ret = tv_reader_next(rd, &ev)) > 0) {
		bool marked = ++n == trig.best_n;

		if (json)
			ret = print_json(&ev, &cc, &sb, wall, marked);
		else
			ret = print_text(&ev, &cc, &sb, show_domain, wall);
		if (ret >= 0 && marked)
			ret = trigger_put(&trig, &sb, json);
		if (ret < 0)
			break;
	}
	tv_meta_free(trig.meta);
	/* What was read before an error is printed before the error counts. */
	c = flush_batch(&sb, 1);
	ret = ret < 0 ? ret : c;
	tv_strbuf_free(&sb);
	tv_strbuf_free(&cc.json);
	tv_strbuf_free(&cc.json_domain);
	tv_strbuf_free(&cc.text);
	tv_strbuf_free(&cc.text_domain);
	for (size_t i = 0; i < sizeof(cc.names) / sizeof(cc.names[0]); i++)
		tv_strbuf_free(&cc.names[i].text);
	tv_reader_close(rd);
	return tv_cli_status(ret < 0 ? ret : 0);
}
