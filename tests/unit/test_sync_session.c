// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor sync on a generated session: real ring-buffer sub-buffers for
 * a host and two guests whose clocks have a known offset and drift, with
 * message probes (ping/pong through raw_data markers) and hypercall probes
 * (guest markers around the host's kvm_hypercall), as doc/sync-probes.md
 * describes.  guest-good must come out accurate with the truth inside the
 * bound and no causality violation, and merge in the reference clock;
 * guest-nested, probed only by guest-good, must reach the host through it
 * with a composed bound that holds;
 * guest-jump's clock jumps half-way, which no line fits: two pieces do.
 * A second session pairs dom0 (host) with Xen (xen): dom0 markers
 * XEN_BEFORE/XEN_AFTER around each xen:xen_guest probe record; with the
 * TSC on the records the xen domain must come out accurate within its
 * bound, without (stock Xen) insufficient with a reason.
 * A fourth session adds a Xen domU (guest-d1, xen_domid 1): loose message
 * probes with dom0 and tight hypercall probes with Xen (its markers 5/6
 * around TRC_GUEST|0x477 records), and Xen's runstate records of its vCPU:
 * guest-d1 must go via xen with a bound far below the message probes' (the
 * path not taken), the truth inside it, and every guest event inside a
 * running interval - except the ones planted outside, which must be
 * counted; on stock Xen (no TSC) it falls back to the message probes and
 * says why.  The same domU moving between two pCPUs whose system times
 * differ, on a real xen-trace domain (cpuN.xen records): without the
 * patched Xen's time-scale records each pCPU's records and the domains on
 * it keep that pCPU's time, and a ping from dom0 on one pCPU to d1 on the
 * other comes out inverted, as does the order of d1's exits; with them,
 * everything is on Xen's common line (lib/reader/xen_line.c) and nothing is.
 * A third session traces host and guest with the x86-tsc clock, on a host
 * whose KVM rewrites the TSC offset at every vCPU load (freeze, then catch
 * up): guest-t must come out exact (method tsc), every guest event mapped
 * to the very host TSC it happened at, 0 violations; without the
 * kvm_write_tsc_offset events (the debugfs offset only), the checks must
 * see the damage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "xen_trace.h"
#include "tv_internal.h"
#include <event-parse.h>

#include "session_gen.h"

static char root[] = "/tmp/tv-sync-session.XXXXXX";
static char xen_root[] = "/tmp/tv-sync-xen.XXXXXX";
static char tsc_root[] = "/tmp/tv-sync-tsc.XXXXXX";
static char domu_root[] = "/tmp/tv-sync-domu.XXXXXX";
static char foreign_root[] = "/tmp/tv-sync-foreign.XXXXXX";

static void add_marker(struct domain_gen *d, uint64_t ts, int type, uint64_t seq)
{
	add_marker_for(d, ts, type, seq, 0);
}

/* Guest index @guest's hypercall probe, from its vCPU thread 200 + @guest. */
static void add_hypercall(struct domain_gen *d, uint64_t ts, uint64_t seq, unsigned int guest)
{
	add_hypercall_from(d, ts, seq, guest, 200 + (int32_t)guest);
}

/* An SVM hypercall exit (0x81) of the vCPU thread, @ns before @entry. */
static void add_exit(struct domain_gen *d, uint64_t entry, uint64_t ns)
{
	unsigned char x[32] = { 0 }, e[24] = { 0 };
	uint16_t xid = ID_EXIT, eid = ID_ENTRY;
	uint32_t reason = 0x81, isa = 2;
	int32_t pid = 200;

	memcpy(x, &xid, 2);
	memcpy(x + 4, &pid, 4);
	memcpy(x + 8, &reason, 4);
	memcpy(x + 24, &isa, 4);
	add(d, entry - ns, x, 32);
	memcpy(e, &eid, 2);
	memcpy(e + 4, &pid, 4);
	add(d, entry, e, 24);
}


/* A guest nested in guest-good: nested = (good - B2) / A2, probed by guest-good only. */
static const long double A2 = 1.0L - 20e-6L, B2 = -3000000000.0L;

static uint64_t nested_clock(uint64_t host)
{
	return (uint64_t)llroundl(((long double)guest_clock(host, 0, 0) - B2) / A2);
}

/* Ping/pong rounds between guest-good (the prober, guest index 2) and guest-nested. */
static void generate_nested(struct domain_gen *good, struct domain_gen *nested, int rounds,
			    uint64_t t0, uint64_t span)
{
	for (int i = 0; i < rounds; i++) {
		uint64_t t = t0 + span / (uint64_t)rounds * (uint64_t)i + 60000;
		uint64_t recv = t + delay(), back = recv + 500;

		add_marker_for(good, guest_clock(t, 0, 0), 1, (uint64_t)i, 2);
		add_marker_for(nested, nested_clock(recv), 2, (uint64_t)i, 2);
		add_marker_for(nested, nested_clock(back), 3, (uint64_t)i, 2);
		add_marker_for(good, guest_clock(back + delay(), 0, 0), 4, (uint64_t)i, 2);
	}
}

/* The main session: ROUNDS probe rounds over SPAN from T0; guest-jump jumps at JUMP_MID. */
#define ROUNDS 500
#define T0 10000000000ULL
#define SPAN 20000000000ULL
#define JUMP_MID (T0 + SPAN / 2)
#define ROUND_NS (SPAN / ROUNDS)

static void add_xen_guest(struct domain_gen *d, uint64_t ts, uint64_t seq, int has_tsc);
static uint64_t xen_clock(uint64_t dom0);
/* --write-golden: the main session gets a Xen domain too (host + guests + Xen). */
static int golden_xen;

static void generate(int rounds)
{
	struct domain_gen host = { 0 }, g[3] = { { 0 }, { 0 }, { 0 } };
	uint64_t t0 = T0, span = SPAN;
	char path[512];

	for (int i = 0; i < rounds; i++) {
		uint64_t t = t0 + span / (uint64_t)rounds * (uint64_t)i;

		for (int k = 0; k < 2; k++) {
			uint64_t seq = (uint64_t)i, recv = t + delay(), back = recv + 500;
			uint64_t hb = back + 20000, hc = hb + delay(), ha = hc + delay();

			add_marker(&host, t, 1, seq);
			add_marker_for(&g[k], guest_clock(recv, k, t0 + span / 2), 2, seq, (uint16_t)k);
			add_marker_for(&g[k], guest_clock(back, k, t0 + span / 2), 3, seq, (uint16_t)k);
			add_marker(&host, back + delay(), 4, seq);
			add_marker_for(&g[k], guest_clock(hb, k, t0 + span / 2), 5, seq, (uint16_t)k);
			add_hypercall(&host, hc, seq, (unsigned int)k);
			add_marker_for(&g[k], guest_clock(ha, k, t0 + span / 2), 6, seq, (uint16_t)k);
			t += 100000;
		}
	}
	/*
	 * vCPU 0 of guest-good leaves guest mode for 700 ns in every round, and
	 * for 30 us once, half-way, while guest-good logs an event (a marker of
	 * no probe type): the one vCPU causality violation to find.  Added
	 * last, so the loop below still sees 3 host records per guest round.
	 */
	for (int i = 0; i < rounds; i++)
		add_exit(&host, t0 + span / (uint64_t)rounds * (uint64_t)i + 50000, 700);
	add_exit(&host, t0 + span / (uint64_t)rounds * (uint64_t)(rounds / 2) + 1000000, 30000);
	add_marker(&g[0], guest_clock(t0 + span / (uint64_t)rounds * (uint64_t)(rounds / 2) + 985000,
				      0, 0), 0, 0);
	/*
	 * guest-jump logs an event 50 us after its jump, before the next probe
	 * shows it: it falls in the first piece, 1 ms late, after events of the
	 * second piece that its CPU logged later; the merge must stay in order.
	 */
	add_marker(&g[1], guest_clock(JUMP_MID + 50000, 1, JUMP_MID), 0, 0);
	/* The host's markers above say guest 0: set guest 1's (guest-jump's index). */
	for (size_t i = 0; i < host.n - 2 * (size_t)rounds - 2; i++) {
		uint16_t guest = (uint16_t)(i / 3 % 2);	/* 3 host records per guest round */

		if (host.recs[i].size == 32)
			memcpy(host.recs[i].data + 14, &guest, 2);
	}
	generate_nested(&g[0], &g[2], rounds, t0, span);
	if (golden_xen) {	/* dom0 markers 7/8 around Xen records, as generate_xen() */
		struct domain_gen xen = { 0 };

		for (int i = 0; i < rounds; i++) {
			uint64_t t = t0 + span / (uint64_t)rounds * (uint64_t)i + 70000, x = t + delay();
			uint64_t seq = (1ULL << 32) + (uint64_t)i;

			add_marker(&host, t, 7, seq);
			add_xen_guest(&xen, xen_clock(x), seq, 1);
			add_marker(&host, x + delay(), 8, seq);
		}
		write_domain(&xen, "xen");
		free(xen.recs);
	}
	write_domain(&host, "host");
	write_domain(&g[0], "guest-good");
	write_domain(&g[1], "guest-jump");
	/* probed by guest-good (a nested guest): only its markers naming index 2 count */
	extra_meta = "sync_prober=guest-good\n";
	write_domain(&g[2], "guest-nested");
	extra_meta = "";
	write_session_meta(base, golden_xen ? "host,guest-good,guest-jump,guest-nested,xen"
					    : "host,guest-good,guest-jump,guest-nested");
	/* The kvm_entry/kvm_exit thread (pid 200) is guest-good's vCPU 0. */
	snprintf(path, sizeof(path), "%s/host/vcpus", base);
	put_file(path, "# tid vm_pid vcpu vm_name\n200 199 0 good\n");
	free(host.recs);
	for (int k = 0; k < 3; k++)
		free(g[k].recs);
}

/* Xen's clock: xen = (dom0 - BX) / AX. */
static const long double AX = 1.0L - 12e-6L, BX = 700000000.0L;

static uint64_t xen_clock(uint64_t dom0)
{
	return (uint64_t)llroundl(((long double)dom0 - BX) / AX);
}

/*
 * A TRC_GUEST record: dom0's probe (@guest < 0) or guest index @guest's,
 * written while Xen ran domain @cur_dom.
 */
static void add_xen_probe_by(struct domain_gen *d, uint64_t ts, uint64_t seq, int has_tsc,
			     int guest, uint16_t cur_dom)
{
	unsigned char r[52] = { 0 };
	uint16_t id = ID_XEN_GUEST;
	uint32_t ev = 0x0800f000u | (guest < 0 ? 0x476 : 0x477), nr = guest < 0 ? 3 : 4;
	uint32_t tsc = (uint32_t)has_tsc;
	uint32_t w[4] = { 0x59535654u, (uint32_t)seq, (uint32_t)(seq >> 32), 0 };

	if (guest >= 0) {
		w[1] = (uint32_t)guest;
		w[2] = (uint32_t)seq;
		w[3] = (uint32_t)(seq >> 32);
	}
	memcpy(r, &id, 2);
	memcpy(r + 8, &ev, 4);
	memcpy(r + 12, &cur_dom, 2);
	memcpy(r + 16, &nr, 4);
	memcpy(r + 20, &tsc, 4);
	memcpy(r + 24, w, sizeof(w));
	add(d, ts, r, 52);
}

static void add_xen_probe(struct domain_gen *d, uint64_t ts, uint64_t seq, int has_tsc, int guest)
{
	add_xen_probe_by(d, ts, seq, has_tsc, guest, guest < 0 ? 0 : (uint16_t)(guest + 1));
}

static void add_xen_guest(struct domain_gen *d, uint64_t ts, uint64_t seq, int has_tsc)
{
	add_xen_probe(d, ts, seq, has_tsc, -1);
}

static void add_runstate(struct domain_gen *d, uint64_t ts, uint16_t domid, uint16_t vcpu,
			 uint8_t old_state, uint8_t new_state)
{
	unsigned char r[24] = { 0 };
	uint16_t id = ID_XEN_RUNSTATE;
	uint32_t ev = 0x0002f000u | 0x201;

	memcpy(r, &id, 2);
	memcpy(r + 8, &ev, 4);
	memcpy(r + 16, &domid, 2);
	memcpy(r + 18, &vcpu, 2);
	r[20] = old_state;
	r[21] = new_state;
	add(d, ts, r, 24);
}

/*
 * A physical CPU's time scale (TRC_TRACE_TSCALE) at record time @ts: one
 * ns per TSC tick (mul 2^31, shift 1) from (@tsc0, @stime0).
 */
static void add_tscale(struct domain_gen *d, uint64_t ts, uint64_t tsc0, uint64_t stime0)
{
	unsigned char r[40] = { 0 };
	uint16_t id = ID_XEN_TSCALE;
	uint32_t ev = 0x0001f004u, mul = 1u << 31;
	int32_t shift = 1;

	memcpy(r, &id, 2);
	memcpy(r + 8, &ev, 4);
	memcpy(r + 16, &tsc0, 8);
	memcpy(r + 24, &stime0, 8);
	memcpy(r + 32, &mul, 4);
	memcpy(r + 36, &shift, 4);
	add(d, ts, r, 40);
}

/* dom0 (host) brackets each injected Xen record with markers 7 and 8. */
static void generate_xen(int rounds, int has_tsc)
{
	struct domain_gen dom0 = { 0 }, xen = { 0 };
	uint64_t t0 = 5000000000ULL, span = 10000000000ULL;

	for (int i = 0; i < rounds; i++) {
		uint64_t t = t0 + span / (uint64_t)rounds * (uint64_t)i, x = t + delay();
		/* seq above 2^32: both words of the record count */
		uint64_t seq = (1ULL << 32) + (uint64_t)i;

		add_marker(&dom0, t, 7, seq);
		add_xen_guest(&xen, xen_clock(x), seq, has_tsc);
		add_marker(&dom0, x + delay(), 8, seq);
	}
	base = xen_root;
	write_domain(&dom0, "host");
	write_domain(&xen, "xen");
	base = root;
	write_session_meta(xen_root, "host,xen");
	free(dom0.recs);
	free(xen.recs);
}

static void check_xen(int rounds)
{
	struct tv_sync_result res;
	const struct tv_sync_domain *x;
	long double worst = 0;

	generate_xen(rounds, 1);
	TV_CHECK(tv_sync_session(xen_root, &res) == 0 && res.nr == 2, "xen: tv_sync_session failed");
	if (res.nr != 2)
		return;
	x = &res.domains[1];
	TV_CHECK(!strcmp(x->method, "hull") && !strcmp(x->via, "host") &&
		 x->est.quality == TV_SYNC_ACCURATE && x->nr_probes == 2 * (size_t)rounds &&
		 x->causality_violations == 0 && x->nr_pairs_checked == 2 * (size_t)rounds,
		 "xen: %s via %s, %s, %zu pairs, %zu/%zu violations: %s", x->method, x->via,
		 tv_sync_quality_name(x->est.quality), x->nr_probes, x->causality_violations,
		 x->nr_pairs_checked, x->est.message);
	for (uint64_t v = (uint64_t)x->est.span_lo; v <= (uint64_t)x->est.span_hi; v += 10000000) {
		long double err = fabsl((long double)tv_sync_domain_apply(x, v) - (BX + AX * v));

		worst = err > worst ? err : worst;
	}
	TV_CHECK(x->est.bound_ns >= 0 && worst <= x->est.bound_ns,
		 "xen: true error %.0Lf ns outside bound %lld ns", worst, (long long)x->est.bound_ns);
	printf("xen (dom0 probes): bound %lld ns, true error %.0Lf ns, drift %.3f ppm (true -12)\n",
	       (long long)x->est.bound_ns, worst,
	       ((double)x->est.map.slope_q48 / TV_SLOPE_ONE - 1) * 1e6);
	tv_sync_result_free(&res);

	/* Stock Xen: the records have no TSC, so no bound may be claimed. */
	generate_xen(rounds, 0);
	TV_CHECK(tv_sync_session(xen_root, &res) == 0 && res.nr == 2, "xen: tv_sync_session failed");
	if (res.nr != 2)
		return;
	x = &res.domains[1];
	TV_CHECK(x->est.quality == TV_SYNC_INSUFFICIENT && !strcmp(x->method, "none") &&
		 strstr(x->est.message, "no TSC"), "stock xen: %s %s: %s", x->method,
		 tv_sync_quality_name(x->est.quality), x->est.message);
	tv_sync_result_free(&res);
}

/* The domU's clock: d1 = (dom0 - BD) / AD. */
static const long double AD = 1.0L + 48e-6L, BD = 1900000000.0L;

static uint64_t domu_clock(uint64_t dom0)
{
	return (uint64_t)llroundl(((long double)dom0 - BD) / AD);
}

/*
 * host (dom0), xen and guest-d1 (domid 1, guest index 0), @rounds rounds
 * 50 ms apart: dom0/Xen probes, loose ping/pong with dom0 (one-way delays
 * 20x the others), tight hypercall probes with Xen; d1's vCPU 0 runs the
 * first 20 ms of each round (Xen's runstate records) and all its probe
 * records fall in [1, 10] ms.  @planted guest events land 15 ms after a
 * running interval ended.  Another domain (domid 5) forges d1's and
 * dom0's probe records 30 ms off: they must not count.
 */
/* The domU session in domu_root: dom0 (the reference), Xen and d1 (domid 1); frees their records. */
static void write_domu_session(struct domain_gen *dom0, struct domain_gen *xen, struct domain_gen *d1)
{
	base = domu_root;
	write_domain(dom0, "host");
	write_domain(xen, "xen");
	extra_meta = "xen_domain=d1\nxen_domid=1\nxen_vcpus=1\n";
	write_domain(d1, "guest-d1");
	extra_meta = "";
	base = root;
	write_session_meta(domu_root, "host,xen,guest-d1");
	free(dom0->recs);
	free(xen->recs);
	free(d1->recs);
}

static void generate_domu(int rounds, int has_tsc, int planted)
{
	struct domain_gen dom0 = { 0 }, xen = { 0 }, d1 = { 0 };
	uint64_t t0 = 5000000000ULL, step = 50000000ULL;

	for (int i = 0; i < rounds; i++) {
		uint64_t t = t0 + step * (uint64_t)i, x = t + 1000000 + delay();
		uint64_t p = t + 3000000, recv = p + 20 * delay(), back = recv + 500;
		uint64_t h = t + 6000000, hx = h + delay(), ha = hx + delay();
		uint64_t seq = 3 * (uint64_t)i;

		add_runstate(&xen, xen_clock(t), 1, 0, 1, 0);
		add_runstate(&xen, xen_clock(t + 20000000), 1, 0, 0, 2);
		add_marker(&dom0, t + 1000000, 7, seq);
		add_xen_guest(&xen, xen_clock(x), seq, has_tsc);
		add_marker(&dom0, x + delay(), 8, seq);
		add_marker(&dom0, p, 1, seq + 1);
		add_marker(&d1, domu_clock(recv), 2, seq + 1);
		add_marker(&d1, domu_clock(back), 3, seq + 1);
		add_marker(&dom0, back + 20 * delay(), 4, seq + 1);
		add_marker(&d1, domu_clock(h), 5, seq + 2);
		add_xen_probe(&xen, xen_clock(hx), seq + 2, has_tsc, 0);
		add_xen_probe_by(&xen, xen_clock(hx + 30000000), seq + 2, has_tsc, 0, 5);
		add_xen_probe_by(&xen, xen_clock(x + 30000000), seq, has_tsc, -1, 5);
		add_marker(&d1, domu_clock(ha), 6, seq + 2);
		if (i >= 1 && i <= planted)	/* a guest event while its vCPU was blocked */
			add_marker(&d1, domu_clock(t + 35000000), 16, 9);
	}
	write_domu_session(&dom0, &xen, &d1);
}

static const struct tv_sync_domain *domu_result(const struct tv_sync_result *res)
{
	return res->nr == 3 && !strcmp(res->domains[2].domain, "guest-d1") ? &res->domains[2]
									  : NULL;
}

static void check_domu(int rounds)
{
	struct tv_sync_result res;
	const struct tv_sync_domain *g;
	long double worst = 0;

	generate_domu(rounds, 1, 0);
	TV_CHECK(tv_sync_session(domu_root, &res) == 0, "domu: tv_sync_session failed");
	g = domu_result(&res);
	TV_CHECK(g != NULL, "domu: no guest-d1 result");
	if (!g)
		return;
	/* 2 pairs per hypercall probe, 2 per ping/pong: all checked */
	TV_CHECK(!strcmp(g->method, "hull") && !strcmp(g->via, "xen") &&
		 g->nr_probes == 2 * (size_t)rounds && g->nr_pairs_checked == 4 * (size_t)rounds &&
		 g->causality_violations == 0,
		 "domu: %s via %s, %zu pairs, %zu/%zu violations: %s", g->method, g->via,
		 g->nr_probes, g->causality_violations, g->nr_pairs_checked, g->est.message);
	TV_CHECK(!strcmp(g->alt_via, "host") && g->est.bound_ns >= 0 &&
		 g->alt_bound_ns > 5 * g->est.bound_ns,
		 "domu: path not taken %s, bound %lld ns, the taken one %lld ns", g->alt_via,
		 (long long)g->alt_bound_ns, (long long)g->est.bound_ns);
	for (uint64_t v = (uint64_t)g->est.span_lo; v <= (uint64_t)g->est.span_hi; v += 10000000) {
		long double err = fabsl((long double)tv_sync_domain_apply(g, v) - (BD + AD * v));

		worst = err > worst ? err : worst;
	}
	TV_CHECK(worst <= g->est.bound_ns, "domu: true error %.0Lf ns outside bound %lld ns", worst,
		 (long long)g->est.bound_ns);
	/* every probe marker of d1 (4 per round) inside its vCPU's running time */
	TV_CHECK(g->nr_runstate_checked == 4 * (size_t)rounds && g->runstate_violations == 0,
		 "domu: %zu of %zu guest events outside their vCPU's runs", g->runstate_violations,
		 g->nr_runstate_checked);
	printf("domU via xen: bound %lld ns (message probes alone: %lld ns), true error %.0Lf ns, %zu guest events in their vCPU's runs\n",
	       (long long)g->est.bound_ns, (long long)g->alt_bound_ns, worst, g->nr_runstate_checked);
	tv_sync_result_free(&res);

	/* Guest events while Xen had the vCPU blocked: each one counted. */
	generate_domu(rounds, 1, 7);
	TV_CHECK(tv_sync_session(domu_root, &res) == 0, "domu planted: tv_sync_session failed");
	g = domu_result(&res);
	TV_CHECK(g && g->runstate_violations == 7 && g->nr_runstate_checked == 4 * (size_t)rounds + 7 &&
		 g->causality_violations == 0,
		 "domu planted: %zu of %zu outside (7 planted), %zu causality violations",
		 g ? g->runstate_violations : 0, g ? g->nr_runstate_checked : 0,
		 g ? g->causality_violations : 0);
	tv_sync_result_free(&res);

	/* Stock Xen: no TSC on either kind of record: message probes only, said. */
	generate_domu(rounds, 0, 0);
	TV_CHECK(tv_sync_session(domu_root, &res) == 0, "domu stock: tv_sync_session failed");
	g = domu_result(&res);
	TV_CHECK(g && !strcmp(g->method, "hull") && !strcmp(g->via, "host") &&
		 strstr(g->est.message, "no TSC") && g->causality_violations == 0 &&
		 g->nr_runstate_checked == 0,
		 "domu stock: %s via %s, %zu runstate checks: %s", g ? g->method : "-",
		 g ? g->via : "-", g ? g->nr_runstate_checked : 0, g ? g->est.message : "-");
	tv_sync_result_free(&res);
}

/* How far pCPU 1's Xen system time runs ahead of pCPU 0's (TCG: 3-50 ms). */
#define SKEW 3000000ULL

/*
 * A domU whose vCPU moves between two physical CPUs whose Xen system times
 * differ by SKEW, as in the lab under QEMU TCG.  Every record of pCPU 1 is
 * stamped SKEW late, and the domU's pvclock follows the CPU it runs on, so
 * its own times on pCPU 1 are SKEW late too: each pCPU is consistent with
 * itself.  dom0 stays on pCPU 0.  Each round d1 runs [0, 10] ms on pCPU 1
 * (its hypercall probe there), then [10.2, 20] ms on pCPU 0 (a ping/pong
 * with dom0, and @events guest events at 12-19 ms): on the merged time
 * line the pCPU 0 run starts before pCPU 1 records the end of the first.
 * With @held, a second hypercall probe at 12 ms on pCPU 0 whose two
 * markers carry the held value of the clock (Linux's pvclock returns the
 * highest value read so far: 10 ms on pCPU 1, stamped SKEW late).
 */
static void generate_domu_moving(int rounds, int events, int held)
{
	struct domain_gen dom0 = { 0 }, xen = { 0 }, d1 = { 0 };
	uint64_t t0 = 5000000000ULL, step = 50000000ULL;

	for (int i = 0; i < rounds; i++) {
		uint64_t t = t0 + step * (uint64_t)i, x = t + 1000000 + delay();
		uint64_t h = t + 6000000, hx = h + delay(), ha = hx + delay();
		uint64_t p = t + 13000000, recv = p + 20 * delay(), back = recv + 500;
		uint64_t seq = 4 * (uint64_t)i;

		/* each pCPU's scale, stamped at the same TSC: pCPU 1 SKEW ahead */
		rec_cpu = 0;
		add_tscale(&xen, xen_clock(t), t, t);
		rec_cpu = 1;
		add_tscale(&xen, xen_clock(t + SKEW), t, t + SKEW);
		add_runstate(&xen, xen_clock(t + SKEW), 1, 0, 1, 0);
		add_runstate(&xen, xen_clock(t + 10000000 + SKEW), 1, 0, 0, 1);
		add_xen_probe(&xen, xen_clock(hx + SKEW), seq + 2, 1, 0);
		rec_cpu = 0;
		add_marker(&d1, domu_clock(h + SKEW), 5, seq + 2);
		add_marker(&d1, domu_clock(ha + SKEW), 6, seq + 2);
		add_runstate(&xen, xen_clock(t + 10200000), 1, 0, 1, 0);
		add_runstate(&xen, xen_clock(t + 20000000), 1, 0, 0, 2);
		add_marker(&dom0, t + 1000000, 7, seq);
		add_xen_guest(&xen, xen_clock(x), seq, 1);
		add_marker(&dom0, x + delay(), 8, seq);
		add_marker(&dom0, p, 1, seq + 1);
		add_marker(&d1, domu_clock(recv), 2, seq + 1);
		add_marker(&d1, domu_clock(back), 3, seq + 1);
		add_marker(&dom0, back + 20 * delay(), 4, seq + 1);
		for (int k = 0; k < events; k++)
			add_marker(&d1, domu_clock(t + 12000000 + 7000000 / (uint64_t)events * (uint64_t)k), 16, 9);
		if (held) {
			uint64_t last = domu_clock(t + 10000000 + SKEW);

			/* the ring buffer may add a few ns to a held time */
			add_marker(&d1, last, 5, seq + 3);
			add_xen_probe(&xen, xen_clock(t + 12000000), seq + 3, 1, 0);
			add_marker(&d1, last + (uint64_t)(i % 2) * 4, 6, seq + 3);
		}
	}
	write_domu_session(&dom0, &xen, &d1);
}

static void check_domu_moving(int rounds)
{
	struct tv_sync_result res;
	const struct tv_sync_domain *g;

	/* runs paired per pCPU: every guest event inside its vCPU's runs */
	generate_domu_moving(rounds, 8, 0);
	TV_CHECK(tv_sync_session(domu_root, &res) == 0, "domu moving: tv_sync_session failed");
	g = domu_result(&res);
	TV_CHECK(g && !strcmp(g->method, "hull") && !strcmp(g->via, "xen") &&
		 g->causality_violations == 0 && g->held_rounds == 0 &&
		 g->nr_runstate_checked == 12 * (size_t)rounds && g->runstate_violations == 0,
		 "domu moving: %s via %s, %zu causality violations, %zu of %zu guest events outside their vCPU's runs",
		 g ? g->method : "-", g ? g->via : "-", g ? g->causality_violations : 0,
		 g ? g->runstate_violations : 0, g ? g->nr_runstate_checked : 0);
	if (g)
		printf("domU moving between pCPUs %llu ms apart: bound %lld ns, %zu of %zu guest events outside its vCPU's runs\n",
		       SKEW / 1000000, (long long)g->est.bound_ns, g->runstate_violations,
		       g->nr_runstate_checked);
	/* the pCPUs' difference, measured from their time-scale records */
	TV_CHECK(res.nr == 3 && !strcmp(res.domains[1].domain, "xen") &&
		 res.domains[1].pcpu_skew_ns == (int64_t)SKEW && res.domains[0].pcpu_skew_ns == -1,
		 "domu moving: xen's pcpu_skew_ns %lld, expected %llu",
		 res.nr == 3 ? (long long)res.domains[1].pcpu_skew_ns : -2, SKEW);
	tv_sync_result_free(&res);

	/*
	 * A bracket with the clock held: its send side (before) left out and
	 * counted, its receive side (after, a held time is never early) kept;
	 * nothing inverted.
	 */
	generate_domu_moving(rounds, 0, 1);
	TV_CHECK(tv_sync_session(domu_root, &res) == 0, "domu held: tv_sync_session failed");
	g = domu_result(&res);
	TV_CHECK(g && !strcmp(g->via, "xen") && g->held_rounds == (size_t)rounds &&
		 g->nr_probes == 3 * (size_t)rounds && g->causality_violations == 0 &&
		 g->est.bound_ns >= 0 && g->est.bound_ns < 100000,
		 "domu held: via %s, %zu held rounds (%d), %zu pairs, %zu causality violations, bound %lld ns: %s",
		 g ? g->via : "-", g ? g->held_rounds : 0, rounds, g ? g->nr_probes : 0,
		 g ? g->causality_violations : 0, g ? (long long)g->est.bound_ns : -1,
		 g ? g->est.message : "-");
	tv_sync_result_free(&res);
}

/*
 * The same moving domU on a real xen-trace domain (cpuN.xen records, the
 * patched Xen's per-pCPU scales in meta): Xen's common time line
 * (lib/reader/xen_line.c).  TSC ticks are ns; pCPU 0's system time is the TSC,
 * pCPU 1's runs LINE_SKEW ahead; dom0 and d1 read the system time of the
 * pCPU they run on minus a constant (pvclock).  Each round dom0 runs on
 * pCPU 0 then moves to pCPU 1, d1 the other way; dom0 probes Xen on
 * pCPU 0, d1 probes Xen on both; dom0 pings d1 from pCPU 1 while d1 is on
 * pCPU 0 (the ping's send stamped LINE_SKEW late: inverted); d1's last
 * exit on pCPU 1 comes, by pCPU 1's time, after its next exit on pCPU 0;
 * then d1 runs on pCPU 1, on pCPU 1 again without events, and on pCPU 0
 * with events that by pCPU 0's time come before that second run's start.
 * Without TRC_TRACE_TSCALE records (@tscale 0) nothing is moved, which is
 * the mapping before the line; with them, nothing is inverted.
 */
#define LINE_SKEW 3000000ULL
#define LINE_C0 1500000000LL	/* dom0's clock: system time - LINE_C0 */
#define LINE_C1 2500000000LL	/* d1's */

struct xen_rec_gen {
	uint64_t tsc;
	uint32_t ev;
	unsigned int n;
	uint32_t x[7];
};

struct xen_gen {
	struct xen_rec_gen *r;
	size_t n, cap;
};

static void xen_add(struct xen_gen *g, uint64_t tsc, uint32_t ev, unsigned int n, const uint32_t *x)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 1024;
		g->r = realloc(g->r, g->cap * sizeof(*g->r));
	}
	g->r[g->n] = (struct xen_rec_gen){ tsc, ev, n, { 0 } };
	memcpy(g->r[g->n].x, x, n * sizeof(*x));
	g->n++;
}

/* domid.vcpu from @old to @new (0 running, 1 runnable, 2 blocked). */
static void xen_runstate(struct xen_gen *g, uint64_t tsc, unsigned int dom, unsigned int old,
			 unsigned int new)
{
	uint32_t x[1] = { dom << 16 };

	xen_add(g, tsc, 0x00021001u | old << 8 | new << 4, 1, x);
}

static void xen_tscale(struct xen_gen *g, uint64_t tsc, uint64_t stime)
{
	uint32_t x[6] = { (uint32_t)tsc, (uint32_t)(tsc >> 32), (uint32_t)stime,
			  (uint32_t)(stime >> 32), 1u << 31, 1 };

	xen_add(g, tsc, 0x0001f004u, 6, x);
}

static int cmp_xen_rec(const void *a, const void *b)
{
	const struct xen_rec_gen *x = a, *y = b;

	return (x->tsc > y->tsc) - (x->tsc < y->tsc);
}

static void write_xen_cpu(struct xen_gen *g, int cpu)
{
	char path[512];
	FILE *f;

	qsort(g->r, g->n, sizeof(*g->r), cmp_xen_rec);
	snprintf(path, sizeof(path), "%s/xen/cpu%d.xen", base, cpu);
	f = fopen(path, "w");
	for (size_t i = 0; f && i < g->n; i++) {
		uint32_t hdr = g->r[i].ev | g->r[i].n << 28 | 1u << 31;
		uint32_t tsc[2] = { (uint32_t)g->r[i].tsc, (uint32_t)(g->r[i].tsc >> 32) };

		fwrite(&hdr, 4, 1, f);
		fwrite(tsc, 4, 2, f);
		fwrite(g->r[i].x, 4, g->r[i].n, f);
	}
	TV_CHECK(f && fclose(f) == 0, "cannot write %s", path);
	free(g->r);
}

static uint64_t line_dom(uint64_t stime, long long c)
{
	return stime - (uint64_t)c;
}

/*
 * Moves where two runs overlap in their pCPUs' times (lab run of
 * 2026-11-26, free): the walk keeps an event that fits the run it is in
 * and the next one in the run it is in.  d1 runs on pCPU 1 [30.2, 33] ms
 * (system time [33.2, 36]), then on pCPU 0 [33.5, 38], where it probes
 * Xen at 34.5 ms: its markers fit the run on pCPU 1 by their time and are
 * moved 3 ms early (Xen's record of the hypercall, on pCPU 0, says where
 * they were).  dom0 runs on pCPU 1 [40, 42] ms, its last events at 44.9
 * and 44.95 ms of pCPU 1's time, then on pCPU 0 [42.5, 48], where its
 * clock holds at 44.95 ms (pvclock's highest value read so far): the
 * pong's receive at 43 ms is stamped so, fits the run on pCPU 1 and is
 * moved before d1 sent the pong (d1 on pCPU 1 [42.2, 48], the ping read
 * at 42.5 ms, the pong sent at 42.6).
 */
static void add_overlap_moves(struct domain_gen *dom0, struct domain_gen *d1, struct xen_gen *cpu,
			      uint64_t t, uint64_t seq)
{
	const uint64_t ms = 1000000, s1 = LINE_SKEW;
	uint32_t hx[4] = { 0x59535654u, 0, (uint32_t)seq, 0 };

	rec_cpu = 0;
	xen_runstate(&cpu[1], t + 30200000, 1, 1, 0);
	add_marker(d1, line_dom(t + 30500000 + s1, LINE_C1), 16, 9);
	xen_runstate(&cpu[1], t + 33 * ms, 1, 0, 1);
	xen_runstate(&cpu[0], t + 33500000, 1, 1, 0);
	xen_add(&cpu[0], t + 34500000, 0x0800f477u, 4, hx);
	add_marker(d1, line_dom(t + 34500000 - 5000, LINE_C1), 5, seq);
	add_marker(d1, line_dom(t + 34500000 + 5000, LINE_C1), 6, seq);
	xen_runstate(&cpu[0], t + 38 * ms, 1, 0, 1);
	xen_runstate(&cpu[1], t + 40 * ms, 0, 1, 0);
	add_marker(dom0, line_dom(t + 41900000 + s1, LINE_C0), 1, seq + 1);
	add_marker(dom0, line_dom(t + 41950000 + s1, LINE_C0), 16, 9);
	xen_runstate(&cpu[1], t + 42 * ms, 0, 0, 1);
	xen_runstate(&cpu[1], t + 42200000, 1, 1, 0);
	add_marker(d1, line_dom(t + 42500000 + s1, LINE_C1), 2, seq + 1);
	add_marker(d1, line_dom(t + 42600000 + s1, LINE_C1), 3, seq + 1);
	xen_runstate(&cpu[0], t + 42500000, 0, 1, 0);
	add_marker(dom0, line_dom(t + 41950000 + s1, LINE_C0), 4, seq + 1);	/* held */
	xen_runstate(&cpu[0], t + 48 * ms, 0, 0, 1);
	xen_runstate(&cpu[1], t + 48 * ms, 1, 0, 2);
}

/*
 * A ping and its pong whose dom0 markers fit two runs (lab, xen-domu-sync
 * under load): dom0 runs on pCPU 1 [50, 52] ms (system time [53, 55]),
 * then on pCPU 0 [52.5, 58], where it sends the ping at 53.2 ms and gets
 * the pong at 53.5: both fit the run on pCPU 1 by their time, whose move
 * would put the pong's receive at 50.5 ms, before d1 (on pCPU 1 from
 * 52.2 ms) sent it at 53.4.  Neither can be placed: the round is left out.
 */
static void add_ambiguous_ping(struct domain_gen *dom0, struct domain_gen *d1, struct xen_gen *cpu,
			       uint64_t t, uint64_t seq)
{
	const uint64_t ms = 1000000, s1 = LINE_SKEW;

	rec_cpu = 0;
	xen_runstate(&cpu[1], t + 50 * ms, 0, 1, 0);
	add_marker(dom0, line_dom(t + 51 * ms + s1, LINE_C0), 16, 9);
	xen_runstate(&cpu[1], t + 52 * ms, 0, 0, 1);
	xen_runstate(&cpu[1], t + 52200000, 1, 1, 0);
	xen_runstate(&cpu[0], t + 52500000, 0, 1, 0);
	add_marker(dom0, line_dom(t + 53200000, LINE_C0), 1, seq);
	add_marker(d1, line_dom(t + 53300000 + s1, LINE_C1), 2, seq);
	add_marker(d1, line_dom(t + 53400000 + s1, LINE_C1), 3, seq);
	add_marker(dom0, line_dom(t + 53500000, LINE_C0), 4, seq);
	xen_runstate(&cpu[0], t + 58 * ms, 0, 0, 1);
	xen_runstate(&cpu[1], t + 58 * ms, 1, 0, 2);
}

static void generate_domu_line(int rounds, int tscale, int overlap, int ambiguous)
{
	struct domain_gen dom0 = { 0 }, d1 = { 0 };
	struct xen_gen cpu[2] = { { 0 }, { 0 } };
	const uint64_t ms = 1000000, s1 = LINE_SKEW;
	char path[512], cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/*", domu_root);
	TV_CHECK(system(cmd) == 0, "%s", cmd);
	for (int i = 0; i < rounds; i++) {
		uint64_t t = 5000000000ULL + 60 * ms * (uint64_t)i, seq = 4 * (uint64_t)i;
		uint32_t gx[4] = { 0x59535654u, (uint32_t)seq, 0, 0 };
		uint32_t hx[4] = { 0x59535654u, 0, (uint32_t)(seq + 2), 0 };
		uint32_t hx2[4] = { 0x59535654u, 0, (uint32_t)(seq + 3), 0 };
		uint32_t exit_x[2] = { 0x72, 0x1000 };

		if (tscale) {
			xen_tscale(&cpu[0], t, t);
			xen_tscale(&cpu[1], t, t + s1);
		}
		/* pCPU 0: dom0 [0, 10.1] ms, then d1 [10.2, 20] */
		xen_runstate(&cpu[0], t + 1000, 0, 1, 0);
		xen_add(&cpu[0], t + 1 * ms, 0x0800f476u, 3, gx);
		rec_cpu = 0;
		add_marker(&dom0, line_dom(t + ms - 5000, LINE_C0), 7, seq);
		add_marker(&dom0, line_dom(t + ms + 5000, LINE_C0), 8, seq);
		xen_runstate(&cpu[0], t + 10100000, 0, 0, 1);
		xen_runstate(&cpu[0], t + 10200000, 1, 1, 0);
		xen_add(&cpu[0], t + 10300000, 0x00081002u, 2, exit_x);
		xen_add(&cpu[0], t + 10310000, 0x00081001u, 0, NULL);
		xen_add(&cpu[0], t + 12900000, 0x00081002u, 2, exit_x);
		xen_add(&cpu[0], t + 13050000, 0x00081001u, 0, NULL);
		xen_add(&cpu[0], t + 14 * ms, 0x0800f477u, 4, hx);
		add_marker(&d1, line_dom(t + 14 * ms - 5000, LINE_C1), 5, seq + 2);
		add_marker(&d1, line_dom(t + 14 * ms + 5000, LINE_C1), 6, seq + 2);
		for (int k = 0; k < 4; k++)
			add_marker(&d1, line_dom(t + 15 * ms + (uint64_t)k * ms, LINE_C1), 16, 9);
		xen_runstate(&cpu[0], t + 20 * ms, 1, 0, 1);
		/* pCPU 1 (its system time s1 ahead): d1 [0, 10] ms, then dom0 [10.15, 19.9] */
		xen_runstate(&cpu[1], t + 1000, 1, 1, 0);
		xen_add(&cpu[1], t + 6 * ms, 0x0800f477u, 4, hx2);
		rec_cpu = 0;	/* guest CPU 0 = d1's vCPU 0, wherever it runs */
		add_marker(&d1, line_dom(t + 6 * ms - 5000 + s1, LINE_C1), 5, seq + 3);
		add_marker(&d1, line_dom(t + 6 * ms + 5000 + s1, LINE_C1), 6, seq + 3);
		for (int k = 0; k < 4; k++)
			add_marker(&d1, line_dom(t + 2 * ms + (uint64_t)k * ms + s1, LINE_C1), 16, 9);
		xen_add(&cpu[1], t + 9950000, 0x00081002u, 2, exit_x);
		xen_add(&cpu[1], t + 9970000, 0x00081001u, 0, NULL);
		xen_runstate(&cpu[1], t + 10 * ms, 1, 0, 1);
		xen_runstate(&cpu[1], t + 10150000, 0, 1, 0);
		/* dom0 on pCPU 1 pings d1 on pCPU 0: 100 us each way */
		add_marker(&dom0, line_dom(t + 13 * ms + s1, LINE_C0), 1, seq + 1);
		add_marker(&d1, line_dom(t + 13100000, LINE_C1), 2, seq + 1);
		add_marker(&d1, line_dom(t + 13200000, LINE_C1), 3, seq + 1);
		add_marker(&dom0, line_dom(t + 13300000 + s1, LINE_C0), 4, seq + 1);
		xen_runstate(&cpu[1], t + 19900000, 0, 0, 1);
		/*
		 * Runs out of the order of their starts: d1 on pCPU 1 [21, 23] ms
		 * (2 events), on pCPU 1 again [25.5, 26] (none), on pCPU 0
		 * [26.5, 30] (4 events, at 26.6-28.4 ms: before the second run's
		 * start by pCPU 1's time, after the first's end).
		 */
		xen_runstate(&cpu[1], t + 21 * ms, 1, 1, 0);
		add_marker(&d1, line_dom(t + 21500000 + s1, LINE_C1), 16, 9);
		add_marker(&d1, line_dom(t + 22500000 + s1, LINE_C1), 16, 9);
		xen_runstate(&cpu[1], t + 23 * ms, 1, 0, 1);
		xen_runstate(&cpu[1], t + 25500000, 1, 1, 0);
		xen_runstate(&cpu[1], t + 26 * ms, 1, 0, 1);
		xen_runstate(&cpu[0], t + 26500000, 1, 1, 0);
		for (int k = 0; k < 4; k++)
			add_marker(&d1, line_dom(t + 26600000 + (uint64_t)k * 600000, LINE_C1), 16, 9);
		xen_runstate(&cpu[0], t + 30 * ms, 1, 0, 2);
		if (overlap)
			add_overlap_moves(&dom0, &d1, cpu, t, 1000000 + 2 * (uint64_t)i);
		if (ambiguous)
			add_ambiguous_ping(&dom0, &d1, cpu, t, 2000000 + (uint64_t)i);
	}
	base = domu_root;
	write_domain(&dom0, "host");
	extra_meta = "xen_domain=d1\nxen_domid=1\nxen_vcpus=1\n";
	write_domain(&d1, "guest-d1");
	extra_meta = "";
	snprintf(path, sizeof(path), "%s/xen", domu_root);
	mkdir(path, 0755);
	TV_CHECK(tv_xen_write_formats(path) == 0, "xen formats");
	snprintf(path, sizeof(path), "%s/xen/meta", domu_root);
	snprintf(cmd, sizeof(cmd),
		 "domain=xen\nkind=xen-trace\nclock=xen-system\nncpus=2\nlong_size=8\n"
		 "subbuf_size=4096\ntsc_khz=1000000\nhvm_isa=svm\n"
		 "cpu0.tsc_timestamp=0\ncpu0.system_time=0\ncpu0.tsc_to_system_mul=%u\ncpu0.tsc_shift=1\n"
		 "cpu1.tsc_timestamp=0\ncpu1.system_time=%llu\ncpu1.tsc_to_system_mul=%u\ncpu1.tsc_shift=1\n"
		 "cpu0.running=0.0\ncpu1.running=1.0\n", 1u << 31, (unsigned long long)s1, 1u << 31);
	put_file(path, cmd);
	for (int c = 0; c < 2; c++)
		write_xen_cpu(&cpu[c], c);
	base = root;
	write_session_meta(domu_root, "host,xen,guest-d1");
	free(dom0.recs);
	free(d1.recs);
}

/* Xen's exits of a vCPU followed by another of the same vCPU before an entry, in merged order. */
static size_t exits_after_exits(const char *dir, size_t *exits)
{
	struct tv_reader *rd;
	struct tv_event ev;
	size_t bad = 0;
	int open[2] = { 0, 0 };

	*exits = 0;
	if (tv_reader_open(dir, &rd))
		return (size_t)-1;
	while (tv_reader_next(rd, &ev) > 0) {
		uint64_t dom;
		int is_exit;

		if (!ev.format || strcmp(ev.domain, "xen") ||
		    (strcmp(ev.format->name, "xen_vmexit") && strcmp(ev.format->name, "xen_vmentry")) ||
		    tv_event_field_u64(&ev, "cur_dom", &dom) || dom > 1)
			continue;
		is_exit = !strcmp(ev.format->name, "xen_vmexit");
		*exits += (size_t)is_exit;
		bad += (size_t)(is_exit && open[dom]);
		open[dom] = is_exit;
	}
	tv_reader_close(rd);
	return bad;
}

static void check_domu_line(int rounds)
{
	/*
	 * no time-scale record (per pCPU); the line; the line with overlapping
	 * moves; the line with a ping and pong that fit two runs
	 */
	for (int variant = 0; variant < 4; variant++) {
		int tscale = variant > 0, overlap = variant == 2, ambiguous = variant == 3;
		size_t events = (overlap ? 25 : ambiguous ? 22 : 20) * (size_t)rounds;
		struct tv_sync_result res;
		const struct tv_sync_domain *g, *h;
		size_t exits, bad;

		generate_domu_line(rounds, tscale, overlap, ambiguous);
		bad = exits_after_exits(domu_root, &exits);
		TV_CHECK(tv_sync_session(domu_root, &res) == 0, "domu line: tv_sync_session failed");
		g = domu_result(&res);
		h = res.nr ? &res.domains[0] : NULL;
		if (!g || !h) {
			TV_CHECK(0, "domu line: no result");
			return;
		}
		printf("domU line (%s): d1 via %s, bound %lld ns, %zu pieces, %zu of %zu probe pairs inverted (%zu message), %zu rounds held, %zu misplaced, %zu ambiguous, %zu of %zu guest events outside their vCPU's runs, %zu of %zu exits after an exit of the same vCPU\n",
		       !tscale ? "no time-scale record: per pCPU" :
		       overlap ? "one line, runs overlapping at moves" :
		       ambiguous ? "one line, a ping and pong fitting two runs" : "time scales recorded: one line",
		       g->via, (long long)g->est.bound_ns, g->nr_pieces, g->causality_violations,
		       g->nr_pairs_checked, g->message_violations, g->held_rounds, g->misplaced_rounds,
		       g->ambiguous_rounds, g->runstate_violations, g->nr_runstate_checked, bad, exits);
		TV_CHECK(exits == 3 * (size_t)rounds, "domu line: %zu exits", exits);
		if (!tscale) {
			/* each pCPU consistent with itself, not with the other: the ping inverted */
			TV_CHECK(g->message_violations == (size_t)rounds && !g->xen_line && !h->xen_line &&
				 bad == (size_t)rounds,
				 "domu line, per pCPU: %zu message violations, %zu exits after exits, line %d/%d",
				 g->message_violations, bad, g->xen_line, h->xen_line);
		} else {
			TV_CHECK(!strcmp(g->via, "xen") && g->causality_violations == 0 &&
				 g->message_violations == 0 && g->runstate_violations == 0 &&
				 g->nr_runstate_checked == events && bad == 0 && g->nr_pieces == 0,
				 "domu line%s: via %s, %zu pieces, %zu causality (%zu message) violations, %zu of %zu outside, %zu exits after exits",
				 overlap ? " (overlapping moves)" : "", g->via, g->nr_pieces,
				 g->causality_violations, g->message_violations,
				 g->runstate_violations, g->nr_runstate_checked, bad);
			/*
			 * each overlap round: d1's hypercall markers misplaced, dom0's
			 * pong receive held, its ping's send (on pCPU 1 at 44.9 ms
			 * of its time, which dom0's next run, on pCPU 0 from 42.5,
			 * holds too) ambiguous; each ambiguous round: left out
			 */
			TV_CHECK(g->misplaced_rounds == (overlap ? (size_t)rounds : 0) &&
				 g->held_rounds == (overlap ? (size_t)rounds : 0) &&
				 g->ambiguous_rounds == (overlap || ambiguous ? (size_t)rounds : 0),
				 "domu line%s: %zu rounds misplaced, %zu held, %zu ambiguous",
				 overlap ? " (overlapping moves)" : ambiguous ? " (ambiguous ping)" : "",
				 g->misplaced_rounds, g->held_rounds, g->ambiguous_rounds);
			TV_CHECK(g->xen_line && h->xen_line && llabs(g->pvclock_ns - LINE_C1) < 1000 &&
				 llabs(h->pvclock_ns - LINE_C0) < 1000,
				 "domu line: constants %lld (d1, %d) and %lld (dom0, %d), expected %lld and %lld",
				 (long long)g->pvclock_ns, g->xen_line, (long long)h->pvclock_ns,
				 h->xen_line, LINE_C1, LINE_C0);
		}
		tv_sync_result_free(&res);
	}
}

static void check_nested(const struct tv_sync_domain *n)
{
	long double worst = 0;

	TV_CHECK(!strcmp(n->method, "hull") && !strcmp(n->via, "guest-good") &&
		 n->est.quality == TV_SYNC_ACCURATE && n->causality_violations == 0 &&
		 n->nr_pairs_checked == 2 * 500,
		 "guest-nested: %s via %s, %s, %zu/%zu violations: %s", n->method, n->via,
		 tv_sync_quality_name(n->est.quality), n->causality_violations,
		 n->nr_pairs_checked, n->est.message);
	for (uint64_t x = (uint64_t)n->est.span_lo; x <= (uint64_t)n->est.span_hi; x += 10000000) {
		long double truth = B + A * (B2 + A2 * (long double)x);
		long double err = fabsl((long double)tv_sync_domain_apply(n, x) - truth);

		worst = err > worst ? err : worst;
	}
	TV_CHECK(n->est.bound_ns >= 0 && worst <= n->est.bound_ns,
		 "guest-nested: true error %.0Lf ns outside composed bound %lld ns", worst,
		 (long long)n->est.bound_ns);
	printf("guest-nested (via guest-good): composed bound %lld ns, true error %.0Lf ns\n",
	       (long long)n->est.bound_ns, worst);
}

/*
 * guest-jump: no line fits (the clock jumps 1 ms forward at host time mid),
 * but two do, each with the truth inside its own bound, the second starting
 * at the first probe after the jump.
 */
static void check_jump(const struct tv_sync_domain *jump)
{
	long double worst[2] = { 0, 0 };
	int64_t g_mid, from;

	TV_CHECK(!strcmp(jump->method, "hull") && jump->nr_pieces == 2 &&
		 jump->est.quality == TV_SYNC_ACCURATE,
		 "guest-jump: %s %s, %zu pieces: %s", jump->method,
		 tv_sync_quality_name(jump->est.quality), jump->nr_pieces, jump->est.message);
	TV_CHECK(strstr(jump->est.message, "no line fits") != NULL, "message: %s", jump->est.message);
	if (jump->nr_pieces != 2)
		return;
	g_mid = (int64_t)guest_clock(JUMP_MID, 0, JUMP_MID);
	from = jump->pieces[1].from_dom;
	/* At the first probe after the jump: its round starts 100 us after it. */
	TV_CHECK(from > g_mid + 1000000 && from < g_mid + 1000000 + 200000,
		 "piece 1 starts at %lld, the jump is at %lld", (long long)from, (long long)g_mid);
	/* Before the jump the guest reads (host - B) / A, after it 1 ms more. */
	for (int64_t g = jump->est.span_lo; g <= jump->est.span_hi; g += 10000000) {
		int after = g >= from;
		long double truth = B + A * (long double)(g - (after ? 1000000 : 0));
		long double err = fabsl((long double)tv_sync_domain_apply(jump, (uint64_t)g) - truth);

		if (!after && g >= g_mid)
			continue;	/* guest times the clock skipped */
		worst[after] = err > worst[after] ? err : worst[after];
	}
	for (int k = 0; k < 2; k++)
		TV_CHECK(worst[k] <= jump->pieces[k].bound_ns,
			 "piece %d: true error %.0Lf ns outside bound %lld ns", k, worst[k],
			 (long long)jump->pieces[k].bound_ns);
	printf("guest-jump: 2 pieces, bounds %lld and %lld ns, true errors %.0Lf and %.0Lf ns\n",
	       (long long)jump->pieces[0].bound_ns, (long long)jump->pieces[1].bound_ns, worst[0],
	       worst[1]);
}

/* guest-jump's pieces read back as written; a corrupt piece is refused. */
static void check_pieces_file(const struct tv_sync_domain *jump)
{
	struct tv_sync_result back;
	char path[600], saved[620], cmd[1400];

	TV_CHECK(tv_sync_read(root, &back) == 0 && back.nr == 4, "tv_sync_read");
	if (back.nr == 4) {
		const struct tv_sync_domain *b = &back.domains[2];

		int same = b->nr_pieces == jump->nr_pieces;

		for (size_t k = 0; same && k < b->nr_pieces; k++) {
			const struct tv_sync_piece *x = &b->pieces[k], *y = &jump->pieces[k];

			same = x->from_dom == y->from_dom && x->bound_ns == y->bound_ns &&
			       x->quality == y->quality && x->map.base_dom == y->map.base_dom &&
			       x->map.base_ref == y->map.base_ref &&
			       x->map.slope_q48 == y->map.slope_q48;
		}
		TV_CHECK(same, "guest-jump: %zu pieces read back, %zu written, or they differ",
			 b->nr_pieces, jump->nr_pieces);
		tv_sync_result_free(&back);
	}
	snprintf(path, sizeof(path), "%s/sync/transforms", root);
	snprintf(saved, sizeof(saved), "%s.saved", path);
	snprintf(cmd, sizeof(cmd), "cp %s %s && sed -i 's/^guest-jump.piece1=.*/guest-jump.piece1=1 2/' %s",
		 path, saved, path);
	TV_CHECK(system(cmd) == 0, "%s", cmd);
	TV_CHECK(tv_sync_read(root, &back) == -EINVAL, "a corrupt piece was accepted");
	TV_CHECK(rename(saved, path) == 0, "rename %s", saved);
}

static void check_sync(void)
{
	struct tv_sync_result res;
	const struct tv_sync_domain *good, *jump;
	long double worst = 0;

	TV_CHECK(tv_sync_session(root, &res) == 0, "tv_sync_session failed");
	TV_CHECK(res.nr == 4, "%zu domains", res.nr);
	if (res.nr != 4)
		return;
	good = &res.domains[1];
	jump = &res.domains[2];
	TV_CHECK(!strcmp(good->method, "hull") && good->est.quality == TV_SYNC_ACCURATE,
		 "guest-good: %s %s: %s", good->method, tv_sync_quality_name(good->est.quality),
		 good->est.message);
	/* 4 pairs per round: ping, pong, before/after the hypercall. */
	TV_CHECK(good->nr_probes == 4 * 500, "guest-good: %zu probe pairs", good->nr_probes);
	TV_CHECK(good->causality_violations - good->vcpu_violations == 0 &&
		 good->nr_pairs_checked == 4 * 500,
		 "guest-good: %zu probe violations in %zu pairs",
		 good->causality_violations - good->vcpu_violations, good->nr_pairs_checked);
	/* Every guest event after the first exit: 4 markers a round, and the odd one. */
	TV_CHECK(good->vcpu_violations == 1 && good->nr_vcpu_checked >= 4 * 499,
		 "guest-good: %zu vCPU violations in %zu events", good->vcpu_violations,
		 good->nr_vcpu_checked);
	for (uint64_t g = (uint64_t)good->est.span_lo; g <= (uint64_t)good->est.span_hi;
	     g += 10000000) {
		long double err = fabsl((long double)tv_sync_domain_apply(good, g) - (B + A * g));

		worst = err > worst ? err : worst;
	}
	TV_CHECK(good->est.bound_ns >= 0 && worst <= good->est.bound_ns,
		 "true error %.0Lf ns outside bound %lld ns", worst, (long long)good->est.bound_ns);
	printf("guest-good: bound %lld ns, true error %.0Lf ns, drift %.3f ppm (true 35)\n",
	       (long long)good->est.bound_ns, worst,
	       ((double)good->est.map.slope_q48 / TV_SLOPE_ONE - 1) * 1e6);
	check_jump(jump);
	check_nested(&res.domains[3]);
	TV_CHECK(tv_sync_write(root, &res) == 0, "tv_sync_write failed");
	check_pieces_file(jump);
	tv_sync_result_free(&res);
}

/* Merged in the reference clock: guest-good's ping receives follow their sends. */
static void check_merge(void)
{
	struct tv_reader *rd;
	struct tv_event ev;
	uint64_t last = 0, n = 0, out_of_order = 0;

	TV_CHECK(tv_reader_open(root, &rd) == 0, "tv_reader_open failed");
	while (tv_reader_next(rd, &ev) > 0) {
		out_of_order += ev.ts < last;
		last = ev.ts;
		n++;
		if (!strcmp(ev.domain, "guest:good"))
			TV_CHECK(ev.ts != ev.ts_raw, "guest-good event not mapped");
	}
	TV_CHECK(out_of_order == 0, "%llu events out of order", (unsigned long long)out_of_order);
	TV_CHECK(n == 500 * 2 * (3 + 4) + 501 * 2 + 2 + 500 * 4, "%llu events", (unsigned long long)n);
	tv_reader_close(rd);
}

/* The Perfetto export draws each kvm_exit -> kvm_entry as a slice on the vCPU track. */
static void check_perfetto(void)
{
	const char *tv = getenv("TV") ? getenv("TV") : "build/tracevisor";
	char cmd[1024], out[600];
	size_t slices = 0, vcpu_tracks = 0;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(out, sizeof(out), "%s/p.json", root);
	snprintf(cmd, sizeof(cmd), "%s export -q --format perfetto-json -o %s %s", tv, out, root);
	TV_CHECK(system(cmd) == 0, "%s failed", cmd);
	f = fopen(out, "r");
	while (f && getline(&line, &cap, f) > 0) {
		if (strstr(line, "\"ph\":\"X\"") && strstr(line, "\"name\":\"exit hypercall\"") &&
		    strstr(line, "\"dur\":0.700"))
			slices++;
		vcpu_tracks += strstr(line, "\"thread_name\"") && strstr(line, "vCPU 0 (tid 200)");
	}
	free(line);
	if (f)
		fclose(f);
	TV_CHECK(slices == 500, "%zu exit slices of 700 ns, want 500", slices);
	TV_CHECK(vcpu_tracks == 1, "%zu vCPU tracks named", vcpu_tracks);
}

/*
 * The CTF export of this synced four-domain session follows the rules Trace
 * Compass's reader enforces (tests/ctf_tc_check.py, doc/ctf-export.md) and
 * babeltrace2, when installed, reads it without a word on stderr.
 */
static void check_ctf(void)
{
	const char *tv = getenv("TV") ? getenv("TV") : "build/tracevisor";
	const char *top = getenv("TV_ROOT") ? getenv("TV_ROOT") : ".";
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s export -q --format ctf -o %s/ctf %s 2>/dev/null", tv,
		 root, root);
	TV_CHECK(system(cmd) == 0, "%s failed", cmd);
	if (system("command -v python3 >/dev/null") == 0) {
		snprintf(cmd, sizeof(cmd), "python3 %s/tests/ctf_tc_check.py %s/ctf", top, root);
		TV_CHECK(system(cmd) == 0, "%s: Trace Compass rules broken", cmd);
	} else {
		printf("no python3: CTF export not checked against Trace Compass's rules\n");
	}
	if (system("command -v babeltrace2 >/dev/null") == 0) {
		snprintf(cmd, sizeof(cmd), "babeltrace2 %s/ctf >/dev/null 2>%s/bt.err && "
			 "test ! -s %s/bt.err", root, root, root);
		TV_CHECK(system(cmd) == 0, "%s: babeltrace2 failed or warned", cmd);
	}
}

static void add_write_tsc(struct domain_gen *d, uint64_t ts, uint64_t prev, uint64_t next)
{
	unsigned char r[32] = { 0 };
	uint16_t id = ID_WRITE_TSC;
	int32_t pid = 200;

	memcpy(r, &id, 2);
	memcpy(r + 4, &pid, 4);
	memcpy(r + 16, &prev, 8);
	memcpy(r + 24, &next, 8);
	add(d, ts, r, 32);
}

#define TSC_ROUNDS 300
static uint64_t tsc_truth[TSC_ROUNDS * 4];	/* host TSC of each guest marker */
static size_t tsc_writes;

/*
 * Host and guest-t in TSC cycles.  Each round the vCPU runs from an entry to
 * an exit with the guest's probe markers in between (guest = host + offset),
 * then leaves guest mode: at the next vCPU load KVM freezes its TSC (the
 * offset makes it resume where it stopped), and in two rounds of three the
 * clock update catches it up by part of the time it was out.
 */
static void generate_tsc(int with_writes)
{
	struct domain_gen host = { 0 }, guest = { 0 };
	uint64_t h = 50000000000ULL, off = (uint64_t)-44770180193LL;
	size_t k = 0;
	char path[512], text[128];

	tsc_writes = 0;
	add_exit(&host, h, 100);
	for (int i = 0; i < TSC_ROUNDS; i++) {
		uint64_t t = h + 1000 + delay(), seq = (uint64_t)i, exit, load, next;

		add_marker(&host, t - delay(), 1, seq);
		add_marker(&guest, t + off, 2, seq);
		tsc_truth[k++] = t;
		t += 500;
		add_marker(&guest, t + off, 3, seq);
		tsc_truth[k++] = t;
		add_marker(&host, t + delay(), 4, seq);
		t += 2000;
		add_marker(&guest, t + off, 5, seq);
		tsc_truth[k++] = t;
		t += delay();
		add_hypercall(&host, t, seq, 0);
		t += delay();
		add_marker(&guest, t + off, 6, seq);
		tsc_truth[k++] = t;
		exit = t + 1000 + delay();
		load = exit + 20000 + 50 * delay();
		next = exit + 3 + off - load;		/* vcpu_put's guest TSC, resumed */
		if (with_writes)
			add_write_tsc(&host, load + 7, off, next);
		tsc_writes++;
		off = next;
		if (i % 3) {
			next = off + (load - exit) / 2;
			if (with_writes)
				add_write_tsc(&host, load + 300, off, next);
			tsc_writes++;
			off = next;
		}
		h = load + 400;
		add_exit(&host, h, h - exit);
	}
	base = tsc_root;
	clock_name = "x86-tsc";
	write_domain(&host, "host");
	write_domain(&guest, "guest-t");
	/* debugfs at the end of recording: the last offset, no TSC scaling. */
	snprintf(path, sizeof(path), "%s/guest-t/tsc", tsc_root);
	snprintf(text, sizeof(text), "0 %lld - -\n", (long long)off);
	put_file(path, text);
	base = root;
	clock_name = "local";
	write_session_meta(tsc_root, "host,guest-t");
	free(host.recs);
	free(guest.recs);
}

static void check_tsc(void)
{
	struct tv_sync_result res;
	const struct tv_sync_domain *t;
	struct tv_reader *rd;
	struct tv_event ev;
	size_t k = 0, wrong = 0;

	generate_tsc(1);
	TV_CHECK(tv_sync_session(tsc_root, &res) == 0 && res.nr == 2, "tsc: tv_sync_session failed");
	if (res.nr != 2)
		return;
	t = &res.domains[1];
	TV_CHECK(!strcmp(t->method, "tsc") && t->est.quality == TV_SYNC_EXACT && t->est.bound_ns == 0,
		 "tsc: %s %s bound %lld: %s", t->method, tv_sync_quality_name(t->est.quality),
		 (long long)t->est.bound_ns, t->est.message);
	TV_CHECK(t->nr_tsc_segments == 1 + tsc_writes, "tsc: %zu segments for %zu writes",
		 t->nr_tsc_segments, tsc_writes);
	TV_CHECK(t->causality_violations == 0 && t->nr_pairs_checked == 4 * TSC_ROUNDS &&
		 t->vcpu_violations == 0 && t->nr_vcpu_checked == 4 * TSC_ROUNDS,
		 "tsc: %zu violations, %zu pairs and %zu/%zu vCPU events checked",
		 t->causality_violations, t->nr_pairs_checked, t->vcpu_violations,
		 t->nr_vcpu_checked);
	/*
	 * The probes alone see a guest TSC that stops at every one of the 500
	 * vCPU loads: no line fits, and pieces would hold a round or two each,
	 * some with probes one way only (insufficient): the hull stays failed.
	 */
	TV_CHECK(strstr(t->est.message, "probe hull (1200 pairs) is failed") &&
		 strstr(t->est.message, "no line fits:") && !t->nr_pieces,
		 "tsc: the probe hull is not failed: %s", t->est.message);
	printf("guest-t (x86-tsc): %zu offset segments, %s\n", t->nr_tsc_segments, t->est.message);
	TV_CHECK(tv_sync_write(tsc_root, &res) == 0, "tsc: tv_sync_write failed");
	tv_sync_result_free(&res);
	/* Merged by report's reader, from sync/: every guest marker at its host TSC. */
	TV_CHECK(tv_reader_open(tsc_root, &rd) == 0, "tsc: tv_reader_open failed");
	while (tv_reader_next(rd, &ev) > 0)
		if (!strcmp(ev.domain, "guest:t"))
			wrong += k >= 4 * TSC_ROUNDS || ev.ts != tsc_truth[k++];
	tv_reader_close(rd);
	TV_CHECK(wrong == 0 && k == 4 * TSC_ROUNDS, "tsc: %zu of %zu guest events not at their host TSC",
		 wrong, k);

	/* The offset of the end for all: the checks must see it is wrong. */
	generate_tsc(0);
	TV_CHECK(tv_sync_session(tsc_root, &res) == 0 && res.nr == 2, "tsc: tv_sync_session failed");
	if (res.nr != 2)
		return;
	t = &res.domains[1];
	TV_CHECK(!strcmp(t->method, "tsc") && t->nr_tsc_segments == 1 &&
		 t->vcpu_violations > 4 * TSC_ROUNDS / 2,
		 "tsc without offset changes: %s, %zu segments, %zu of %zu events outside",
		 t->method, t->nr_tsc_segments, t->vcpu_violations, t->nr_vcpu_checked);
	tv_sync_result_free(&res);
}

/*
 * A hostile guest forging another guest's probes (issue 22): host, guest-a
 * (sync_index 0) and guest-evil (sync_index 1), listed evil first so that
 * only the meta's index names them.  Both are probed honestly; with
 * @forge, evil also writes into its own trace, each round, the host's
 * ping/pong markers for guest 0 and guest 0's own ping markers, 2 s off,
 * a dom0/Xen marker, and its vCPU thread (201) makes a hypercall probe
 * naming guest 0, 2 s off.  Returns the number of forged records.
 */
static size_t generate_foreign(const char *dir, int rounds, int forge)
{
	struct domain_gen host = { 0 }, a = { 0 }, evil = { 0 };
	uint64_t t0 = T0, step = 20000000, late = 2000000000;
	size_t forged = 0;

	rng = 0x9e3779b97f4a7c15ULL;	/* the same delays with and without forgeries */
	for (int i = 0; i < rounds; i++) {
		uint64_t t = t0 + step * (uint64_t)i, seq = (uint64_t)i;

		for (int k = 0; k < 2; k++, t += 100000) {
			struct probe_round r = add_probe_round(&host, k ? &evil : &a,
							       k ? evil_clock : a_clock, t, seq,
							       (uint16_t)k, 200 + k);

			if (!forge || k)
				continue;
			/* guest a's round as evil would like it: 2 s later */
			add_marker_for(&evil, evil_clock(t + late), 1, seq, 0);
			add_marker_for(&evil, evil_clock(r.recv + late), 2, seq, 0);
			add_marker_for(&evil, evil_clock(r.back + late), 3, seq, 0);
			add_marker_for(&evil, evil_clock(r.back + late + 1000), 4, seq, 0);
			add_marker_for(&evil, evil_clock(r.back + late + 2000), 7, seq, 0);
			add_hypercall_from(&host, r.hc + late, seq, 0, 201);
			forged += 6;
		}
	}
	write_foreign_session(dir, &host, &a, &evil, "host,guest-evil,guest-a",
			      "# tid vm_pid vcpu vm_name\n200 199 0 a\n201 198 0 evil\n");
	return forged;
}

static const struct tv_sync_domain *result_of(const struct tv_sync_result *res, const char *name)
{
	for (size_t d = 0; d < res->nr; d++)
		if (!strcmp(res->domains[d].domain, name))
			return &res->domains[d];
	return NULL;
}

/* The count is saved with the domain's keys in sync/transforms (only where non-zero) and read back. */
static void check_foreign_saved(const struct tv_sync_result *forged, size_t planted)
{
	struct tv_sync_result back;
	const struct tv_sync_domain *e, *a;
	struct tv_meta *m = NULL;
	char path[4096];

	TV_CHECK(tv_sync_write(foreign_root, forged) == 0, "foreign: tv_sync_write failed");
	snprintf(path, sizeof(path), "%s/sync/transforms", foreign_root);
	TV_CHECK(tv_meta_read(path, &m) == 0, "foreign: transforms unreadable");
	TV_CHECK(m && tv_meta_get_ll(m, "guest-evil.foreign_probes", -1) == (long long)planted &&
		 !tv_meta_get(m, "guest-a.foreign_probes") && !tv_meta_get(m, "host.foreign_probes"),
		 "foreign: transforms say guest-evil.foreign_probes=%s (%zu planted), guest-a's %s",
		 tv_meta_get(m, "guest-evil.foreign_probes") ?: "(none)", planted,
		 tv_meta_get(m, "guest-a.foreign_probes") ?: "(none)");
	tv_meta_free(m);
	TV_CHECK(tv_sync_read(foreign_root, &back) == 0, "foreign: tv_sync_read failed");
	e = result_of(&back, "guest-evil");
	a = result_of(&back, "guest-a");
	TV_CHECK(e && a && e->foreign_probes == planted && a->foreign_probes == 0,
		 "foreign: read back %zu forged records of guest-evil, %zu of guest-a (%zu planted)",
		 e ? e->foreign_probes : 0, a ? a->foreign_probes : 0, planted);
	tv_sync_result_free(&back);
}

/* guest-a's line must not move by one nanosecond whatever evil forges; evil's are counted. */
static void check_foreign(int rounds)
{
	struct tv_sync_result clean, forged;
	const struct tv_sync_domain *a0, *a1, *e1;
	size_t planted;
	long double worst = 0;

	generate_foreign(foreign_root, rounds, 0);
	TV_CHECK(tv_sync_session(foreign_root, &clean) == 0, "foreign: sync of the clean session failed");
	planted = generate_foreign(foreign_root, rounds, 1);
	TV_CHECK(tv_sync_session(foreign_root, &forged) == 0, "foreign: sync of the forged session failed");
	a0 = result_of(&clean, "guest-a");
	a1 = result_of(&forged, "guest-a");
	e1 = result_of(&forged, "guest-evil");
	TV_CHECK(a0 && a1 && e1, "foreign: domains missing");
	if (!a0 || !a1 || !e1)
		return;
	TV_CHECK(!strcmp(a0->via, "host") && a0->est.quality == TV_SYNC_ACCURATE &&
		 a0->nr_probes == 4 * (size_t)rounds && a0->causality_violations == 0,
		 "foreign: clean guest-a %s via %s, %s, %zu pairs, %zu violations: %s", a0->method,
		 a0->via, tv_sync_quality_name(a0->est.quality), a0->nr_probes,
		 a0->causality_violations, a0->est.message);
	TV_CHECK(!strcmp(a1->via, a0->via) && !strcmp(a1->method, a0->method) &&
		 a1->est.map.base_ref - a1->est.map.base_dom == a0->est.map.base_ref - a0->est.map.base_dom &&
		 a1->est.map.slope_q48 == a0->est.map.slope_q48 && a1->est.bound_ns == a0->est.bound_ns &&
		 a1->nr_probes == a0->nr_probes && a1->nr_pairs_checked == a0->nr_pairs_checked &&
		 a1->causality_violations == a0->causality_violations,
		 "foreign: guest-a moved by evil's forgeries: via %s, offset %lld ns (clean %lld), bound %lld (clean %lld), %zu pairs (clean %zu), %zu/%zu violations",
		 a1->via, (long long)(a1->est.map.base_ref - a1->est.map.base_dom),
		 (long long)(a0->est.map.base_ref - a0->est.map.base_dom), (long long)a1->est.bound_ns,
		 (long long)a0->est.bound_ns, a1->nr_probes, a0->nr_probes, a1->causality_violations,
		 a1->nr_pairs_checked);
	TV_CHECK(e1->foreign_probes == planted && a1->foreign_probes == 0 && a0->foreign_probes == 0,
		 "foreign: %zu forged records counted against guest-evil (%zu planted), %zu against guest-a",
		 e1->foreign_probes, planted, a1->foreign_probes);
	TV_CHECK(!strcmp(e1->via, "host") && e1->est.quality == TV_SYNC_ACCURATE &&
		 e1->causality_violations == 0, "foreign: guest-evil's own probes: via %s, %s",
		 e1->via, tv_sync_quality_name(e1->est.quality));
	for (uint64_t g = (uint64_t)a1->est.span_lo; g <= (uint64_t)a1->est.span_hi; g += 10000000) {
		long double err = fabsl((long double)tv_sync_domain_apply(a1, g) - (B + A * g));

		worst = err > worst ? err : worst;
	}
	TV_CHECK(a1->est.bound_ns >= 0 && worst <= a1->est.bound_ns,
		 "foreign: guest-a's true error %.0Lf ns outside its bound %lld ns", worst,
		 (long long)a1->est.bound_ns);
	check_foreign_saved(&forged, planted);
	printf("foreign markers: guest-a bound %lld ns, true error %.0Lf ns with and without %zu records forged by guest-evil (all counted, and saved in sync/transforms)\n",
	       (long long)a1->est.bound_ns, worst, planted);
	tv_sync_result_free(&clean);
	tv_sync_result_free(&forged);
}

static void quiet(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level == TV_LOG_ERROR)
		fprintf(stderr, "%s\n", msg);
}

int main(int argc, char **argv)
{
	char cmd[600];

	/* The committed multi-domain sample tests/samples/synced-multi
	 * (tests/unit/golden-outputs.sh): host, three guests and Xen. */
	if (argc == 3 && !strcmp(argv[1], "--write-golden")) {
		if (mkdir(argv[2], 0755)) {
			perror(argv[2]);
			return 2;
		}
		base = argv[2];
		golden_xen = 1;
		generate(40);
		return 0;
	}

	if (!mkdtemp(root) || !mkdtemp(xen_root) || !mkdtemp(tsc_root) || !mkdtemp(domu_root) ||
	    !mkdtemp(foreign_root)) {
		perror("mkdtemp");
		return 2;
	}
	tv_log_set_callback(quiet, NULL);
	base = root;
	generate(ROUNDS);
	check_sync();
	check_merge();
	check_perfetto();
	check_ctf();
	check_xen(200);
	check_tsc();
	check_domu(200);
	check_domu_moving(100);
	check_domu_line(100);
	check_foreign(200);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s %s %s", root, xen_root, tsc_root, domu_root,
		 foreign_root);
	if (!tv_test_failed && system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
	return tv_test_done("test_sync_session");
}
