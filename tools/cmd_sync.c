// SPDX-License-Identifier: GPL-2.0
/* tracevisor sync: estimate every domain's clock against the reference. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

static void sync_usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor sync [--dry-run] [--json] [--domain NAME]... DIR\n\n"
		"Estimates, for every domain of the session DIR, the transform of its\n"
		"clock to the reference domain's (the host), from the clock-sync probes\n"
		"recorded in the trace (doc/sync-probes.md) or the exact TSC relation, and\n"
		"stores them in DIR/sync/transforms; report and export then merge every\n"
		"domain in the reference clock.\n\n"
		"  -n, --dry-run  print the results without storing them\n"
		"  -j, --json     print the results as one JSON object (keys in tracevisor-sync(1))\n"
		"  --domain NAME  estimate with this domain only (repeatable; include the\n"
		"                 reference): printed, never stored (as --dry-run)\n"
		"  -h, --help     this help\n");
}

static void print_domain(const struct tv_sync_domain *d)
{
	const struct tv_sync_estimate *e = &d->est;
	char bound[32] = "-", viol[32] = "-";

	if (e->bound_ns >= 0)
		snprintf(bound, sizeof(bound), "%lld", (long long)e->bound_ns);
	if (d->nr_pairs_checked + d->nr_vcpu_checked)
		snprintf(viol, sizeof(viol), "%zu/%zu", d->causality_violations,
			 d->nr_pairs_checked + d->nr_vcpu_checked);
	printf("%-16s %-9s %-10s %16lld %12.6f %10s %7zu %-12s %s\n", tv_cli_text(d->domain), d->method,
	       d->via[0] ? tv_cli_text(d->via) : "-", (long long)(e->map.base_ref - e->map.base_dom),
	       ((double)e->map.slope_q48 / TV_SLOPE_ONE - 1) * 1e6, bound, d->nr_probes,
	       tv_sync_quality_name(e->quality), viol);
}

/* The Xen runstate check and the path not taken, where there are some. */
static void print_checks(const struct tv_sync_domain *d, int on_line)
{
	if (d->xen_line)
		printf("%s: moved to Xen's common time line (pCPU 0's system time) from the system time of the pCPU its vCPU ran on; its clock is %lld ns behind that\n",
		       tv_cli_text(d->domain), (long long)d->pvclock_ns);
	if (d->alt_via[0] && tv_sync_domain_usable(d))
		printf("%s: via %s, bound %lld ns; via %s it would be %lld ns\n", tv_cli_text(d->domain), tv_cli_text(d->via),
		       (long long)d->est.bound_ns, d->alt_via, (long long)d->alt_bound_ns);
	if (d->held_rounds)
		printf("%s: %zu probe rounds with pairs left out: the clock held still between two markers (pvclock at the highest value read so far)\n",
		       tv_cli_text(d->domain), d->held_rounds);
	if (d->misplaced_rounds)
		printf("%s: %zu hypercall rounds left out: moved to Xen's line, their markers missed Xen's record of the hypercall (put on another pCPU than the one that ran them)\n",
		       tv_cli_text(d->domain), d->misplaced_rounds);
	if (d->ambiguous_rounds)
		printf("%s: %zu probe rounds left out: moved to Xen's line, a marker's time fits two runs of its vCPU on pCPUs whose times differ (a move between them next to it)\n",
		       tv_cli_text(d->domain), d->ambiguous_rounds);
	if (d->foreign_probes)
		printf("%s: %zu sync probe records in its trace ignored: they were not its own to write (another guest's index, or a prober's marker); they move no other domain\n",
		       tv_cli_text(d->domain), d->foreign_probes);
	if (d->message_violations)
		printf("%s: %zu of the causality violations are message probes (ping/pong)\n",
		       tv_cli_text(d->domain), d->message_violations);
	if (d->pcpu_skew_ns > 0 && on_line)
		printf("%s: physical CPUs' system times differ by up to %lld ns (Xen's time-scale records): its records are on pCPU 0's time line by their TSC, and so are the domains moved to it\n",
		       tv_cli_text(d->domain), (long long)d->pcpu_skew_ns);
	else if (d->pcpu_skew_ns > 0 && d->pcpu_skew_ns > d->est.bound_ns)
		printf("%s: physical CPUs' system times differ by up to %lld ns (Xen's time-scale records): events of a vCPU that moved between CPUs may be off by that much beyond their bound\n",
		       tv_cli_text(d->domain), (long long)d->pcpu_skew_ns);
	if (d->nr_runstate_checked)
		printf("%s: %zu of %zu guest events outside their vCPU's running intervals in Xen's runstate records (beyond the bound plus Xen's)\n",
		       tv_cli_text(d->domain), d->runstate_violations, d->nr_runstate_checked);
}

/* A clock linear only in pieces: each piece's own line and bound. */
static void print_piece(const struct tv_sync_domain *d, size_t k)
{
	const struct tv_sync_piece *pc = &d->pieces[k];
	char from[32] = "start";

	if (k)
		snprintf(from, sizeof(from), "%lld", (long long)pc->from_dom);
	printf("%s: piece %zu from %s: offset %lld ns, drift %.6f ppm, bound %lld ns, %s\n",
	       tv_cli_text(d->domain), k, from, (long long)(pc->map.base_ref - pc->map.base_dom),
	       ((double)pc->map.slope_q48 / TV_SLOPE_ONE - 1) * 1e6, (long long)pc->bound_ns,
	       tv_sync_quality_name(pc->quality));
}

static void print_result(const struct tv_sync_result *res)
{
	int missing = 0, on_line = 0;

	printf("%-16s %-9s %-10s %16s %12s %10s %7s %-12s %s\n", "domain", "method", "via",
	       "offset(ns)", "drift(ppm)", "bound(ns)", "probes", "quality", "causality");
	for (size_t i = 0; i < res->nr; i++)
		print_domain(&res->domains[i]);
	for (size_t i = 0; i < res->nr; i++)
		on_line |= res->domains[i].xen_line;
	for (size_t i = 0; i < res->nr; i++) {
		const struct tv_sync_domain *d = &res->domains[i];

		if (d->est.message[0])
			printf("%s: %s\n", tv_cli_text(d->domain), tv_cli_text(d->est.message));
		for (size_t k = 0; k < d->nr_pieces; k++)
			print_piece(d, k);
		print_checks(d, on_line);
		missing += !tv_sync_domain_usable(d);
	}
	if (res->nr == 1)
		printf("Only the reference domain (%s) was recorded: nothing to synchronise.\n"
		       "Record guests with `tracevisor record --guest NAME ...` to get sync probes.\n",
		       tv_cli_text(res->reference));
	else if (missing)
		printf("%d domain(s) not synchronised: their events stay in their own clock.\n"
		       "Sync probes come from `tracevisor record --guest NAME ...` (guest agent).\n",
		       missing);
	printf("offset: reference minus domain clock at the domain's first probe; bound: guaranteed\n"
	       "|error| over the domain's trace if its clock is linear to the reference\n"
	       "(in pieces where it jumped: each piece's own line and bound);\n"
	       "causality: violations/checks after the transform: probe receives before their\n"
	       "sends, and guest events while their vCPU was out of guest mode (kvm_exit..kvm_entry).\n");
}

static void json_i64_or_null(const char *key, int64_t v)
{
	if (v >= 0)
		printf(",\"%s\":%lld", key, (long long)v);
	else
		printf(",\"%s\":null", key);
}

/* One object: reference, and a row per domain (keys in tracevisor-sync(1)). */
static void print_json(const struct tv_sync_result *res)
{
	printf("{\"reference\":");
	tv_cli_json_str(res->reference);
	printf(",\"domains\":[");
	for (size_t i = 0; i < res->nr; i++) {
		const struct tv_sync_domain *d = &res->domains[i];
		const struct tv_sync_estimate *e = &d->est;

		printf("%s{\"domain\":", i ? "," : "");
		tv_cli_json_str(d->domain);
		printf(",\"method\":");
		tv_cli_json_str(d->method);
		printf(",\"via\":");
		tv_cli_json_str(d->via);
		printf(",\"quality\":");
		tv_cli_json_str(tv_sync_quality_name(e->quality));
		printf(",\"offset_ns\":%lld,\"drift_ppm\":%.6f",
		       (long long)(e->map.base_ref - e->map.base_dom),
		       ((double)e->map.slope_q48 / TV_SLOPE_ONE - 1) * 1e6);
		json_i64_or_null("bound_ns", e->bound_ns);
		printf(",\"probe_pairs\":%zu,\"pieces\":%zu,\"pairs_checked\":%zu"
		       ",\"causality_violations\":%zu,\"vcpu_events_checked\":%zu"
		       ",\"vcpu_events_outside\":%zu,\"runstate_events_checked\":%zu"
		       ",\"runstate_events_outside\":%zu,\"message_violations\":%zu"
		       ",\"held_rounds\":%zu,\"misplaced_rounds\":%zu,\"ambiguous_rounds\":%zu"
		       ",\"foreign_probes\":%zu,\"alt_via\":",
		       d->nr_probes, d->nr_pieces, d->nr_pairs_checked, d->causality_violations,
		       d->nr_vcpu_checked, d->vcpu_violations, d->nr_runstate_checked,
		       d->runstate_violations, d->message_violations, d->held_rounds,
		       d->misplaced_rounds, d->ambiguous_rounds, d->foreign_probes);
		if (d->alt_via[0])
			tv_cli_json_str(d->alt_via);
		else
			printf("null");
		json_i64_or_null("alt_bound_ns", d->alt_via[0] ? d->alt_bound_ns : -1);
		json_i64_or_null("pcpu_skew_ns", d->pcpu_skew_ns);
		printf(",\"xen_line\":%s", d->xen_line ? "true" : "false");
		if (d->xen_line)	/* may be negative: not json_i64_or_null() */
			printf(",\"xen_line_pvclock_ns\":%lld", (long long)d->pvclock_ns);
		else
			printf(",\"xen_line_pvclock_ns\":null");
		printf(",\"message\":");
		tv_cli_json_str(e->message);
		printf("}");
	}
	printf("]}\n");
}

int cmd_sync(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "domain", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tv_sync_result res;
	int dry = 0, json = 0, c, ret;

	while ((c = getopt_long(argc, argv, "njh", longopts, NULL)) != -1) {
		if (c == 'n') {
			dry = 1;
		} else if (c == 'j') {
			json = 1;
		} else if (c == 'D') {
			/* the transforms stored are all the domains': a subset's is only shown */
			if (tv_reader_select_domain(optarg))
				return tv_cli_status(-EINVAL);
			dry = 1;
		} else if (c == 'h') {
			sync_usage(stdout);
			return 0;
		} else {
			sync_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		sync_usage(stderr);
		return 2;
	}
	ret = tv_sync_session(argv[optind], &res);
	if (ret)
		return tv_cli_status(ret);
	if (json)
		print_json(&res);
	else
		print_result(&res);
	if (!dry) {
		ret = tv_sync_write(argv[optind], &res);
		/* stdout is the JSON document alone */
		if (!ret)
			fprintf(json ? stderr : stdout, "Stored in %s/sync/transforms\n", argv[optind]);
	}
	tv_sync_result_free(&res);
	return tv_cli_status(ret);
}
