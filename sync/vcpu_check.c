// SPDX-License-Identifier: LGPL-2.1
/*
 * Causality beyond the probes: guest code runs only while its vCPU is in
 * guest mode, so after the transforms every event of guest CPU N must fall
 * between a host kvm_entry and the next kvm_exit of vCPU N - up to the
 * guest's bound.  One streaming pass over the session merged with the new
 * transforms; memory is a small state per vCPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "exit_tracker.h"
#include "tv_internal.h"
#include "sync_session.h"

#define MAX_PENDING 64

/* Guest events seen while their vCPU was out, undecided until its entry. */
struct pending {
	uint64_t ts[MAX_PENDING];
	size_t nr;
	size_t over_nr;		/* more than MAX_PENDING: counted, the first one's time kept */
	uint64_t over_first;
};

struct guest_check {
	int dom;		/* the guest's domain index, -1: not checked */
	int vdom;		/* whose vCPUs its CPUs are: itself, or a traced process's guest */
	struct tv_sync_domain *res;
};

struct vcpu_check {
	struct tv_reader *rd;
	int ref;
	size_t nr;
	struct guest_check *g;	/* one per domain */
	struct tep_event *entry, *exit;
	/*
	 * Per guest domain and vCPU (key domain << 32 | vCPU), known once a
	 * kvm_entry or kvm_exit was seen: open while the vCPU is out of guest
	 * mode, since its last exit; ptr: its struct pending, or NULL.
	 */
	struct tv_exit_tracker vcpus;
	uint64_t ref_last;	/* the reference's last event: its trace ends there */
};

/* The guest a host vCPU thread runs: by the vcpus file, or the only guest. */
static struct guest_check *guest_of_thread(struct vcpu_check *c, const struct tv_event *ev)
{
	const struct tv_domain_info *host = tv_reader_domain(c->rd, (size_t)c->ref);
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(host->vcpus, ev->pid);
	struct guest_check *only = NULL;
	size_t n = 0;

	for (size_t d = 0; d < c->nr; d++) {
		const struct tv_domain_info *gi = tv_reader_domain(c->rd, d);

		if (c->g[d].dom < 0 || c->g[d].vdom != (int)d)
			continue;	/* a traced process is not a guest of its own */
		n++;
		only = &c->g[d];
		if (t && !strcmp(gi->subdir + 6, t->vm_name))
			return &c->g[d];
	}
	return n == 1 ? only : NULL;
}

static void resolve_pending(struct guest_check *g, struct tv_exit_slot *v, uint64_t entry)
{
	struct pending *p = v->ptr;

	for (size_t i = 0; p && i < p->nr; i++)
		if (entry - p->ts[i] > (uint64_t)g->res->est.bound_ns)
			g->res->vcpu_violations++;
	if (p) {
		g->res->vcpu_violations += p->over_nr;	/* beyond the table: taken as outside */
		p->nr = p->over_nr = 0;
	}
}

static uint64_t vcpu_key(const struct guest_check *g, uint64_t vcpu)
{
	return (uint64_t)g->vdom << 32 | (vcpu & 0xffffffffu);
}

static int host_event(struct vcpu_check *c, const struct tv_event *ev, int entry)
{
	struct guest_check *g = guest_of_thread(c, ev);
	struct tv_exit_slot *v;
	uint64_t id, ns;

	if (!g || tv_event_field_u64(ev, "vcpu_id", &id))
		return 0;
	if (!entry)
		return tv_exit_tracker_exit(&c->vcpus, vcpu_key(g, id), ev->ts) ? 0 : -ENOMEM;
	v = tv_exit_tracker_slot(&c->vcpus, vcpu_key(g, id));
	if (!v)
		return -ENOMEM;
	tv_exit_tracker_close(&c->vcpus, v, ev->ts, &ns);
	resolve_pending(g, v, ev->ts);
	return 0;
}

static int guest_event(struct vcpu_check *c, struct guest_check *g, const struct tv_event *ev)
{
	struct tv_exit_slot *v = tv_exit_tracker_find(&c->vcpus, vcpu_key(g, (uint64_t)ev->cpu));
	struct pending *p;

	if (!v)
		return 0;
	g->res->nr_vcpu_checked++;
	if (!v->open || ev->ts - v->exit_ts <= (uint64_t)g->res->est.bound_ns)
		return 0;
	if (!v->ptr && !(v->ptr = calloc(1, sizeof(struct pending))))
		return -ENOMEM;
	p = v->ptr;
	if (p->nr < MAX_PENDING)
		p->ts[p->nr++] = ev->ts;
	else if (!p->over_nr++)
		p->over_first = ev->ts;
	return 0;
}

/*
 * A guest's traced process with per-CPU buffers (buffer N = guest CPU N,
 * rseq): its events too run only while that vCPU is in guest mode, checked
 * against its guest's vCPUs and counted on its own line.
 */
static void check_init_ust(struct vcpu_check *c, struct tv_sync_result *res, size_t d)
{
	const struct tv_meta *m = tv_reader_domain(c->rd, d)->meta;
	const char *kind = tv_meta_get(m, "kind"), *parent = tv_meta_get(m, "parent");

	if (!kind || strcmp(kind, "ust") || !parent || tv_meta_get_ll(m, "per_thread", 1))
		return;
	for (size_t p = 0; p < c->nr; p++) {
		if (c->g[p].dom < 0 || c->g[p].vdom != (int)p ||
		    strcmp(tv_reader_domain(c->rd, p)->subdir, parent))
			continue;
		for (size_t i = 0; i < res->nr; i++)
			if (!strcmp(res->domains[i].domain, tv_reader_domain(c->rd, d)->subdir)) {
				c->g[d].dom = (int)d;
				c->g[d].vdom = (int)p;
				c->g[d].res = &res->domains[i];
			}
	}
}

static void check_init(struct vcpu_check *c, struct tv_sync_result *res)
{
	const struct tv_domain_info *host;

	c->nr = tv_reader_nr_domains(c->rd);
	for (size_t d = 0; d < c->nr; d++) {
		const struct tv_domain_info *info = tv_reader_domain(c->rd, d);

		c->g[d].dom = -1;
		if (!strcmp(info->subdir, res->reference))
			c->ref = (int)d;
		for (size_t i = 0; i < res->nr; i++) {
			struct tv_sync_domain *r = &res->domains[i];

			if (!strcmp(r->domain, info->subdir) && !strncmp(r->domain, "guest-", 6) &&
			    tv_sync_domain_usable(r) && r->est.bound_ns >= 0 &&
			    !strcmp(r->via, res->reference)) {
				c->g[d].dom = (int)d;
				c->g[d].vdom = (int)d;
				c->g[d].res = r;
			}
		}
	}
	for (size_t d = 0; d < c->nr; d++)
		check_init_ust(c, res, d);
	host = tv_reader_domain(c->rd, (size_t)c->ref);
	c->entry = tep_find_event_by_name(host->tep, "kvm", "kvm_entry");
	c->exit = tep_find_event_by_name(host->tep, "kvm", "kvm_exit");
}

/**
 * tv_sync_check_vcpus - count guest events seen while their vCPU was out
 * @dir: session directory
 * @res: transforms just estimated; vcpu counters are added to each guest
 *
 * Return: 0 or -errno.  Sessions without kvm_entry/kvm_exit check nothing.
 */
int tv_sync_check_vcpus(const char *dir, struct tv_sync_result *res)
{
	struct vcpu_check c = { 0 };
	struct tv_event ev;
	int ret;

	ret = tv_reader_open_synced(dir, res, &c.rd);
	if (ret)
		return ret;
	c.g = calloc(tv_reader_nr_domains(c.rd), sizeof(*c.g));
	if (!c.g) {
		tv_reader_close(c.rd);
		return -ENOMEM;
	}
	check_init(&c, res);
	while (c.entry && c.exit && (ret = tv_reader_next(c.rd, &ev)) > 0) {
		if (ev.domain_index == c.ref && ev.ts > c.ref_last)
			c.ref_last = ev.ts;
		if (ev.domain_index == c.ref && ev.format == c.entry)
			ret = host_event(&c, &ev, 1);
		else if (ev.domain_index == c.ref && ev.format == c.exit)
			ret = host_event(&c, &ev, 0);
		else if (c.g[ev.domain_index].dom >= 0)
			ret = guest_event(&c, &c.g[ev.domain_index], &ev);
		if (ret < 0)
			break;
	}
	/*
	 * Guest events still undecided when the session ended: a violation
	 * when the host's trace went on past them with the vCPU out; after the
	 * host's last event nothing says where the vCPU was (a flight
	 * recorder's snapshot freezes the host's ring before a guest's).
	 */
	for (size_t i = 0; i < c.vcpus.cap; i++) {
		struct tv_exit_slot *v = &c.vcpus.slots[i];
		struct pending *p = v->ptr;
		struct guest_check *g;

		if (!v->key || !p)
			continue;
		g = &c.g[(v->key - 1) >> 32];
		for (size_t k = 0; k < p->nr; k++)
			g->res->vcpu_violations += p->ts[k] <= c.ref_last;
		if (p->over_nr && p->over_first <= c.ref_last)
			g->res->vcpu_violations += p->over_nr;
		free(p);
	}
	tv_exit_tracker_free(&c.vcpus);
	for (size_t i = 0; i < res->nr; i++)
		res->domains[i].causality_violations += res->domains[i].vcpu_violations;
	free(c.g);
	tv_reader_close(c.rd);
	return ret < 0 ? ret : 0;
}
