// SPDX-License-Identifier: LGPL-2.1
/*
 * CTF 1.8 writer: one trace in the reference clock, a stream class per
 * domain (event ids are only unique within a domain), a stream per domain
 * and CPU, and for a traced process's user-space events (kind "ust") a
 * stream per thread and CPU instead: no stream mixes threads, its packets
 * say the thread (packet.context tid), and its CPU stays one, as Trace
 * Compass takes it per stream (doc/ctf-export.md); threads beyond
 * CTF_MAX_THREAD_STREAMS share their CPU's stream.  Events are typed from
 * the recorded format files.  Each stream fills one packet buffer and
 * writes it when full; at most CTF_MAX_OPEN_STREAMS streams hold a buffer
 * and an open file, so neither memory nor descriptors depend on the trace.  Metadata is TSDL text, as LTTng writes it,
 * which babeltrace2 and Trace Compass both read; the Trace Compass rules it
 * follows are listed, with their source files, in doc/ctf-export.md and
 * checked by tests/ctf_tc_check.py.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exporters.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define PACKET_DATA (256 * 1024)
#define HEADER_SIZE (4 + 16 + 4 + 8)
#define CONTEXT_SIZE (8 * 6 + 4 + 4)
#define CONTEXT_TID_SIZE 4	/* a thread stream's packet.context ends with its tid */
#define MAX_CPUS 4096		/* per domain: more is a corrupt cpu number */
/* Files one CPU (or thread) stream may be split into where its time goes back (doc/ctf-export.md). */
#define CTF_MAX_LANES 8
/*
 * A traced process's (thread, CPU) streams of their own; the events of its
 * other threads go to its CPU streams (tid -1): a guest process writing
 * records with thousands of thread ids makes at most this many files
 * (times CTF_MAX_LANES), not one per thread id (doc/ctf-export.md).
 */
#define CTF_MAX_THREAD_STREAMS 256
/*
 * Stream files open at once, with their packet buffers, in the whole
 * export (a quarter of RLIMIT_NOFILE when that is lower): the least
 * recently written one beyond it ends its packet and is closed, and
 * reopened for appending when written again.
 */
#define CTF_MAX_OPEN_STREAMS 256

/*
 * One stream file.  A CPU stream whose time goes back goes on in another
 * of its files (a "lane"): the one whose last event is the latest not after
 * the new one, or a new file, at most CTF_MAX_LANES in all; only the lane
 * being written has the stream's packet buffer and an open FILE.
 */
struct ctf_stream {
	FILE *f;		/* the active lane's only */
	char *path;
	unsigned char *buf;	/* the active lane's only: moved at a switch */
	size_t len;
	uint64_t ts_begin, ts_end, seq, discarded;
	uint64_t last_ts;	/* of the last event written to this stream file */
	uint64_t nr_events;
	uint32_t domain;
	uint32_t cpu;
	int32_t tid;		/* a thread stream's thread; -1: a CPU stream */
	int has_tid;		/* a ust domain's: packet.context ends with tid (-1: several) */
	uint64_t instance;
	unsigned int generation;	/* its lane: file DOMAIN_cpuN, then .1, .2... */
	/* the first lane only: the stream's other lanes and the one written now */
	struct ctf_stream *lanes[CTF_MAX_LANES];	/* [0] is itself */
	unsigned int nr_lanes;
	struct ctf_stream *active;
	uint64_t dropped;	/* events that went back before every lane, left out */
	int open;		/* its active lane has a FILE and the buffer: in the writer's list */
	struct ctf_stream *newer, *older;	/* the writer's open streams, by last use */
};

/* The streams of one domain, indexed by CPU, or its threads' (a ust domain). */
struct ctf_domain_streams {
	struct ctf_stream **cpu;
	size_t nr;
	int per_thread;			/* kind "ust": a stream per thread */
	struct ctf_stream **threads;	/* in order of first event */
	size_t nr_threads, cap_threads;
	struct ctf_stream *last;	/* the last thread stream used (runs of one thread) */
	uint64_t folded;		/* events of threads beyond CTF_MAX_THREAD_STREAMS */
};

struct ctf_writer {
	struct tv_reader *rd;
	const char *out;
	unsigned char uuid[16];
	struct ctf_domain_streams *doms;
	size_t nr_domains;
	uint64_t nr_streams;	/* stream files written, and the next instance id */
	uint64_t nr_splits;
	uint64_t nr_dropped;	/* events left out: a stream went back more than its lanes allow */
	struct ctf_stream *newest, *oldest;	/* the open streams, by last use */
	unsigned int nr_open, max_open;
	uint64_t nr_closed;	/* streams closed to stay within max_open */
	struct tep_event *ref_raw_data;	/* the reference's ftrace:raw_data, or NULL */
	int have_wall_clock;		/* the recorder's CLOCK_REALTIME marker seen */
	struct tv_wall_clock wall;
};

/*
 * Words a field name must not be: the TSDL keywords (Trace Compass's
 * CTFLexer.g lexes them, "NaN" included, as keyword tokens, which its
 * CTFParser.g does not accept as a declarator), the type aliases this writer
 * declares (both parsers take a declared type name for a type specifier),
 * and a few TSDL attribute names, kept protected as before.
 */
static const char *const tsdl_reserved[] = {
	"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
	"floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
	"string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
	"_Bool", "_Complex", "_Imaginary", "NaN", "id", "name", "fields", "context", "header",
	"uint8_t", "uint16_t", "uint32_t", "uint64_t", "int32_t", "uint64_clock_t",
};

/*
 * A TSDL identifier for a field name.  Readers strip one leading
 * underscore, so names that need protecting (reserved words, leading digits
 * or underscores) get one added and read back unchanged.
 */
static void ctf_ident(const char *name, char *out, size_t size)
{
	size_t o = 0;
	int protect = name[0] == '_' || (name[0] >= '0' && name[0] <= '9') || !name[0];

	for (size_t i = 0; i < sizeof(tsdl_reserved) / sizeof(*tsdl_reserved); i++)
		protect |= !strcmp(name, tsdl_reserved[i]);
	if (protect)
		out[o++] = '_';
	for (const char *p = name; *p && o + 1 < size; p++)
		out[o++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || *p == '_' ? *p : '_';
	out[o] = '\0';
}

/* Field names of one event struct, to keep them unique. */
struct ident_set {
	char (*name)[128];
	size_t nr, cap;
};

/*
 * Trace Compass (StructDeclarationParser: "struct: duplicate field") and
 * babeltrace2 reject a struct with two fields of one name, which
 * ctf_ident() can make of two format fields ("a-b", "a_b") or of a field
 * and the length field of a sequence ("x_len"): the later one gets a
 * "_2", "_3"... suffix.
 */
static int ident_unique(struct ident_set *set, char *id, size_t size)
{
	char base[128];
	int dup = 1;

	snprintf(base, sizeof(base), "%s", id);
	for (unsigned int n = 2; dup; n++) {
		dup = 0;
		for (size_t i = 0; i < set->nr && !dup; i++)
			dup = !strcmp(set->name[i], id);
		if (dup)
			snprintf(id, size, "%.100s_%u", base, n);
	}
	if (set->nr == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 32;
		char (*grown)[128] = realloc(set->name, cap * sizeof(*set->name));

		if (!grown)
			return -ENOMEM;
		set->name = grown;
		set->cap = cap;
	}
	snprintf(set->name[set->nr++], sizeof(set->name[0]), "%s", id);
	return 0;
}

/*
 * A TSDL string literal's content: text from the session (host and domain
 * names, event names) with the characters a string literal cannot hold
 * raw, and anything outside printable ASCII (Trace Compass reads the
 * metadata with the platform charset), replaced by '_'.
 */
static void tsdl_str(FILE *m, const char *s)
{
	for (; *s; s++)
		fputc(*s >= 0x20 && *s <= 0x7e && *s != '"' && *s != '\\' ? *s : '_', m);
}

static int field_is_text(const struct tep_format_field *f)
{
	return !strncmp(f->type, "char ", 5) || !strncmp(f->type, "const char", 10) ||
	       strstr(f->type, "__data_loc char") || !strncmp(f->type, "char[", 5);
}

enum field_kind { FK_INT, FK_TEXT_ARRAY, FK_ARRAY, FK_STRING, FK_SEQUENCE, FK_TAIL, FK_EMPTY };

static enum field_kind field_kind(const struct tep_format_field *f)
{
	if (f->flags & TEP_FIELD_IS_DYNAMIC)
		return field_is_text(f) ? FK_STRING : FK_SEQUENCE;
	if ((f->flags & TEP_FIELD_IS_ARRAY) && f->size == 0)
		return FK_TAIL;		/* flexible array: to the end of the record */
	if (f->size <= 0)
		return FK_EMPTY;	/* no bytes: a CTF array needs length >= 1 */
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

static int tsdl_field(FILE *m, const struct tep_format_field *f, struct ident_set *ids)
{
	char id[128], len_id[128];
	int hex = strchr(f->type, '*') != NULL;
	enum field_kind kind = field_kind(f);

	if (kind == FK_EMPTY)
		return 0;
	ctf_ident(f->name, id, sizeof(id) - 16);	/* room for "_len", "_N" */
	if (ident_unique(ids, id, sizeof(id)))
		return -ENOMEM;
	fprintf(m, "\t\t");
	switch (kind) {
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
		snprintf(len_id, sizeof(len_id), "%s_len", id);
		if (ident_unique(ids, len_id, sizeof(len_id)))
			return -ENOMEM;
		fprintf(m, "uint32_t %s;\n\t\t", len_id);
		tsdl_int(m, kind == FK_TAIL ? 1 : elem_size(f), 0, 0);
		fprintf(m, " %s[%s];\n", id, len_id);
		break;
	case FK_EMPTY:
		break;
	}
	return 0;
}

static int tsdl_event(FILE *m, struct tep_event *ev, size_t domain)
{
	struct ident_set ids = { 0 };
	int ret = 0;

	fprintf(m, "event {\n\tname = \"");
	tsdl_str(m, ev->system);
	fputc(':', m);
	tsdl_str(m, ev->name);
	fprintf(m, "\";\n\tid = %d;\n\tstream_id = %zu;\n\tfields := struct {\n", ev->id, domain);
	for (struct tep_format_field *f = ev->format.fields; f && !ret; f = f->next)
		ret = tsdl_field(m, f, &ids);
	fprintf(m, "\t};\n};\n\n");
	free(ids.name);
	return ret;
}

static void uuid_string(const unsigned char *u, char *s)
{
	sprintf(s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		u[13], u[14], u[15]);
}

static const char *meta_str(const struct tv_domain_info *d, const char *key)
{
	const char *v = tv_meta_get(d->meta, key);

	return v && *v ? v : "unknown";
}

/*
 * The clock offset, in cycles, that makes the reference clock read as the
 * wall clock (ns since 1970): from the recorder's CLOCK_REALTIME marker.
 * 0 without one, or when it would not fit Trace Compass's signed 64 bits.
 */
static uint64_t reference_offset(const struct ctf_writer *w, uint64_t freq)
{
	unsigned __int128 wall;

	if (!w->have_wall_clock)
		return 0;
	wall = (unsigned __int128)w->wall.realtime_ns * freq / 1000000000u;
	if (wall < w->wall.ref_ts || wall - w->wall.ref_ts > INT64_MAX)
		return 0;
	return (uint64_t)(wall - w->wall.ref_ts);
}

static void tsdl_env_str(FILE *m, const char *key, const char *value)
{
	fprintf(m, "\t%s = \"", key);
	tsdl_str(m, value);
	fprintf(m, "\";\n");
}

static void tsdl_header(struct ctf_writer *w, FILE *m)
{
	const struct tv_domain_info *ref = tv_reader_domain(w->rd, 0);
	uint64_t freq = tv_reference_clock_hz(ref);
	char uuid[40], key[32];

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
	/*
	 * No "domain" key: Trace Compass's LttngKernelTrace.validate claims any
	 * trace with domain = "kernel" as an LTTng kernel trace and runs its
	 * kernel analyses with LTTng's event layout ("sched_switch", prev_tid,
	 * ...), which ftrace's "sched:sched_switch" events do not follow, on
	 * host and guest CPUs that share numbers.  Without it the trace opens
	 * as a generic CTF trace: every event, with its fields, in one table.
	 */
	fprintf(m, "env {\n\ttracer_name = \"tracevisor\";\n\ttracer_major = 0;\n"
		   "\ttracer_minor = 1;\n");
	tsdl_env_str(m, "hostname", meta_str(ref, "hostname"));
	tsdl_env_str(m, "sysname", "Linux");
	tsdl_env_str(m, "kernel_release", meta_str(ref, "kernel_release"));
	tsdl_env_str(m, "reference_domain", ref->subdir);
	for (size_t d = 0; d < tv_reader_nr_domains(w->rd); d++) {
		snprintf(key, sizeof(key), "domain_%zu", d);
		tsdl_env_str(m, key, tv_reader_domain(w->rd, d)->name);
	}
	fprintf(m, "};\n\n");
	uuid[0] = uuid[0] == 'f' ? '0' : 'f';	/* the clock's own uuid */
	/*
	 * Trace Compass's CTFClock applies freq and offset (in cycles) only,
	 * not offset_s, and ClockParser reads them as decimal literals: both
	 * decimal, offset_s 0.  Exactly one clock: CTFTrace.getClock() is null
	 * with several, and then no timestamp is scaled to nanoseconds.  The
	 * offset makes it the wall clock where the recorder left a marker of it.
	 */
	fprintf(m, "clock {\n\tname = tracevisor_reference;\n\tuuid = \"%s\";\n"
		   "\tdescription = \"reference domain ", uuid);
	tsdl_str(m, ref->subdir);
	fprintf(m, ", trace clock ");
	tsdl_str(m, meta_str(ref, "clock"));
	fprintf(m, "\";\n\tfreq = %llu;\n\toffset_s = 0;\n\toffset = %llu;\n\tabsolute = FALSE;\n};\n\n"
		   "typealias integer { size = 64; align = 8; signed = false; "
		   "map = clock.tracevisor_reference.value; } := uint64_clock_t;\n\n",
		(unsigned long long)freq, (unsigned long long)reference_offset(w, freq));
}

static int tsdl_streams(struct ctf_writer *w, FILE *m)
{
	int ret = 0;

	for (size_t d = 0; d < tv_reader_nr_domains(w->rd) && !ret; d++) {
		struct tep_handle *tep = tv_reader_domain(w->rd, d)->tep;
		struct tep_event **evs = tep_list_events(tep, TEP_EVENT_SORT_ID);

		fprintf(m, "stream {\n\tid = %zu;\n"
			   "\tpacket.context := struct {\n\t\tuint64_clock_t timestamp_begin;\n"
			   "\t\tuint64_clock_t timestamp_end;\n\t\tuint64_t content_size;\n"
			   "\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
			   "\t\tuint64_t events_discarded;\n\t\tuint32_t cpu_id;\n"
			   "\t\tuint32_t domain_id;\n%s\t};\n"
			   "\tevent.header := struct {\n\t\tuint16_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n"
			   "\tevent.context := struct {\n\t\tint32_t pid;\n\t\tuint8_t flags;\n"
			   "\t\tuint8_t preempt_count;\n\t};\n};\n\n", d,
			w->doms[d].per_thread ? "\t\tint32_t tid;\n" : "");
		/* The event header's id is 16-bit, like ftrace's common_type. */
		for (int i = 0; evs && evs[i] && !ret; i++)
			if (evs[i]->id >= 0 && evs[i]->id <= 0xffff)
				ret = tsdl_event(m, evs[i], d);
	}
	return ret;
}

static int write_metadata(struct ctf_writer *w)
{
	char path[4096];
	FILE *m;
	int ret;

	snprintf(path, sizeof(path), "%s/metadata", w->out);
	m = tv_file_fcreate(path, "metadata file");
	if (!m)
		return -errno;
	tsdl_header(w, m);
	ret = tsdl_streams(w, m);
	if (ret)
		tv_err("Cannot write metadata file: path=\"%s\": out of memory", path);
	if (fclose(m) && !ret) {
		tv_err("Cannot write metadata file: path=\"%s\", errno=%d (%s)", path, errno, strerror(errno));
		return -EIO;
	}
	return ret;
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
	unsigned char hdr[HEADER_SIZE + CONTEXT_SIZE + CONTEXT_TID_SIZE];
	size_t hdr_size = HEADER_SIZE + CONTEXT_SIZE + (s->has_tid ? CONTEXT_TID_SIZE : 0);
	uint64_t bits = (uint64_t)(hdr_size + s->len) * 8;

	/*
	 * Never an empty packet: Trace Compass's StreamInputPacketIndex.append
	 * stops indexing a stream file at a packet whose content ends where its
	 * context does.
	 */
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
	if (s->has_tid)
		put_u32(hdr + 88, (uint32_t)s->tid);
	if (fwrite(hdr, hdr_size, 1, s->f) != 1 || fwrite(s->buf, s->len, 1, s->f) != 1) {
		tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", s->path, errno, strerror(errno));
		return -EIO;
	}
	s->len = 0;
	return 0;
}

/* Opens the stream's next file: DOMAIN_cpuN (DOMAIN_tidT_cpuN), then DOMAIN_cpuN.1, ... */
static int stream_open_file(struct ctf_writer *w, struct ctf_stream *s)
{
	const char *subdir = tv_reader_domain(w->rd, s->domain)->subdir;
	char path[4096];

	char tid[24] = "";

	if (s->tid >= 0)
		snprintf(tid, sizeof(tid), "_tid%d", s->tid);
	if (s->generation)
		snprintf(path, sizeof(path), "%s/%s%s_cpu%u.%u", w->out, subdir, tid, s->cpu,
			 s->generation);
	else
		snprintf(path, sizeof(path), "%s/%s%s_cpu%u", w->out, subdir, tid, s->cpu);
	free(s->path);
	s->path = strdup(path);
	if (!s->path)
		return -ENOMEM;
	s->f = tv_file_fcreate(path, "stream file");
	if (!s->f)
		return -errno;
	/* babeltrace2 takes files with one stream_instance_id for one stream. */
	s->instance = w->nr_streams++;
	s->seq = 0;
	s->discarded = 0;
	s->nr_events = 0;
	return 0;
}

static void stream_free(struct ctf_stream *s)
{
	if (!s)
		return;
	free(s->path);
	free(s->buf);
	free(s);
}

/* @s out of the writer's list of open streams. */
static void open_list_remove(struct ctf_writer *w, struct ctf_stream *s)
{
	if (s->newer)
		s->newer->older = s->older;
	else
		w->newest = s->older;
	if (s->older)
		s->older->newer = s->newer;
	else
		w->oldest = s->newer;
	s->newer = s->older = NULL;
}

static void open_list_push(struct ctf_writer *w, struct ctf_stream *s)
{
	s->older = w->newest;
	s->newer = NULL;
	if (w->newest)
		w->newest->newer = s;
	else
		w->oldest = s;
	w->newest = s;
}

/* A lane of a stream written before, open again for appending (never through a link). */
static int lane_reopen(struct ctf_stream *l)
{
	int fd = open(l->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);

	l->f = fd < 0 ? NULL : fdopen(fd, "a");
	if (!l->f) {
		int err = errno;

		tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", l->path, err, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	return 0;
}

/*
 * Close the stream written least recently: its packet ends there (a packet
 * boundary is valid anywhere), its file is closed and its buffer freed.
 */
static int stream_close_oldest(struct ctf_writer *w)
{
	struct ctf_stream *s = w->oldest, *a = s->active;
	int ret = flush_packet(w, a);

	if (fclose(a->f) && !ret) {
		tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", a->path, errno,
		       strerror(errno));
		ret = -EIO;
	}
	a->f = NULL;
	free(a->buf);
	a->buf = NULL;
	open_list_remove(w, s);
	s->open = 0;
	w->nr_open--;
	w->nr_closed++;
	return ret;
}

/*
 * @s ready to write: its active lane's file open (created on first use)
 * and a packet buffer, within the writer's CTF_MAX_OPEN_STREAMS; @s
 * becomes the most recently used.
 */
static int stream_activate(struct ctf_writer *w, struct ctf_stream *s)
{
	struct ctf_stream *a = s->active;
	int ret;

	if (s->open) {
		if (w->newest != s) {
			open_list_remove(w, s);
			open_list_push(w, s);
		}
		return 0;
	}
	if (w->nr_open >= w->max_open && (ret = stream_close_oldest(w)))
		return ret;
	a->buf = malloc(PACKET_DATA);
	if (!a->buf)
		return -ENOMEM;
	ret = a->path ? lane_reopen(a) : stream_open_file(w, a);
	if (ret) {
		free(a->buf);
		a->buf = NULL;
		return ret;
	}
	s->open = 1;
	w->nr_open++;
	open_list_push(w, s);
	return 0;
}

/* A stream of @ev's domain and CPU, of thread @tid (-1: none, or several), opened. */
static int stream_new(struct ctf_writer *w, const struct tv_event *ev, int32_t tid,
		      struct ctf_stream **out)
{
	struct ctf_stream *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->domain = (uint32_t)ev->domain_index;
	s->cpu = (uint32_t)ev->cpu;
	s->tid = tid;
	s->has_tid = w->doms[ev->domain_index].per_thread;
	s->lanes[0] = s->active = s;
	s->nr_lanes = 1;
	ret = stream_activate(w, s);
	if (ret) {
		stream_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

static int cpu_stream_get(struct ctf_writer *w, const struct tv_event *ev, struct ctf_stream **out)
{
	struct ctf_domain_streams *ds = &w->doms[ev->domain_index];
	size_t cpu = (size_t)ev->cpu;
	int ret;

	if (cpu >= ds->nr) {
		struct ctf_stream **grown = realloc(ds->cpu, (cpu + 1) * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		memset(grown + ds->nr, 0, (cpu + 1 - ds->nr) * sizeof(*grown));
		ds->cpu = grown;
		ds->nr = cpu + 1;
	}
	if (ds->cpu[cpu]) {
		*out = ds->cpu[cpu];
		return stream_activate(w, *out);
	}
	ret = stream_new(w, ev, -1, out);
	if (!ret)
		ds->cpu[cpu] = *out;
	return ret;
}

/*
 * A ust domain's stream of the event's thread (common_pid, the tid) on its
 * CPU.  Events come in runs of one thread: the last stream is tried first.
 * Beyond CTF_MAX_THREAD_STREAMS (thread, CPU) pairs, a thread's events go
 * to the domain's stream of that CPU (tid -1; each event's pid is its
 * thread): the thread ids are the traced process's to choose, a guest's
 * could make one file per id.
 */
static int thread_stream_get(struct ctf_writer *w, const struct tv_event *ev,
			     struct ctf_stream **out)
{
	struct ctf_domain_streams *ds = &w->doms[ev->domain_index];
	int32_t tid = ev->pid < 0 ? 0 : ev->pid;
	struct ctf_stream *s;
	int ret;

	if (ds->last && ds->last->tid == tid && ds->last->cpu == (uint32_t)ev->cpu) {
		*out = ds->last;
		return stream_activate(w, *out);
	}
	for (size_t i = 0; i < ds->nr_threads; i++)
		if (ds->threads[i]->tid == tid && ds->threads[i]->cpu == (uint32_t)ev->cpu) {
			*out = ds->last = ds->threads[i];
			return stream_activate(w, *out);
		}
	if (ds->nr_threads == CTF_MAX_THREAD_STREAMS) {
		if (!ds->folded++)
			tv_warn("More than %d thread streams in a traced process: the events of its other threads go to its CPU streams (tid -1 in their packets, each event's pid its thread): domain=\"%s\", subdir=\"%s\"",
				CTF_MAX_THREAD_STREAMS, ev->domain,
				tv_reader_domain(w->rd, (size_t)ev->domain_index)->subdir);
		return cpu_stream_get(w, ev, out);
	}
	if (ds->nr_threads == ds->cap_threads) {
		size_t cap = ds->cap_threads ? 2 * ds->cap_threads : 16;
		struct ctf_stream **grown = realloc(ds->threads, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		ds->threads = grown;
		ds->cap_threads = cap;
	}
	ret = stream_new(w, ev, tid, &s);
	if (ret)
		return ret;
	ds->threads[ds->nr_threads++] = s;
	*out = ds->last = s;
	return 0;
}

/* @ev's stream, open for writing. */
static int stream_get(struct ctf_writer *w, const struct tv_event *ev, struct ctf_stream **out)
{
	if (ev->cpu < 0 || (size_t)ev->cpu >= MAX_CPUS) {
		tv_err("Event CPU out of range: domain=\"%s\", cpu=%d",
		       tv_reader_domain(w->rd, (size_t)ev->domain_index)->name, ev->cpu);
		return -ERANGE;
	}
	if (w->doms[ev->domain_index].per_thread)
		return thread_stream_get(w, ev, out);
	return cpu_stream_get(w, ev, out);
}

/* Leave the active lane at a packet boundary: its packet written, its file closed, its buffer given to @to. */
static int lane_leave(struct ctf_stream *base, struct ctf_writer *w, struct ctf_stream *to)
{
	struct ctf_stream *from = base->active;
	int ret = flush_packet(w, from);

	if (ret)
		return ret;
	ret = fclose(from->f);
	from->f = NULL;
	if (ret) {
		tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", from->path, errno,
		       strerror(errno));
		return -EIO;
	}
	to->buf = from->buf;
	from->buf = NULL;
	base->active = to;
	return 0;
}

/*
 * An event earlier than the last one of its stream's file (a CPU's clock or
 * buffer going back, a guest's timestamps mapped across a clock step): CTF
 * readers need every stream file in time order.  Trace Compass stops
 * indexing a stream file at a packet that begins before the previous one
 * (StreamInputPacketIndex.append) and seeks within a packet by reading
 * until the time sought (CTFStreamInputReader.seek); babeltrace2's muxer
 * fails.  So the step back is a packet boundary, and the stream goes on in
 * the file of its own whose last event is the latest not after this one
 * (a clock that steps back and runs on, again and again, alternates between
 * two files), or in a new file while there are fewer than CTF_MAX_LANES;
 * every event keeps its own timestamp.  An event earlier than the ends of
 * all CTF_MAX_LANES files is left out and counted (events_discarded of the
 * file it fits least badly, and one warning at the end): a crafted stream
 * stepping back 10,000 times makes 8 files, not 10,000.
 * Return: 0 with *@out the lane to write to, or NULL (left out); -errno.
 */
static int lane_pick(struct ctf_writer *w, struct ctf_stream *base, const struct tv_event *ev,
		     struct ctf_stream **out)
{
	struct ctf_stream *cur = base->active, *best = NULL, *oldest = base;
	int ret;

	*out = cur;
	if (!cur->nr_events || ev->ts >= cur->last_ts)
		return 0;
	for (unsigned int i = 0; i < base->nr_lanes; i++) {
		struct ctf_stream *l = base->lanes[i];

		if (l->last_ts <= ev->ts && (!best || l->last_ts > best->last_ts))
			best = l;
		if (l->last_ts < oldest->last_ts)
			oldest = l;
	}
	if (!w->nr_splits++)
		tv_warn("Time goes back in a CPU stream, which goes on in another CTF stream "
			"file: domain=\"%s\", cpu=%u, ts=%llu, previous_ts=%llu",
			ev->domain, base->cpu, (unsigned long long)ev->ts,
			(unsigned long long)cur->last_ts);
	if (!best && base->nr_lanes == CTF_MAX_LANES) {
		oldest->discarded++;	/* said in its next packet, or in none if it has no more */
		base->dropped++;
		w->nr_dropped++;
		*out = NULL;
		return 0;
	}
	if (best) {
		ret = lane_leave(base, w, best) ?: lane_reopen(best);
		*out = best;
		return ret;
	}
	best = calloc(1, sizeof(*best));
	if (!best)
		return -ENOMEM;
	best->domain = base->domain;
	best->cpu = base->cpu;
	best->tid = base->tid;
	best->has_tid = base->has_tid;
	best->generation = base->nr_lanes;
	base->lanes[base->nr_lanes++] = best;
	ret = lane_leave(base, w, best);
	if (!ret)
		ret = stream_open_file(w, best);
	*out = best;
	return ret;
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

/*
 * Encodes one field into out, or with out NULL only counts its bytes: the
 * sizing pass that keeps every event whole in one packet.
 */
static size_t encode_field(unsigned char *out, const unsigned char *rec, int rec_size,
			   const struct layout_field *f)
{
	const unsigned char *p;
	uint32_t len, count;

	switch (f->kind) {
	case FK_INT:
	case FK_TEXT_ARRAY:
	case FK_ARRAY:
		if (out)
			memcpy(out, rec + f->offset, (size_t)f->size);
		return (size_t)f->size;
	case FK_STRING:
		p = dynamic_data(rec, f, &len);
		len = (uint32_t)strnlen((const char *)p, len);
		if (out) {
			memcpy(out, p, len);
			out[len] = '\0';
		}
		return len + 1;
	case FK_EMPTY:
		return 0;
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
	if (out) {
		put_u32(out, count);
		memcpy(out + 4, p, (size_t)count * f->elem);
	}
	return 4 + (size_t)count * f->elem;
}

#define EVENT_HEADER_SIZE 16	/* id, timestamp, then the context: pid, flags, preempt */

static int encode_event(struct ctf_writer *w, struct ctf_stream *s, const struct tv_event *ev,
			const struct layout *l)
{
	const unsigned char *rec = ev->record->data;
	size_t size = EVENT_HEADER_SIZE;
	unsigned char *out;
	int ret;

	for (int i = 0; i < l->nr; i++)
		size += encode_field(NULL, rec, ev->record->size, &l->f[i]);
	if (size > PACKET_DATA) {
		tv_err("Event too large for a CTF packet: domain=\"%s\", cpu=%d, ts=%llu, size=%zu",
		       ev->domain, ev->cpu, (unsigned long long)ev->ts, size);
		return -E2BIG;
	}
	ret = lane_pick(w, s, ev, &s);
	if (ret || !s)
		return ret;
	if (s->len + size > PACKET_DATA) {
		ret = flush_packet(w, s);
		if (ret)
			return ret;
	}
	if (!s->len)
		s->ts_begin = ev->ts;
	s->ts_end = ev->ts;
	s->last_ts = ev->ts;
	s->nr_events++;
	if (ev->missed_before > 0)
		s->discarded += (uint64_t)ev->missed_before;
	out = s->buf + s->len;
	memcpy(out, rec, 2);		/* common_type: the event id */
	put_u64(out + 2, ev->ts);
	memcpy(out + 10, rec + 4, 4);	/* common_pid */
	memcpy(out + 14, rec + 2, 2);	/* common_flags, common_preempt_count */
	out += EVENT_HEADER_SIZE;
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

/* NAME ends in @kind (_cpu, _tid), digits, maybe .digits, after a non-empty prefix. */
static int is_stream_file_name_of(const char *name, const char *kind)
{
	const char *p = strstr(name, kind), *next;

	while (p && (next = strstr(p + 1, kind)))
		p = next;
	if (!p || p == name)
		return 0;
	p += 4;
	if (*p < '0' || *p > '9')
		return 0;
	p += strspn(p, "0123456789");
	if (*p == '.' && p[1] >= '0' && p[1] <= '9')
		p += 1 + strspn(p + 1, "0123456789");
	return !*p;
}

/* DOMAIN_cpuN or DOMAIN_tidT_cpuN, maybe with .G: a stream file this writer names. */
static int is_stream_file_name(const char *name)
{
	return is_stream_file_name_of(name, "_cpu");
}

static int is_our_metadata(const char *path)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return !strncmp(buf, "/* CTF 1.8 */", 13) && strstr(buf, "\ttracer_name = \"tracevisor\";");
}

/*
 * Trace Compass (CTFTrace's MetadataFileFilter) and babeltrace2 open every
 * visible file of the trace directory as a stream file, so a stale one
 * left by an earlier export of another session (its stream ids, uuid and
 * events) would make the trace unreadable.  An existing OUT must be empty
 * or an earlier tracevisor export, whose files are removed; anything else
 * in it is refused.  Hidden files are left alone: both readers skip them.
 */
static int prepare_output(const char *out)
{
	char path[4096];
	struct dirent *de;
	int ours, pass, ret = 0;
	DIR *dir;

	if (!mkdir(out, 0755))
		return 0;
	if (errno != EEXIST) {
		int err = errno;

		tv_err("Cannot create directory: path=\"%s\", errno=%d (%s)", out, err, strerror(err));
		return -err;
	}
	snprintf(path, sizeof(path), "%s/metadata", out);
	ours = is_our_metadata(path);
	for (pass = 0; pass < 2 && !ret; pass++) {
		dir = opendir(out);
		if (!dir) {
			int err = errno;

			tv_err("Cannot open output directory: path=\"%s\", errno=%d (%s)", out, err, strerror(err));
			return -err;
		}
		while (!ret && (de = readdir(dir))) {
			struct stat sb;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", out, de->d_name);
			if (pass == 0 && (!ours || lstat(path, &sb) || !S_ISREG(sb.st_mode) ||
					  (strcmp(de->d_name, "metadata") &&
					   !is_stream_file_name(de->d_name)))) {
				tv_err("Output directory holds a file that is not from a tracevisor "
				       "CTF export, which CTF readers would open as a stream: "
				       "path=\"%s\"", path);
				ret = -EEXIST;
			} else if (pass == 1 && unlink(path)) {
				ret = -errno;
				tv_err("Cannot remove earlier export file: path=\"%s\", errno=%d (%s)",
				       path, -ret, strerror(-ret));
			}
		}
		closedir(dir);
	}
	return ret;
}

static int writer_init(struct ctf_writer *w, struct layout_cache *c)
{
	size_t nd = tv_reader_nr_domains(w->rd);
	struct rlimit rl;
	int fd, ret;

	ret = prepare_output(w->out);
	if (ret)
		return ret;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, w->uuid, 16) != 16) {
		tv_err("Cannot read /dev/urandom for the trace uuid: errno=%d (%s)", errno, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	w->max_open = CTF_MAX_OPEN_STREAMS;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < w->max_open)
		w->max_open = rl.rlim_cur / 4 > 4 ? (unsigned int)(rl.rlim_cur / 4) : 4;
	w->uuid[6] = (w->uuid[6] & 0x0f) | 0x40;	/* RFC 4122 version 4 */
	w->uuid[8] = (w->uuid[8] & 0x3f) | 0x80;
	w->doms = calloc(nd, sizeof(*w->doms));
	w->nr_domains = nd;
	c->nr_domains = nd;
	c->by_id = calloc(nd * 65536, sizeof(*c->by_id));
	if (!w->doms || !c->by_id)
		return -ENOMEM;
	for (size_t d = 0; d < nd; d++) {
		const char *kind = tv_meta_get(tv_reader_domain(w->rd, d)->meta, "kind");

		w->doms[d].per_thread = kind && !strcmp(kind, "ust");
	}
	/* Markers are looked for by format pointer: no name compare per event. */
	w->ref_raw_data = tep_find_event_by_name(tv_reader_domain(w->rd, 0)->tep, "ftrace",
						 "raw_data");
	return write_metadata(w);
}

/*
 * Flush and close @s's active lane (unless an error came first), then free
 * every lane; the first error is kept.  A lane's discarded count that no
 * packet carries (events left out after its last one) is lost to CTF
 * readers: the warning at the end says the total.
 */
static int stream_finish(struct ctf_writer *w, struct ctf_stream *s, int ret)
{
	struct ctf_stream *a;

	if (!s)
		return ret;
	a = s->active;	/* closed (its packet written) if it was the oldest of too many */
	if (!ret && a->f)
		ret = flush_packet(w, a);
	if (a->f && fclose(a->f) && !ret) {
		tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", a->path, errno,
		       strerror(errno));
		ret = -EIO;
	}
	if (s->dropped)
		tv_warn("Time went back in a CPU stream before the ends of all its %d CTF stream files: %llu events left out: domain=\"%s\", cpu=%u",
			CTF_MAX_LANES, (unsigned long long)s->dropped,
			tv_reader_domain(w->rd, s->domain)->name, s->cpu);
	for (unsigned int i = 1; i < s->nr_lanes; i++)
		stream_free(s->lanes[i]);
	stream_free(s);
	return ret;
}

static int writer_finish(struct ctf_writer *w, struct layout_cache *c, int ret)
{
	for (size_t d = 0; w->doms && d < w->nr_domains; d++) {
		for (size_t i = 0; i < w->doms[d].nr; i++)
			ret = stream_finish(w, w->doms[d].cpu[i], ret);
		for (size_t i = 0; i < w->doms[d].nr_threads; i++)
			ret = stream_finish(w, w->doms[d].threads[i], ret);
		free(w->doms[d].threads);
		free(w->doms[d].cpu);
	}
	free(w->doms);
	for (size_t i = 0; c->by_id && i < c->nr_domains * 65536; i++)
		free(c->by_id[i]);
	free(c->by_id);
	if (!ret && w->nr_closed)
		tv_info("More than %u CTF stream files written at once: %llu closed and reopened as written (their packets end there)",
			w->max_open, (unsigned long long)w->nr_closed);
	if (!ret && w->nr_splits)
		tv_warn("Time went back %llu times in CPU streams: %llu stream files written, %llu events left out",
			(unsigned long long)w->nr_splits, (unsigned long long)w->nr_streams,
			(unsigned long long)w->nr_dropped);
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
		struct ctf_stream *s;
		const struct layout *l;

		if (!ev.format) {
			tv_err("Event without a format: domain=\"%s\", cpu=%d, ts=%llu",
			       ev.domain, ev.cpu, (unsigned long long)ev.ts);
			ret = -EINVAL;
			break;
		}
		ret = stream_get(&w, &ev, &s);
		if (ret)
			break;
		l = layout_get(&cache, &ev);
		ret = l ? encode_event(&w, s, &ev, l) : -ENOMEM;
		st->events++;
		if (!w.have_wall_clock && ev.format == w.ref_raw_data && ev.domain_index == 0)
			w.have_wall_clock = !tv_wall_clock_of_event(&ev, &w.wall);
	}
	/* Written first so that a failed export is still readable; now with the offset. */
	if (ret >= 0 && w.have_wall_clock)
		ret = write_metadata(&w);
	st->streams = w.nr_streams;
	return writer_finish(&w, &cache, ret < 0 ? ret : 0);
}
