// SPDX-License-Identifier: GPL-2.0
/*
 * export --format html: a guest cannot spoil the host's labels.  A session
 * of a host and a guest whose sched_switch records name 70,000 distinct
 * "comm pid" tasks (more than the page's 65,535 label ids), then host
 * records with their own task names: the host's names must be in the
 * page's labels (not folded into "(other)"), and the guest's folded
 * labels counted as the guest's (losses[].labels_folded) and in all
 * (labels_folded).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"

/* session_gen.h's sync helpers are not used here */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "session_gen.h"

#define ID_SWITCH 316
#define GUEST_TASKS 70000
#define HOST_TASKS 50
#define DOMAIN_MAX 8192		/* HX_MAX_STRS_DOMAIN */

/* Trimmed to the fields the exporter reads. */
static const char switch_format[] =
	"name: sched_switch\nID: 316\nformat:\n" COMMON_FIELDS
	"\tfield:char next_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:24;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"next_comm=%s next_pid=%d\", REC->next_comm, REC->next_pid\n";

static void add_switch(struct domain_gen *d, uint64_t ts, const char *comm, int32_t pid)
{
	unsigned char r[28] = { 0 };
	uint16_t id = ID_SWITCH;

	memcpy(r, &id, 2);
	memcpy(r + 4, &pid, 4);
	strncpy((char *)r + 8, comm, 16);
	memcpy(r + 24, &pid, 4);
	add(d, ts, r, 28);
}

static void generate(const char *dir)
{
	struct domain_gen host = { 0 }, guest = { 0 };
	char comm[16];

	base = dir;
	for (int i = 0; i < GUEST_TASKS; i++) {
		snprintf(comm, sizeof(comm), "flood%d", i);
		add_switch(&guest, 1000000 + (uint64_t)i * 1000, comm, 10000 + i);
	}
	for (int i = 0; i < HOST_TASKS; i++) {
		snprintf(comm, sizeof(comm), "hosttask%d", i);
		add_switch(&host, 1000000 + (uint64_t)GUEST_TASKS * 1000 + (uint64_t)i * 1000, comm,
			   500 + i);
	}
	write_session_meta(dir, "host,guest-flood");
	write_domain(&host, "host");
	put_format("host", "sched", "sched_switch", switch_format);
	write_domain(&guest, "guest-flood");
	put_format("guest-flood", "sched", "sched_switch", switch_format);
	free(host.recs);
	free(guest.recs);
}

static void quiet(enum tv_log_level lvl, const char *msg, void *ctx)
{
	(void)lvl;
	(void)msg;
	(void)ctx;
}

int main(void)
{
	char dir[] = "/tmp/tv-html-labels-XXXXXX", out[128], want[96];
	struct tv_export_stats st = { 0 };
	struct tv_reader *rd = NULL;
	char *page = NULL;
	int ret, missing = 0;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	tv_log_set_callback(quiet, NULL);
	generate(dir);
	snprintf(out, sizeof(out), "%s/page.html", dir);
	ret = tv_reader_open(dir, &rd);
	TV_CHECK(ret == 0, "open the session: %d", ret);
	if (!ret) {
		ret = tv_export(rd, dir, out, TV_EXPORT_HTML, &st);
		TV_CHECK(ret == 0, "export --format html: %d", ret);
		tv_reader_close(rd);
	}
	page = tv_test_slurp(out);
	TV_CHECK(page != NULL, "the page %s", out);
	if (page) {
		for (int i = 0; i < HOST_TASKS; i++) {
			snprintf(want, sizeof(want), "\"hosttask%d %d\"", i, 500 + i);
			missing += !strstr(page, want);
		}
		TV_CHECK(missing == 0, "%d of the host's %d task names folded into (other)",
			 missing, HOST_TASKS);
		/* the guest's own labels: its tasks and "sched:sched_switch" */
		snprintf(want, sizeof(want), "\"domain\":\"guest:flood\",\"dir\":\"guest-flood\","
			 "\"events\":%d,", GUEST_TASKS);
		TV_CHECK(strstr(page, want) != NULL, "the guest's losses row");
		snprintf(want, sizeof(want), ",\"labels_folded\":%d,", GUEST_TASKS + 1 - DOMAIN_MAX);
		TV_CHECK(strstr(page, want) != NULL, "the guest's folded labels counted: %s", want);
		snprintf(want, sizeof(want), "\"labels_folded\":%d,\"title\"", GUEST_TASKS + 1 - DOMAIN_MAX);
		TV_CHECK(strstr(page, want) != NULL, "the session's folded labels: %s", want);
		TV_CHECK(!strstr(page, "\"domain\":\"host\",\"dir\":\"host\",\"events\":50,\"lost\":0,"
				 "\"lost_flags\":0,\"meta_lost\":null,\"labels_folded\""),
			 "the host folded none");
		TV_CHECK(strstr(page, "\"flood8190 18190\"") && !strstr(page, "\"flood8191 18191\""),
			 "the guest's first 8191 tasks have their label, no more");
	}
	free(page);
	snprintf(want, sizeof(want), "rm -rf '%s'", dir);
	if (getenv("TV_KEEP") ? 0 : system(want))
		fprintf(stderr, "cannot remove %s\n", dir);
	return tv_test_done("test_export_html_labels");
}
