// SPDX-License-Identifier: GPL-2.0
/*
 * The compiled print-format renderer (lib/reader/print_info.c) against
 * libtraceevent's tep_print_event(): the same text for random records of
 * every event format there is to hand - the committed kvm formats, a set of
 * hand-written formats with the awkward cases (flags, symbols, ternaries,
 * widths, length modifiers, casts, escapes, dynamic strings), and, when
 * readable (root), every format of the running kernel's tracefs.  A format
 * the renderer does not compile is printed by libtraceevent itself, so only
 * compiled ones are compared; the test also checks enough of them compile.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event-parse.h>
#include <trace-seq.h>

#include "reader_internal.h"
#include "tv_test.h"

#define RECORDS_PER_EVENT 200
#define MAX_RECORD 4096

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Values that hit symbol tables and flag bits as often as wide ones. */
static uint64_t random_value(void)
{
	switch (rng() % 6) {
	case 0:
		return 0;
	case 1:
		return rng() % 40;
	case 2:
		return 1ULL << (rng() % 64);
	case 3:
		return -(rng() % 300);
	default:
		return rng();
	}
}

static const char *const synthetic[] = {
	"name: flags\nID: 901\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned long f;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:int s;\toffset:16;\tsize:4;\tsigned:1;\n"
	"\tfield:short h;\toffset:20;\tsize:2;\tsigned:1;\n"
	"\tfield:char c;\toffset:22;\tsize:1;\tsigned:1;\n\n"
	"print fmt: \"f=%s sym=%s %-8s|%8s| %08lx %-6d|%6u %hd %hhx %x %lld %%\\t\\n\", "
	"__print_flags(REC->f, \"|\", { 1, \"A\" }, { 2, \"B\" }, { 4, \"C\" }, { 0x100, \"HI\" }), "
	"__print_symbolic(REC->s, { 0, \"zero\" }, { 1, \"one\" }, { -1, \"minus\" }, { HRTIMER_RESTART, \"restart\" }), "
	"REC->h > 0 ? \"pos\" : \"neg\", REC->c ? \"c\" : \"\", REC->f, REC->s, REC->s, REC->h, REC->c, "
	"(u16)REC->f, (long long)REC->s\n",

	"name: exprs\nID: 902\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:u64 a;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 b;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:u8 e;\toffset:20;\tsize:1;\tsigned:0;\n\n"
	"print fmt: \"%llu %llu %d %d %d %u %x %llx %s\", REC->a + REC->b * 3 - 1, REC->a >> 3, "
	"!REC->b, REC->b == 7 || REC->e != 2, REC->e < 5 && REC->b >= 2, ~REC->b, "
	"(REC->b & 0xff) | 0x100, REC->a << 2, REC->e & 1 ? (REC->b ? \"x\" : \"y\") : \"z\"\n",

	"name: strs\nID: 903\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:1;\n"
	"\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int n;\toffset:28;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s name=%s [%-12s] n=%d%s\", REC->comm, __get_str(name), __get_str(name), "
	"REC->n, REC->n > 1 ? \" (...)\" : \"\"\n",
};

struct counts {
	int events, compiled, compared, mismatched;
};

static int print_fmt_divides(struct tep_print_arg *arg)
{
	for (; arg; arg = arg->next) {
		if (arg->type == TEP_PRINT_OP) {
			if (!strcmp(arg->op.op, "/") || !strcmp(arg->op.op, "%"))
				return 1;
			if (print_fmt_divides(arg->op.left) || print_fmt_divides(arg->op.right))
				return 1;
		} else if (arg->type == TEP_PRINT_TYPE &&
			   print_fmt_divides(arg->typecast.item)) {
			return 1;
		}
	}
	return 0;
}

/* A record of @event with random fields and valid dynamic strings. */
static unsigned int make_record(struct tep_event *event, unsigned char *data)
{
	unsigned int end = 8, str_off;
	uint16_t id = (uint16_t)event->id;

	memset(data, 0, MAX_RECORD);
	for (struct tep_format_field *f = event->format.fields; f; f = f->next)
		if ((unsigned int)(f->offset + f->size) > end)
			end = (unsigned int)(f->offset + f->size);
	str_off = (end + 3) & ~3U;
	for (struct tep_format_field *f = event->format.fields; f; f = f->next) {
		uint64_t v = random_value();

		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			unsigned int len = 1 + (unsigned int)(rng() % 24), base = str_off;

			for (unsigned int i = 0; i + 1 < len; i++)
				data[str_off + i] = (unsigned char)(' ' + rng() % 95);
			data[str_off + len - 1] = 0;
			str_off += (len + 3) & ~3U;
			if (f->flags & TEP_FIELD_IS_RELATIVE)
				base -= (unsigned int)(f->offset + f->size);
			v = ((uint64_t)len << 16) | base;
			memcpy(data + f->offset, &v, f->size < 4 ? (size_t)f->size : 4);
		} else if ((f->flags & TEP_FIELD_IS_STRING) || (f->flags & TEP_FIELD_IS_ARRAY)) {
			for (int i = 0; i < f->size; i++)
				data[f->offset + i] = (unsigned char)(rng() % 3 ? ' ' + rng() % 95 : 0);
		} else if (f->size <= 8) {
			memcpy(data + f->offset, &v, (size_t)f->size);
		}
	}
	memcpy(data, &id, 2);
	return str_off;
}

static void compare_event(struct tv_domain *dom, struct tep_event *event, struct counts *c)
{
	static unsigned char data[MAX_RECORD];
	struct tv_strbuf mine = { 0 };
	struct trace_seq theirs;
	struct tep_record rec;
	struct tv_event ev;

	c->events++;
	memset(&ev, 0, sizeof(ev));
	ev.tep = dom->tep;
	ev.format = event;
	ev.record = &rec;
	ev.domain_info = &dom->info;
	if (!tv_event_info_compiled(&ev))
		return;
	c->compiled++;
	if (print_fmt_divides(event->print_fmt.args))
		return;	/* random divisors: libtraceevent would trap on 0 */
	trace_seq_init(&theirs);
	for (int i = 0; i < RECORDS_PER_EVENT; i++) {
		memset(&rec, 0, sizeof(rec));
		rec.data = data;
		rec.size = (int)make_record(event, data);
		trace_seq_reset(&theirs);
		tep_print_event(dom->tep, &theirs, &rec, "%s", TEP_PRINT_INFO);
		trace_seq_terminate(&theirs);
		tv_strbuf_reset(&mine);
		TV_CHECK(!tv_event_append_info(&ev, &mine), "append_info failed");
		c->compared++;
		if (mine.len != theirs.len || memcmp(mine.data ? mine.data : "", theirs.buffer,
						     theirs.len)) {
			if (c->mismatched++ < 10)
				fprintf(stderr, "%s:%s\n  libtraceevent: \"%s\"\n  compiled:      \"%.*s\"\n",
					event->system, event->name, theirs.buffer, (int)mine.len,
					mine.data ? mine.data : "");
		}
	}
	trace_seq_destroy(&theirs);
	tv_strbuf_free(&mine);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = malloc(1 << 20);
	size_t n = 0;

	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

static int domain_init(struct tv_domain *dom, const char *header_page)
{
	size_t len;
	char *hp;

	memset(dom, 0, sizeof(*dom));
	dom->tep = tep_alloc();
	dom->long_size = 8;
	tep_set_long_size(dom->tep, 8);
	tep_set_file_bigendian(dom->tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(dom->tep, TEP_LITTLE_ENDIAN);
	hp = slurp(header_page, &len);
	if (!hp)
		return -1;
	tep_parse_header_page(dom->tep, hp, len, 8);
	free(hp);
	return 0;
}

/* Every events/SYSTEM/EVENT/format under @dir; the number parsed. */
static int load_formats(struct tv_domain *dom, const char *dir)
{
	char path[4096];
	struct dirent *s, *e;
	DIR *sd = opendir(dir), *ed;
	int n = 0;

	while (sd && (s = readdir(sd))) {
		if (s->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, s->d_name);
		ed = opendir(path);
		while (ed && (e = readdir(ed))) {
			size_t len;
			char *buf;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s/format", dir, s->d_name, e->d_name);
			buf = slurp(path, &len);
			if (buf && !tep_parse_event(dom->tep, buf, len, s->d_name))
				n++;
			free(buf);
		}
		if (ed)
			closedir(ed);
	}
	if (sd)
		closedir(sd);
	return n;
}

static void register_ours(struct tv_domain *dom)
{
	if (tep_find_event_by_name(dom->tep, "kvm", "kvm_userspace_exit"))
		tep_register_event_handler(dom->tep, -1, "kvm", "kvm_userspace_exit",
					   tv_domain_print_userspace_exit, NULL);
}

static void compare_all(struct tv_domain *dom, struct counts *c)
{
	struct tep_event **events = tep_list_events(dom->tep, TEP_EVENT_SORT_ID);

	for (int i = 0; events && events[i]; i++)
		compare_event(dom, events[i], c);
}

static void domain_fini(struct tv_domain *dom)
{
	tv_info_cache_free(dom->info_cache);
	tep_free(dom->tep);
}

static void test_dir(const char *name, const char *header_page, const char *events_dir,
		     int min_events)
{
	struct counts c = { 0 };
	struct tv_domain dom;
	int n;

	if (domain_init(&dom, header_page)) {
		printf("%s: skipped (cannot read %s)\n", name, header_page);
		return;
	}
	n = load_formats(&dom, events_dir);
	register_ours(&dom);
	compare_all(&dom, &c);
	printf("%s: %d formats, %d compiled, %d records compared, %d differ\n", name, n, c.compiled,
	       c.compared, c.mismatched);
	TV_CHECK(n >= min_events, "%s: only %d formats parsed", name, n);
	TV_CHECK(c.compiled * 2 >= c.events, "%s: only %d of %d formats compiled", name, c.compiled,
		 c.events);
	TV_CHECK(c.mismatched == 0, "%s: %d records print differently", name, c.mismatched);
	domain_fini(&dom);
}

static void test_synthetic(const char *header_page)
{
	struct counts c = { 0 };
	struct tv_domain dom;

	if (domain_init(&dom, header_page))
		return;
	for (size_t i = 0; i < sizeof(synthetic) / sizeof(synthetic[0]); i++)
		TV_CHECK(!tep_parse_event(dom.tep, synthetic[i], strlen(synthetic[i]), "tv"),
			 "synthetic format %zu does not parse", i);
	compare_all(&dom, &c);
	printf("synthetic: %d formats, %d compiled, %d records compared, %d differ\n", c.events,
	       c.compiled, c.compared, c.mismatched);
	TV_CHECK(c.compiled == (int)(sizeof(synthetic) / sizeof(synthetic[0])),
		 "only %d synthetic formats compiled", c.compiled);
	TV_CHECK(c.mismatched == 0, "%d synthetic records print differently", c.mismatched);
	domain_fini(&dom);
}

int main(int argc, char **argv)
{
	const char *samples = argc > 1 ? argv[1] : "tests/samples/formats";
	char hp[4096], ev[4096];

	if (getenv("TV_TEST_SEED"))
		rng_state = strtoull(getenv("TV_TEST_SEED"), NULL, 0) | 1;
	snprintf(hp, sizeof(hp), "%s/header_page", samples);
	test_synthetic(hp);
	snprintf(ev, sizeof(ev), "%s", samples);
	test_dir("committed kvm formats", hp, ev, 4);
	if (access("/sys/kernel/tracing/events/header_page", R_OK) == 0)
		test_dir("running kernel's formats", "/sys/kernel/tracing/events/header_page",
			 "/sys/kernel/tracing/events", 100);
	else
		printf("running kernel's formats: skipped (tracefs not readable)\n");
	return tv_test_done("print_info");
}
