// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor serve's metrics (host/serve_metrics.c), without a kernel:
 *  - the log-linear histogram folded into the Prometheus buckets is exact:
 *    every value counted in the first bound above it, +Inf = count;
 *  - series of equal (vm, reason, vcpu) merge, others stay apart, sorted;
 *  - the exposition: the metric names, one HELP/TYPE per family,
 *    labels escaped (a VM name with a quote, a backslash, a newline and a
 *    non-ASCII byte), vcpu only on per-vCPU series, OpenMetrics' family
 *    names and # EOF;
 *  - 100 VMs x the test VMM's reasons render under 1 MB;
 *  - VM names: libvirt's guest=NAME and -uuid from a command line,
 *    comm[pid] otherwise, the kernel's comm for a VMM gone;
 *  - serve --xen's uuid label (serve_uuid_canon(): xenstore's, checked):
 *    8-4-4-4-12 hex lowercased, nil (dom0's), short, long, misplaced or
 *    non-hex refused; Xen rows render uuid="..." only where known;
 *  - POST /snapshot's Alertmanager payload (host/serve_alert.c): the first
 *    firing alertname and the distinct vm labels, sanitised and bounded,
 *    resolved alerts ignored, a trailing newline accepted; malformed
 *    payloads refused with the reason (cut, trailing data, nested too
 *    deep, version, alerts, alertname).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/top_exits.h"
#include "top_bpf.h"
#include "serve.h"
#include "../../xen/xen_flight.h"
#include "tv_test.h"

static unsigned long long hist[TOP_NBUCKETS];

static void test_buckets(void)
{
	static const uint64_t values[] = { 1, 255, 256, 257, 1023, 1024, 1025, 5000, 70000,
					   1000000, 4294967296ULL, 4294967297ULL, 1ULL << 40 };
	struct serve_series s = { 0 };
	size_t n = sizeof(values) / sizeof(values[0]);

	memset(hist, 0, sizeof(hist));
	for (size_t i = 0; i < n; i++)
		hist[top_bucket(values[i])]++;
	serve_series_add_hist(&s, hist);
	TV_CHECK(s.timed == n, "timed %llu, want %zu", (unsigned long long)s.timed, n);
	for (int b = 0; b < SERVE_NBOUNDS; b++) {
		uint64_t want = 0;

		for (size_t i = 0; i < n; i++)
			want += values[i] < SERVE_BOUND_NS(b);	/* a value of exactly a bound is one up */
		TV_CHECK(s.le[b] == want, "le %llu ns: %llu, want %llu", (unsigned long long)SERVE_BOUND_NS(b),
			 (unsigned long long)s.le[b], (unsigned long long)want);
	}
	/* by hand: <= 256 ns holds 1 and 255 (256 is the first value of the next bucket) */
	TV_CHECK(s.le[0] == 2 && s.le[1] == 5, "le[0] %llu le[1] %llu", (unsigned long long)s.le[0],
		 (unsigned long long)s.le[1]);
}

/* serve --xen's buckets (xen/xen_flight.h): a bound's own value is in it, as le says */
static void test_buckets_log2(void)
{
	static const uint64_t values[] = { 1, 255, 256, 257, 1023, 1024, 1025, 5000, 70000,
					   1000000, 4294967296ULL, 4294967297ULL, 1ULL << 40 };
	uint64_t h[TV_XEN_EXIT_NBUCKETS] = { 0 };
	struct serve_series s = { 0 };
	size_t n = sizeof(values) / sizeof(values[0]);

	for (size_t i = 0; i < n; i++)
		h[tv_xen_exit_bucket(values[i])]++;
	serve_series_add_log2(&s, h, TV_XEN_EXIT_NBUCKETS);
	for (int b = 0; b < SERVE_NBOUNDS; b++) {
		uint64_t want = 0;

		for (size_t i = 0; i < n; i++)
			want += values[i] <= SERVE_BOUND_NS(b);
		TV_CHECK(s.le[b] == want, "log2: le %llu ns: %llu, want %llu",
			 (unsigned long long)SERVE_BOUND_NS(b), (unsigned long long)s.le[b],
			 (unsigned long long)want);
	}
	TV_CHECK(s.le[0] == 3 && s.le[SERVE_NBOUNDS - 1] == 11, "log2: le[0] %llu, le[last] %llu",
		 (unsigned long long)s.le[0], (unsigned long long)s.le[SERVE_NBOUNDS - 1]);
}

static void test_merge_render(void)
{
	struct serve_metrics m = { 0 };
	struct serve_vm vms[2] = { { .tgid = 10 }, { .tgid = 11 } };
	struct tv_strbuf out = { 0 };
	struct serve_series *s;

	snprintf(vms[0].name, sizeof(vms[0].name), "we\"ird\\na\nme\xc3");
	snprintf(vms[0].uuid, sizeof(vms[0].uuid), "c7a5fdbd-cdaf-9455-926a-d65c16db1809");
	snprintf(vms[1].name, sizeof(vms[1].name), "qemu[11]");
	m.vms = vms;
	m.nr_vms = 2;
	s = serve_series_new(&m, 1, 3, "npf");
	s->count = 5;
	s = serve_series_new(&m, 0, -1, "io");
	s->count = 7;
	s->timed = 7;
	s->le[SERVE_NBOUNDS - 1] = 7;
	s->sum_ns = 1500000000;
	s = serve_series_new(&m, 1, 3, "npf");
	s->count = 2;
	s = serve_series_new(&m, 1, 2, "npf");
	s->count = 1;
	serve_series_sort(&m);
	TV_CHECK(m.nr_series == 3, "%zu series, want 3", m.nr_series);
	TV_CHECK(m.series[0].vm == 0 && m.series[1].vcpu == 2 && m.series[2].vcpu == 3 && m.series[2].count == 7,
		 "order or merge wrong");
	TV_CHECK(!serve_metrics_render(&m, false, &out), "render");
	TV_CHECK(strstr(out.data, "# TYPE tracevisor_vm_exits_total counter\n") != NULL, "%s", out.data);
	TV_CHECK(strstr(out.data, "# TYPE tracevisor_vm_exit_latency_seconds histogram\n") != NULL, "no histogram");
	TV_CHECK(strstr(out.data, "tracevisor_vm_exits_total{vm=\"we\\\"ird\\\\na_me_\",uuid=\"c7a5fdbd-cdaf-9455-926a-d65c16db1809\",reason=\"io\"} 7\n") != NULL,
		 "escaped labels: %s", out.data);
	TV_CHECK(strstr(out.data, "tracevisor_vm_exits_total{vm=\"qemu[11]\",reason=\"npf\",vcpu=\"3\"} 7\n") != NULL,
		 "per-vCPU series");
	TV_CHECK(strstr(out.data, "tracevisor_vm_exit_latency_seconds_bucket{vm=\"qemu[11]\",reason=\"npf\",vcpu=\"2\",le=\"+Inf\"} 0\n") != NULL,
		 "+Inf bucket");
	TV_CHECK(strstr(out.data, "_sum{vm=\"we\\\"ird\\\\na_me_\",uuid=\"c7a5fdbd-cdaf-9455-926a-d65c16db1809\",reason=\"io\"} 1.500000000\n") != NULL,
		 "sum in seconds");
	TV_CHECK(strstr(out.data, ",le=\"2.56e-07\"}") && strstr(out.data, ",le=\"4.294967296\"} 7\n"), "bounds");
	TV_CHECK(!strstr(out.data, "# EOF"), "EOF in the text format");
	tv_strbuf_free(&out);
	TV_CHECK(!serve_metrics_render(&m, true, &out), "render OpenMetrics");
	TV_CHECK(strstr(out.data, "# TYPE tracevisor_vm_exits counter\n") != NULL, "OpenMetrics counter family");
	TV_CHECK(strstr(out.data, "# UNIT tracevisor_vm_exit_latency_seconds seconds\n") != NULL, "unit");
	TV_CHECK(out.len > 6 && !strcmp(out.data + out.len - 6, "# EOF\n"), "no # EOF at the end");
	tv_strbuf_free(&out);
	free(m.series);
}

/* 100 VMs x the reasons the test VMM makes in the lab's L1 (io, cpuid,
 * hlt; npf and interrupt for its memory and the host's timer), counters
 * of 9 digits. */
static void test_size(void)
{
	static const char *const reasons[] = { "io", "hlt", "cpuid", "npf", "interrupt" };
	struct serve_metrics m = { 0 };
	struct tv_strbuf out = { 0 };
	size_t nr = sizeof(reasons) / sizeof(reasons[0]);

	m.vms = calloc(100, sizeof(*m.vms));
	m.nr_vms = 100;
	for (unsigned int v = 0; v < 100; v++) {
		snprintf(m.vms[v].name, sizeof(m.vms[v].name), "tv-testvmm[%u]", 400000 + v);
		m.vms[v].tgid = (pid_t)(400000 + v);
		for (size_t r = 0; r < nr; r++) {
			struct serve_series *s = serve_series_new(&m, v, -1, reasons[r]);

			s->count = s->timed = 123456789;
			s->sum_ns = 987654321012ULL;
			for (int b = 0; b < SERVE_NBOUNDS; b++)
				s->le[b] = 123456789;
		}
	}
	serve_series_sort(&m);
	TV_CHECK(!serve_metrics_render(&m, false, &out), "render");
	TV_CHECK(out.len <= 1024 * 1024, "100 VMs x %zu reasons: %zu bytes, over 1 MB", nr, out.len);
	printf("100 VMs x %zu reasons: %zu series, %zu bytes\n", nr, m.nr_series, out.len);
	tv_strbuf_free(&out);
	free(m.series);
	free(m.vms);
}

static void write_file(const char *path, const char *data, size_t n)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
}

static void test_identify(void)
{
	static const char libvirt[] = "/usr/bin/qemu-system-x86_64\0-name\0guest=web-01,debug-threads=on\0-uuid\0c7a5fdbd-cdaf-9455-926a-d65c16db1809\0";
	char dir[] = "/tmp/tv-serve-procXXXXXX", path[256], name[SERVE_NAME_MAX], uuid[40];

	if (!mkdtemp(dir)) {
		TV_CHECK(0, "mkdtemp: errno=%d", errno);
		return;
	}
	snprintf(path, sizeof(path), "%s/100", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/100/cmdline", dir);
	write_file(path, libvirt, sizeof(libvirt) - 1);
	serve_vm_identify(dir, 100, "CPU 0/KVM", name, sizeof(name), uuid, sizeof(uuid));
	TV_CHECK(!strcmp(name, "web-01") && !strcmp(uuid, "c7a5fdbd-cdaf-9455-926a-d65c16db1809"),
		 "libvirt: name \"%s\" uuid \"%s\"", name, uuid);
	snprintf(path, sizeof(path), "%s/101", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/101/cmdline", dir);
	write_file(path, "./tv-testvmm\0--outs\0" "1\0", 20);
	snprintf(path, sizeof(path), "%s/101/comm", dir);
	write_file(path, "tv-testvmm\n", 11);
	serve_vm_identify(dir, 101, "x", name, sizeof(name), uuid, sizeof(uuid));
	TV_CHECK(!strcmp(name, "tv-testvmm[101]") && !uuid[0], "no -name: \"%s\" \"%s\"", name, uuid);
	/* QEMU takes either case: the label is Xen's form; a malformed one none */
	snprintf(path, sizeof(path), "%s/103", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/103/cmdline", dir);
	write_file(path, "qemu\0-uuid\0C7A5FDBD-CDAF-9455-926A-D65C16DB1809\0-name\0up\0", 57);
	serve_vm_identify(dir, 103, "x", name, sizeof(name), uuid, sizeof(uuid));
	TV_CHECK(!strcmp(name, "up") && !strcmp(uuid, "c7a5fdbd-cdaf-9455-926a-d65c16db1809"),
		 "uppercase -uuid: \"%s\" \"%s\"", name, uuid);
	snprintf(path, sizeof(path), "%s/103/cmdline", dir);
	write_file(path, "qemu\0-uuid\0c7a5fdbd-cdaf-9455-926a-d65c16db1809\"x\0", 50);
	serve_vm_identify(dir, 103, "x", name, sizeof(name), uuid, sizeof(uuid));
	TV_CHECK(!uuid[0], "malformed -uuid kept: \"%s\"", uuid);
	serve_vm_identify(dir, 102, "qemu-kvm", name, sizeof(name), uuid, sizeof(uuid));
	TV_CHECK(!strcmp(name, "qemu-kvm[102]"), "a VMM gone: \"%s\"", name);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	TV_CHECK(system(path) == 0, "cleanup");
}

static void uuid_bad(const char *in)
{
	char out[SERVE_UUID_LEN + 1] = "x";

	TV_CHECK(serve_uuid_canon(in, out, sizeof(out)) == -EINVAL && !out[0], "uuid \"%s\" accepted: \"%s\"", in,
		 out);
}

static void test_uuid_canon(void)
{
	struct serve_vm vms[2] = { { .tgid = 1 }, { .tgid = 2 } };
	struct serve_metrics m = { .vms = vms, .nr_vms = 2, .xen = true };
	struct tv_strbuf out = { 0 };
	char uuid[SERVE_UUID_LEN + 1];

	TV_CHECK(!serve_uuid_canon("C7A5fdbd-cdaf-9455-926A-d65c16db1809", uuid, sizeof(uuid)) &&
			 !strcmp(uuid, "c7a5fdbd-cdaf-9455-926a-d65c16db1809"),
		 "uuid lowercased: \"%s\"", uuid);
	TV_CHECK(serve_uuid_canon("c7a5fdbd-cdaf-9455-926a-d65c16db1809", uuid, SERVE_UUID_LEN) == -EINVAL,
		 "a buffer too small accepted");
	uuid_bad("00000000-0000-0000-0000-000000000000");	/* dom0's nil handle */
	uuid_bad("");
	uuid_bad("c7a5fdbd-cdaf-9455-926a-d65c16db180");
	uuid_bad("c7a5fdbd-cdaf-9455-926a-d65c16db1809-1");
	uuid_bad("c7a5fdbdcdaf-9455-926a-d65c16db1809-");
	uuid_bad("c7a5fdbd-cdaf-9455-926a-d65c16db18g9");
	uuid_bad("c7a5fdbd-cdaf-9455-926a-d65c16db18\"}");
	/* a Xen domain with a uuid, dom0 without */
	snprintf(vms[0].name, sizeof(vms[0].name), "Domain-0");
	snprintf(vms[1].name, sizeof(vms[1].name), "d1");
	TV_CHECK(!serve_uuid_canon("5F0d6a5e-3b0b-4a8e-9c1e-0123456789ab", vms[1].uuid, sizeof(vms[1].uuid)), "d1's uuid");
	serve_series_new(&m, 0, 0, "vmmcall")->count = 3;
	serve_series_new(&m, 1, 1, "npf")->count = 4;
	serve_series_sort(&m);
	TV_CHECK(!serve_metrics_render(&m, false, &out), "render Xen");
	TV_CHECK(strstr(out.data, "tracevisor_vm_exits_total{vm=\"Domain-0\",reason=\"vmmcall\",vcpu=\"0\"} 3\n") != NULL,
		 "dom0 without uuid: %s", out.data);
	TV_CHECK(strstr(out.data, "tracevisor_vm_exits_total{vm=\"d1\",uuid=\"5f0d6a5e-3b0b-4a8e-9c1e-0123456789ab\",reason=\"npf\",vcpu=\"1\"} 4\n") != NULL,
		 "d1's uuid: %s", out.data);
	TV_CHECK(strstr(out.data, "tracevisor_vm_exit_latency_seconds_count{vm=\"d1\",uuid=\"5f0d6a5e-3b0b-4a8e-9c1e-0123456789ab\",reason=\"npf\",vcpu=\"1\"} 0\n") != NULL,
		 "d1's histogram uuid");
	tv_strbuf_free(&out);
	free(m.series);
}

static void alert_ok(const char *json, unsigned int firing, const char *name, const char *vms)
{
	struct serve_alert a;
	char why[256] = "";
	int ret = serve_alert_parse(json, strlen(json), &a, why, sizeof(why));

	TV_CHECK(!ret && a.firing == firing && !strcmp(a.name, name) && !strcmp(a.vms, vms),
		 "alert %s: ret %d (%s) firing %u name \"%s\" vms \"%s\"", json, ret, why, a.firing, a.name,
		 a.vms);
}

static void alert_bad(const char *json, size_t len, const char *want)
{
	struct serve_alert a;
	char why[256] = "";
	int ret = serve_alert_parse(json, len ? len : strlen(json), &a, why, sizeof(why));

	TV_CHECK(ret == -EINVAL && strstr(why, want) && !strchr(why, '\n'), "bad alert %.60s: ret %d why \"%s\", want \"%s\"",
		 json, ret, why, want);
}

static void test_alert(void)
{
	char deep[400], big[2000];
	size_t n = 0;

	alert_ok("{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"labels\":{\"alertname\":\"A/b c\",\"vm\":\"x\"}},"
		 "{\"status\":\"firing\",\"labels\":{\"alertname\":\"Other\",\"vm\":\"y,\\nz\"}},"
		 "{\"status\":\"firing\",\"labels\":{\"alertname\":\"A\",\"vm\":\"x\"}},"
		 "{\"status\":\"resolved\",\"labels\":{\"alertname\":\"R\",\"vm\":\"gone\"}}]}\n",
		 3, "A_b_c", "x,y__z");
	alert_ok("{\"version\":\"4\",\"alerts\":[{\"status\":\"resolved\",\"labels\":{\"alertname\":\"R\"}}]}", 0, "", "");
	alert_ok("{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"labels\":{\"alertname\":\"\\u00e9t\\u00e9\"}}]}", 1,
		 "__t__", "");
	n = (size_t)snprintf(big, sizeof(big), "{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"labels\":{\"alertname\":\"");
	memset(big + n, 'N', 300);
	snprintf(big + n + 300, sizeof(big) - n - 300, "\"}}]}");
	{
		struct serve_alert a;
		char why[256];

		TV_CHECK(!serve_alert_parse(big, strlen(big), &a, why, sizeof(why)) &&
			 strlen(a.name) == SERVE_ALERT_VALUE_MAX - 1, "a long alertname cut: %zu", strlen(a.name));
	}
	alert_bad("{\"version\":\"4\",\"alerts\":[", 0, "unexpected end");
	alert_bad("{\"version\":\"4\",\"alerts\":[]} {}", 0, "trailing data");
	alert_bad("{\"version\":\"4\",\"alerts\":[]}\0x", 29, "trailing data");
	alert_bad("[1]", 0, "not a JSON object");
	alert_bad("{\"version\":4,\"alerts\":[]}", 0, "version \"4\"");
	alert_bad("{\"version\":\"4\",\"alerts\":{}}", 0, "no \"alerts\" array");
	alert_bad("{\"version\":\"4\",\"alerts\":[1]}", 0, "alerts[0] is not an alert");
	alert_bad("{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"labels\":{\"alertname\":\"\"}}]}", 0,
		  "alerts[0] has no labels.alertname");
	n = 0;
	for (int i = 0; i < 100; i++)
		deep[n++] = '[';
	for (int i = 0; i < 100; i++)
		deep[n++] = ']';
	alert_bad(deep, n, "not JSON");
}

int main(void)
{
	test_buckets();
	test_buckets_log2();
	test_merge_render();
	test_size();
	test_identify();
	test_uuid_canon();
	test_alert();
	return tv_test_done("test_serve_metrics");
}
