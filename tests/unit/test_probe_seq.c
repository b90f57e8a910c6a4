// SPDX-License-Identifier: GPL-2.0
/*
 * A guest cannot forge another guest's hypercall probes by guessing their
 * seqs (issue 22, sync integrity).  On real KVM, a guest recorded without
 * pid: or libvirt has no known vCPU threads (host/vcpus), so sync takes a
 * host kvm_hypercall naming guest index 0 as guest 0's probe whoever made
 * it, and matches it to guest 0's markers by seq alone.  Each guest's seqs
 * therefore start at a random base (tv_guest_probe_seq_base(), what
 * host/guest_session.c uses): a generated session of host, guest-a (index
 * 0) and guest-evil (index 1), probed as the recorder does from such
 * bases, where evil's vCPU thread (unknown to host/vcpus) makes hypercall
 * probes naming guest 0, 2 s off, with the small seqs every guest had
 * before (0, 1, 2...) and with its own seqs: guest-a's line must be the
 * same to the nanosecond as without them.  The control: with both bases 0
 * (the old scheme) the same forgeries must move it, or this test could
 * not fail.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "guest_session.h"

#define PAGE 4096
#define ID_RAW_DATA 19
#define ID_HYPERCALL 114
#define ROUNDS 200
#define T0 10000000000ULL
#define STEP 20000000ULL
#define LATE 2000000000ULL	/* the forgeries: 2 s off */

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
	"print fmt: \"nr 0x%lx a0 0x%lx a1 0x%lx\", REC->nr, REC->a0, REC->a1\n";

struct rec {
	uint64_t ts;
	unsigned char data[48];
	int size;
};

struct domain_gen {
	struct rec *recs;
	size_t n, cap;
};

static char root[] = "/tmp/tv-probe-seq.XXXXXX";

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
	d->recs[d->n++].size = size;
}

static void add_marker(struct domain_gen *d, uint64_t ts, int type, uint64_t seq, uint16_t guest)
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
static void add_hypercall(struct domain_gen *d, uint64_t ts, uint64_t seq, unsigned int guest,
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

static void put_format(const char *domain, const char *system, const char *event, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/events", root, domain);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/events/%s", root, domain, system);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/events/%s/%s", root, domain, system, event);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/events/%s/%s/format", root, domain, system, event);
	put_file(path, text);
}

static void write_domain(struct domain_gen *d, const char *name, const char *extra_meta)
{
	char path[512], text[512];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	mkdir(path, 0755);
	put_format(name, "ftrace", "raw_data", raw_data_format);
	put_format(name, "kvm", "kvm_hypercall", hypercall_format);
	snprintf(path, sizeof(path), "%s/%s/header_page", root, name);
	put_file(path, header_page);
	snprintf(text, sizeof(text), "domain=%s\nkind=linux-ftrace\nclock=local\nncpus=1\n"
		 "long_size=8\nendian=little\nsubbuf_size=4096\nhostname=synthetic\n%s", name,
		 extra_meta);
	snprintf(path, sizeof(path), "%s/%s/meta", root, name);
	put_file(path, text);
	qsort(d->recs, d->n, sizeof(*d->recs), cmp_rec);
	snprintf(path, sizeof(path), "%s/%s/cpu0.raw", root, name);
	write_stream(path, d->recs, d->n);
}

static unsigned long long rng;

static uint64_t delay(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return 400 + (uint64_t)(-1500.0 * log(1.0 - (double)(rng >> 11) / 9007199254740992.0));
}

/* guest-a's clock: (host - B) / A; guest-evil's: the host's, 5 s behind. */
static const long double A = 1.0L + 35e-6L, B = 2500000000.0L;

static uint64_t a_clock(uint64_t host)
{
	return (uint64_t)llroundl(((long double)host - B) / A);
}

static uint64_t evil_clock(uint64_t host)
{
	return host - 5000000000ULL;
}

/*
 * The session under root: both guests probed honestly from their bases
 * (seq = base + round); with @forge, evil's vCPU thread 301 (not in
 * host/vcpus: neither guest was given pid:) makes two hypercall probes a
 * round naming guest 0, 2 s late: seq = the round (a guess of the small
 * seqs of old) and seq = its own base + round.
 */
static void generate(uint64_t base_a, uint64_t base_evil, int forge)
{
	struct domain_gen host = { 0 }, a = { 0 }, evil = { 0 };
	char path[512];

	rng = 0x9e3779b97f4a7c15ULL;	/* the same delays with and without forgeries */
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t = T0 + STEP * (uint64_t)i;

		for (int k = 0; k < 2; k++, t += 100000) {
			struct domain_gen *g = k ? &evil : &a;
			uint64_t seq = (k ? base_evil : base_a) + (uint64_t)i;
			uint64_t recv = t + delay(), back = recv + 500;
			uint64_t hb = back + 20000, hc = hb + delay(), ha = hc + delay();
			uint64_t (*clk)(uint64_t) = k ? evil_clock : a_clock;

			add_marker(&host, t, 1, seq, (uint16_t)k);
			add_marker(g, clk(recv), 2, seq, (uint16_t)k);
			add_marker(g, clk(back), 3, seq, (uint16_t)k);
			add_marker(&host, back + delay(), 4, seq, (uint16_t)k);
			add_marker(g, clk(hb), 5, seq, (uint16_t)k);
			add_hypercall(&host, hc, seq, (unsigned int)k, 300 + k);
			add_marker(g, clk(ha), 6, seq, (uint16_t)k);
			if (!forge || !k)
				continue;
			add_hypercall(&host, hc + LATE, (uint64_t)i, 0, 301);
			add_hypercall(&host, hc + LATE + 1000, base_evil + (uint64_t)i, 0, 301);
		}
	}
	write_domain(&host, "host", "");
	write_domain(&a, "guest-a", "sync_index=0\n");
	write_domain(&evil, "guest-evil", "sync_index=1\n");
	snprintf(path, sizeof(path), "%s/session.meta", root);
	put_file(path, "format=tracevisor-session\nversion=1\ndomains=host,guest-a,guest-evil\n"
		       "reference_domain=host\n");
	snprintf(path, sizeof(path), "%s/host/vcpus", root);
	put_file(path, "# tid vm_pid vcpu vm_name\n");
	free(host.recs);
	free(a.recs);
	free(evil.recs);
}

static const struct tv_sync_domain *result_of(const struct tv_sync_result *res, const char *name)
{
	for (size_t d = 0; d < res->nr; d++)
		if (!strcmp(res->domains[d].domain, name))
			return &res->domains[d];
	return NULL;
}

static int same_line(const struct tv_sync_domain *x, const struct tv_sync_domain *y)
{
	return !strcmp(x->via, y->via) && !strcmp(x->method, y->method) &&
	       x->est.map.base_ref - x->est.map.base_dom == y->est.map.base_ref - y->est.map.base_dom &&
	       x->est.map.slope_q48 == y->est.map.slope_q48 && x->est.bound_ns == y->est.bound_ns &&
	       x->nr_probes == y->nr_probes && x->nr_pairs_checked == y->nr_pairs_checked &&
	       x->causality_violations == y->causality_violations;
}

/* guest-a's line with and without the forgeries, its seqs from @base_a: 1 when the same. */
static int unmoved(uint64_t base_a, uint64_t base_evil, const char *what)
{
	struct tv_sync_result clean, forged;
	const struct tv_sync_domain *a0, *a1;
	int same = 0;

	generate(base_a, base_evil, 0);
	TV_CHECK(tv_sync_session(root, &clean) == 0, "%s: sync of the clean session failed", what);
	generate(base_a, base_evil, 1);
	TV_CHECK(tv_sync_session(root, &forged) == 0, "%s: sync of the forged session failed", what);
	a0 = result_of(&clean, "guest-a");
	a1 = result_of(&forged, "guest-a");
	TV_CHECK(a0 && a1, "%s: guest-a missing", what);
	if (a0 && a1) {
		TV_CHECK(!strcmp(a0->via, "host") && a0->est.quality == TV_SYNC_ACCURATE &&
			 a0->causality_violations == 0, "%s: clean guest-a via %s, %s, %zu violations",
			 what, a0->via, tv_sync_quality_name(a0->est.quality), a0->causality_violations);
		same = same_line(a0, a1);
		printf("%s: guest-a offset %lld ns (clean %lld), bound %lld ns, %zu/%zu violations\n",
		       what, (long long)(a1->est.map.base_ref - a1->est.map.base_dom),
		       (long long)(a0->est.map.base_ref - a0->est.map.base_dom),
		       (long long)a1->est.bound_ns, a1->causality_violations, a1->nr_pairs_checked);
	}
	tv_sync_result_free(&clean);
	tv_sync_result_free(&forged);
	return same;
}

static void quiet(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level == TV_LOG_ERROR)
		fprintf(stderr, "%s\n", msg);
}

int main(void)
{
	uint64_t base_a = tv_guest_probe_seq_base(), base_evil = tv_guest_probe_seq_base();
	char cmd[600];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 2;
	}
	tv_log_set_callback(quiet, NULL);
	/* the bases: 48-bit, far from the small seqs of old, one per guest */
	TV_CHECK(base_a >> 47 == 1 && base_evil >> 47 == 1 && base_a != base_evil,
		 "seq bases %#llx and %#llx", (unsigned long long)base_a, (unsigned long long)base_evil);
	TV_CHECK(unmoved(base_a, base_evil, "random bases"),
		 "guest-a moved by evil's hypercall probes with guessed seqs (bases %#llx, %#llx)",
		 (unsigned long long)base_a, (unsigned long long)base_evil);
	/* the control: with every guest's seqs from 0, the guesses hit */
	TV_CHECK(!unmoved(0, 0, "bases 0 (control)"),
		 "the forged hypercall probes did not move guest-a even with guessable seqs");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (!tv_test_failed && system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
	return tv_test_done("test_probe_seq");
}
