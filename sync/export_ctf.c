// SPDX-License-Identifier: GPL-2.0
/*
 * CTF 1.8 writer: one trace in the reference clock, a stream class per
 * domain (event ids are only unique within a domain), a stream per domain
 * and CPU.  Events are typed from the recorded format files.  Each stream
 * fills one packet buffer and writes it when full, so memory does not
 * depend on the trace size.  Metadata is TSDL text, as LTTng writes it,
 * which babeltrace2 and Trace Compass both read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define PACKET_DATA (256 * 1024)
#define HEADER_SIZE (4 + 16 + 4 + 8)
#define CONTEXT_SIZE (8 * 6 + 4 + 4)
#define MAX_STREAMS 4096

struct ctf_stream {
	FILE *f;
	unsigned char *buf;
	size_t len;
	uint64_t ts_begin, ts_end, seq, discarded;
	uint32_t domain;
	uint32_t cpu;
	uint64_t instance;
};

struct ctf_writer {
	struct tv_reader *rd;
	const char *out;
	unsigned char uuid[16];
	struct ctf_stream *streams[MAX_STREAMS];
	size_t nr_streams;
	int *stream_base;	/* first stream slot of each domain */
};

static const char *const tsdl_keywords[] = {
	"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
	"floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
	"string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
	"_Bool", "_Complex", "_Imaginary", "id", "name", "fields", "context", "header",
};

/*
 * A TSDL identifier for a field name.  Readers strip one leading
 * underscore, so names that need protecting (keywords, leading digits or
 * underscores) get one added and read back unchanged.
 */
static void ctf_ident(const char *name, char *out, size_t size)
{
	size_t o = 0;
	int protect = name[0] == '_' || (name[0] >= '0' && name[0] <= '9');

	for (size_t i = 0; i < sizeof(tsdl_keywords) / sizeof(*tsdl_keywords); i++)
		protect |= !strcmp(name, tsdl_keywords[i]);
	if (protect)
		out[o++] = '_';
	for (const char *p = name; *p && o + 1 < size; p++)
		out[o++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || *p == '_' ? *p : '_';
	out[o] = '\0';
}

static int field_is_text(const struct tep_format_field *f)
{
	return !strncmp(f->type, "char ", 5) || !strncmp(f->type, "const char", 10) ||
	       strstr(f->type, "__data_loc char") || !strncmp(f->type, "char[", 5);
}

enum field_kind { FK_INT, FK_TEXT_ARRAY, FK_ARRAY, FK_STRING, FK_SEQUENCE, FK_TAIL };

static enum field_kind field_kind(const struct tep_format_field *f)
{
	if (f->flags & TEP_FIELD_IS_DYNAMIC)
		return field_is_text(f) ? FK_STRING : FK_SEQUENCE;
	if ((f->flags & TEP_FIELD_IS_ARRAY) && f->size == 0)
		return FK_TAIL;		/* flexible array: to the end of the record */
	if (f->flags & TEP_FIELD_IS_ARRAY)
		return field_is_text(f) ? FK_TEXT_ARRAY : FK_ARRAY;
	if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8)
		return FK_INT;
	return FK_ARRAY;		/* odd-sized scalar: its bytes */
}

static unsigned int elem_size(const struct tep_format_field *f)
{
	unsigned int el = f->elementsize;

	if (el != 1 && el != 2 && el != 4 && el != 8)
		el = 1;
	if (f->size > 0 && (unsigned int)f->size % el)
		el = 1;
	return el;
}

static void tsdl_int(FILE *m, unsigned int bytes, int is_signed, int hex)
{
	fprintf(m, "integer { size = %u; align = 8; signed = %s; base = %d; }", bytes * 8,
		is_signed ? "true" : "false", hex ? 16 : 10);
}

static void tsdl_field(FILE *m, const struct tep_format_field *f)
{
	char id[128];
	int hex = strchr(f->type, '*') != NULL;

	ctf_ident(f->name, id, sizeof(id));
	fprintf(m, "\t\t");
	switch (field_kind(f)) {
	case FK_INT:
		tsdl_int(m, (unsigned int)f->size, !!(f->flags & TEP_FIELD_IS_SIGNED), hex);
		fprintf(m, " %s;\n", id);
		break;
	case FK_TEXT_ARRAY:
		fprintf(m, "integer { size = 8; align = 8; signed = false; encoding = UTF8; } %s[%d];\n",
			id, f->size);
		break;
	case FK_ARRAY:
		tsdl_int(m, elem_size(f), !!(f->flags & TEP_FIELD_IS_SIGNED), 0);
		fprintf(m, " %s[%u];\n", id, (unsigned int)f->size / elem_size(f));
		break;
	case FK_STRING:
		fprintf(m, "string %s;\n", id);
		break;
	case FK_SEQUENCE:
	case FK_TAIL:
		fprintf(m, "uint32_t %s_len;\n\t\t", id);
		tsdl_int(m, field_kind(f) == FK_TAIL ? 1 : elem_size(f), 0, 0);
		fprintf(m, " %s[%s_len];\n", id, id);
		break;
	}
}

static void tsdl_event(FILE *m, struct tep_event *ev, size_t domain)
{
	fprintf(m, "event {\n\tname = \"%s:%s\";\n\tid = %d;\n\tstream_id = %zu;\n"
		   "\tfields := struct {\n", ev->system, ev->name, ev->id, domain);
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next)
		tsdl_field(m, f);
	fprintf(m, "\t};\n};\n\n");
}

static void uuid_string(const unsigned char *u, char *s)
{
	sprintf(s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		u[13], u[14], u[15]);
}

static uint64_t reference_freq(const struct tv_domain_info *ref)
{
	const char *clock = tv_meta_get(ref->meta, "clock");
	long long khz = tv_meta_get_ll(ref->meta, "tsc_khz", 0);

	return clock && !strcmp(clock, "x86-tsc") && khz > 0 ? (uint64_t)khz * 1000 : 1000000000;
}

static const char *meta_str(const struct tv_domain_info *d, const char *key)
{
	const char *v = tv_meta_get(d->meta, key);

	return v && !strpbrk(v, "\"\\\n") ? v : "unknown";
}

static void tsdl_header(struct ctf_writer *w, FILE *m)
{
	const struct tv_domain_info *ref = tv_reader_domain(w->rd, 0);
	char uuid[40];

	uuid_string(w->uuid, uuid);
	fprintf(m, "/* CTF 1.8 */\n\n"
		   "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		   "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		   "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		   "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n\n"
		   "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n", uuid);
	fprintf(m, "env {\n\tdomain = \"kernel\";\n\ttracer_name = \"tracevisor\";\n"
		   "\ttracer_major = 0;\n\ttracer_minor = 1;\n\thostname = \"%s\";\n"
		   "\tsysname = \"Linux\";\n\tkernel_release = \"%s\";\n\treference_domain = \"%s\";\n",
		meta_str(ref, "hostname"), meta_str(ref, "kernel_release"), ref->subdir);
	for (size_t d = 0; d < tv_reader_nr_domains(w->rd); d++)
		fprintf(m, "\tdomain_%zu = \"%s\";\n", d, tv_reader_domain(w->rd, d)->name);
	fprintf(m, "};\n\n");
	uuid[0] = uuid[0] == 'f' ? '0' : 'f';	/* the clock's own uuid */
	fprintf(m, "clock {\n\tname = tracevisor_reference;\n\tuuid = \"%s\";\n"
		   "\tdescription = \"reference domain %s, trace clock %s\";\n"
		   "\tfreq = %llu;\n\toffset_s = 0;\n\toffset = 0;\n\tabsolute = FALSE;\n};\n\n"
		   "typealias integer { size = 64; align = 8; signed = false; "
		   "map = clock.tracevisor_reference.value; } := uint64_clock_t;\n\n",
		uuid, ref->subdir, meta_str(ref, "clock"), (unsigned long long)reference_freq(ref));
}

static void tsdl_streams(struct ctf_writer *w, FILE *m)
{
	for (size_t d = 0; d < tv_reader_nr_domains(w->rd); d++) {
		struct tep_handle *tep = tv_reader_domain(w->rd, d)->tep;
		struct tep_event **evs = tep_list_events(tep, TEP_EVENT_SORT_ID);

		fprintf(m, "stream {\n\tid = %zu;\n"
			   "\tpacket.context := struct {\n\t\tuint64_clock_t timestamp_begin;\n"
			   "\t\tuint64_clock_t timestamp_end;\n\t\tuint64_t content_size;\n"
			   "\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
			   "\t\tuint64_t events_discarded;\n\t\tuint32_t cpu_id;\n"
			   "\t\tuint32_t domain_id;\n\t};\n"
			   "\tevent.header := struct {\n\t\tuint16_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n"
			   "\tevent.context := struct {\n\t\tint32_t pid;\n\t\tuint8_t flags;\n"
			   "\t\tuint8_t preempt_count;\n\t};\n};\n\n", d);
		for (int i = 0; evs && evs[i]; i++)
			tsdl_event(m, evs[i], d);
	}
}

static int write_metadata(struct ctf_writer *w)
{
	char path[4096];
	FILE *m;

	snprintf(path, sizeof(path), "%s/metadata", w->out);
	m = fopen(path, "we");
	if (!m) {
		tv_err("Cannot create metadata file: path=\"%s\", errno=%d", path, errno);
		return -errno;
	}
	tsdl_header(w, m);
	tsdl_streams(w, m);
	if (fclose(m)) {
		tv_err("Cannot write metadata file: path=\"%s\", errno=%d", path, errno);
		return -EIO;
	}
	return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);	/* CTF trace declared little endian, like x86 */
}

static void put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static int flush_packet(struct ctf_writer *w, struct ctf_stream *s)
{
	unsigned char hdr[HEADER_SIZE + CONTEXT_SIZE];
	uint64_t bits = (uint64_t)(sizeof(hdr) + s->len) * 8;

	if (!s->len)
		return 0;
	put_u32(hdr, CTF_MAGIC);
	memcpy(hdr + 4, w->uuid, 16);
	put_u32(hdr + 20, s->domain);
	put_u64(hdr + 24, s->instance);
	put_u64(hdr + 32, s->ts_begin);
	put_u64(hdr + 40, s->ts_end);
	put_u64(hdr + 48, bits);
	put_u64(hdr + 56, bits);
	put_u64(hdr + 64, s->seq++);
	put_u64(hdr + 72, s->discarded);
	put_u32(hdr + 80, s->cpu);
	put_u32(hdr + 84, s->domain);
	if (fwrite(hdr, sizeof(hdr), 1, s->f) != 1 || fwrite(s->buf, s->len, 1, s->f) != 1) {
		tv_err("Cannot write stream file in \"%s\": errno=%d", w->out, errno);
		return -EIO;
	}
	s->len = 0;
	return 0;
}

static struct ctf_stream *stream_get(struct ctf_writer *w, const struct tv_event *ev)
{
	size_t slot = (size_t)w->stream_base[ev->domain_index] + (size_t)ev->cpu;
	struct ctf_stream *s;
	char path[4096];

	if (slot >= MAX_STREAMS)
		return NULL;
	if (w->streams[slot])
		return w->streams[slot];
	s = calloc(1, sizeof(*s));
	if (!s || !(s->buf = malloc(PACKET_DATA))) {
		free(s);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s_cpu%d", w->out,
		 tv_reader_domain(w->rd, (size_t)ev->domain_index)->subdir, ev->cpu);
	s->f = fopen(path, "we");
	if (!s->f) {
		tv_err("Cannot create stream file: path=\"%s\", errno=%d", path, errno);
		free(s->buf);
		free(s);
		return NULL;
	}
	s->domain = (uint32_t)ev->domain_index;
	s->cpu = (uint32_t)ev->cpu;
	s->instance = slot;
	w->streams[slot] = s;
	w->nr_streams++;
	return s;
}

/* An event's fields, compiled once per event id. */
struct layout_field {
	enum field_kind kind;
	int offset, size, relative;
	unsigned int elem;
};

struct layout {
	int nr;
	struct layout_field f[];
};

static struct layout *layout_compile(struct tep_event *ev)
{
	struct layout *l;
	int n = 0, i = 0;

	for (struct tep_format_field *f = ev->format.fields; f; f = f->next)
		n++;
	l = calloc(1, sizeof(*l) + (size_t)n * sizeof(l->f[0]));
	if (!l)
		return NULL;
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next, i++) {
		l->f[i].kind = field_kind(f);
		l->f[i].offset = f->offset;
		l->f[i].size = f->size;
		l->f[i].relative = !!(f->flags & TEP_FIELD_IS_RELATIVE);
		l->f[i].elem = l->f[i].kind == FK_TAIL ? 1 : elem_size(f);
	}
	l->nr = n;
	return l;
}

/* Payload bytes and element count of a __data_loc field (bounds checked on reading). */
static const unsigned char *dynamic_data(const unsigned char *rec, const struct layout_field *f,
					 uint32_t *len)
{
	uint32_t loc;
	uint32_t off;

	memcpy(&loc, rec + f->offset, 4);
	off = (loc & 0xffff) + (f->relative ? (uint32_t)(f->offset + f->size) : 0);
	*len = loc >> 16;
	return rec + off;
}

static size_t encode_field(unsigned char *out, const unsigned char *rec, int rec_size,
			   const struct layout_field *f)
{
	const unsigned char *p;
	uint32_t len, count;

	switch (f->kind) {
	case FK_INT:
	case FK_TEXT_ARRAY:
	case FK_ARRAY:
		memcpy(out, rec + f->offset, (size_t)f->size);
		return (size_t)f->size;
	case FK_STRING:
		p = dynamic_data(rec, f, &len);
		len = (uint32_t)strnlen((const char *)p, len);
		memcpy(out, p, len);
		out[len] = '\0';
		return len + 1;
	case FK_SEQUENCE:
		p = dynamic_data(rec, f, &len);
		break;
	case FK_TAIL:
	default:
		p = rec + f->offset;
		len = rec_size > f->offset ? (uint32_t)(rec_size - f->offset) : 0;
		break;
	}
	count = len / f->elem;
	put_u32(out, count);
	memcpy(out + 4, p, (size_t)count * f->elem);
	return 4 + (size_t)count * f->elem;
}

static int encode_event(struct ctf_writer *w, struct ctf_stream *s, const struct tv_event *ev,
			const struct layout *l)
{
	const unsigned char *rec = ev->record->data;
	size_t worst = 16 + (size_t)ev->record->size + 5 * (size_t)l->nr;
	unsigned char *out;
	int ret;

	if (s->len + worst > PACKET_DATA) {
		ret = flush_packet(w, s);
		if (ret)
			return ret;
	}
	if (!s->len)
		s->ts_begin = ev->ts;
	s->ts_end = ev->ts;
	if (ev->missed_before > 0)
		s->discarded += (uint64_t)ev->missed_before;
	out = s->buf + s->len;
	memcpy(out, rec, 2);		/* common_type: the event id */
	put_u64(out + 2, ev->ts);
	memcpy(out + 10, rec + 4, 4);	/* common_pid */
	memcpy(out + 14, rec + 2, 2);	/* common_flags, common_preempt_count */
	out += 16;
	for (int i = 0; i < l->nr; i++)
		out += encode_field(out, rec, ev->record->size, &l->f[i]);
	s->len = (size_t)(out - s->buf);
	return 0;
}

struct layout_cache {
	struct layout **by_id;	/* [domain * 65536 + id] */
	size_t nr_domains;
};

static const struct layout *layout_get(struct layout_cache *c, const struct tv_event *ev)
{
	size_t slot = (size_t)ev->domain_index * 65536 + (size_t)(ev->format->id & 0xffff);

	if (!c->by_id[slot])
		c->by_id[slot] = layout_compile(ev->format);
	return c->by_id[slot];
}

static int writer_init(struct ctf_writer *w, struct layout_cache *c)
{
	size_t nd = tv_reader_nr_domains(w->rd);
	int fd, base = 0;

	if (mkdir(w->out, 0755) && errno != EEXIST) {
		tv_err("Cannot create directory: path=\"%s\", errno=%d", w->out, errno);
		return -errno;
	}
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, w->uuid, 16) != 16) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	w->uuid[6] = (w->uuid[6] & 0x0f) | 0x40;	/* RFC 4122 version 4 */
	w->uuid[8] = (w->uuid[8] & 0x3f) | 0x80;
	w->stream_base = calloc(nd, sizeof(int));
	c->nr_domains = nd;
	c->by_id = calloc(nd * 65536, sizeof(*c->by_id));
	if (!w->stream_base || !c->by_id)
		return -ENOMEM;
	for (size_t d = 0; d < nd; d++) {
		w->stream_base[d] = base;
		base += (int)tv_meta_get_ll(tv_reader_domain(w->rd, d)->meta, "ncpus", 1);
	}
	return write_metadata(w);
}

static int writer_finish(struct ctf_writer *w, struct layout_cache *c, int ret)
{
	for (size_t i = 0; i < MAX_STREAMS; i++) {
		struct ctf_stream *s = w->streams[i];

		if (!s)
			continue;
		if (!ret)
			ret = flush_packet(w, s);
		if (fclose(s->f) && !ret)
			ret = -EIO;
		free(s->buf);
		free(s);
	}
	for (size_t i = 0; c->by_id && i < c->nr_domains * 65536; i++)
		free(c->by_id[i]);
	free(c->by_id);
	free(w->stream_base);
	return ret;
}

int tv_export_ctf(struct tv_reader *rd, const char *session_dir, const char *out,
	       struct tv_export_stats *st)
{
	struct ctf_writer w = { .rd = rd, .out = out };
	struct layout_cache cache = { 0 };
	struct tv_event ev;
	int ret;

	(void)session_dir;
	ret = writer_init(&w, &cache);
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		struct ctf_stream *s = stream_get(&w, &ev);
		const struct layout *l = ev.format ? layout_get(&cache, &ev) : NULL;

		ret = s && l ? encode_event(&w, s, &ev, l) : -ENOMEM;
		st->events++;
	}
	st->streams = w.nr_streams;
	return writer_finish(&w, &cache, ret < 0 ? ret : 0);
}
