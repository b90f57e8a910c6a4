// SPDX-License-Identifier: LGPL-2.1
/*
 * The exact TSC relation of a guest (guest-NAME/tsc and the host's
 * kvm_write_tsc_offset events), where the guest clock is its TSC.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "sync_probes.h"
#include "tsc.h"
#include "sync_session.h"

/*
 * DIR/guest-NAME/tsc (debugfs at the end of recording): "vcpu offset ratio
 * frac_bits" lines; ratio and frac_bits are "-" where the host has no TSC
 * scaling (SVM without TscRateMsr): the guest TSC then runs at the host's.
 * A vCPU whose offset never changed during the trace has no
 * kvm_write_tsc_offset: its offset is this file's, from host time 0.
 * Return: 1 when the file gave anything, 0 if not, -ENOMEM.
 */
static int tsc_read_file(const char *dir, struct tv_tsc_segments *s, struct tv_tsc_params *p)
{
	char path[4096], line[256];
	int found = 0, ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tsc", dir);
	f = fopen(path, "re");
	while (f && !ret && fgets(line, sizeof(line), f)) {
		char ratio[32], frac[32];
		unsigned long long off;
		unsigned int vcpu;

		if (sscanf(line, "%u %llu %31s %31s", &vcpu, &off, ratio, frac) != 4)
			continue;
		if (!found && strcmp(ratio, "-") && strcmp(frac, "-")) {
			uint64_t r = strtoull(ratio, NULL, 10);
			unsigned long fb = strtoul(frac, NULL, 10);

			if (!r || fb >= 64)
				continue;	/* not a scaling KVM could use */
			p->ratio = r;
			p->frac_bits = (unsigned int)fb;
		}
		found = 1;
		if (!tv_tsc_segments_has(s, vcpu))
			ret = tv_tsc_segments_add(s, vcpu, 0, off, off, 0);
	}
	if (f)
		fclose(f);
	return ret ?: found;
}

/* Exact TSC relation for @d when both sides trace with the TSC clock. */
int sync_tsc_method(struct scan *sc, int d, int ref, struct tv_sync_domain *out)
{
	const struct tv_domain_info *gi = tv_reader_domain(sc->rd, (size_t)d);
	const struct tv_domain_info *ri = tv_reader_domain(sc->rd, (size_t)ref);
	const char *gc = tv_meta_get(gi->meta, "clock"), *rc = tv_meta_get(ri->meta, "clock");
	struct tv_tsc_segments *s = &sc->tsc[d];
	int ret;

	if (!gc || !rc || strcmp(gc, "x86-tsc") || strcmp(rc, "x86-tsc"))
		return 0;
	/* No scaling unless the file says otherwise: guest = host + offset. */
	out->tsc.ratio = 1;
	out->tsc.frac_bits = 0;
	ret = tsc_read_file(gi->dir, s, &out->tsc);
	if (ret < 0)
		return ret;
	if (!ret && !s->n)
		return 0;
	ret = tv_tsc_segments_sort(s);
	if (ret)
		return ret;
	tv_tsc_segments_mark_back(s, &out->tsc);
	out->tsc.offset = s->seg[0].offset;
	out->tsc_segments = s->seg;	/* the result owns them now */
	out->nr_tsc_segments = s->n;
	s->seg = NULL;
	tv_tsc_segments_free(s);
	snprintf(out->method, sizeof(out->method), "tsc");
	snprintf(out->via, sizeof(out->via), "%s", ri->subdir);
	out->est.quality = TV_SYNC_EXACT;
	out->est.bound_ns = 0;
	out->est.map.slope_q48 = TV_SLOPE_ONE;
	out->est.span_lo = sc->dom[d].first;
	out->est.span_hi = sc->dom[d].last;
	out->hull_tsc_diff = -1;
	out->hull_bound = -1;
	return 1;
}
