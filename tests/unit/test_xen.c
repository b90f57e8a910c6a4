// SPDX-License-Identifier: GPL-2.0
/*
 * Xen trace decoding on committed sample buffers (tests/samples/xen-*,
 * written by gen-xen-samples.py): a xentrace file imported and read back
 * through the session reader against the expected events, the ring copy
 * of a window that wraps (WRAP_BUFFER padding) with a record straddling a
 * page boundary, lost-record accounting, stat rows, and the helpers.
 * xen-classes.xentrace has one record of every layout the decoder names
 * (lib/xen/xen_events.c), packed by the generator from Xen's own structures:
 * its expected output pins every field of every class, and every table
 * event must appear in it.  It also checks where a CPU's start state comes
 * from (its first scheduler record, else the session's cpuN.running), and
 * that the recorder's record count, taken window by window, is the count
 * of the file those windows make.
 *
 * TV_XEN_WRITE_EXPECTED=1 rewrites the .expected files from the decoder
 * (after a deliberate decoding change: review the diff).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "xen_trace.h"
#include "../../xen/xen_internal.h"
#include "tv_test.h"
#include "tv_internal.h"
#include "../../xen/xen_stat.h"
#include "reader_internal.h"

static const char *root(void)
{
	const char *r = getenv("TV_ROOT");

	return r ? r : ".";
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* Every event of the session as "ts cpu event fields" lines. */
static size_t count_lines(const char *s)
{
	size_t n = 0;

	while ((s = strchr(s, '\n'))) {
		n++;
		s++;
	}
	return n;
}

static char *session_lines(const char *dir)
{
	struct tv_strbuf sb = { 0 };
	struct tv_reader *rd;
	struct tv_event ev;
	int ret = tv_reader_open(dir, &rd);

	if (ret)
		return NULL;
	while ((ret = tv_reader_next(rd, &ev)) > 0) {
		tv_strbuf_append(&sb, "%llu %d %s lost=%lld ", (unsigned long long)ev.ts, ev.cpu,
				 ev.format->name, ev.missed_before);
		tv_event_fields_json(&ev, &sb);
		tv_strbuf_append(&sb, "\n");
	}
	tv_reader_close(rd);
	return ret ? NULL : sb.data;
}

/* Compare @got with the expected file, or rewrite it on request. */
static int expect_file(const char *got, const char *exp_path)
{
	size_t len;
	char *want;
	int same;

	if (getenv("TV_XEN_WRITE_EXPECTED") && got) {
		FILE *f = fopen(exp_path, "we");

		if (f) {
			fputs(got, f);
			fclose(f);
		}
	}
	want = slurp(exp_path, &len);
	same = got && want && !strcmp(got, want);
	free(want);
	return same;
}

static void test_import_two_cpus(const char *tmp)
{
	char in[4096], dir[4096], exp_path[4096], meta_path[4200];
	char *got;
	struct tv_meta *m = NULL;

	snprintf(in, sizeof(in), "%s/tests/samples/xen-two-cpus.xentrace", root());
	snprintf(dir, sizeof(dir), "%s/two", tmp);
	snprintf(exp_path, sizeof(exp_path), "%s/tests/samples/xen-two-cpus.expected", root());
	TV_CHECK(tv_xen_import_xentrace(in, dir, 1000) == 0, "import %s", in);
	got = session_lines(dir);
	TV_CHECK(expect_file(got, exp_path), "decoded events differ from %s:\n%s", exp_path,
		 got ? got : "(none)");
	snprintf(meta_path, sizeof(meta_path), "%s/xen/meta", dir);
	TV_CHECK(tv_meta_read(meta_path, &m) == 0, "xen/meta");
	if (m) {
		TV_CHECK(tv_meta_get_ll(m, "lost_total", -1) == 7, "lost_total=%s",
			 tv_meta_get(m, "lost_total"));
		TV_CHECK(tv_meta_get_ll(m, "events_total", -1) == 15, "events_total=%s",
			 tv_meta_get(m, "events_total"));
		TV_CHECK(!strcmp(tv_meta_get(m, "kind"), "xen-trace"), "kind");
		tv_meta_free(m);
	}
	free(got);
}

/*
 * The same session as if recorded on the patched Xen (clock=xen-system):
 * CPU 1 starts with the scale in meta (0.5 ns per tick from tsc 1000 at
 * 1e9 ns) and switches at its in-band TRC_TRACE_TSCALE record (tsc 1300 at
 * 2e9 ns): its guest record at tsc 1350 is at 2e9 + 25 ns.
 */
static void test_system_time(const char *tmp)
{
	static const char *const keys[][2] = {
		{ "clock", "xen-system" }, { "cpu1.tsc_to_system_mul", "2147483648" },
		{ "cpu1.tsc_shift", "0" }, { "cpu1.tsc_timestamp", "1000" },
		{ "cpu1.system_time", "1000000000" },
	};
	char path[4200];
	struct tv_meta *m;
	struct tv_reader *rd;
	struct tv_event ev;
	int seen = 0;

	snprintf(path, sizeof(path), "%s/two/xen/meta", tmp);
	if (tv_meta_read(path, &m))
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		tv_meta_set(m, keys[i][0], "%s", keys[i][1]);
	TV_CHECK(tv_meta_write(m, path) == 0, "meta rewrite");
	tv_meta_free(m);
	snprintf(path, sizeof(path), "%s/two", tmp);
	if (tv_reader_open(path, &rd))
		return;
	while (tv_reader_next(rd, &ev) > 0) {
		if (ev.cpu != 1)
			continue;
		if (!strcmp(ev.format->name, "xen_runstate_change")) {
			TV_CHECK(ev.ts == 1000000025, "before the tscale record: %llu",
				 (unsigned long long)ev.ts);
			seen++;
		}
		if (!strcmp(ev.format->name, "xen_guest")) {
			TV_CHECK(ev.ts == 2000000025, "after the tscale record: %llu",
				 (unsigned long long)ev.ts);
			seen++;
		}
	}
	TV_CHECK(seen == 2, "both records seen");
	tv_reader_close(rd);
}

static const struct tv_exit_stat_row *find_row(const struct tv_exit_stat *st, const char *vm,
					      const char *vcpu, const char *reason)
{
	for (size_t i = 0; i < st->nr_rows; i++)
		if (!strcmp(st->rows[i].vm, vm) && !strcmp(st->rows[i].vcpu, vcpu) &&
		    !strcmp(st->rows[i].reason, reason))
			return &st->rows[i];
	return NULL;
}

static void test_stat(const char *tmp)
{
	char dir[4096];
	struct tv_exit_stat st;
	const struct tv_exit_stat_row *r;

	snprintf(dir, sizeof(dir), "%s/two", tmp);
	TV_CHECK(tv_xen_stat_compute(dir, &st) == 0, "stat");
	/* 1 kHz TSC: 1 tick = 1 us.  blocked->runnable 1000, ->running 1300, ->blocked 1900. */
	r = find_row(&st, "d0", "0", "runstate:runnable");
	TV_CHECK(r && r->count == 1 && r->total_ns == 300000, "runnable 300 us");
	r = find_row(&st, "d0", "0", "runstate:running");
	TV_CHECK(r && r->total_ns == 600000, "running 600 us");
	r = find_row(&st, "d0", "0", "vmexit:0x1e");
	TV_CHECK(r && r->count == 1 && r->p50_ns == 100000, "vmexit 1600->1700");
	r = find_row(&st, "d0", "0", "hypercall:sched_op");
	TV_CHECK(r && r->count == 1 && !r->has_latency, "sched_op counted");
	TV_CHECK(find_row(&st, "d0", "0", "hvm:io_read") != NULL, "io_read handler");
	r = find_row(&st, "d0", "all", "hypercall:sched_op");
	TV_CHECK(r && r->count == 1, "hypercalls per domain: d0 sched_op");
	r = find_row(&st, "d0", "all", "hypercall:mmu_update");
	TV_CHECK(r && r->count == 1, "hypercalls per domain: d0 mmu_update");
	for (size_t i = 0; i < st.nr_rows; i++)
		TV_CHECK(strcmp(st.rows[i].vm, "unknown"), "row under vm unknown: %s",
			 st.rows[i].reason);
	TV_CHECK(st.lost == 7, "lost %llu", (unsigned long long)st.lost);
	tv_exit_stat_free(&st);
	/* the classes sample: PV entries counted, subcalls apart */
	snprintf(dir, sizeof(dir), "%s/classes", tmp);
	if (tv_xen_stat_compute(dir, &st))
		return;
	r = find_row(&st, "d1", "0", "pv:page_fault");
	TV_CHECK(r && r->count == 2, "PV page faults of d1v0 (32- and 64-bit)");
	r = find_row(&st, "d2", "1", "pv:page_fault");
	TV_CHECK(r && r->count == 1, "PV page fault of d2v1 before its CPU's first switch");
	r = find_row(&st, "d1", "0", "subcall:multicall");
	TV_CHECK(r && r->count == 1, "a multicall entry");
	TV_CHECK(!find_row(&st, "d1", "all", "hypercall:multicall"), "subcalls not hypercalls");
	tv_exit_stat_free(&st);
}

/* Set meta keys of the session @dir's Xen domain. */
static int set_meta(const char *dir, const char *const (*kv)[2], size_t n)
{
	char path[4200];
	struct tv_meta *m;

	snprintf(path, sizeof(path), "%s/xen/meta", dir);
	if (tv_meta_read(path, &m))
		return -1;
	for (size_t i = 0; i < n; i++)
		tv_meta_set(m, kv[i][0], "%s", kv[i][1]);
	if (tv_meta_write(m, path)) {
		tv_meta_free(m);
		return -1;
	}
	tv_meta_free(m);
	return 0;
}

static void test_classes(const char *tmp)
{
	static const char *const snap[][2] = {
		{ "cpu1.running", "9.9" },	/* the scan's d2v1 wins: it is exact */
		{ "cpu2.running", "3.2" },	/* nothing to scan: the snapshot */
		{ "hvm_isa", "svm" },
	};
	char in[4096], dir[4096], exp_path[4096], cmd[8400];
	struct tv_reader *rd;
	struct tv_event ev;
	char *got;
	int seen_cpu1 = 0, seen_cpu2 = 0, vmexit = 0;

	TV_CHECK(tv_xen_gen_check() == 0, "decoder table sorted, fields match events: %d",
		 tv_xen_gen_check());
	snprintf(in, sizeof(in), "%s/tests/samples/xen-classes.xentrace", root());
	snprintf(dir, sizeof(dir), "%s/classes", tmp);
	snprintf(exp_path, sizeof(exp_path), "%s/tests/samples/xen-classes.expected", root());
	TV_CHECK(tv_xen_import_xentrace(in, dir, 1000) == 0, "import %s", in);
	got = session_lines(dir);
	TV_CHECK(expect_file(got, exp_path), "decoded events differ from %s:\n%s", exp_path,
		 got ? got : "(none)");
	for (int id = TV_XEN_EV_GEN_BASE; got && id < tv_xen_event_count(); id++) {
		char needle[96];

		snprintf(needle, sizeof(needle), " %s lost=", tv_xen_event_name(id));
		TV_CHECK(strstr(got, needle), "no sample record decodes to %s", tv_xen_event_name(id));
	}
	TV_CHECK(got && !strstr(got, "xen_other") && !strstr(got, "xen_hvm_handler"),
		 "every sample record named");
	/* A session written before these events existed lacks their formats:
	 * the reader adds its own, and the records decode the same. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/xen/events/xen/xen_pv_* '%s'/xen/events/xen/xen_hvm_*",
		 dir, dir);
	if (!system(cmd)) {
		char *again = session_lines(dir);

		TV_CHECK(again && got && !strcmp(again, got), "formats missing from the session: %s",
			 again ? "decoded differently" : "not read");
		free(again);
	}
	/* record --xen writes no events/ (formats=builtin): the reader's own
	 * formats decode the same; without the key the session is refused */
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s.b' && rm -rf '%s.b'/xen/events", dir, dir, dir);
	if (!system(cmd)) {
		static const char *const builtin[][2] = { { "formats", "builtin" } };
		struct tv_log_capture cap;
		char *again, bdir[4200];

		snprintf(bdir, sizeof(bdir), "%s.b", dir);
		tv_log_capture_begin(&cap);
		again = session_lines(bdir);
		tv_log_capture_end(&cap);
		TV_CHECK(!again, "no events/ and no formats=builtin: refused");
		free(again);
		again = set_meta(bdir, builtin, 1) ? NULL : session_lines(bdir);
		TV_CHECK(again && got && !strcmp(again, got), "formats=builtin: %s",
			 again ? "decoded differently" : "not read");
		free(again);
		/* its recorder killed: no session.meta (top --xen reads so while
		 * recording), then no meta either: still a domain, read the same */
		for (int i = 0; i < 2; i++) {
			snprintf(cmd, sizeof(cmd), "rm -f '%s'/%s", bdir, i ? "xen/meta" : "session.meta");
			if (system(cmd))
				break;
			tv_log_capture_begin(&cap);
			again = session_lines(bdir);
			tv_log_capture_end(&cap);
			/* without the meta, its clock and names are unknown: the same
			 * records, not the same text */
			TV_CHECK(again && got && (i ? count_lines(again) == count_lines(got) : !strcmp(again, got)),
				 "formats=builtin, no %s: %s", i ? "meta" : "session.meta",
				 again ? "decoded differently" : "not read");
			free(again);
		}
	}
	free(got);
	if (set_meta(dir, snap, sizeof(snap) / sizeof(snap[0])) || tv_reader_open(dir, &rd))
		return;
	while (tv_reader_next(rd, &ev) > 0) {
		uint64_t d = 0, v = 0;
		char *reason;

		tv_event_field_u64(&ev, "cur_dom", &d);
		tv_event_field_u64(&ev, "cur_vcpu", &v);
		if (ev.cpu == 1 && ev.ts == 10005000) {
			TV_CHECK(d == 2 && v == 1, "cpu1 start from its first switch: d%llu v%llu",
				 (unsigned long long)d, (unsigned long long)v);
			seen_cpu1++;
		}
		if (ev.cpu == 2) {
			TV_CHECK(d == 3 && v == 2, "cpu2 start from the snapshot: d%llu v%llu",
				 (unsigned long long)d, (unsigned long long)v);
			seen_cpu2++;
		}
		if (!strcmp(ev.format->name, "xen_vmexit")) {
			struct tep_format_field *f = tep_find_field(ev.format, "reason");

			reason = f ? (char *)ev.record->data + f->offset : NULL;
			TV_CHECK(reason && !strncmp(reason, "io", (size_t)f->size),
				 "SVM exit 0x7b named: %.24s", reason ? reason : "(null)");
			vmexit++;
		}
	}
	tv_reader_close(rd);
	TV_CHECK(seen_cpu1 == 1 && seen_cpu2 == 2 && vmexit == 1, "records seen: %d %d %d",
		 seen_cpu1, seen_cpu2, vmexit);
}

/* Hostile short records: every table layout decoded from fewer words than
 * it has reads zeros past the record, never stale bytes. */
static void test_short_records(void)
{
	struct tv_xen_cpu_state cs;
	unsigned char ev[TV_XEN_EVENT_MAX], buf[64];
	struct tv_xen_rec rec;
	uint64_t tsc;
	uint32_t hdr = 0x00201104u | (1u << 28) | (1u << 31), w = 0x11223344;
	unsigned int size;
	uint64_t vals[TV_XEN_GEN_MAX_FIELDS];

	memcpy(buf, &hdr, 4);
	memset(buf + 4, 0, 8);
	memcpy(buf + 12, &w, 4);
	tv_xen_cpu_state_init(&cs);
	TV_CHECK(tv_xen_rec_parse(buf, 16, &rec) == 16, "one-word page fault parses");
	size = tv_xen_rec_to_event(&cs, &rec, ev, &tsc);
	TV_CHECK(size == 16 + 3 * 8, "page fault event size %u", size);
	memcpy(vals, ev + 16, sizeof(uint64_t) * 3);
	TV_CHECK(vals[0] == 0x11223344 && vals[1] == 0 && vals[2] == 0,
		 "short record: rip low word only, addr and error code 0");
}

static void test_ring(void)
{
	char path[4096];
	size_t len;
	char *ring;
	uint32_t cons, prod, new_cons, data_size = 2 * 4096 - 8;
	unsigned char *out = malloc(data_size);
	struct tv_xen_cpu_state cs;
	struct tv_xen_rec rec;
	unsigned char ev[TV_XEN_EVENT_MAX];
	unsigned int nrec = 0, nwrap = 0, nwake = 0, nfill = 0, size;
	uint64_t tsc = 0, last_switch_tsc = 0;
	long n;

	snprintf(path, sizeof(path), "%s/tests/samples/xen-ring.bin", root());
	ring = slurp(path, &len);
	TV_CHECK(ring && len == 8192, "ring sample %s", path);
	if (!ring)
		return;
	memcpy(&cons, ring, 4);
	memcpy(&prod, ring + 4, 4);
	n = tv_xen_ring_copy(cons, prod, (unsigned char *)ring + 8, data_size, out, &new_cons);
	TV_CHECK(n == (long)(prod - cons), "window %ld bytes, prod-cons %u", n, prod - cons);
	TV_CHECK(new_cons == prod, "cons published as prod");
	tv_xen_cpu_state_init(&cs);
	for (long off = 0; off < n; off += size) {
		size = tv_xen_rec_parse(out + off, (size_t)(n - off), &rec);
		if (!size)
			break;
		nrec++;
		tv_xen_rec_to_event(&cs, &rec, ev, &tsc);
		nwrap += rec.event == 0x0001f002;
		nwake += rec.event == 0x00028004;
		nfill += rec.event == 0x00123456;
		if (rec.event == 0x0002800a) {
			last_switch_tsc = tsc;
			TV_CHECK(rec.extra[0] == 0 && rec.extra[1] == 1 && rec.extra[3] == 0,
				 "straddling switch record intact");
			TV_CHECK(cs.cur_dom == 0 && cs.cur_vcpu == 0, "switch sets running vcpu");
		}
		if (rec.event == 0x00123456)
			TV_CHECK(tsc == 5100, "record without TSC inherits 5100, got %llu",
				 (unsigned long long)tsc);
	}
	TV_CHECK(nwrap == 1 && nfill == 1, "one wrap, one filler (%u, %u)", nwrap, nfill);
	TV_CHECK(nwake == 203, "wake records %u", nwake);
	TV_CHECK(last_switch_tsc == 5200, "straddling record's TSC %llu",
		 (unsigned long long)last_switch_tsc);
	TV_CHECK(nrec == 1 + 1 + nwake + 1 + 1, "all records parsed (%u)", nrec);
	/* Edges: empty, exactly full, impossible indices. */
	TV_CHECK(tv_xen_ring_copy(16, 16, out, data_size, out, &new_cons) == 0, "empty");
	TV_CHECK(tv_xen_ring_copy(8, 8 + data_size, (unsigned char *)ring + 8, data_size, out,
				  &new_cons) == (long)data_size, "full window is the whole ring");
	TV_CHECK(tv_xen_ring_copy(2 * data_size, 0, out, data_size, out, &new_cons) == -EBADMSG,
		 "cons out of range");
	TV_CHECK(tv_xen_ring_copy(2, 8, out, data_size, out, &new_cons) == -EBADMSG, "unaligned");
	free(ring);
	free(out);
}

/* The count by tv_xen_rec_parse() over the whole stream, as the meta's was
 * taken before the recorder counted windows: the reference. */
static struct tv_xen_cpu_count count_reference(const unsigned char *p, size_t len)
{
	struct tv_xen_cpu_count c = { 0 };
	struct tv_xen_rec rec;
	unsigned int size;
	size_t pos = 0;

	while ((size = tv_xen_rec_parse(p + pos, len - pos, &rec)) != 0) {
		pos += size;
		c.bytes += size;
		if (rec.event == XT_WRAP_BUFFER)
			c.wraps++;
		else if (rec.event == XT_LOST_RECORDS)
			c.lost += rec.extra[0];
		else
			c.records++;
	}
	c.bytes += len - pos;
	return c;
}

static int count_equal(const struct tv_xen_cpu_count *a, const struct tv_xen_cpu_count *b)
{
	return a->bytes == b->bytes && a->records == b->records && a->lost == b->lost &&
	       a->wraps == b->wraps;
}

/* Windows cut anywhere (every piece size 1..48, and pseudo-random cuts)
 * count as the file they make; so does tv_xen_count_stream(). */
static void test_count_windows(const char *tmp)
{
	char path[4096];
	size_t len = 0, stream_len;
	char *ring;
	uint32_t cons, prod, new_cons, data_size = 2 * 4096 - 8, w;
	unsigned char *stream = malloc(2 * data_size);
	struct tv_xen_cpu_count ref, file;
	struct tv_xen_counter c;
	unsigned int seed = 12345;
	long n;
	FILE *f;
	int ok = 1;

	snprintf(path, sizeof(path), "%s/tests/samples/xen-ring.bin", root());
	ring = slurp(path, &len);
	TV_CHECK(ring && len == 8192 && stream, "ring sample %s", path);
	if (!ring || len != 8192 || !stream)
		return;
	memcpy(&cons, ring, 4);
	memcpy(&prod, ring + 4, 4);
	n = tv_xen_ring_copy(cons, prod, (unsigned char *)ring + 8, data_size, stream, &new_cons);
	stream_len = (size_t)n;
	/* lost records: with a TSC (extra[0] after it), without, and with no
	 * extra word at all; then a record cut off at the end */
	w = XT_LOST_RECORDS | (4u << 28) | (1u << 31);
	memcpy(stream + stream_len, &w, 4);
	memset(stream + stream_len + 4, 0xee, 8);
	w = 7;
	memcpy(stream + stream_len + 12, &w, 4);
	memset(stream + stream_len + 16, 0, 12);
	stream_len += 28;
	w = XT_LOST_RECORDS | (1u << 28);
	memcpy(stream + stream_len, &w, 4);
	w = 5;
	memcpy(stream + stream_len + 4, &w, 4);
	stream_len += 8;
	w = XT_LOST_RECORDS;
	memcpy(stream + stream_len, &w, 4);
	stream_len += 4;
	w = 0x00028004u | (2u << 28) | (1u << 31);	/* 20 bytes, 10 present */
	memcpy(stream + stream_len, &w, 4);
	memset(stream + stream_len + 4, 0, 6);
	stream_len += 10;
	ref = count_reference(stream, stream_len);
	TV_CHECK(ref.lost == 12 && ref.wraps == 1 && ref.records == 206 && ref.bytes == stream_len,
		 "reference count: %llu records, %llu lost, %llu wraps",
		 (unsigned long long)ref.records, (unsigned long long)ref.lost,
		 (unsigned long long)ref.wraps);
	for (size_t piece = 1; piece <= 48; piece++) {
		memset(&c, 0, sizeof(c));
		for (size_t off = 0; off < stream_len; off += piece)
			tv_xen_count_feed(&c, stream + off,
					  piece < stream_len - off ? piece : stream_len - off);
		ok &= count_equal(&c.cnt, &ref);
	}
	for (int round = 0; round < 200; round++) {
		memset(&c, 0, sizeof(c));
		for (size_t off = 0, piece; off < stream_len; off += piece) {
			seed = seed * 1103515245u + 12345u;
			piece = 1 + (seed >> 16) % 700;
			if (piece > stream_len - off)
				piece = stream_len - off;
			tv_xen_count_feed(&c, stream + off, piece);
		}
		ok &= count_equal(&c.cnt, &ref);
	}
	TV_CHECK(ok, "windows cut anywhere count as the whole stream");
	snprintf(path, sizeof(path), "%s/count.xen", tmp);
	f = fopen(path, "wb");
	TV_CHECK(f && fwrite(stream, 1, stream_len, f) == stream_len && !fclose(f), "write %s", path);
	TV_CHECK(tv_xen_count_stream(path, &file) == 0 && count_equal(&file, &ref),
		 "tv_xen_count_stream counts the same");
	unlink(path);
	free(ring);
	free(stream);
}

/* The window in place: one piece, two when it wraps, one when it ends
 * exactly at the end of the data area. */
static void test_ring_window(void)
{
	static unsigned char data[4096 - 8];
	uint32_t data_size = sizeof(data), new_cons;
	struct tv_xen_piece p[2];

	TV_CHECK(tv_xen_ring_window(16, 16, data, data_size, p, &new_cons) == 0 && new_cons == 16,
		 "empty window");
	TV_CHECK(tv_xen_ring_window(16, 40, data, data_size, p, &new_cons) == 1 &&
		 p[0].data == data + 16 && p[0].len == 24 && new_cons == 40, "one piece");
	TV_CHECK(tv_xen_ring_window(data_size - 8, data_size + 12, data, data_size, p, &new_cons) == 2 &&
		 p[0].data == data + data_size - 8 && p[0].len == 8 && p[1].data == data &&
		 p[1].len == 12, "wrapped: two pieces");
	TV_CHECK(tv_xen_ring_window(data_size - 8, data_size, data, data_size, p, &new_cons) == 1 &&
		 p[0].len == 8, "ends at the end of the data area: one piece");
	TV_CHECK(tv_xen_ring_window(0, data_size, data, data_size, p, &new_cons) == 1 &&
		 p[0].data == data && p[0].len == data_size, "full from 0: one piece");
	TV_CHECK(tv_xen_ring_window(8, 8 + data_size, data, data_size, p, &new_cons) == 2 &&
		 p[0].len + p[1].len == data_size, "full from 8: the whole ring");
	TV_CHECK(tv_xen_ring_window(2, 8, data, data_size, p, &new_cons) == -EBADMSG, "unaligned");
}

/* t_info: tbuf_size 2, CPU 0 at word 4, CPU 1 without buffer, CPU 2 outside. */
static void test_tinfo(void)
{
	uint32_t words[8] = { 0 };
	uint16_t *t = (uint16_t *)words;
	const uint32_t *mfns = NULL;

	t[0] = 2;
	t[1] = 4;
	t[2] = 0;
	t[3] = 7;
	words[4] = 0x1234;
	words[5] = 0x1235;
	TV_CHECK(tv_xen_tinfo_cpu(words, sizeof(words), 0, &mfns) == 2 && mfns &&
		 mfns[0] == 0x1234 && mfns[1] == 0x1235, "cpu 0 mfn list");
	TV_CHECK(tv_xen_tinfo_cpu(words, sizeof(words), 1, &mfns) == 0, "cpu without buffer");
	TV_CHECK(tv_xen_tinfo_cpu(words, sizeof(words), 2, &mfns) == -EBADMSG, "list outside t_info");
	TV_CHECK(tv_xen_tinfo_cpu(words, 4, 5, &mfns) == -EBADMSG, "cpu beyond t_info");
}

static void test_helpers(void)
{
	struct tv_xen_rec rec;
	unsigned char cut[8] = { 0x01, 0x10, 0x02, 0xb0 };	/* 3 extra + TSC: 24 bytes */

	TV_CHECK(tv_xen_rec_parse(cut, sizeof(cut), &rec) == 0, "cut record needs more bytes");
	TV_CHECK(tv_xen_parse_events("sched,pv") == 0x0022f000u, "sched,pv");
	TV_CHECK(tv_xen_parse_events("0x0008f000") == 0x0008f000u, "hex mask");
	TV_CHECK(tv_xen_parse_events("bogus") == 0, "unknown class");
	TV_CHECK(tv_xen_cpu_in_list("0-3,6", 2) && tv_xen_cpu_in_list("0-3,6", 6) &&
		 !tv_xen_cpu_in_list("0-3,6", 4), "cpu list");
	TV_CHECK(tv_xen_tsc_to_ns(3000000, 3000000) == 1000000, "3 GHz: 3M ticks = 1 ms");
	/* mul 2^31 = 0.5 ns per tick; shift -1 halves the delta first. */
	TV_CHECK(tv_xen_tsc_to_stime(3000, 1000, 5000, 1u << 31, 0) == 6000, "stime scale");
	TV_CHECK(tv_xen_tsc_to_stime(3000, 1000, 5000, 1u << 31, -1) == 5500, "stime shift");
	TV_CHECK(tv_xen_tsc_to_stime(1000, 3000, 5000, 1u << 31, 0) == 4000, "stime before stamp");
	TV_CHECK(!strcmp(tv_xen_hypercall_name(29), "sched_op"), "hypercall name");
	TV_CHECK(tv_xen_event_of(0x00021231) == TV_XEN_EV_RUNSTATE, "runstate with states");
	TV_CHECK(tv_xen_event_of(0x00081502) == TV_XEN_EV_VMEXIT, "nested vmexit64");
}

/*
 * A CPU's file that starts with a record without a TSC (an HVM handler:
 * Xen stamps it with none, it happened at the previous record's TSC).  It
 * takes the file's first TSC, not 0: at 0 (the lab's free run of
 * 2026-11-26) it went before everything on the line, or to the end of
 * time once mapped, and held its CPU's records behind it in the merge.
 */
static void test_first_record_without_tsc(const char *tmp)
{
	/* xen_hvm_rdtsc: 2 extra words, no TSC */
	const uint32_t rec[3] = { 0x0008201au | (2u << 28), 0x1234, 0 };
	char in[4096], dir[4096], path[4200];
	struct tv_reader *rd;
	struct tv_event ev;
	uint64_t prev = 0;
	char *body;
	size_t len;
	FILE *f;
	int first = 1;

	snprintf(in, sizeof(in), "%s/tests/samples/xen-two-cpus.xentrace", root());
	snprintf(dir, sizeof(dir), "%s/notsc", tmp);
	TV_CHECK(tv_xen_import_xentrace(in, dir, 1000) == 0, "import %s", in);
	snprintf(path, sizeof(path), "%s/xen/cpu1.xen", dir);
	body = slurp(path, &len);
	f = body ? fopen(path, "w") : NULL;
	TV_CHECK(f && fwrite(rec, sizeof(rec), 1, f) == 1 && fwrite(body, len, 1, f) == 1 &&
		 fclose(f) == 0, "prepend to %s", path);
	free(body);
	if (tv_reader_open(dir, &rd))
		return;
	while (tv_reader_next(rd, &ev) > 0) {
		TV_CHECK(ev.ts >= prev, "merged out of order: %llu after %llu",
			 (unsigned long long)ev.ts, (unsigned long long)prev);
		prev = ev.ts;
		if (ev.cpu == 1 && first) {
			TV_CHECK(!strcmp(ev.format->name, "xen_hvm_rdtsc") && ev.ts == 1050000,
				 "cpu1's first record: %s at %llu, want xen_hvm_rdtsc at 1050000",
				 ev.format->name, (unsigned long long)ev.ts);
			first = 0;
		}
	}
	TV_CHECK(!first, "cpu1's records read");
	tv_reader_close(rd);
}

/*
 * The line's reader (tv_xen_stream_next_record() with a choice of events,
 * lib/reader/xen_line.c) passes over the records it does not take by
 * their header: the records it takes must come with the times and bytes
 * they have when every record is parsed.  A stream of 200k records (the
 * 64 KiB buffer refilled mid-record many times) opening with records
 * without a TSC, then a CPU change with one (whose TSC never counts),
 * runstate changes with and without a TSC, time scales, and other
 * records of 0-6 extra words with and without a TSC.
 */
static bool want_all(uint32_t event)
{
	(void)event;
	return true;
}

static bool want_line(uint32_t event)
{
	return event == XT_TSCALE || (event & ~0xff0u) == XT_SCHED_RUNSTATE;
}

struct taken {
	uint64_t ts, tsc, offset;
	uint32_t event, extra0;
};

/* The records @want takes of @dom's cpu0, in order; their count. */
static size_t read_taken(struct tv_domain *dom, bool (*want)(uint32_t), struct taken *out, size_t max)
{
	struct tv_cpu_stream st;
	size_t n = 0;

	if (tv_xen_stream_open(&st, dom, 0))
		return 0;
	while (tv_xen_stream_next_record(&st, want) > 0) {
		const struct tv_xen_rec *r = tv_xen_stream_last(&st);

		if (!want_line(r->event))
			continue;
		if (n < max)
			out[n] = (struct taken){ st.rec.ts, r->tsc, st.rec.offset, r->event, r->extra[0] };
		n++;
	}
	tv_xen_stream_close(&st);
	return n;
}

static void put_rec(FILE *f, uint32_t ev, int has_tsc, uint64_t tsc, unsigned int n, uint32_t x)
{
	uint32_t w[10], k = 0;

	w[k++] = ev | n << 28 | (has_tsc ? 1u << 31 : 0);
	if (has_tsc) {
		w[k++] = (uint32_t)tsc;
		w[k++] = (uint32_t)(tsc >> 32);
	}
	for (unsigned int i = 0; i < n; i++)
		w[k++] = i ? i : x;
	fwrite(w, 4, k, f);
}

static void test_line_reader_skips(const char *tmp)
{
	char in[4096], dir[4096], path[4200];
	struct taken *all = calloc(20000, sizeof(*all)), *line = calloc(20000, sizeof(*line));
	struct tv_domain dom;
	uint64_t tsc = 5000000;
	size_t n_all, n_line, same = 0;
	FILE *f;

	snprintf(in, sizeof(in), "%s/tests/samples/xen-two-cpus.xentrace", root());
	snprintf(dir, sizeof(dir), "%s/skip", tmp);
	TV_CHECK(all && line && tv_xen_import_xentrace(in, dir, 1000) == 0, "import %s", in);
	snprintf(path, sizeof(path), "%s/xen/cpu0.xen", dir);
	f = fopen(path, "w");
	if (!f || !all || !line) {
		TV_CHECK(0, "write %s", path);
		return;
	}
	put_rec(f, 0x0008201au, 0, 0, 2, 7);				/* no TSC yet */
	put_rec(f, XT_SCHED_RUNSTATE | 0x010, 0, 0, 1, 1u << 16);	/* taken, no TSC yet */
	put_rec(f, XT_CPU_CHANGE, 1, 4000000, 2, 0);			/* its TSC never counts */
	put_rec(f, 0x0008201au, 0, 0, 2, 8);
	for (uint32_t i = 0; i < 200000; i++) {
		tsc += 1000 + i % 7;
		if (i % 97 == 0)
			put_rec(f, XT_TSCALE, 1, tsc, 6, (uint32_t)tsc);
		else if (i % 13 == 0)
			put_rec(f, XT_SCHED_RUNSTATE | (i % 3) << 8 | (i % 2) << 4, i % 5 != 0, tsc, 1, i);
		else if (i % 501 == 0)
			put_rec(f, XT_CPU_CHANGE, 1, tsc + 777777, 2, 0);
		else
			put_rec(f, 0x00082000u + i % 16, i % 3 != 0, tsc, i % 7, i);
	}
	TV_CHECK(fclose(f) == 0, "write %s", path);
	memset(&dom, 0, sizeof(dom));
	if (tv_domain_load(&dom, dir, "xen")) {
		TV_CHECK(0, "load %s/xen", dir);
		tv_domain_unload(&dom);
		return;
	}
	n_all = read_taken(&dom, want_all, all, 20000);
	n_line = read_taken(&dom, want_line, line, 20000);
	for (size_t i = 0; i < n_all && i < n_line && i < 20000; i++)
		same += !memcmp(&all[i], &line[i], sizeof(all[i]));
	TV_CHECK(n_all == n_line && same == n_all,
		 "line reader: %zu records taken passing over the others, %zu parsing all, %zu the same",
		 n_line, n_all, same);
	/* 1 + the time scales (i % 97 == 0) and runstate changes (i % 13 == 0) */
	TV_CHECK(n_all == 17289 && all[0].event == (XT_SCHED_RUNSTATE | 0x010),
		 "line reader: %zu records taken, want 17289, the first a runstate change", n_all);
	tv_domain_unload(&dom);
	free(all);
	free(line);
}

int main(void)
{
	char tmpl[] = "/tmp/tv-xen-test.XXXXXX";
	const char *tmp = getenv("TV_TMP");
	char cmd[4200];

	tv_log_set_callback(NULL, NULL);
	if (!tmp)
		tmp = mkdtemp(tmpl);
	test_import_two_cpus(tmp);
	test_classes(tmp);
	test_stat(tmp);
	test_system_time(tmp);
	test_first_record_without_tsc(tmp);
	test_line_reader_skips(tmp);
	test_short_records();
	test_ring();
	test_ring_window();
	test_count_windows(tmp);
	test_tinfo();
	test_helpers();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/two' '%s/classes' '%s/notsc' '%s/skip'", tmp, tmp, tmp, tmp);
	if (system(cmd))
		fprintf(stderr, "cannot clean %s\n", tmp);
	return tv_test_done("test_xen");
}
