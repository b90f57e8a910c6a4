// SPDX-License-Identifier: LGPL-2.1
/*
 * tracevisor serve's metrics: the kernel's exit rows folded into series
 * and their exposition, in the Prometheus text format 0.0.4 or in
 * OpenMetrics 1.0 (the same samples; the counter's family is named
 * without _total, the latency family has a unit, and # EOF ends it).
 * Label values come from VMM command lines and thread names, which a
 * guest's owner may choose: escaped as both formats require, and cut.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tv_internal.h"
#include "../kvm/bpf/top_exits.h"
#include "../kvm/top_bpf.h"
#include "../kvm/vcpu_scan.h"
#include "serve.h"

struct serve_series *serve_series_new(struct serve_metrics *m, unsigned int vm, int vcpu,
				      const char *reason)
{
	struct serve_series *s;

	if (tv_array_grow(&m->series, &m->cap_series, m->nr_series, sizeof(*m->series), 256))
		return NULL;
	s = &m->series[m->nr_series++];
	memset(s, 0, sizeof(*s));
	s->vm = vm;
	s->vcpu = vcpu;
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
	return s;
}

static int series_cmp(const void *a, const void *b)
{
	const struct serve_series *x = a, *y = b;
	int c;

	if (x->vm != y->vm)
		return x->vm < y->vm ? -1 : 1;
	c = strcmp(x->reason, y->reason);
	if (c)
		return c;
	return (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
}

void serve_series_sort(struct serve_metrics *m)
{
	size_t out = 0;

	if (!m->nr_series)
		return;
	qsort(m->series, m->nr_series, sizeof(*m->series), series_cmp);
	for (size_t i = 1; i < m->nr_series; i++) {
		struct serve_series *d = &m->series[out], *s = &m->series[i];

		if (series_cmp(d, s)) {
			m->series[++out] = *s;
			continue;
		}
		d->count += s->count;
		d->timed += s->timed;
		d->sum_ns += s->sum_ns;
		for (int b = 0; b < SERVE_NBOUNDS; b++)
			d->le[b] += s->le[b];
	}
	m->nr_series = out + 1;
}

void serve_series_add_hist(struct serve_series *s, const unsigned long long *hist)
{
	uint64_t lo, hi;

	for (unsigned int i = 0; i < TOP_NBUCKETS; i++) {
		if (!hist[i])
			continue;
		s->timed += hist[i];
		tv_top_bucket_range(i, &lo, &hi);
		/* bounds are powers of two >= 256: a bucket is below one whole */
		for (int b = SERVE_NBOUNDS - 1; b >= 0 && hi <= SERVE_BOUND_NS(b); b--)
			s->le[b] += hist[i];
	}
}

void serve_series_add_log2(struct serve_series *s, const uint64_t *hist, unsigned int n)
{
	/* the last bucket is "above": in none of the bounds */
	for (unsigned int b = 0; b + 1 < n; b++)
		for (int k = SERVE_NBOUNDS - 1; k >= 0 && (1ULL << b) <= SERVE_BOUND_NS(k); k--)
			s->le[k] += hist[b];
}

/* @v as a label value: \\ and \" escaped (both formats' rule); control
 * and non-ASCII bytes as '_', since a label value must be UTF-8 and a
 * thread's name need not be. */
static int label_value(struct tv_strbuf *sb, const char *v)
{
	int ret = 0;

	for (const char *p = v; *p && !ret; p++) {
		if (*p == '\\')
			ret = tv_strbuf_append(sb, "\\\\");
		else if (*p == '"')
			ret = tv_strbuf_append(sb, "\\\"");
		else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			ret = tv_strbuf_append(sb, "_");
		else
			ret = tv_strbuf_append(sb, "%c", *p);
	}
	return ret;
}

/* vm="...",uuid="...",reason="..."[,vcpu="N"] */
static int series_labels(struct tv_strbuf *sb, const struct serve_metrics *m,
			 const struct serve_series *s)
{
	const struct serve_vm *vm = &m->vms[s->vm];
	int ret = tv_strbuf_append(sb, "vm=\"");

	ret = ret ?: label_value(sb, vm->name);
	if (vm->uuid[0]) {
		ret = ret ?: tv_strbuf_append(sb, "\",uuid=\"");
		ret = ret ?: label_value(sb, vm->uuid);
	}
	ret = ret ?: tv_strbuf_append(sb, "\",reason=\"");
	ret = ret ?: label_value(sb, s->reason);
	ret = ret ?: tv_strbuf_append(sb, "\"");
	if (s->vcpu >= 0)
		ret = ret ?: tv_strbuf_append(sb, ",vcpu=\"%d\"", s->vcpu);
	return ret;
}

/* # HELP and # TYPE (and # UNIT) of family @name. */
static int family(struct tv_strbuf *sb, bool om, const char *name, const char *type,
		  const char *unit, const char *help)
{
	int ret = tv_strbuf_append(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);

	if (!ret && om && unit)
		ret = tv_strbuf_append(sb, "# UNIT %s %s\n", name, unit);
	return ret;
}

/* Each series' labels, rendered once: @labels[i] for series i (freed by the caller). */
static int render_labels(const struct serve_metrics *m, struct tv_strbuf *labels)
{
	int ret = 0;

	for (size_t i = 0; i < m->nr_series && !ret; i++)
		ret = series_labels(&labels[i], m, &m->series[i]);
	return ret;
}

static int render_exits(const struct serve_metrics *m, bool om, const struct tv_strbuf *labels,
			struct tv_strbuf *sb)
{
	int ret = family(sb, om, om ? "tracevisor_vm_exits" : "tracevisor_vm_exits_total", "counter", NULL,
			 m->xen ? "VM exits counted at Xen's VMEXIT trace records, per domain and exit reason."
				: "VM exits counted at kvm_exit, per VM and exit reason.");

	for (size_t i = 0; i < m->nr_series && !ret; i++)
		ret = tv_strbuf_append(sb, "tracevisor_vm_exits_total{%s} %llu\n", labels[i].data,
				       (unsigned long long)m->series[i].count);
	return ret;
}

static int render_latency(const struct serve_metrics *m, bool om, const struct tv_strbuf *labels,
			  struct tv_strbuf *sb)
{
	static const char name[] = "tracevisor_vm_exit_latency_seconds";
	char le[SERVE_NBOUNDS][32];
	int ret = family(sb, om, name, "histogram", "seconds",
			 m->xen ? "Time from a VM exit to the vCPU's next entry, or to its becoming runnable (Xen's VMEXIT to VMENTRY)."
				: "Time from a VM exit to the vCPU's next entry (kvm_exit to kvm_entry).");

	for (int b = 0; b < SERVE_NBOUNDS; b++)
		snprintf(le[b], sizeof(le[b]), "%.10g", (double)SERVE_BOUND_NS(b) / 1e9);
	for (size_t i = 0; i < m->nr_series && !ret; i++) {
		const struct serve_series *s = &m->series[i];
		const char *l = labels[i].data;

		for (int b = 0; b < SERVE_NBOUNDS && !ret; b++)
			ret = tv_strbuf_append(sb, "%s_bucket{%s,le=\"%s\"} %llu\n", name, l, le[b],
					       (unsigned long long)s->le[b]);
		ret = ret ?: tv_strbuf_append(sb, "%s_bucket{%s,le=\"+Inf\"} %llu\n%s_sum{%s} %.9f\n%s_count{%s} %llu\n",
					      name, l, (unsigned long long)s->timed, name, l,
					      (double)s->sum_ns / 1e9, name, l, (unsigned long long)s->timed);
	}
	return ret;
}

/*
 * A counter family of one sample per @labels[i] = @values[i] (or one
 * unlabelled: @n 1, @label NULL).  The family is NAME_total in the
 * Prometheus text format, NAME in OpenMetrics; the samples NAME_total.
 */
static int counter(struct tv_strbuf *sb, bool om, const char *name, const char *help,
		   const char *label, const char *const *labels, const uint64_t *values, size_t n)
{
	char fam[128];
	int ret;

	snprintf(fam, sizeof(fam), om ? "%s" : "%s_total", name);
	ret = family(sb, om, fam, "counter", NULL, help);
	for (size_t i = 0; i < n && !ret; i++) {
		if (label)
			ret = tv_strbuf_append(sb, "%s_total{%s=\"%s\"} %llu\n", name, label, labels[i],
					       (unsigned long long)values[i]);
		else
			ret = tv_strbuf_append(sb, "%s_total %llu\n", name, (unsigned long long)values[i]);
	}
	return ret;
}

static int gauge(struct tv_strbuf *sb, bool om, const char *name, const char *help, double v)
{
	return family(sb, om, name, "gauge", NULL, help) ?: tv_strbuf_append(sb, "%s %.9g\n", name, v);
}

static int render_health(const struct serve_metrics *m, bool om, struct tv_strbuf *sb)
{
	static const char *const causes[] = { "map_full", "no_slot", "unreadable" };
	static const char *const snap_causes[] = { "holdoff", "max_snapshots" };
	const struct serve_health *h = &m->health;
	size_t vms = 0;
	int ret;

	for (size_t i = 0; i < m->nr_vms; i++)
		vms += m->vms[i].tgid != 0 && !m->vms[i].folded;
	ret = counter(sb, om, "tracevisor_events_lost", "VM exits the kernel programs could not aggregate, by cause.",
		      "cause", causes, h->lost, 3);
	ret = ret ?: gauge(sb, om, "tracevisor_bpf_programs_attached", "BPF programs attached by this exporter.",
			   h->programs);
	ret = ret ?: gauge(sb, om, "tracevisor_scrape_duration_seconds",
			   "Time the previous scrape took to read the kernel's rows and render.", h->last_scrape_s);
	ret = ret ?: counter(sb, om, "tracevisor_scrapes", "Scrapes answered.", NULL, NULL, &h->scrapes, 1);
	ret = ret ?: counter(sb, om, "tracevisor_http_requests_refused",
			     "HTTP requests refused: without valid credentials (401) or over the rate bound (429).",
			     NULL, NULL, &h->refused, 1);
	ret = ret ?: counter(sb, om, "tracevisor_alert_snapshots", "Snapshots taken for POST /snapshot (--flight-recorder).",
			     NULL, NULL, &h->snapshots, 1);
	ret = ret ?: counter(sb, om, "tracevisor_alert_snapshots_refused",
			     "POST /snapshot refused with 429 by --trigger-holdoff or --max-snapshots, by cause.",
			     "cause", snap_causes, h->snapshots_refused, 2);
	ret = ret ?: gauge(sb, om, "tracevisor_vms_tracked", "VMs (VMM processes) with exit series of their own.",
			   (double)vms);
	ret = ret ?: gauge(sb, om, "tracevisor_vms_max", "The --max-vms bound.", h->max_vms);
	ret = ret ?: gauge(sb, om, "tracevisor_vms_over_limit",
			   "VMs beyond --max-vms whose exits are counted under vm=\"_other\".", h->vms_over_limit);
	ret = ret ?: gauge(sb, om, "tracevisor_unknown_reason_rows",
			   "Kernel rows of exit codes no reason table names, counted under reason=\"unknown\".",
			   (double)h->unknown_reasons);
	return ret;
}

/* One family of one sample per guest: the uint64_t at @off of each. */
static int guest_family(struct tv_strbuf *sb, bool om, const struct serve_metrics *m, const char *name,
			const char *type, const char *help, size_t off)
{
	bool counter = !strcmp(type, "counter");
	char fam[128];
	int ret;

	snprintf(fam, sizeof(fam), counter && !om ? "%s_total" : "%s", name);
	ret = family(sb, om, fam, type, NULL, help);
	for (size_t i = 0; i < m->nr_guests && !ret; i++) {
		const struct serve_guest *g = &m->guests[i];
		uint64_t v;

		memcpy(&v, (const char *)g + off, sizeof(v));
		ret = tv_strbuf_append(sb, "%s%s{guest=\"", name, counter ? "_total" : "");
		ret = ret ?: label_value(sb, g->name);
		ret = ret ?: tv_strbuf_append(sb, "\"} %llu\n", (unsigned long long)v);
	}
	return ret;
}

/* serve --guest: each guest's stream (labels: its SPEC's name, [A-Za-z0-9_.-]). */
static int render_guests(const struct serve_metrics *m, bool om, struct tv_strbuf *sb)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} fams[] = {
		{ "tracevisor_guest_stream_up", "gauge",
		  "1 while the guest's agent traces and its stream has not ended (serve --guest).",
		  offsetof(struct serve_guest, up) },
		{ "tracevisor_guest_stream_bytes", "counter",
		  "Bytes received from the guest's agent (every frame: trace data, snapshots, probe answers).",
		  offsetof(struct serve_guest, bytes) },
		{ "tracevisor_guest_events", "counter",
		  "Events the guest's agent reported recording (with its END; 0 before).",
		  offsetof(struct serve_guest, events) },
		{ "tracevisor_guest_events_lost", "counter",
		  "Events the guest's agent reported lost (LOSS or END frames; 0 before).",
		  offsetof(struct serve_guest, lost) },
		{ "tracevisor_guest_sync_probes", "counter",
		  "Clock-sync probes sent to the guest (pings and hypercall requests).",
		  offsetof(struct serve_guest, probes_sent) },
		{ "tracevisor_guest_sync_probes_answered", "counter",
		  "Clock-sync probes the guest answered (its PONGs and HCALL_DONEs that matched a request).",
		  offsetof(struct serve_guest, probes_answered) },
	};
	static const char *const causes[] = { "unsolicited_pong", "unsolicited_hcall_done", "stream_ended" };
	int ret = 0;

	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]) && !ret; f++)
		ret = guest_family(sb, om, m, fams[f].name, fams[f].type, fams[f].help, fams[f].off);
	ret = ret ?: family(sb, om, om ? "tracevisor_guest_frames_refused" : "tracevisor_guest_frames_refused_total",
			    "counter", NULL,
			    "Guest frames refused, by cause: answers to no request, and the frame or limit that ended the stream.");
	for (size_t i = 0; i < m->nr_guests && !ret; i++)
		for (int c = 0; c < 3 && !ret; c++) {
			ret = tv_strbuf_append(sb, "tracevisor_guest_frames_refused_total{guest=\"");
			ret = ret ?: label_value(sb, m->guests[i].name);
			ret = ret ?: tv_strbuf_append(sb, "\",cause=\"%s\"} %llu\n", causes[c],
						      (unsigned long long)m->guests[i].refused[c]);
		}
	return ret;
}

int serve_metrics_render(const struct serve_metrics *m, bool openmetrics, struct tv_strbuf *out)
{
	struct tv_strbuf *labels = calloc(m->nr_series ? m->nr_series : 1, sizeof(*labels));
	int ret = labels ? render_labels(m, labels) : -ENOMEM;

	ret = ret ?: render_exits(m, openmetrics, labels, out);
	ret = ret ?: render_latency(m, openmetrics, labels, out);
	ret = ret ?: render_health(m, openmetrics, out);
	if (m->nr_guests)
		ret = ret ?: render_guests(m, openmetrics, out);
	if (!ret && openmetrics)
		ret = tv_strbuf_append(out, "# EOF\n");
	for (size_t i = 0; labels && i < m->nr_series; i++)
		tv_strbuf_free(&labels[i]);
	free(labels);
	return ret;
}

void serve_metrics_free(struct serve_metrics *m)
{
	free(m->vms);
	free(m->series);
	free(m->guests);
	m->vms = NULL;
	m->series = NULL;
	m->guests = NULL;
	m->nr_guests = 0;
	m->nr_vms = m->cap_vms = m->nr_series = m->cap_series = 0;
}

int serve_uuid_canon(const char *in, char *out, size_t size)
{
	bool nil = true;
	size_t i;

	if (size)
		out[0] = '\0';
	if (size < SERVE_UUID_LEN + 1)
		return -EINVAL;
	for (i = 0; i < SERVE_UUID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? in[i] != '-' : !isxdigit((unsigned char)in[i])) {
			out[0] = '\0';
			return -EINVAL;
		}
		out[i] = (char)tolower((unsigned char)in[i]);
		nil &= dash || in[i] == '0';
	}
	out[i] = '\0';
	/* the nil UUID names no domain: dom0's, or one created without any */
	if (in[i] != '\0' || nil) {
		out[0] = '\0';
		return -EINVAL;
	}
	return 0;
}

/* The value of option @opt (QEMU's "-name"/"-uuid") in NUL-separated @cmdline of @n bytes, or NULL. */
static const char *cmdline_option(const char *cmdline, int n, const char *opt)
{
	for (int i = 0; i < n; i += (int)strlen(cmdline + i) + 1)
		if (!strcmp(cmdline + i, opt) && i + (int)strlen(opt) + 1 < n)
			return cmdline + i + strlen(opt) + 1;
	return NULL;
}

void serve_vm_identify(const char *proc, pid_t tgid, const char *comm, char *name, size_t size,
		       char *uuid, size_t usize)
{
	char path[PATH_MAX], cmdline[8192], kname[SERVE_NAME_MAX] = "", gone[24];
	const char *val;
	FILE *f;
	int n = 0;

	uuid[0] = '\0';
	snprintf(path, sizeof(path), "%s/%d/cmdline", proc, (int)tgid);
	f = fopen(path, "re");
	if (f) {
		n = (int)fread(cmdline, 1, sizeof(cmdline) - 1, f);
		fclose(f);
	}
	cmdline[n > 0 ? n : 0] = '\0';
	/* the same form as Xen's: lowercase 8-4-4-4-12, none for nil or malformed */
	val = n > 0 ? cmdline_option(cmdline, n, "-uuid") : NULL;
	if (val)
		serve_uuid_canon(val, uuid, usize);
	val = n > 0 ? cmdline_option(cmdline, n, "-name") : NULL;
	if (val) {
		/* libvirt: -name guest=DOMAIN,debug-threads=on */
		if (!strncmp(val, "guest=", 6))
			val += 6;
		snprintf(name, size, "%.*s", (int)strcspn(val, ","), val);
		if (name[0])
			return;
	}
	/* the VMM's own name now, else (gone) the kernel's for its first exiting thread */
	tv_kvm_vm_name(proc, tgid, kname, sizeof(kname));
	snprintf(gone, sizeof(gone), "pid%d", (int)tgid);
	if (!strcmp(kname, gone) && comm && comm[0])
		snprintf(kname, sizeof(kname), "%.16s", comm);
	snprintf(name, size, "%.40s[%d]", kname, (int)tgid);
}
