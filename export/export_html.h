/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The HTML exporter's two halves (export/export_html.c collects the
 * timeline of a session, export/export_html_page.c writes the page).
 * Private to export/.
 */
#ifndef TV_EXPORT_HTML_H
#define TV_EXPORT_HTML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tracevisor/tracevisor.h"

/*
 * Limits, each against what a guest controls (its CPU count, its task
 * names and pids): past them the page says how many were folded.
 */
#define HX_MAX_LANES	4095	/* lanes (CPUs, vCPUs, threads); more: not drawn, counted */
#define HX_MAX_STRS	65535	/* distinct labels (reasons, "comm pid"); more: "(other)" */
/*
 * Labels a guest or a traced process (an untrusted domain: not host, not
 * xen) may introduce: each at most HX_MAX_STRS_DOMAIN, all of them together
 * at most half the ids, so that the host's and Xen's labels keep the rest.
 */
#define HX_MAX_STRS_DOMAIN	8192
#define HX_MAX_STRS_UNTRUSTED	(HX_MAX_STRS / 2)
#define HX_BUDGET	400000	/* items kept one by one in the page; the rest aggregated */
#define HX_AGG_BUCKETS	2000	/* aggregation buckets over the session's span */

enum hx_lane_kind { HX_CPU, HX_VCPU, HX_GCPU, HX_PCPU, HX_XVCPU, HX_XEXIT, HX_UST };

struct hx_item {
	uint64_t t0;
	uint32_t dur;		/* < 2^31: ns; else bit 31 set and microseconds */
	uint16_t lane;		/* bit 15: an instant (no duration) */
	uint16_t str;
};

struct hx_lane {
	uint64_t key;
	enum hx_lane_kind kind;
	int domain;		/* domain index; Xen lanes: the xen domain */
	int id;			/* CPU, vCPU index, tid */
	char group[96];		/* the lane group: "host CPUs", "VM vm1[1000]", ... */
	char name[96];
	char vm[80];		/* vCPU lanes: the VM's name; guest CPU lanes: the guest's */
	/* open interval: a task since (sched_switch), an exit or a guest run */
	uint64_t open_ts;
	int open_state;		/* 0: none, 1: in guest / running, 2: in exit */
	uint16_t open_str;
	uint64_t items, aggregated;
};

struct hx_domain_loss {
	uint64_t events, lost, lost_flags;
	bool snapshot;		/* a flight recorder's snapshot (meta status=snapshot) */
	bool untrusted;		/* a guest or a traced process: its labels are budgeted */
	uint64_t strs_new;	/* labels this domain introduced */
	uint64_t strs_folded;	/* its labels past a limit, shown as "(other)" */
};

struct hx_session {
	struct tv_reader *rd;
	const char *dir;
	struct hx_lane *lanes;
	size_t nr_lanes, cap_lanes;
	uint64_t lanes_refused;		/* events of lanes past HX_MAX_LANES */
	char **strs;
	size_t nr_strs, cap_strs;
	uint32_t *str_hash;		/* open addressing: index + 1 */
	size_t str_hash_cap;
	uint64_t strs_folded;		/* all domains' */
	uint64_t strs_untrusted;	/* labels introduced by untrusted domains */
	uint32_t *lane_hash;		/* open addressing: index + 1 */
	size_t lane_hash_cap;
	struct hx_item *items;
	size_t nr_items, cap_items;
	uint64_t t_first, t_last, nr_events;
	struct hx_domain_loss *loss;	/* per domain index */
	enum tv_kvm_isa xen_isa;
	uint64_t snapshot_ts;		/* a flight recorder snapshot's last record; 0: none */
	bool is_snapshot;		/* a domain has status=snapshot or froze (flight_freeze) */
};

/* The page: template, data, stat rows, Chart.js. */
int hx_page_write(struct hx_session *s, const char *out, struct tv_export_stats *st);

/* Append @s as a JSON string safe inside <script> (no <, >, &, non-ASCII raw). */
void hx_json_str(FILE *f, const char *s);

#endif /* TV_EXPORT_HTML_H */
