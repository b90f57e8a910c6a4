// SPDX-License-Identifier: LGPL-2.1
/*
 * Chrome/Perfetto trace-event JSON, written as events stream by: every
 * event is an instant on its domain's CPU track; VM exits are complete
 * slices (kvm_exit -> kvm_entry) on the vCPU thread's track, grouped by VM.
 * Track names are metadata events emitted when a track first appears, so
 * nothing but the open exits is kept in memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exit_tracker.h"

#define CPU_PID_BASE 1000000	/* synthetic pids for the per-domain CPU tracks */
#define UST_PID_BASE 2000000	/* synthetic pids for the traced processes (kind ust) */

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

int tv_export_perfetto(struct tv_reader *rd, const char *out, struct tv_export_stats *st)
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
		int err = !w.f ? errno : ENOMEM;

		tv_err("Cannot create output file: path=\"%s\", errno=%d (%s)", out, err, strerror(err));
		free(w.cpu_seen);
		if (w.f)
			fclose(w.f);
		free(buf);
		return -err;
	}
	setvbuf(w.f, buf, _IOFBF, buf_size);
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
		} else if (!strcmp(ev.format->system, "kvm") && !strcmp(ev.format->name, "kvm_entry"))
			pf_entry(&w, &ev);
	}
	/* Exits shown as instants only: no entry followed (or it came first). */
	st->unpaired_exits = w.exits.unmatched + w.exits.backwards + tv_exit_tracker_open(&w.exits);
	tv_exit_tracker_free(&w.exits);
	fputs("\n]}\n", w.f);
	if (fclose(w.f) && !ret) {
		tv_err("Cannot write output file: path=\"%s\", errno=%d (%s)", out, errno, strerror(errno));
		ret = -EIO;
	}
	free(buf);	/* after fclose(): the stream used it to the end */
	tv_strbuf_free(&w.sb);
	free(w.cpu_seen);
	free(w.vcpu_seen);
	free(w.ust_seen);
	return ret < 0 ? ret : 0;
}
