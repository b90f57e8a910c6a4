/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A synthetic tracevisor session for the sync tests (test_sync_session,
 * test_probe_seq): domains whose records are built one by one (sync
 * markers in ftrace raw_data, kvm_hypercall probes, ...), each written as
 * a recorder writes it - DOMAIN/meta, header_page, the event formats, and
 * real ring-buffer sub-buffers per CPU (cpuN.raw) with time extends - under
 * the session directory @base, with session.meta beside them.  Guest
 * clocks are known lines of the host's, so a test can compare sync's
 * result with the truth.  Everything here is static (each test program
 * has its own copy), and a test sets @base before writing a domain.
 */
#ifndef TV_TEST_SESSION_GEN_H
#define TV_TEST_SESSION_GEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PAGE 4096
#define ID_RAW_DATA 19
#define ID_HYPERCALL 114
#define ID_EXIT 103
#define ID_ENTRY 115
#define ID_XEN_GUEST 300
#define ID_WRITE_TSC 120
#define ID_XEN_RUNSTATE 301
#define ID_XEN_TSCALE 302

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

#define COMMON_FIELDS \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const char raw_data_format[] =
	"name: raw_data\nID: 19\nformat:\n" COMMON_FIELDS
	"\tfield:unsigned int id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:12;\tsize:0;\tsigned:0;\n\n"
	"print fmt: \"id:%04x %08x\", REC->id, (int)REC->buf[0]\n";

static const char hypercall_format[] =
	"name: kvm_hypercall\nID: 114\nformat:\n" COMMON_FIELDS
	"\tfield:unsigned long nr;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long a0;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long a1;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long a2;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long a3;\toffset:40;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"nr 0x%lx a0 0x%lx a1 0x%lx a2 0x%lx a3 0x%lx\", REC->nr, REC->a0, REC->a1, REC->a2, REC->a3\n";

/* Trimmed to the fields used here; the print formats are not the kernel's. */
static const char exit_format[] =
	"name: kvm_exit\nID: 103\nformat:\n" COMMON_FIELDS
	"\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int vcpu_id;\toffset:28;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"reason %u rip 0x%lx\", REC->exit_reason, REC->guest_rip\n";

static const char entry_format[] =
	"name: kvm_entry\nID: 115\nformat:\n" COMMON_FIELDS
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"vcpu %u, rip 0x%lx\", REC->vcpu_id, REC->rip\n";

static const char write_tsc_format[] =
	"name: kvm_write_tsc_offset\nID: 120\nformat:\n" COMMON_FIELDS
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:__u64 previous_tsc_offset;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:__u64 next_tsc_offset;\toffset:24;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"vcpu=%u prev=%llu next=%llu\", REC->vcpu_id, REC->previous_tsc_offset, REC->next_tsc_offset\n";

/* The layout of xen/decode.c's xen_guest (struct xe_guest). */
static const char xen_guest_format[] =
	"name: xen_guest\nID: 300\nformat:\n" COMMON_FIELDS
	"\tfield:u32 xen_event;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:u16 cur_dom;\toffset:12;\tsize:2;\tsigned:0;\n"
	"\tfield:u16 cur_vcpu;\toffset:14;\tsize:2;\tsigned:0;\n"
	"\tfield:u32 nr_data;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:u32 has_tsc;\toffset:20;\tsize:4;\tsigned:0;\n"
	"\tfield:u32 data[7];\toffset:24;\tsize:28;\tsigned:0;\n\n"
	"print fmt: \"nr_data=%u\", REC->nr_data\n";

/* The layout of xen/decode.c's xen_runstate_change (struct xe_runstate). */
static const char xen_runstate_format[] =
	"name: xen_runstate_change\nID: 301\nformat:\n" COMMON_FIELDS
	"\tfield:u32 xen_event;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:u16 cur_dom;\toffset:12;\tsize:2;\tsigned:0;\n"
	"\tfield:u16 cur_vcpu;\toffset:14;\tsize:2;\tsigned:0;\n"
	"\tfield:u16 domid;\toffset:16;\tsize:2;\tsigned:0;\n"
	"\tfield:u16 vcpuid;\toffset:18;\tsize:2;\tsigned:0;\n"
	"\tfield:u8 old_state;\toffset:20;\tsize:1;\tsigned:0;\n"
	"\tfield:u8 new_state;\toffset:21;\tsize:1;\tsigned:0;\n\n"
	"print fmt: \"d%uv%u\", REC->domid, REC->vcpuid\n";

/* The layout of lib/xen/xen_decode.c's xen_tscale (struct xe_tscale). */
static const char xen_tscale_format[] =
	"name: xen_tscale\nID: 302\nformat:\n" COMMON_FIELDS
	"\tfield:u32 xen_event;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:u16 cur_dom;\toffset:12;\tsize:2;\tsigned:0;\n"
	"\tfield:u16 cur_vcpu;\toffset:14;\tsize:2;\tsigned:0;\n"
	"\tfield:u64 stamp_tsc;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 stamp_system_time;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 tsc_to_system_mul;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\tfield:s32 tsc_shift;\toffset:36;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"tsc=%llu\", REC->stamp_tsc\n";

struct rec {
	uint64_t ts;
	unsigned char data[52];
	int size;
	int cpu;	/* the stream (cpuN.raw) it goes to */
};

/* A domain's records, in any order: write_domain() sorts them. */
struct domain_gen {
	struct rec *recs;
	size_t n, cap;
};

static const char *base;	/* the session being written: the test sets it */
static const char *clock_name = "local";	/* its trace clock */
static const char *extra_meta = "";	/* more DOMAIN/meta lines of the domain being written */
static int rec_cpu;	/* the CPU add() puts records on */

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

/* DIR/session.meta of a session of @domains (comma-separated), host the reference. */
static void write_session_meta(const char *dir, const char *domains)
{
	char path[4200], text[512];

	snprintf(path, sizeof(path), "%s/session.meta", dir);
	snprintf(text, sizeof(text),
		 "format=tracevisor-session\nversion=1\ndomains=%s\nreference_domain=host\n", domains);
	put_file(path, text);
}

static void add(struct domain_gen *d, uint64_t ts, const void *data, int size)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 1024;
		d->recs = realloc(d->recs, d->cap * sizeof(*d->recs));
		if (!d->recs)
			abort();
	}
	d->recs[d->n].ts = ts;
	memcpy(d->recs[d->n].data, data, (size_t)size);
	d->recs[d->n].cpu = rec_cpu;
	d->recs[d->n++].size = size;
}

/* A sync marker (doc/sync-probes.md) of @type naming guest index @guest. */
static void add_marker_for(struct domain_gen *d, uint64_t ts, int type, uint64_t seq,
			   uint16_t guest)
{
	unsigned char r[32] = { 0 };
	uint16_t id = ID_RAW_DATA, t = (uint16_t)type;
	uint32_t magic = 0x59535654u;
	int32_t pid = 100;

	memcpy(r, &id, 2);
	memcpy(r + 4, &pid, 4);
	memcpy(r + 8, &magic, 4);
	memcpy(r + 12, &t, 2);
	memcpy(r + 14, &guest, 2);
	memcpy(r + 16, &seq, 8);
	add(d, ts, r, 32);
}

/* A hypercall probe naming guest index @guest, made by host thread @pid. */
static void add_hypercall_from(struct domain_gen *d, uint64_t ts, uint64_t seq, unsigned int guest,
			       int32_t pid)
{
	unsigned char r[48] = { 0 };
	uint16_t id = ID_HYPERCALL;
	uint64_t nr = 0x7476, a1 = 0xabc00 | guest;

	memcpy(r, &id, 2);
	memcpy(r + 4, &pid, 4);
	memcpy(r + 8, &nr, 8);
	memcpy(r + 16, &seq, 8);
	memcpy(r + 24, &a1, 8);
	add(d, ts, r, 48);
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Ring-buffer sub-buffers: header, then [time extend] + header + payload. */
static void write_stream(const char *path, struct rec *r, size_t n)
{
	unsigned char page[PAGE];
	size_t len = 0;
	uint64_t last = 0, delta;
	uint32_t hdr;
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(2);
	}
	for (size_t i = 0; i <= n; i++) {
		size_t need = i < n ? 8 + 4 + (size_t)r[i].size : 0;

		if (len && (i == n || 16 + len + need > PAGE)) {
			uint64_t commit = len;

			memcpy(page + 8, &commit, 8);
			fwrite(page, PAGE, 1, f);
			len = 0;
		}
		if (i == n)
			break;
		if (!len) {
			memset(page, 0, PAGE);
			memcpy(page, &r[i].ts, 8);
			last = r[i].ts;
		}
		delta = r[i].ts - last;

		if (delta >= (1u << 27)) {	/* time extend */
			uint32_t hi = (uint32_t)(delta >> 27);

			hdr = 30u | (uint32_t)((delta & ((1u << 27) - 1)) << 5);
			memcpy(page + 16 + len, &hdr, 4);
			memcpy(page + 16 + len + 4, &hi, 4);
			len += 8;
			delta = 0;
		}
		hdr = (uint32_t)(r[i].size / 4) | (uint32_t)(delta << 5);
		memcpy(page + 16 + len, &hdr, 4);
		memcpy(page + 16 + len + 4, r[i].data, (size_t)r[i].size);
		len += 4 + (size_t)r[i].size;
		last = r[i].ts;
	}
	fclose(f);
}

/* DOMAIN/events/SYSTEM/EVENT/format of the session under base. */
static void put_format(const char *domain, const char *system, const char *event,
		       const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/events", base, domain);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/events/%s", base, domain, system);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/events/%s/%s", base, domain, system, event);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/events/%s/%s/format", base, domain, system, event);
	put_file(path, text);
}

/* BASE/NAME: @d's records (sorted here) in cpuN.raw by rec.cpu, with every format above. */
static void write_domain(struct domain_gen *d, const char *name)
{
	char path[512], text[512];
	int ncpus = 1;

	for (size_t i = 0; i < d->n; i++)
		ncpus = d->recs[i].cpu >= ncpus ? d->recs[i].cpu + 1 : ncpus;
	snprintf(path, sizeof(path), "%s/%s", base, name);
	mkdir(path, 0755);
	put_format(name, "ftrace", "raw_data", raw_data_format);
	put_format(name, "kvm", "kvm_hypercall", hypercall_format);
	put_format(name, "kvm", "kvm_exit", exit_format);
	put_format(name, "kvm", "kvm_entry", entry_format);
	put_format(name, "kvm", "kvm_write_tsc_offset", write_tsc_format);
	put_format(name, "xen", "xen_guest", xen_guest_format);
	put_format(name, "xen", "xen_runstate_change", xen_runstate_format);
	put_format(name, "xen", "xen_tscale", xen_tscale_format);
	snprintf(path, sizeof(path), "%s/%s/header_page", base, name);
	put_file(path, header_page);
	snprintf(text, sizeof(text), "domain=%s\nkind=linux-ftrace\nclock=%s\nncpus=%d\n"
		 "long_size=8\nendian=little\nsubbuf_size=4096\nhostname=synthetic\n%s", name,
		 clock_name, ncpus, extra_meta);
	snprintf(path, sizeof(path), "%s/%s/meta", base, name);
	put_file(path, text);
	qsort(d->recs, d->n, sizeof(*d->recs), cmp_rec);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct rec *r = malloc((d->n + 1) * sizeof(*r));
		size_t n = 0;

		for (size_t i = 0; i < d->n; i++)
			if (d->recs[i].cpu == cpu)
				r[n++] = d->recs[i];
		snprintf(path, sizeof(path), "%s/%s/cpu%d.raw", base, name, cpu);
		write_stream(path, r, n);
		free(r);
	}
}

/* Probe delays: 400 ns + exponential (mean 1.5 us), from a xorshift a test may reseed. */
static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static uint64_t delay(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return 400 + (uint64_t)(-1500.0 * log(1.0 - (double)(rng >> 11) / 9007199254740992.0));
}

/* Guest clocks: guest = (host - B) / A, and a 1 ms jump half-way for guest 1. */
static const long double A = 1.0L + 35e-6L, B = 2500000000.0L;

static uint64_t guest_clock(uint64_t host, int jump, uint64_t mid)
{
	long double g = ((long double)host - B) / A;

	return (uint64_t)llroundl(g) + (jump && host > mid ? 1000000 : 0);
}

static uint64_t a_clock(uint64_t host)
{
	return guest_clock(host, 0, 0);
}

/* A hostile guest's clock: the host's, 5 s behind. */
static uint64_t evil_clock(uint64_t host)
{
	return host - 5000000000ULL;
}

/* The host times of one probe round, for a test that forges a copy of it. */
struct probe_round {
	uint64_t recv, back, hc;
};

/*
 * One honest probe round of guest index @k (domain @g, clock @clk) from host
 * time @t: the host's ping (marker 1), the guest's receive and reply (2, 3),
 * the host's pong (4), then the guest's markers (5, 6) around its hypercall
 * probe, made by host thread @pid.  The delays come from delay() in a fixed
 * order, so that a session with more records added is the same otherwise.
 */
static struct probe_round add_probe_round(struct domain_gen *host, struct domain_gen *g,
					  uint64_t (*clk)(uint64_t), uint64_t t, uint64_t seq,
					  uint16_t k, int32_t pid)
{
	struct probe_round r;
	uint64_t hb, ha;

	r.recv = t + delay();
	r.back = r.recv + 500;
	hb = r.back + 20000;
	r.hc = hb + delay();
	ha = r.hc + delay();
	add_marker_for(host, t, 1, seq, k);
	add_marker_for(g, clk(r.recv), 2, seq, k);
	add_marker_for(g, clk(r.back), 3, seq, k);
	add_marker_for(host, r.back + delay(), 4, seq, k);
	add_marker_for(g, clk(hb), 5, seq, k);
	add_hypercall_from(host, r.hc, seq, k, pid);
	add_marker_for(g, clk(ha), 6, seq, k);
	return r;
}

/*
 * DIR: host, guest-a (sync_index 0) and guest-evil (sync_index 1), listed in
 * session.meta as @domains, with @vcpus as host/vcpus; frees the records.
 */
static void write_foreign_session(const char *dir, struct domain_gen *host, struct domain_gen *a,
				  struct domain_gen *evil, const char *domains, const char *vcpus)
{
	const char *was = base;
	char path[4200];

	base = dir;
	write_domain(host, "host");
	extra_meta = "sync_index=0\n";
	write_domain(a, "guest-a");
	extra_meta = "sync_index=1\n";
	write_domain(evil, "guest-evil");
	extra_meta = "";
	base = was;
	write_session_meta(dir, domains);
	snprintf(path, sizeof(path), "%s/host/vcpus", dir);
	put_file(path, vcpus);
	free(host->recs);
	free(a->recs);
	free(evil->recs);
}

#endif /* TV_TEST_SESSION_GEN_H */
