// SPDX-License-Identifier: GPL-2.0
/*
 * export --format html: a guest cannot spoil the host's labels.  A session
 * of a host and a guest whose sched_switch records name 70,000 distinct
 * "comm pid" tasks (more than the page's 65,535 label ids), then host
 * records with their own task names: the host's names must be in the
 * page's labels (not folded into "(other)"), and the guest's folded
 * labels counted as the guest's (losses[].labels_folded) and in all
 * (labels_folded).  Then five guests that each stay within their own
 * share but together pass half the ids.
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

/*
 * Session @dir: @nguests guests "guest-gN", one after the other in time,
 * each switching to @tasks distinct tasks, then the host's HOST_TASKS.
 */
static void generate(const char *dir, int nguests, int tasks)
{
	struct domain_gen host = { 0 }, guest = { 0 };
	char comm[16], name[32], domains[256] = "host";
	uint64_t ts = 1000000;

	base = dir;
	for (int g = 0; g < nguests; g++) {
		snprintf(name, sizeof(name), "guest-g%d", g);
		snprintf(domains + strlen(domains), sizeof(domains) - strlen(domains), ",%s", name);
		for (int i = 0; i < tasks; i++, ts += 1000) {
			snprintf(comm, sizeof(comm), "flood%d", i);
			add_switch(&guest, ts, comm, 100000 * (g + 1) + i);
		}
		write_domain(&guest, name);
		put_format(name, "sched", "sched_switch", switch_format);
		guest.n = 0;
	}
	for (int i = 0; i < HOST_TASKS; i++, ts += 1000) {
		snprintf(comm, sizeof(comm), "hosttask%d", i);
		add_switch(&host, ts, comm, 500 + i);
	}
	write_session_meta(dir, domains);
	write_domain(&host, "host");
	put_format("host", "sched", "sched_switch", switch_format);
	free(host.recs);
	free(guest.recs);
}

static void quiet(enum tv_log_level lvl, const char *msg, void *ctx)
{
	(void)lvl;
	(void)msg;
	(void)ctx;
}

/* The page of a session of @nguests guests of @tasks tasks each; NULL on failure. */
static char *export_page(const char *dir, int nguests, int tasks)
{
	struct tv_export_stats st = { 0 };
	struct tv_reader *rd = NULL;
	char out[128];
	int ret;

	generate(dir, nguests, tasks);
	snprintf(out, sizeof(out), "%s/page.html", dir);
	ret = tv_reader_open(dir, &rd);
	TV_CHECK(ret == 0, "open the session %s: %d", dir, ret);
	if (ret)
		return NULL;
	ret = tv_export(rd, dir, out, TV_EXPORT_HTML, &st);
	TV_CHECK(ret == 0, "export --format html %s: %d", dir, ret);
	tv_reader_close(rd);
	return tv_test_slurp(out);
}

/* Every host task has its own label on @page. */
static void check_host_labels(const char *page)
{
	char want[64];
	int missing = 0;

	for (int i = 0; i < HOST_TASKS; i++) {
		snprintf(want, sizeof(want), "\"hosttask%d %d\"", i, 500 + i);
		missing += !strstr(page, want);
	}
	TV_CHECK(missing == 0, "%d of the host's %d task names folded into (other)", missing,
		 HOST_TASKS);
	TV_CHECK(!strstr(page, "\"domain\":\"host\",\"dir\":\"host\",\"events\":50,\"lost\":0,"
			 "\"lost_flags\":0,\"meta_lost\":null,\"labels_folded\""),
		 "the host folded none");
}

/* Guest gN's row of losses on @page says @events events and @folded labels folded. */
static void check_guest_folded(const char *page, int g, int events, int folded)
{
	char want[200];

	snprintf(want, sizeof(want), "\"domain\":\"guest:g%d\",\"dir\":\"guest-g%d\",\"events\":%d,"
		 "\"lost\":0,\"lost_flags\":0,\"meta_lost\":null,\"labels_folded\":%d,", g, g, events,
		 folded);
	TV_CHECK(strstr(page, want) != NULL, "guest g%d's folded labels counted: %s", g, want);
}

/*
 * One guest of 70,000 tasks: its first 8192 labels ("sched:sched_switch"
 * and 8191 tasks) are kept, the rest folded and counted as its own.
 */
static void check_one_guest(const char *dir)
{
	char *page = export_page(dir, 1, GUEST_TASKS);
	char want[64];

	TV_CHECK(page != NULL, "the page of %s", dir);
	if (!page)
		return;
	check_host_labels(page);
	check_guest_folded(page, 0, GUEST_TASKS, GUEST_TASKS + 1 - DOMAIN_MAX);
	snprintf(want, sizeof(want), "\"labels_folded\":%d,\"title\"", GUEST_TASKS + 1 - DOMAIN_MAX);
	TV_CHECK(strstr(page, want) != NULL, "the session's folded labels: %s", want);
	TV_CHECK(strstr(page, "\"flood8190 108190\"") && !strstr(page, "\"flood8191 108191\""),
		 "the guest's first 8191 tasks have their label, no more");
	free(page);
}

/*
 * Five guests of 9000 tasks: each within its own 8192, but all of them
 * together stop at 32767 (half the ids): the fourth guest gets what is
 * left (8191), the fifth none, and the host still its own.
 */
static void check_five_guests(const char *dir)
{
	char *page = export_page(dir, 5, 9000);

	TV_CHECK(page != NULL, "the page of %s", dir);
	if (!page)
		return;
	check_host_labels(page);
	check_guest_folded(page, 0, 9000, 9000 - 8191);
	check_guest_folded(page, 1, 9000, 9000 - 8192);
	check_guest_folded(page, 2, 9000, 9000 - 8192);
	check_guest_folded(page, 3, 9000, 9000 - 8191);
	check_guest_folded(page, 4, 9000, 9000);
	TV_CHECK(strstr(page, "\"labels_folded\":12234,\"title\""), "the session's folded labels");
	free(page);
}

int main(void)
{
	char one[] = "/tmp/tv-html-labels-XXXXXX", five[] = "/tmp/tv-html-labels-XXXXXX";
	char cmd[128];

	if (!mkdtemp(one) || !mkdtemp(five)) {
		perror("mkdtemp");
		return 2;
	}
	tv_log_set_callback(quiet, NULL);
	check_one_guest(one);
	check_five_guests(five);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", one, five);
	if (!getenv("TV_KEEP") && system(cmd))
		fprintf(stderr, "cannot remove %s, %s\n", one, five);
	return tv_test_done("test_export_html_labels");
}
