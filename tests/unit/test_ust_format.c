// SPDX-License-Identifier: GPL-2.0
/*
 * The metadata and record layout of libtracevisor-ust, decoded by
 * libtraceevent exactly as the session reader decodes kernel events: one
 * event with every field kind (integers of each size and sign, a string,
 * a byte array, an enum) is emitted, read back by the in-test consumer,
 * its format taken from the metadata area and parsed with
 * tep_parse_event(), and the record printed and its fields read.  The
 * buffers use the x86-tsc clock: the time stamp lies between two rdtsc.
 */
#include "ust_test_common.h"

#include <event-parse.h>
#include <trace-seq.h>
#include <tracevisor/ust.h>

TV_UST_ENUM(fmt, state, { 0, "idle" }, { 1, "busy" }, { 7, "gone" })

TV_UST_EVENT(fmt, all,
	TV_UST_ARGS(int8_t small, uint16_t port, int32_t delta, uint64_t big, const char *who,
		    const void *raw, size_t rawlen, int st),
	TV_UST_FIELDS(tv_ust_field_integer(int8_t, small, small),
		      tv_ust_field_integer(uint16_t, port, port),
		      tv_ust_field_integer(int32_t, delta, delta),
		      tv_ust_field_integer(uint64_t, big, big),
		      tv_ust_field_string(who, who),
		      tv_ust_field_bytes(raw, raw, rawlen),
		      tv_ust_field_enum(fmt, state, int, st, st)))

TV_UST_EVENT(fmt, empty, TV_UST_ARGS(void), TV_UST_FIELDS())

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

struct got {
	uint64_t ts;
	char event[512];
	uint16_t size, id;
	int n;
};

static void keep(void *ctx, uint32_t buf, uint64_t ts, uint16_t id, int32_t tid, const char *event,
		 uint16_t size)
{
	struct got *g = ctx;

	(void)buf;
	(void)tid;
	if (id == tv_ust__tp_fmt_all.id && size - 8 <= (int)sizeof(g->event)) {
		g->ts = ts;
		memcpy(g->event, event, size - 8u);
		g->size = size - 8;
	}
	g->id = id;
	g->n++;
}

static void keep_log(const char *msg, void *ctx)
{
	char **last = ctx;

	free(*last);
	*last = strdup(msg);
}

/* The format text of event @name in the metadata, without its "event" line. */
static char *meta_format(struct ustc *c, const char *name, unsigned int *id)
{
	const char *meta = c->base + c->h->meta_offset, *end = meta + c->h->meta_len, *p = meta;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *stop;
		char line[128];

		if (!nl)
			return NULL;
		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		stop = strstr(nl, "\n" TV_UST_META_END);
		if (!stop)
			return NULL;
		if (sscanf(line, "event %u", id) == 1 && !strcmp(strchr(line + 6, ' ') + 1, name))
			return strndup(nl + 1, (size_t)(stop + 1 - (nl + 1)));
		p = stop + 1 + strlen(TV_UST_META_END);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct tv_ust_config cfg = { TV_UST_CLOCK_X86_TSC, TV_UST_MODE_DISCARD, 4096, 2, 0, 0 };
	uint64_t tsc0, tsc1;
	const uint8_t raw[4] = { 0xde, 0xad, 0xbe, 0xef };
	struct got g = { 0 };
	struct tep_handle *tep;
	struct tep_event *ev;
	struct tep_record rec = { 0 };
	struct trace_seq s;
	unsigned int id = 0;
	unsigned long long val;
	struct ustc c;
	char *fmt;

	(void)argc;
	ust_test_private(argv);
	/* errors before the buffers exist */
	{
		struct tv_ust_config bad = cfg;
		char *log = NULL;

		TV_CHECK(tv_ust_memfd() == -ENOENT && tv_ust_flush(10) == -ENOENT, "no buffers yet");
		TV_CHECK(tv_ust_enable("") == -EINVAL && tv_ust_disable(NULL) == -EINVAL, "empty glob");
		tv_ust_log_set_callback(keep_log, &log);
		bad.subbuf_size = 3000;
		TV_CHECK(tv_ust_start(&bad) == -EINVAL, "sub-buffer size not a power of two");
		TV_CHECK(log && strstr(log, "Bad buffer settings: subbuf_size=3000"), "one line says why: %s",
			 log ? log : "(nothing)");
		bad = cfg;
		bad.nr_subbufs = 1;
		TV_CHECK(tv_ust_start(&bad) == -EINVAL, "one sub-buffer");
		bad = cfg;
		bad.mode = 7;
		TV_CHECK(tv_ust_start(&bad) == -EINVAL, "unknown mode");
		tv_ust_log_set_callback(NULL, NULL);
		free(log);
	}
	TV_CHECK(tv_ust_start(&cfg) == 0, "start");
	TV_CHECK(tv_ust_start(NULL) == 0, "started twice: nothing changes");
	TV_CHECK(tv_ust_enable("fmt:*") == 2, "enable fmt:*");
	TV_CHECK(tv_ust_event_enabled("fmt:all") == 1, "fmt:all enabled");
	TV_CHECK(tv_ust_event_enabled("fmt:nope") == -ENOENT, "unknown event");
	tsc0 = rdtsc();
	tv_ust_trace(fmt, all, -5, 8080, -123456, 0x1122334455667788ull, "hello", raw, sizeof(raw), 1);
	tsc1 = rdtsc();
	tv_ust_trace(fmt, empty);
	TV_CHECK(tv_ust_flush(1000) == 0, "flush");
	TV_CHECK(ustc_map(&c, tv_ust_memfd()) == 0, "map");
	ustc_recover(&c, keep, &g);
	TV_CHECK(g.n == 2 && c.bad == 0, "%d records, %d bad", g.n, c.bad);
	TV_CHECK(g.id == tv_ust__tp_fmt_empty.id, "the empty event last");
	TV_CHECK(c.h->clock == TV_UST_CLOCK_X86_TSC && g.ts >= tsc0 && g.ts <= tsc1,
		 "x86-tsc time stamp %llu within [%llu, %llu]", (unsigned long long)g.ts,
		 (unsigned long long)tsc0, (unsigned long long)tsc1);

	fmt = meta_format(&c, "fmt:all", &id);
	TV_CHECK(fmt != NULL && id == tv_ust__tp_fmt_all.id, "fmt:all in the metadata with its id");
	if (!fmt)
		return tv_test_done("test_ust_format");
	tep = tep_alloc();
	TV_CHECK(tep_parse_event(tep, fmt, strlen(fmt), "fmt") == 0, "libtraceevent parses:\n%s", fmt);
	ev = tep_find_event(tep, (int)id);
	TV_CHECK(ev != NULL && !strcmp(ev->name, "all") && !strcmp(ev->system, "fmt"), "event found");
	if (ev) {
		rec.data = g.event;
		rec.size = g.size;
		trace_seq_init(&s);
		tep_print_event(tep, &s, &rec, "%s", TEP_PRINT_INFO);
		trace_seq_terminate(&s);
		TV_CHECK(strstr(s.buffer, "small=-5 port=8080 delta=-123456 big=1234605616436508552 who=hello raw=") &&
				 strstr(s.buffer, "st=busy"),
			 "printed: \"%s\"", s.buffer);
		printf("fmt:all printed by libtraceevent: %s\n", s.buffer);
		TV_CHECK(tep_get_field_val(NULL, ev, "big", &rec, &val, 0) == 0 &&
				 val == 0x1122334455667788ull, "big");
		TV_CHECK(tep_get_field_val(NULL, ev, "delta", &rec, &val, 0) == 0 &&
				 (int32_t)val == -123456, "delta");
		TV_CHECK(tep_get_common_field_val(NULL, ev, "common_type", &rec, &val, 0) == 0 && val == id,
			 "common_type is the id");
		TV_CHECK(tep_get_common_field_val(NULL, ev, "common_pid", &rec, &val, 0) == 0 &&
				 (pid_t)val == getpid(), "common_pid is the thread id (main thread: the pid)");
		trace_seq_destroy(&s);
	}
	free(fmt);
	fmt = meta_format(&c, "fmt:empty", &id);
	TV_CHECK(fmt && tep_parse_event(tep, fmt, strlen(fmt), "fmt") == 0, "empty event parses");
	free(fmt);
	tep_free(tep);
	return tv_test_done("test_ust_format");
}
