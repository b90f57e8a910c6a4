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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "guest_session.h"
#include "session_gen.h"

#define ROUNDS 200
#define T0 10000000000ULL
#define STEP 20000000ULL
#define LATE 2000000000ULL	/* the forgeries: 2 s off */

static char root[] = "/tmp/tv-probe-seq.XXXXXX";

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

	rng = 0x9e3779b97f4a7c15ULL;	/* the same delays with and without forgeries */
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t = T0 + STEP * (uint64_t)i;

		for (int k = 0; k < 2; k++, t += 100000) {
			uint64_t seq = (k ? base_evil : base_a) + (uint64_t)i;
			struct probe_round r = add_probe_round(&host, k ? &evil : &a,
							       k ? evil_clock : a_clock, t, seq,
							       (uint16_t)k, 300 + k);

			if (!forge || !k)
				continue;
			add_hypercall_from(&host, r.hc + LATE, (uint64_t)i, 0, 301);
			add_hypercall_from(&host, r.hc + LATE + 1000, base_evil + (uint64_t)i, 0, 301);
		}
	}
	write_foreign_session(root, &host, &a, &evil, "host,guest-a,guest-evil",
			      "# tid vm_pid vcpu vm_name\n");
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
