// SPDX-License-Identifier: LGPL-2.1
/*
 * serve --xen: VM exits of a Xen host, in dom0, from Xen's trace records.
 * The consumer of record --xen and top --xen (xen/xen_recorder.c) drains
 * Xen's per-CPU buffers in its own thread; an exit watch on its records
 * (xen/xen_flight.c, the pairing of the exit-latency triggers) counts
 * each VMEXIT and times it to the vCPU's next VMENTRY, or to its becoming
 * runnable (xen stat's rule), per (domain, vCPU, reason).  A scrape copies
 * those counts: nothing is written to disk while serve runs.
 *
 * With --flight-recorder the watch is on the flight recorder's Xen
 * consumer (Xen has one): serve_xen_open_on().  Else the recorder is
 * serve's own; it keeps its records in memory rings (a flight recorder's,
 * the smallest that fits TOP_XEN's 256 pCPUs), its session in a
 * temporary directory that the close removes: the rings' last records
 * are no product here.
 *
 * VMs: the domain's xl name (xenstore), Domain-0 for dom0, and its UUID
 * (xenstore's /local/domain/ID/vm, none for a nil one); a domain gone
 * from xenstore for --forget seconds loses its rows; --max-vms as for
 * KVM.  Reasons: the host CPU's exit codes (VMX or SVM) as KVM's table
 * names them, others "unknown".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tv_internal.h"
#include "serve.h"
#include "serve_xen.h"
#include "../xen/xen_flight.h"
#include "../xen/xen_recorder.h"

/* The rings: TV_XEN_FRING_MIN_BYTES for each of up to 256 pCPUs (4 MiB). */
#define SERVE_XEN_RING_BYTES (256ULL * TV_XEN_FRING_MIN_BYTES)
#define SERVE_XEN_DIR_MAX 4096

struct serve_xen {
	struct tv_xen_recorder *rec;
	struct tv_xen_exit_watch *watch;
	char dir[SERVE_XEN_DIR_MAX];	/* the temporary directory, removed at close */
	int isa;			/* enum tv_kvm_isa of the exit codes, 0: unknown */
	unsigned int nr_own;		/* domains with series of their own */
	bool said_limit;
	bool borrowed;			/* rec is the flight recorder's, not ours */
};

/* The exit watch that counts every exit (a limit never passed: it never reports). */
static int xen_watch_start(struct serve_xen *x)
{
	struct tv_xen_exit_rule rule = { .limit_ns = UINT64_MAX, .domid = -1, .hlt = ~0u };
	int ret = tv_xen_recorder_watch_exits(x->rec, &rule, &x->watch);

	return ret ?: tv_xen_exit_watch_count(x->watch);
}

int serve_xen_open_on(struct tv_xen_recorder *rec, struct serve_xen **out)
{
	struct serve_xen *x = calloc(1, sizeof(*x));
	int ret;

	*out = NULL;
	if (!x)
		return -ENOMEM;
	x->rec = rec;
	x->borrowed = true;
	ret = xen_watch_start(x);
	if (ret) {
		tv_err("Cannot count Xen's exits on the flight recorder: errno=%d (%s)", -ret, strerror(-ret));
		serve_xen_close(x);
		return ret;
	}
	x->isa = tv_xen_recorder_isa(rec);
	*out = x;
	return 0;
}

int serve_xen_open(struct serve_xen **out)
{
	struct tv_xen_record_opts o = { .flight_bytes = SERVE_XEN_RING_BYTES };
	const char *tmp = getenv("TMPDIR");
	char session[SERVE_XEN_DIR_MAX + 16];
	struct serve_xen *x = calloc(1, sizeof(*x));
	int ret = -ENOMEM;

	*out = NULL;
	if (!x)
		return -ENOMEM;
	snprintf(x->dir, sizeof(x->dir), "%s/tracevisor-serve-xen.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(x->dir)) {
		ret = -errno;
		tv_err("Cannot create directory: path=\"%s\", errno=%d (%s)", x->dir, -ret, strerror(-ret));
		x->dir[0] = '\0';
		goto out;
	}
	/* the recorder makes its session itself: a new directory */
	snprintf(session, sizeof(session), "%s/session", x->dir);
	o.outdir = session;
	o.evt_mask = tv_xen_parse_events(SERVE_XEN_CLASSES);
	ret = tv_xen_recorder_create(&o, &x->rec);
	ret = ret ?: xen_watch_start(x);
	ret = ret ?: tv_xen_recorder_start(x->rec);
	x->isa = ret ? 0 : tv_xen_recorder_isa(x->rec);
out:
	if (ret) {
		serve_xen_close(x);
		return ret;
	}
	*out = x;
	return 0;
}

void serve_xen_close(struct serve_xen *x)
{
	if (!x)
		return;
	if (x->rec) {
		if (x->watch)
			tv_xen_recorder_unwatch_exits(x->rec, x->watch);
		/* stopped by destroy: Xen's tracing and masks restored */
		if (!x->borrowed)
			tv_xen_recorder_destroy(x->rec);
	}
	if (x->dir[0] && tv_session_remove_tree(x->dir))
		tv_warn("Cannot remove serve --xen's temporary session: path=\"%s\", errno=%d (%s)", x->dir,
			errno, strerror(errno));
	free(x);
}

/*
 * The uuid label of domain @domid, "" when none: the toolstack's
 * (xenstore), so its format is checked; dom0's nil UUID is none.
 */
static void xen_vm_uuid(unsigned int domid, char *uuid, size_t size)
{
	char raw[SERVE_UUID_LEN + 2];

	if (tv_xen_domain_uuid(domid, raw, sizeof(raw)) || serve_uuid_canon(raw, uuid, size))
		uuid[0] = '\0';
}

/* The cache's entry of domain @domid (new if needed: named now), or -1 (no memory). */
static long xen_vm_of(struct serve_xen *x, struct serve_metrics *m, unsigned int domid, unsigned int max_vms)
{
	struct serve_vm *vm;

	for (size_t i = 0; i < m->nr_vms; i++)
		if (m->vms[i].tgid == (pid_t)domid + 1)
			return (long)i;
	if (tv_array_grow(&m->vms, &m->cap_vms, m->nr_vms, sizeof(*m->vms), 16))
		return -1;
	vm = &m->vms[m->nr_vms];
	memset(vm, 0, sizeof(*vm));
	vm->tgid = (pid_t)domid + 1;
	vm->folded = x->nr_own >= max_vms;
	x->nr_own += !vm->folded;
	if (vm->folded && !x->said_limit) {
		tv_warn("--max-vms %u reached: the exits of Xen domain %u and of the domains after it are counted under vm=\"_other\"",
			max_vms, domid);
		x->said_limit = true;
	}
	if (!domid)
		snprintf(vm->name, sizeof(vm->name), "Domain-0");
	else if (tv_xen_domain_name(domid, vm->name, sizeof(vm->name)))
		snprintf(vm->name, sizeof(vm->name), "d%u", domid);	/* gone already */
	xen_vm_uuid(domid, vm->uuid, sizeof(vm->uuid));
	return (long)m->nr_vms++;
}

static long xen_vm_other(struct serve_metrics *m)
{
	for (size_t i = 0; i < m->nr_vms; i++)
		if (!m->vms[i].tgid)
			return (long)i;
	if (tv_array_grow(&m->vms, &m->cap_vms, m->nr_vms, sizeof(*m->vms), 16))
		return -1;
	memset(&m->vms[m->nr_vms], 0, sizeof(*m->vms));
	snprintf(m->vms[m->nr_vms].name, sizeof(m->vms[m->nr_vms].name), "_other");
	return (long)m->nr_vms++;
}

/*
 * Domains gone from xenstore for @forget_ns lose their rows (in the watch)
 * and their cache entry; the survivors keep their order, so their series'
 * vm indexes are taken after this.
 */
static void xen_vms_expire(struct serve_xen *x, struct serve_metrics *m, uint64_t now_ns, uint64_t forget_ns)
{
	size_t out = 0;
	char name[SERVE_NAME_MAX];

	x->nr_own = 0;
	for (size_t i = 0; i < m->nr_vms; i++) {
		struct serve_vm *vm = &m->vms[i];
		unsigned int domid = (unsigned int)vm->tgid - 1;
		bool alive = vm->tgid <= 1 || !tv_xen_domain_name(domid, name, sizeof(name));

		vm->gone_ns = alive ? 0 : vm->gone_ns ? vm->gone_ns : now_ns;
		if (vm->gone_ns && now_ns - vm->gone_ns >= forget_ns) {
			tv_xen_exit_watch_forget(x->watch, domid);
			continue;
		}
		x->nr_own += vm->tgid > 0 && !vm->folded;
		m->vms[out++] = *vm;
	}
	m->nr_vms = out;
}

int serve_xen_scrape(struct serve_xen *x, struct serve_metrics *m, const struct serve_xen_opts *o)
{
	struct tv_xen_exit_count *rows = NULL;
	uint64_t lost = 0;
	size_t nr = 0;
	int ret;

	xen_vms_expire(x, m, o->now_ns, o->forget_ns);
	ret = tv_xen_exit_watch_counts(x->watch, &rows, &nr, &lost);
	for (size_t i = 0; i < nr && !ret; i++) {
		const struct tv_xen_exit_count *c = &rows[i];
		const char *reason = x->isa ? tv_kvm_exit_reason_name((enum tv_kvm_isa)x->isa, c->reason) : NULL;
		long vm = xen_vm_of(x, m, c->domid, o->max_vms);
		struct serve_series *s;

		if (vm >= 0 && m->vms[vm].folded)
			vm = xen_vm_other(m);
		if (vm < 0) {
			ret = -ENOMEM;
			break;
		}
		if (!reason) {
			reason = SERVE_REASON_UNKNOWN;
			m->health.unknown_reasons++;
		}
		s = serve_series_new(m, (unsigned int)vm, o->per_vcpu ? (int)c->vcpu : -1, reason);
		if (!s) {
			ret = -ENOMEM;
			break;
		}
		s->count = c->count;
		s->timed = c->timed;
		s->sum_ns = c->sum_ns;
		serve_series_add_log2(s, c->hist, TV_XEN_EXIT_NBUCKETS);
	}
	m->health.lost[0] = lost;
	free(rows);
	return ret;
}
