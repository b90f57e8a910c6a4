// SPDX-License-Identifier: LGPL-2.1
/*
 * Chrome/Perfetto trace-event JSON, written as events stream by: every
 * event is an instant on its domain's CPU track; VM exits are complete
 * slices (kvm_exit -> kvm_entry) on the vCPU thread's track, grouped by VM.
 * A Xen session's domains (dom0, each domU) get a process each, with two
 * tracks per vCPU: its HVM exits (VMEXIT -> VMENTRY on the physical CPU
 * that ran it, named by reason) and its runstates (an interval per state,
 * from one runstate change of the vCPU to the next); Xen's own records
 * stay instants on the xen domain's CPU tracks.
 * Track names are metadata events emitted when a track first appears, so
 * nothing but the open exits and runstates is kept in memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exporters.h"
#include "exit_tracker.h"
#include "xen_trace.h"
#include "export_perfetto.h"

#define CPU_PID_BASE 1000000	/* synthetic pids for the per-domain CPU tracks */
#define UST_PID_BASE 2000000	/* synthetic pids for the traced processes (kind ust) */
#define XEN_PID_BASE 3000000	/* synthetic pids for the Xen domains (+ domid) */

struct pf_writer {
	FILE *f;
	struct tv_reader *rd;
	struct tv_strbuf sb;
	unsigned char *cpu_seen;	/* [domain * 4096 + cpu] */
	/* Per vCPU thread (key: tid): its open exit, reason and ISA in data[]. */
	struct tv_exit_tracker exits;
	int *vcpu_seen;			/* tids given a name already */
	size_t nr_vcpu_seen, cap_vcpu_seen;
	uint64_t *ust_seen;		/* (domain << 32 | tid) of traced threads named already */
	size_t nr_ust_seen, cap_ust_seen;
	struct tep_event *kvm_exit, *kvm_entry;	/* of the reference domain */
	/* Xen: per vCPU (domid << 16 | vcpu) the open VMEXIT (data[0]: reason). */
	struct tv_exit_tracker xen_exits;
	/* Xen: per domid << 16 | vcpu, the current runstate since exit_ts (label). */
	struct tv_exit_tracker xen_runstate;
	enum tv_kvm_isa xen_isa;
	uint64_t *xen_seen;		/* domid << 32 | track id named already */
	size_t nr_xen_seen, cap_xen_seen;
	int first;
	struct tv_export_stats *st;
};

static void pf_ts(FILE *f, const char *key, uint64_t ns)
{
	fprintf(f, ",\"%s\":%llu.%03llu", key, (unsigned long long)(ns / 1000),
		(unsigned long long)(ns % 1000));
}

static void pf_begin(struct pf_writer *w)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = 0;
}

static void pf_name(struct pf_writer *w, const char *what, int pid, int tid, const char *name)
{
	tv_strbuf_reset(&w->sb);
	tv_strbuf_append_json_string(&w->sb, name, strlen(name));
	pf_begin(w);
	fprintf(w->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":%s}}",
		what, pid, tid, w->sb.data);
}

static void pf_cpu_track(struct pf_writer *w, const struct tv_event *ev)
{
	size_t slot = (size_t)ev->domain_index * 4096 + (size_t)(ev->cpu & 4095);
	int pid = CPU_PID_BASE + ev->domain_index;
	char name[128];

	if (w->cpu_seen[slot])
		return;
	if (!w->cpu_seen[(size_t)ev->domain_index * 4096 + 4095]) {
		snprintf(name, sizeof(name), "%s CPUs", ev->domain);
		pf_name(w, "process_name", pid, 0, name);
		w->cpu_seen[(size_t)ev->domain_index * 4096 + 4095] = 1;
		w->st->streams++;
	}
	snprintf(name, sizeof(name), "%s CPU %d", ev->domain, ev->cpu);
	pf_name(w, "thread_name", pid, ev->cpu, name);
	w->cpu_seen[slot] = 1;
	w->st->streams++;
}

static void pf_vcpu_track(struct pf_writer *w, const struct tv_event *ev, int vm_pid);

static int is_ust_domain(const struct tv_domain_info *dom)
{
	const char *kind = tv_meta_get(dom->meta, "kind");

	return kind && !strcmp(kind, "ust");
}

/* A traced process's thread: its own track, in a process named after it and its domain. */
static void pf_ust_track(struct pf_writer *w, const struct tv_event *ev)
{
	const struct tv_domain_info *dom = tv_reader_domain(w->rd, (size_t)ev->domain_index);
	uint64_t key = (uint64_t)ev->domain_index << 32 | (uint32_t)ev->pid;
	int pid = UST_PID_BASE + ev->domain_index;
	const char *comm = tep_data_comm_from_pid(dom->tep, ev->pid);
	char name[160];

	for (size_t i = 0; i < w->nr_ust_seen; i++)
		if (w->ust_seen[i] == key)
			return;
	if (tv_array_grow(&w->ust_seen, &w->cap_ust_seen, w->nr_ust_seen, sizeof(*w->ust_seen), 64))
		return;
	/* the process's name with its first thread */
	for (size_t i = 0; i <= w->nr_ust_seen; i++) {
		if (i == w->nr_ust_seen) {
			snprintf(name, sizeof(name), "%s: %s (pid %s)", ev->domain,
				 tv_meta_get(dom->meta, "comm") ?: "?", tv_meta_get(dom->meta, "pid") ?: "?");
			pf_name(w, "process_name", pid, 0, name);
		} else if ((w->ust_seen[i] >> 32) == (uint64_t)ev->domain_index) {
			break;
		}
	}
	w->ust_seen[w->nr_ust_seen++] = key;
	snprintf(name, sizeof(name), "%s (tid %d)", comm ? comm : "?", ev->pid);
	pf_name(w, "thread_name", pid, ev->pid, name);
	w->st->streams++;
}

/*
 * A vCPU thread: known from the session's vcpus file, or seen running
 * guest code (events KVM emits only inside KVM_RUN) - VMs that lived
 * between the recorder's two /proc scans are only known that way.
 */
static int is_vcpu_event(const struct tv_domain_info *dom, const struct tv_event *ev)
{
	static const char *const run_events[] = {
		"kvm_exit", "kvm_entry", "kvm_userspace_exit", "kvm_pio", "kvm_mmio",
		"kvm_emulate_insn", "kvm_cpuid", "kvm_msr", "kvm_hypercall", "kvm_page_fault",
		"kvm_inj_exception", "kvm_inj_virq", "kvm_fpu",
	};

	if (strcmp(ev->format->system, "kvm"))
		return 0;
	if (tv_vcpu_map_find(dom->vcpus, ev->pid))
		return 1;
	for (size_t i = 0; i < sizeof(run_events) / sizeof(*run_events); i++)
		if (!strcmp(ev->format->name, run_events[i]))
			return 1;
	return 0;
}

/*
 * KVM events of a vCPU thread go on that vCPU's track (beside its exit
 * slices); every other event on its CPU's track.
 */
static void pf_instant(struct pf_writer *w, const struct tv_event *ev)
{
	const struct tv_domain_info *dom = tv_reader_domain(w->rd, (size_t)ev->domain_index);
	int pid = CPU_PID_BASE + ev->domain_index, tid = ev->cpu;

	if (is_ust_domain(dom)) {
		pid = UST_PID_BASE + ev->domain_index;
		tid = ev->pid;
		pf_ust_track(w, ev);
	} else if (is_vcpu_event(dom, ev)) {
		pid = dom->tgid_of(dom, ev->pid);
		tid = ev->pid;
		pf_vcpu_track(w, ev, pid);
	} else {
		pf_cpu_track(w, ev);
	}
	tv_strbuf_reset(&w->sb);
	tv_event_fields_json(ev, &w->sb);
	pf_begin(w);
	fprintf(w->f, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"%s:%s\",\"pid\":%d,\"tid\":%d",
		ev->format->system, ev->format->name, pid, tid);
	pf_ts(w->f, "ts", ev->ts);
	fprintf(w->f, ",\"args\":%s}", w->sb.data ? w->sb.data : "{}");
}

/* Name the vCPU thread's track (and its VM's) the first time it is used. */
static void pf_vcpu_track(struct pf_writer *w, const struct tv_event *ev, int vm_pid)
{
	const struct tv_domain_info *dom = tv_reader_domain(w->rd, (size_t)ev->domain_index);
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(dom->vcpus, ev->pid);
	char name[128];

	for (size_t i = 0; i < w->nr_vcpu_seen; i++)
		if (w->vcpu_seen[i] == ev->pid)
			return;
	if (w->nr_vcpu_seen == w->cap_vcpu_seen) {
		size_t cap = w->cap_vcpu_seen ? w->cap_vcpu_seen * 2 : 64;
		int *grown = realloc(w->vcpu_seen, cap * sizeof(*grown));

		if (!grown)
			return;
		w->vcpu_seen = grown;
		w->cap_vcpu_seen = cap;
	}
	w->vcpu_seen[w->nr_vcpu_seen++] = ev->pid;
	const char *comm = tep_data_comm_from_pid(dom->tep, vm_pid);

	snprintf(name, sizeof(name), "VM %s (pid %d)",
		 t && t->vm_name[0] ? t->vm_name : comm ? comm : "?", vm_pid);
	pf_name(w, "process_name", vm_pid, ev->pid, name);
	if (t && t->vcpu >= 0)
		snprintf(name, sizeof(name), "vCPU %d (tid %d)", t->vcpu, ev->pid);
	else
		snprintf(name, sizeof(name), "vCPU thread %d", ev->pid);
	pf_name(w, "thread_name", vm_pid, ev->pid, name);
	w->st->streams++;
}

static int pf_exit(struct pf_writer *w, const struct tv_event *ev)
{
	struct tv_exit_slot *x = tv_exit_tracker_exit(&w->exits, (uint32_t)ev->pid, ev->ts);

	if (!x)
		return -ENOMEM;
	x->data[0] = 0;
	x->data[1] = 0;
	tv_event_field_u64(ev, "exit_reason", &x->data[0]);
	tv_event_field_u64(ev, "isa", &x->data[1]);
	return 0;
}

static void pf_entry(struct pf_writer *w, const struct tv_event *ev)
{
	const struct tv_domain_info *dom = tv_reader_domain(w->rd, (size_t)ev->domain_index);
	struct tv_exit_slot *x = tv_exit_tracker_find(&w->exits, (uint32_t)ev->pid);
	const char *reason;
	uint64_t dur;
	int vm_pid;

	if (!tv_exit_tracker_close(&w->exits, x, ev->ts, &dur))
		return;
	vm_pid = dom->tgid_of(dom, ev->pid);
	pf_vcpu_track(w, ev, vm_pid);
	reason = tv_kvm_exit_reason_name((enum tv_kvm_isa)x->data[1], x->data[0]);
	pf_begin(w);
	fprintf(w->f, "{\"ph\":\"X\",\"name\":\"exit %s\",\"cat\":\"vmexit\",\"pid\":%d,\"tid\":%d",
		reason ? reason : "?", vm_pid, ev->pid);
	pf_ts(w->f, "ts", x->exit_ts);
	pf_ts(w->f, "dur", dur);
	fprintf(w->f, ",\"args\":{\"exit_reason\":%llu}}", (unsigned long long)x->data[0]);
	w->st->slices++;
}

/* ------------------------------------------------------------ Xen domains */

/* What a Xen domid is in this session: dom0 is the host, a domU the guest
 * domain whose meta names it (xen_domid, written by record --guest xen:). */
void tv_export_xen_dom_label(struct tv_reader *rd, unsigned int domid, char *buf, size_t size)
{
	for (size_t d = 0; domid && d < tv_reader_nr_domains(rd); d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);
		const char *id = tv_meta_get(di->meta, "xen_domid");

		if (id && strtoul(id, NULL, 10) == domid) {
			snprintf(buf, size, "Xen d%u: %s", domid, di->name);
			return;
		}
	}
	snprintf(buf, size, domid ? "Xen d%u" : "Xen d%u: host (dom0)", domid);
}

/* Track @track (0: exits, 1: runstate) of vCPU @vcpu of @domid, named once. */
static int xen_track(struct pf_writer *w, unsigned int domid, unsigned int vcpu, int track)
{
	uint64_t key = (uint64_t)domid << 32 | (vcpu * 2u + (unsigned int)track);
	int pid = XEN_PID_BASE + (int)domid, tid = (int)(vcpu * 2u) + track;
	bool dom_named = false;
	char name[160];

	for (size_t i = 0; i < w->nr_xen_seen; i++) {
		if (w->xen_seen[i] == key)
			return tid;
		dom_named |= w->xen_seen[i] >> 32 == domid;
	}
	if (tv_array_grow(&w->xen_seen, &w->cap_xen_seen, w->nr_xen_seen, sizeof(*w->xen_seen), 64))
		return tid;	/* unnamed, still drawn */
	w->xen_seen[w->nr_xen_seen++] = key;
	if (!dom_named) {
		tv_export_xen_dom_label(w->rd, domid, name, sizeof(name));
		pf_name(w, "process_name", pid, 0, name);
	}
	snprintf(name, sizeof(name), "vCPU %u %s", vcpu, track ? "runstate" : "exits");
	pf_name(w, "thread_name", pid, tid, name);
	w->st->streams++;
	return tid;
}

static void xen_slice(struct pf_writer *w, unsigned int domid, unsigned int vcpu, int track,
		      const char *name, const char *cat, uint64_t ts, uint64_t dur)
{
	int tid = xen_track(w, domid, vcpu, track);

	pf_begin(w);
	fprintf(w->f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d", name,
		cat, XEN_PID_BASE + (int)domid, tid);
	pf_ts(w->f, "ts", ts);
	pf_ts(w->f, "dur", dur);
	fputs("}", w->f);
}

static uint64_t xen_field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

static uint64_t xen_vcpu_key(const struct tv_event *ev, const char *dom, const char *vcpu)
{
	return (xen_field(ev, dom) & 0xffff) << 16 | (xen_field(ev, vcpu) & 0xffff);
}

void tv_export_xen_exit_name(enum tv_kvm_isa isa, uint64_t code, char *buf, size_t size)
{
	const char *reason = tv_kvm_exit_reason_name(isa, code);

	if (reason)
		snprintf(buf, size, "exit %s", reason);
	else
		snprintf(buf, size, "exit 0x%llx", (unsigned long long)code);
}

/* The vCPU's open exit ends at @ts: a slice named by its reason. */
static void xen_exit_close(struct pf_writer *w, uint64_t key, uint64_t ts)
{
	struct tv_exit_slot *x = tv_exit_tracker_find(&w->xen_exits, key);
	char name[64];
	uint64_t dur;

	if (!tv_exit_tracker_close(&w->xen_exits, x, ts, &dur))
		return;
	tv_export_xen_exit_name(w->xen_isa, x->data[0], name, sizeof(name));
	xen_slice(w, (unsigned int)(key >> 16), (unsigned int)(key & 0xffff), 0, name, "vmexit",
		  x->exit_ts, dur);
	w->st->slices++;
}

/*
 * A vCPU's runstate change closes the interval it spent in the old state,
 * and an exit it was in when preempted (the exits are xen/xen_stat.c's: timed
 * per vCPU to the next VMENTRY, or to a preemption, a block not ending them).
 */
static int xen_runstate(struct pf_writer *w, const struct tv_event *ev)
{
	uint64_t key = xen_vcpu_key(ev, "domid", "vcpuid"), dur;
	unsigned int domid = (unsigned int)(key >> 16), vcpu = (unsigned int)(key & 0xffff);
	struct tv_exit_slot *s;

	if (domid == XT_DOMID_IDLE)	/* the idle vCPUs: Xen's CPU tracks show them */
		return 0;
	if (xen_field(ev, "old_state") == 0 && xen_field(ev, "new_state") != 2)
		xen_exit_close(w, key, ev->ts);
	s = tv_exit_tracker_slot(&w->xen_runstate, key);
	if (!s)
		return -ENOMEM;
	if (tv_exit_tracker_close(&w->xen_runstate, s, ev->ts, &dur)) {
		xen_slice(w, domid, vcpu, 1,
			  tv_xen_runstate_name((unsigned int)xen_field(ev, "old_state")),
			  "runstate", s->exit_ts, dur);
		w->st->runstate_slices++;
	}
	s = tv_exit_tracker_exit(&w->xen_runstate, key, ev->ts);
	if (!s)
		return -ENOMEM;
	s->label = (int)xen_field(ev, "new_state");
	return 0;
}

static int xen_vmexit(struct pf_writer *w, const struct tv_event *ev)
{
	struct tv_exit_slot *x = tv_exit_tracker_exit(&w->xen_exits,
						      xen_vcpu_key(ev, "cur_dom", "cur_vcpu"), ev->ts);

	if (!x)
		return -ENOMEM;
	x->data[0] = xen_field(ev, "exit_reason");
	return 0;
}

/* Lost records: the exits whose end they may hold draw no slice (as in stat). */
static void xen_lost(struct pf_writer *w, const struct tv_event *ev)
{
	tv_exit_tracker_drop(&w->xen_exits, tv_exit_tracker_find(&w->xen_exits,
			     xen_vcpu_key(ev, "domid", "vcpuid")));
	for (size_t i = 0; i < w->xen_exits.cap; i++) {
		struct tv_exit_slot *r;

		if (!w->xen_exits.slots[i].key)
			continue;
		r = tv_exit_tracker_find(&w->xen_runstate, w->xen_exits.slots[i].key - 1);
		if (r && r->label != 0)
			tv_exit_tracker_drop(&w->xen_exits, &w->xen_exits.slots[i]);
	}
}

/* Xen records that draw slices: runstate changes, VMEXIT and VMENTRY. */
static int xen_event(struct pf_writer *w, const struct tv_event *ev)
{
	switch (ev->format->id) {
	case TV_XEN_EV_RUNSTATE:
		return xen_runstate(w, ev);
	case TV_XEN_EV_VMEXIT:
		return xen_vmexit(w, ev);
	case TV_XEN_EV_VMENTRY:
		xen_exit_close(w, xen_vcpu_key(ev, "cur_dom", "cur_vcpu"), ev->ts);
		return 0;
	case TV_XEN_EV_LOST:
		xen_lost(w, ev);
		return 0;
	}
	return 0;
}

/* The HVM ISA Xen recorded (its domain's meta hvm_isa), for exit names. */
enum tv_kvm_isa tv_export_xen_isa(struct tv_reader *rd)
{
	for (size_t d = 0; d < tv_reader_nr_domains(rd); d++) {
		const struct tv_domain_info *di = tv_reader_domain(rd, d);
		const char *kind = tv_meta_get(di->meta, "kind");
		const char *isa = tv_meta_get(di->meta, "hvm_isa");

		if (kind && !strcmp(kind, "xen-trace") && isa)
			return !strcmp(isa, "vmx") ? TV_KVM_ISA_VMX
			       : !strcmp(isa, "svm") ? TV_KVM_ISA_SVM : TV_KVM_ISA_UNKNOWN;
	}
	return TV_KVM_ISA_UNKNOWN;
}

int tv_export_perfetto_json(struct tv_reader *rd, const char *out, struct tv_export_stats *st)
{
	/* The output buffer is the call's own: exports may run in parallel. */
	const size_t buf_size = 1 << 20;
	struct pf_writer w = { .rd = rd, .first = 1, .st = st };
	struct tv_event ev;
	char *buf;
	int ret;

	w.f = fopen(out, "we");
	w.cpu_seen = calloc(tv_reader_nr_domains(rd) * 4096, 1);
	buf = malloc(buf_size);
	if (!w.f || !w.cpu_seen || !buf) {
		ret = !w.f ? -errno : -ENOMEM;
		tv_err("Cannot create output file: path=\"%s\", errno=%d (%s)", out, -ret, strerror(-ret));
		goto out;
	}
	setvbuf(w.f, buf, _IOFBF, buf_size);
	w.xen_isa = tv_export_xen_isa(rd);
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", w.f);
	while ((ret = tv_reader_next(rd, &ev)) > 0) {
		if (!ev.format)
			continue;
		st->events++;
		pf_instant(&w, &ev);
		if (!strcmp(ev.format->system, "kvm") && !strcmp(ev.format->name, "kvm_exit")) {
			ret = pf_exit(&w, &ev);
			if (ret)
				break;
		} else if (!strcmp(ev.format->system, "kvm") && !strcmp(ev.format->name, "kvm_entry")) {
			pf_entry(&w, &ev);
		} else if (!strcmp(ev.format->system, "xen")) {
			ret = xen_event(&w, &ev);
			if (ret)
				break;
		}
	}
	/* Exits shown as instants only: no entry followed (or it came first). */
	st->unpaired_exits = w.exits.unmatched + w.exits.backwards + tv_exit_tracker_open(&w.exits) +
			     w.xen_exits.unmatched + w.xen_exits.backwards +
			     tv_exit_tracker_open(&w.xen_exits);
	tv_exit_tracker_free(&w.exits);
	tv_exit_tracker_free(&w.xen_exits);
	tv_exit_tracker_free(&w.xen_runstate);
	fputs("\n]}\n", w.f);
	if (fclose(w.f) && !ret) {
		tv_err("Cannot write output file: path=\"%s\", errno=%d (%s)", out, errno, strerror(errno));
		ret = -EIO;
	}
	w.f = NULL;
out:
	if (w.f)
		fclose(w.f);
	free(buf);	/* after fclose(): the stream used it to the end */
	tv_strbuf_free(&w.sb);
	free(w.cpu_seen);
	free(w.vcpu_seen);
	free(w.ust_seen);
	free(w.xen_seen);
	return ret < 0 ? ret : 0;
}
