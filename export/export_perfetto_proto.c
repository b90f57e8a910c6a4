// SPDX-License-Identifier: LGPL-2.1
/*
 * Perfetto's native trace format: protobuf TracePackets, encoded by hand
 * (field numbers: doc/perfetto/trace.proto, transcribed from Perfetto's
 * published protos), streamed as the merged read gives the events.
 *
 * Layout, one process group per layer:
 *   "host CPUs", "guest:NAME CPUs": a child track per CPU, every event an
 *     instant on it, the tasks of sched_switch as slices around them;
 *   "VM NAME (pid N)": a thread track per vCPU thread (the real host tid),
 *     each VM exit a slice named "exit REASON" (its kvm_exit is the slice's
 *     begin, its kvm_entry the end; one without its entry an instant "exit
 *     REASON (no entry)"), the vCPU thread's other KVM events
 *     instants in it; a flow from the exit to an instant "exit REASON" at
 *     the same time on guest CPU N (vCPU N) of the guest domain that VM
 *     runs: inside the task slice the exit interrupted;
 *   "xen pCPUs": a track per physical CPU, Xen's records instants on it and
 *     the domain vCPU running there (runstate changes) as slices "dD vV";
 *   "ust-...": a track per traced thread.
 * Each domain's group starts with a "sync" instant (method, quality, bound,
 * pieces, causality checks of sync/transforms) and ClockSnapshots pairing
 * the domain's own clock (a clock of the sequence, 65 + domain) with the
 * reference clock at each clock piece (else at its first event); the reference
 * clock (the host's trace clock) is shown as Perfetto's BOOTTIME.
 *
 * Size: one packet sequence; event names, slice names and comms interned;
 * timestamps are deltas on an incremental clock of the sequence (64), so an
 * instant is ~17 bytes.  A packet earlier than the one before it (an exit's
 * begin, written at its entry; a clock error of a guest) carries an absolute
 * BOOTTIME timestamp instead.  Event fields are not written: the CTF and
 * perfetto-json exports have them.
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
#include "xen_trace.h"
#include "export_perfetto.h"
#include "exporters.h"

/* Field numbers (doc/perfetto/trace.proto). */
enum {
	F_TRACE_PACKET = 1,
	F_PKT_CLOCK_SNAPSHOT = 6, F_PKT_TIMESTAMP = 8, F_PKT_SEQ_ID = 10, F_PKT_TRACK_EVENT = 11,
	F_PKT_INTERNED = 12, F_PKT_SEQ_FLAGS = 13, F_PKT_CLOCK_ID = 58, F_PKT_DEFAULTS = 59,
	F_PKT_TRACK_DESC = 60, F_PKT_FIRST_ON_SEQ = 87,
	F_CLOCKS = 1, F_PRIMARY_CLOCK = 2, F_CLOCK_ID = 1, F_CLOCK_TS = 2, F_CLOCK_INCREMENTAL = 3,
	F_INTERNED_EVENT_NAMES = 2, F_IID = 1, F_NAME = 2,
	F_TE_DEBUG = 4, F_TE_TYPE = 9, F_TE_NAME_IID = 10, F_TE_TRACK = 11, F_TE_NAME = 23,
	F_TE_FLOW = 47, F_TE_FLOW_END = 48,
	F_DA_UINT = 3, F_DA_INT = 4, F_DA_STRING = 6, F_DA_NAME = 10,
	F_TD_UUID = 1, F_TD_NAME = 2, F_TD_PROCESS = 3, F_TD_THREAD = 4, F_TD_PARENT = 5,
	F_PD_PID = 1, F_PD_NAME = 6, F_THD_PID = 1, F_THD_TID = 2, F_THD_NAME = 5,
};
enum { TE_BEGIN = 1, TE_END = 2, TE_INSTANT = 3 };
enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

#define CLOCK_BOOTTIME 6
#define CLOCK_DELTA 64		/* the sequence's incremental clock */
#define CLOCK_DOMAIN 65		/* + domain index: a domain's own clock */
#define CLOCK_DOMAIN_MAX 127
#define SEQ_ID 1
#define SEQ_CLEARED 1
#define SEQ_NEEDS_STATE 2
#define MAX_CPUS 4096		/* CPU tracks per domain (as the JSON export) */
#define PKT_MAX 4096		/* one packet's encoding; names are cut to fit */
#define NAME_MAX_LEN 255
#define OUT_BUF (1 << 20)

/* ------------------------------------------------------------ encoder */

struct pb {
	uint8_t *p, *end;
};

static inline void pb_varint(struct pb *b, uint64_t v)
{
	while (v >= 0x80 && b->p < b->end) {
		*b->p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	if (b->p < b->end)
		*b->p++ = (uint8_t)v;
}

static inline void pb_tag(struct pb *b, unsigned int field, unsigned int wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

static inline void pb_uint(struct pb *b, unsigned int field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

static void pb_fixed64(struct pb *b, unsigned int field, uint64_t v)
{
	pb_tag(b, field, WT_FIXED64);
	for (int i = 0; i < 8 && b->p < b->end; i++)
		*b->p++ = (uint8_t)(v >> (8 * i));
}

static void pb_bytes(struct pb *b, unsigned int field, const void *data, size_t n)
{
	pb_tag(b, field, WT_LEN);
	pb_varint(b, n);
	if (n > (size_t)(b->end - b->p))
		n = (size_t)(b->end - b->p);
	memcpy(b->p, data, n);
	b->p += n;
}

static void pb_str(struct pb *b, unsigned int field, const char *s)
{
	size_t n = strlen(s);

	pb_bytes(b, field, s, n < NAME_MAX_LEN ? n : NAME_MAX_LEN);
}

/*
 * A nested message: its length is written once it is known, on the
 * 2 bytes reserved here (messages of this file stay under 16 KiB).
 */
static uint8_t *pb_open(struct pb *b, unsigned int field)
{
	uint8_t *at;

	pb_tag(b, field, WT_LEN);
	at = b->p;
	if (b->end - b->p >= 2)
		b->p += 2;
	return at;
}

static void pb_close(struct pb *b, uint8_t *at)
{
	size_t n = (size_t)(b->p - at - 2);

	at[0] = (uint8_t)(n | 0x80);
	at[1] = (uint8_t)(n >> 7);
}

/* ------------------------------------------------------------ tables */

/* Open addressing, 64-bit key -> 32-bit value; key 0 is never used. */
struct pf_map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, nr;
};

static uint32_t *pf_map_get(struct pf_map *m, uint64_t key, bool create);

static int pf_map_grow(struct pf_map *m)
{
	struct pf_map n = { .cap = m->cap ? m->cap * 2 : 256 };

	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			*pf_map_get(&n, m->keys[i], true) = m->vals[i];
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

/* The value of @key (created 0 when @create), or NULL (absent, or -ENOMEM). */
static uint32_t *pf_map_get(struct pf_map *m, uint64_t key, bool create)
{
	size_t i;

	if (create && (m->nr + 1) * 2 > m->cap && pf_map_grow(m))
		return NULL;
	if (!m->cap)
		return NULL;
	for (i = (key * 0x9e3779b97f4a7c15ull) >> 40 & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return &m->vals[i];
	if (!create)
		return NULL;
	m->keys[i] = key;
	m->vals[i] = 0;
	m->nr++;
	return &m->vals[i];
}

static void pf_map_free(struct pf_map *m)
{
	free(m->keys);
	free(m->vals);
}

/*
 * Names are found by their 64-bit FNV-1a hash, salted by @salt, and each
 * hit is checked against the name kept for its iid: FNV is no defence
 * against a guest that crafts a comm colliding with a host event's name,
 * and a collision must not rename another domain's events (pf_intern).
 */
static uint64_t pf_hash(const char *s, uint64_t salt)
{
	uint64_t h = 1469598103934665603ull ^ (salt * 0x9e3779b97f4a7c15ull);

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h ? h : 1;
}

/* ------------------------------------------------------------ writer */

enum ev_kind { EK_OTHER, EK_KVM, EK_KVM_RUN, EK_KVM_EXIT, EK_KVM_ENTRY, EK_SCHED_SWITCH };
enum dom_kind { DK_LINUX, DK_GUEST, DK_UST, DK_XEN };

struct pf_event_info {		/* per tracepoint format, made on first sight */
	uint32_t iid;
	enum ev_kind kind;
};

struct pf_domain {
	enum dom_kind kind;
	uint32_t group;		/* uuid of the layer's process track, 0: not yet */
	bool synced_out;	/* the sync instant and clock snapshot written */
	uint32_t *cpu_track;	/* [MAX_CPUS] uuid per CPU, 0: not yet */
	uint32_t *cpu_task;	/* [MAX_CPUS] open task slice per CPU (1) */
	uint64_t *cpu_last;	/* [MAX_CPUS] last event's timestamp per CPU */
	uint64_t *xen_running;	/* xen: [MAX_CPUS] (domid << 16 | vcpu) + 1 running */
};

struct pf_proto {
	FILE *f;
	struct tv_reader *rd;
	struct tv_export_stats *st;
	uint8_t *buf;		/* output, flushed when full */
	size_t len;
	uint8_t pkt[PKT_MAX];	/* the packet being encoded */
	uint8_t interned[PKT_MAX];	/* its new interned names */
	size_t interned_len;
	uint64_t last_ts;	/* of the incremental clock */
	uint32_t next_uuid, next_iid;
	uint64_t next_flow;
	struct pf_map names;	/* salted string hash -> iid */
	char **name_of;		/* [iid]: the interned names, to check each hit */
	size_t cap_names;
	struct pf_map formats;	/* tep_event pointer -> index in infos */
	struct pf_event_info *infos;
	size_t nr_infos, cap_infos;
	struct pf_map tracks;	/* (kind, domain, id) -> uuid */
	struct pf_map vcpu_ids;	/* vCPU thread tid + 1 -> vCPU number + 1 */
	struct pf_domain *dom;
	size_t nr_dom;
	int host;		/* domain index of the host, -1: none */
	struct tv_exit_tracker exits;	/* per vCPU tid: open exit, data: reason, isa */
	struct tv_exit_tracker xen_exits;	/* per domid << 16 | vcpu: open HVM exit */
	struct tv_sync_result sync;
	enum tv_kvm_isa xen_isa;
	int err;
};

static int pf_flush(struct pf_proto *w)
{
	if (w->len && fwrite(w->buf, 1, w->len, w->f) != w->len) {
		w->err = -EIO;
		return -EIO;
	}
	w->len = 0;
	return 0;
}

/* Append the packet ending at @end: Trace.packet (field 1), length-delimited. */
static void pf_emit(struct pf_proto *w, const uint8_t *end)
{
	size_t n = (size_t)(end - w->pkt);
	struct pb hdr;

	if (w->len + n + 16 > OUT_BUF && pf_flush(w))
		return;
	hdr.p = w->buf + w->len;
	hdr.end = hdr.p + 16;
	pb_tag(&hdr, F_TRACE_PACKET, WT_LEN);
	pb_varint(&hdr, n);
	memcpy(hdr.p, w->pkt, n);
	w->len = (size_t)(hdr.p - w->buf) + n;
}

/*
 * The iid of name @s, interned on first use: its EventName goes in the
 * next packet's interned_data (pf_packet_start writes it).
 */
static uint32_t pf_intern(struct pf_proto *w, const char *s)
{
	struct pb b = { w->interned + w->interned_len, w->interned + sizeof(w->interned) };
	uint32_t *v = NULL;
	uint8_t *m;

	/* a hit under another name: the next salt (a crafted collision costs a probe) */
	for (uint64_t salt = 0; !v || (*v && strcmp(w->name_of[*v], s)); salt++) {
		v = pf_map_get(&w->names, pf_hash(s, salt), true);
		if (!v) {
			w->err = -ENOMEM;
			return 0;
		}
	}
	if (*v)
		return *v;
	if (w->next_iid + 1 >= w->cap_names) {
		size_t cap = w->cap_names ? w->cap_names * 2 : 256;
		char **n = realloc(w->name_of, cap * sizeof(*n));

		if (!n) {
			w->err = -ENOMEM;
			return 0;
		}
		w->name_of = n;
		w->cap_names = cap;
	}
	w->name_of[w->next_iid + 1] = strdup(s);
	if (!w->name_of[w->next_iid + 1]) {
		w->err = -ENOMEM;
		return 0;
	}
	*v = ++w->next_iid;
	m = pb_open(&b, F_INTERNED_EVENT_NAMES);
	pb_uint(&b, F_IID, *v);
	pb_str(&b, F_NAME, s);
	pb_close(&b, m);
	w->interned_len = (size_t)(b.p - w->interned);
	return *v;
}

/* A packet's common fields: timestamp (delta, or absolute when earlier), sequence. */
static struct pb pf_packet_start(struct pf_proto *w, uint64_t ts)
{
	struct pb b = { w->pkt, w->pkt + sizeof(w->pkt) };

	if (ts >= w->last_ts) {
		pb_uint(&b, F_PKT_TIMESTAMP, ts - w->last_ts);
		w->last_ts = ts;
	} else {
		pb_uint(&b, F_PKT_TIMESTAMP, ts);
		pb_uint(&b, F_PKT_CLOCK_ID, CLOCK_BOOTTIME);
	}
	pb_uint(&b, F_PKT_SEQ_ID, SEQ_ID);
	pb_uint(&b, F_PKT_SEQ_FLAGS, SEQ_NEEDS_STATE);
	if (w->interned_len) {
		pb_bytes(&b, F_PKT_INTERNED, w->interned, w->interned_len);
		w->interned_len = 0;
	}
	return b;
}

struct pf_te {
	int type;
	uint32_t track, name_iid;
	uint64_t flow, flow_end;
};

static void pf_track_event(struct pf_proto *w, uint64_t ts, const struct pf_te *te)
{
	struct pb b = pf_packet_start(w, ts);
	uint8_t *m = pb_open(&b, F_PKT_TRACK_EVENT);

	pb_uint(&b, F_TE_TYPE, (uint64_t)te->type);
	if (te->name_iid)
		pb_uint(&b, F_TE_NAME_IID, te->name_iid);
	pb_uint(&b, F_TE_TRACK, te->track);
	if (te->flow)
		pb_fixed64(&b, F_TE_FLOW, te->flow);
	if (te->flow_end)
		pb_fixed64(&b, F_TE_FLOW_END, te->flow_end);
	pb_close(&b, m);
	pf_emit(w, b.p);
}

/* ------------------------------------------------------------ tracks */

enum { TK_VCPU = 1, TK_VM, TK_UST, TK_XEN_DOM, TK_XEN_VCPU };

/*
 * A TrackDescriptor: a process (group) when @pid >= 0 and @tid < 0, a thread
 * of @pid when both are >= 0 (it joins its process by pid: Perfetto takes
 * no parent for a thread track), a plain child of @parent otherwise.
 */
static uint32_t pf_track_new(struct pf_proto *w, uint32_t parent, int pid, int tid, const char *name)
{
	struct pb b = { w->pkt, w->pkt + sizeof(w->pkt) };
	uint32_t uuid = ++w->next_uuid;
	uint8_t *m, *d;

	pb_uint(&b, F_PKT_SEQ_ID, SEQ_ID);
	m = pb_open(&b, F_PKT_TRACK_DESC);
	pb_uint(&b, F_TD_UUID, uuid);
	if (parent && pid < 0)
		pb_uint(&b, F_TD_PARENT, parent);
	if (pid >= 0 && tid < 0) {
		d = pb_open(&b, F_TD_PROCESS);
		pb_uint(&b, F_PD_PID, (uint32_t)pid);
		pb_str(&b, F_PD_NAME, name);
		pb_close(&b, d);
	} else if (pid >= 0) {
		d = pb_open(&b, F_TD_THREAD);
		pb_uint(&b, F_THD_PID, (uint32_t)pid);
		pb_uint(&b, F_THD_TID, (uint32_t)tid);
		pb_str(&b, F_THD_NAME, name);
		pb_close(&b, d);
	} else {
		pb_str(&b, F_TD_NAME, name);
	}
	pb_close(&b, m);
	pf_emit(w, b.p);
	w->st->streams++;
	return uuid;
}

/* The uuid of track (@kind, @domain, @id), made by @name's caller when 0. */
static uint32_t *pf_track_slot(struct pf_proto *w, int kind, int domain, uint32_t id)
{
	uint32_t *v = pf_map_get(&w->tracks, (uint64_t)kind << 56 | (uint64_t)(domain & 0xffffff) << 32 | id,
				 true);

	if (!v)
		w->err = -ENOMEM;
	return v;
}

/*
 * Synthetic pids of the layer groups (+ domain index) and, from half of it,
 * of the Xen domains (+ domid): above Linux's pid_max (2^22), so that no
 * VMM's process (a VM group has its real pid) merges with one.
 */
#define PID_BASE 2000000000

static void pf_sync_out(struct pf_proto *w, int d, const struct tv_event *ev);

/* The layer's process track of domain @d: "host CPUs", "xen pCPUs", ... */
static uint32_t pf_group(struct pf_proto *w, int d, const struct tv_event *ev)
{
	struct pf_domain *pd = &w->dom[d];
	const struct tv_domain_info *di = tv_reader_domain(w->rd, (size_t)d);
	char name[160];

	if (pd->group)
		return pd->group;
	if (pd->kind == DK_UST)
		snprintf(name, sizeof(name), "%s: %s (pid %s)", di->name,
			 tv_meta_get(di->meta, "comm") ?: "?", tv_meta_get(di->meta, "pid") ?: "?");
	else
		snprintf(name, sizeof(name), "%s %s", di->name, pd->kind == DK_XEN ? "pCPUs" : "CPUs");
	pd->group = pf_track_new(w, 0, PID_BASE + d, -1, name);
	pf_sync_out(w, d, ev);
	return pd->group;
}

static uint32_t pf_cpu_track(struct pf_proto *w, const struct tv_event *ev)
{
	struct pf_domain *pd = &w->dom[ev->domain_index];
	uint32_t *t = &pd->cpu_track[ev->cpu & (MAX_CPUS - 1)];
	char name[128];

	if (*t)
		return *t;
	snprintf(name, sizeof(name), "%s %s %d", ev->domain, pd->kind == DK_XEN ? "pCPU" : "CPU", ev->cpu);
	*t = pf_track_new(w, pf_group(w, ev->domain_index, ev), -1, -1, name);
	return *t;
}

static uint32_t pf_ust_track(struct pf_proto *w, const struct tv_event *ev)
{
	uint32_t *t = pf_track_slot(w, TK_UST, ev->domain_index, (uint32_t)ev->pid);
	const char *comm;
	char name[128];

	if (!t || *t)
		return t ? *t : 0;
	comm = tep_data_comm_from_pid(ev->tep, ev->pid);
	snprintf(name, sizeof(name), "%s (tid %d)", comm ? comm : "?", ev->pid);
	*t = pf_track_new(w, pf_group(w, ev->domain_index, ev), -1, -1, name);
	return *t;
}

/* The vCPU thread's track, in its VM's process ("VM NAME (pid N)"). */
static uint32_t pf_vcpu_track(struct pf_proto *w, const struct tv_event *ev)
{
	const struct tv_domain_info *di = ev->domain_info;
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(di->vcpus, ev->pid);
	uint32_t *vt = pf_track_slot(w, TK_VCPU, ev->domain_index, (uint32_t)ev->pid), *vm;
	int vm_pid = di->tgid_of(di, ev->pid);
	const char *comm;
	char name[128];

	if (!vt || *vt)
		return vt ? *vt : 0;
	vm = pf_track_slot(w, TK_VM, ev->domain_index, (uint32_t)vm_pid);
	if (!vm)
		return 0;
	if (!*vm) {
		comm = tep_data_comm_from_pid(ev->tep, vm_pid);
		snprintf(name, sizeof(name), "VM %s (pid %d)",
			 t && t->vm_name[0] ? t->vm_name : comm ? comm : "?", vm_pid);
		*vm = pf_track_new(w, 0, vm_pid, -1, name);
	}
	if (t && t->vcpu >= 0)
		snprintf(name, sizeof(name), "vCPU %d (tid %d)", t->vcpu, ev->pid);
	else
		snprintf(name, sizeof(name), "vCPU thread %d", ev->pid);
	*vt = pf_track_new(w, *vm, vm_pid, ev->pid, name);
	return *vt;
}

/* ------------------------------------------------------------ sync */

static void pf_annotation(struct pb *b, const char *name, const char *s, int64_t v)
{
	uint8_t *m = pb_open(b, F_TE_DEBUG);

	pb_str(b, F_DA_NAME, name);
	if (s)
		pb_str(b, F_DA_STRING, s);
	else
		pb_uint(b, F_DA_INT, (uint64_t)v);
	pb_close(b, m);
}

static void pf_clock_pair(struct pb *b, uint32_t clock, uint64_t ts)
{
	uint8_t *m = pb_open(b, F_CLOCKS);

	pb_uint(b, F_CLOCK_ID, clock);
	pb_uint(b, F_CLOCK_TS, ts);
	pb_close(b, m);
}

/* A ClockSnapshot: domain @d's clock at @dom_ts is @ref_ts in the reference. */
static void pf_clock_snapshot(struct pf_proto *w, int d, int64_t dom_ts, int64_t ref_ts)
{
	struct pb b = { w->pkt, w->pkt + sizeof(w->pkt) };
	uint8_t *m;

	if (CLOCK_DOMAIN + d > CLOCK_DOMAIN_MAX || dom_ts < 0 || ref_ts < 0)
		return;
	pb_uint(&b, F_PKT_SEQ_ID, SEQ_ID);
	m = pb_open(&b, F_PKT_CLOCK_SNAPSHOT);
	pf_clock_pair(&b, (uint32_t)(CLOCK_DOMAIN + d), (uint64_t)dom_ts);
	pf_clock_pair(&b, CLOCK_BOOTTIME, (uint64_t)ref_ts);
	pb_close(&b, m);
	pf_emit(w, b.p);
}

static const struct tv_sync_domain *pf_sync_of(const struct pf_proto *w, const char *subdir)
{
	for (size_t i = 0; i < w->sync.nr; i++)
		if (!strcmp(w->sync.domains[i].domain, subdir))
			return &w->sync.domains[i];
	return NULL;
}

/*
 * Domain @d's sync result, once, at its first event @ev: an instant "sync"
 * on its group with the method and bound, and clock snapshots (one per
 * clock piece, or else the first event's own pair).
 */
static void pf_sync_out(struct pf_proto *w, int d, const struct tv_event *ev)
{
	const struct tv_domain_info *di = tv_reader_domain(w->rd, (size_t)d);
	const struct tv_sync_domain *s = pf_sync_of(w, di->subdir);
	struct pb b;
	uint8_t *m;

	if (w->dom[d].synced_out)
		return;
	w->dom[d].synced_out = true;
	/* a clock's snapshots in its own order: the pieces when it has some */
	if (!s || !s->nr_pieces)
		pf_clock_snapshot(w, d, (int64_t)ev->ts_raw, (int64_t)ev->ts);
	for (size_t i = 0; s && i < s->nr_pieces; i++)
		pf_clock_snapshot(w, d, s->pieces[i].from_dom,
				  (int64_t)tv_sync_domain_apply(s, (uint64_t)s->pieces[i].from_dom));
	b = pf_packet_start(w, ev->ts);
	m = pb_open(&b, F_PKT_TRACK_EVENT);
	pb_uint(&b, F_TE_TYPE, TE_INSTANT);
	pb_uint(&b, F_TE_TRACK, w->dom[d].group);
	pb_str(&b, F_TE_NAME, s ? "sync" : "sync: none");
	pf_annotation(&b, "domain_clock", tv_meta_get(di->meta, "clock") ?: "?", 0);
	if (s) {
		pf_annotation(&b, "via", s->via, 0);
		pf_annotation(&b, "method", s->method, 0);
		pf_annotation(&b, "quality", tv_sync_quality_name(s->est.quality), 0);
		pf_annotation(&b, "bound_ns", NULL, s->est.bound_ns);
		pf_annotation(&b, "pieces", NULL, (int64_t)s->nr_pieces);
		pf_annotation(&b, "probes", NULL, (int64_t)s->nr_probes);
		pf_annotation(&b, "causality_violations", NULL, (int64_t)s->causality_violations);
	}
	pb_close(&b, m);
	pf_emit(w, b.p);
}

/* ------------------------------------------------------------ events */

static enum ev_kind pf_classify(const struct tep_event *fmt)
{
	/* KVM emits these only inside KVM_RUN: their thread is a vCPU's */
	static const char *const run_events[] = {
		"kvm_userspace_exit", "kvm_pio", "kvm_mmio", "kvm_emulate_insn", "kvm_cpuid",
		"kvm_msr", "kvm_hypercall", "kvm_page_fault", "kvm_inj_exception", "kvm_inj_virq",
		"kvm_fpu",
	};

	if (!strcmp(fmt->system, "sched") && !strcmp(fmt->name, "sched_switch"))
		return EK_SCHED_SWITCH;
	if (strcmp(fmt->system, "kvm"))
		return EK_OTHER;
	if (!strcmp(fmt->name, "kvm_exit"))
		return EK_KVM_EXIT;
	if (!strcmp(fmt->name, "kvm_entry"))
		return EK_KVM_ENTRY;
	for (size_t i = 0; i < sizeof(run_events) / sizeof(*run_events); i++)
		if (!strcmp(fmt->name, run_events[i]))
			return EK_KVM_RUN;
	return EK_KVM;
}

/* The interned name and kind of @ev's format, worked out once per format. */
static const struct pf_event_info *pf_info(struct pf_proto *w, const struct tv_event *ev)
{
	uint32_t *v = pf_map_get(&w->formats, (uint64_t)(uintptr_t)ev->format, true);
	struct pf_event_info *info;
	char name[160];

	if (!v || (!*v && tv_array_grow(&w->infos, &w->cap_infos, w->nr_infos, sizeof(*w->infos), 64))) {
		w->err = -ENOMEM;
		return NULL;
	}
	if (*v)
		return &w->infos[*v - 1];
	info = &w->infos[w->nr_infos];
	snprintf(name, sizeof(name), "%s:%s", ev->format->system, ev->format->name);
	info->iid = pf_intern(w, name);
	info->kind = pf_classify(ev->format);
	*v = (uint32_t)++w->nr_infos;
	return info;
}

static uint64_t pf_field(const struct tv_event *ev, const char *name)
{
	uint64_t v = 0;

	tv_event_field_u64(ev, name, &v);
	return v;
}

static void pf_instant(struct pf_proto *w, uint64_t ts, uint32_t track, uint32_t iid)
{
	struct pf_te te = { .type = TE_INSTANT, .track = track, .name_iid = iid };

	pf_track_event(w, ts, &te);
}

/* The guest domain whose vCPU thread @ev's is (vcpus file's VM name, or the only guest); -1: none. */
static int pf_guest_of(struct pf_proto *w, const struct tv_event *ev)
{
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(ev->domain_info->vcpus, ev->pid);
	int only = -1, n = 0;

	for (size_t d = 0; d < w->nr_dom; d++) {
		if (w->dom[d].kind != DK_GUEST)
			continue;
		n++;
		only = (int)d;
		if (t && !strcmp(tv_reader_domain(w->rd, d)->subdir + 6, t->vm_name))
			return (int)d;
	}
	return n == 1 ? only : -1;
}

/* The interned name of open exit @x: "exit REASON" (as stat names it), + @suffix. */
static uint32_t pf_exit_name(struct pf_proto *w, const struct tv_exit_slot *x, const char *suffix)
{
	char reason[48], name[80];

	tv_kvm_exit_reason_label((enum tv_kvm_isa)x->data[1], x->data[0], reason, sizeof(reason));
	snprintf(name, sizeof(name), "exit %s%s", reason, suffix);
	return pf_intern(w, name);
}

/* An exit whose entry is lost (or came first): an instant "exit REASON (no entry)". */
static void pf_exit_unpaired(struct pf_proto *w, const struct tv_exit_slot *x, uint32_t track)
{
	pf_instant(w, x->exit_ts, track, pf_exit_name(w, x, " (no entry)"));
}

/* A kvm_exit: held until its entry (the slice's begin is written then). */
static void pf_kvm_exit(struct pf_proto *w, const struct tv_event *ev)
{
	struct tv_exit_slot *x = tv_exit_tracker_find(&w->exits, (uint32_t)ev->pid);
	uint32_t track = pf_vcpu_track(w, ev);

	if (x && x->open)
		pf_exit_unpaired(w, x, track);
	x = tv_exit_tracker_exit(&w->exits, (uint32_t)ev->pid, ev->ts);
	if (!x) {
		w->err = -ENOMEM;
		return;
	}
	x->data[0] = pf_field(ev, "exit_reason");
	x->data[1] = pf_field(ev, "isa");
}

/* vCPU thread @ev's vCPU number: its events' vcpu_id (as stat learns it), else the vcpus file's. */
static int pf_vcpu_of(struct pf_proto *w, const struct tv_event *ev)
{
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(ev->domain_info->vcpus, ev->pid);
	uint32_t *v = pf_map_get(&w->vcpu_ids, (uint64_t)(uint32_t)ev->pid + 1, true);
	uint64_t id;

	if (!v) {
		w->err = -ENOMEM;
		return -1;
	}
	if (!tv_event_field_u64(ev, "vcpu_id", &id) && id < MAX_CPUS)
		*v = (uint32_t)id + 1;
	if (*v)
		return (int)*v - 1;
	return t && t->vcpu >= 0 && t->vcpu < MAX_CPUS ? t->vcpu : -1;
}

/*
 * A kvm_entry closes its vCPU's open exit: a slice "exit REASON" from the
 * exit to here.  When the VM's guest is traced and its CPU N (vCPU N) has
 * begun, a flow goes from the slice to an instant "exit REASON" on that
 * guest CPU's track at the exit's time: inside the guest's task slice, the
 * activity the exit interrupted (the guest runs no code until the entry).
 */
static void pf_kvm_entry(struct pf_proto *w, const struct tv_event *ev, const struct pf_event_info *info)
{
	struct tv_exit_slot *x = tv_exit_tracker_find(&w->exits, (uint32_t)ev->pid);
	struct pf_te te = { .type = TE_BEGIN, .track = pf_vcpu_track(w, ev) };
	int vcpu = pf_vcpu_of(w, ev), g = pf_guest_of(w, ev);
	bool was_open = x && x->open;
	uint64_t dur;

	if (!tv_exit_tracker_close(&w->exits, x, ev->ts, &dur)) {
		if (was_open)	/* an entry before its exit: both instants */
			pf_exit_unpaired(w, x, te.track);
		pf_instant(w, ev->ts, te.track, info->iid);
		return;
	}
	te.name_iid = pf_exit_name(w, x, "");
	if (g >= 0 && vcpu >= 0 && w->dom[g].cpu_track[vcpu])
		te.flow = ++w->next_flow;
	pf_track_event(w, x->exit_ts, &te);
	if (te.flow) {
		struct pf_te mark = { .type = TE_INSTANT, .track = w->dom[g].cpu_track[vcpu],
				      .name_iid = te.name_iid, .flow_end = te.flow };

		pf_track_event(w, x->exit_ts, &mark);
	}
	te.type = TE_END;
	te.name_iid = 0;
	te.flow = 0;
	pf_track_event(w, ev->ts, &te);
	w->st->slices++;
}

/* A sched_switch: the CPU's task slice ends, the next task's begins. */
static void pf_switch(struct pf_proto *w, const struct tv_event *ev, uint32_t track)
{
	struct pf_domain *pd = &w->dom[ev->domain_index];
	struct tep_format_field *f = tep_find_field(ev->format, "next_comm");
	struct pf_te te = { .type = TE_END, .track = track };
	char comm[24] = "?", name[48];
	size_t n;

	if (f && f->offset >= 0 && f->size > 0 && (size_t)f->offset + (size_t)f->size <= (size_t)ev->record->size) {
		n = (size_t)f->size < sizeof(comm) - 1 ? (size_t)f->size : sizeof(comm) - 1;
		memcpy(comm, (const char *)ev->record->data + f->offset, n);
		comm[n] = '\0';
	}
	snprintf(name, sizeof(name), "%s %llu", comm, (unsigned long long)pf_field(ev, "next_pid"));
	if (pd->cpu_task[ev->cpu & (MAX_CPUS - 1)])
		pf_track_event(w, ev->ts, &te);
	te.type = TE_BEGIN;
	te.name_iid = pf_intern(w, name);
	pf_track_event(w, ev->ts, &te);
	pd->cpu_task[ev->cpu & (MAX_CPUS - 1)] = 1;
}

/* Xen runstate: the vCPU running on this pCPU as a slice "dD vV". */
static void pf_xen_runstate(struct pf_proto *w, const struct tv_event *ev, uint32_t track)
{
	struct pf_domain *pd = &w->dom[ev->domain_index];
	uint64_t domid = pf_field(ev, "domid"), vcpu = pf_field(ev, "vcpuid");
	uint64_t key = ((domid & 0xffff) << 16 | (vcpu & 0xffff)) + 1;
	uint64_t *running = &pd->xen_running[ev->cpu & (MAX_CPUS - 1)];
	struct pf_te te = { .type = TE_END, .track = track };
	char name[32];

	if (domid == XT_DOMID_IDLE)
		return;
	if (*running && (*running == key || pf_field(ev, "new_state") == 0)) {
		pf_track_event(w, ev->ts, &te);
		w->st->runstate_slices++;
		*running = 0;
	}
	if (pf_field(ev, "new_state") != 0)
		return;
	snprintf(name, sizeof(name), "d%llu v%llu", (unsigned long long)domid, (unsigned long long)vcpu);
	te.type = TE_BEGIN;
	te.name_iid = pf_intern(w, name);
	pf_track_event(w, ev->ts, &te);
	*running = key;
}

/* ------------------------------------------------------------ Xen vCPUs */

/* The exits track of vCPU @key (domid << 16 | vcpu), in its Xen domain's group. */
static uint32_t pf_xen_vcpu_track(struct pf_proto *w, uint64_t key)
{
	unsigned int domid = (unsigned int)(key >> 16), vcpu = (unsigned int)(key & 0xffff);
	uint32_t *t = pf_track_slot(w, TK_XEN_VCPU, 0, (uint32_t)key), *g;
	char name[160];

	if (!t || *t)
		return t ? *t : 0;
	g = pf_track_slot(w, TK_XEN_DOM, 0, domid);
	if (!g)
		return 0;
	if (!*g) {
		tv_export_xen_dom_label(w->rd, domid, name, sizeof(name));
		*g = pf_track_new(w, 0, PID_BASE / 2 + (int)domid, -1, name);
	}
	snprintf(name, sizeof(name), "vCPU %u exits", vcpu);
	*t = pf_track_new(w, *g, -1, -1, name);
	return *t;
}

/* The vCPU's open HVM exit ends at @ts: a slice "exit REASON" (timed as xen_stat.c times it). */
static void pf_xen_exit_close(struct pf_proto *w, uint64_t key, uint64_t ts)
{
	struct tv_exit_slot *x = tv_exit_tracker_find(&w->xen_exits, key);
	struct pf_te te = { .type = TE_BEGIN };
	char name[64];
	uint64_t dur;

	if (!tv_exit_tracker_close(&w->xen_exits, x, ts, &dur))
		return;
	tv_export_xen_exit_name(w->xen_isa, x->data[0], name, sizeof(name));
	te.name_iid = pf_intern(w, name);
	te.track = pf_xen_vcpu_track(w, key);
	pf_track_event(w, x->exit_ts, &te);
	te.type = TE_END;
	te.name_iid = 0;
	pf_track_event(w, ts, &te);
	w->st->slices++;
}

static uint64_t pf_xen_key(const struct tv_event *ev, const char *dom, const char *vcpu)
{
	return (pf_field(ev, dom) & 0xffff) << 16 | (pf_field(ev, vcpu) & 0xffff);
}

/* Xen records that make HVM exit slices: VMEXIT, VMENTRY, a preemption, a loss. */
static void pf_xen_exits(struct pf_proto *w, const struct tv_event *ev)
{
	struct tv_exit_slot *x;

	switch (ev->format->id) {
	case TV_XEN_EV_VMEXIT:
		x = tv_exit_tracker_exit(&w->xen_exits, pf_xen_key(ev, "cur_dom", "cur_vcpu"), ev->ts);
		if (!x)
			w->err = -ENOMEM;
		else
			x->data[0] = pf_field(ev, "exit_reason");
		break;
	case TV_XEN_EV_VMENTRY:
		pf_xen_exit_close(w, pf_xen_key(ev, "cur_dom", "cur_vcpu"), ev->ts);
		break;
	case TV_XEN_EV_RUNSTATE:	/* made runnable: the wait for a CPU is not the exit's */
		if (pf_field(ev, "new_state") == 1)
			pf_xen_exit_close(w, pf_xen_key(ev, "domid", "vcpuid"), ev->ts);
		break;
	case TV_XEN_EV_LOST:	/* what was lost may hold the exit's end: untimed */
		tv_exit_tracker_drop(&w->xen_exits, tv_exit_tracker_find(&w->xen_exits,
				     pf_xen_key(ev, "domid", "vcpuid")));
		break;
	}
}

static bool pf_is_vcpu_event(const struct tv_event *ev, enum ev_kind kind)
{
	return kind >= EK_KVM_RUN && kind <= EK_KVM_ENTRY
	       ? true : kind == EK_KVM && tv_vcpu_map_find(ev->domain_info->vcpus, ev->pid);
}

static void pf_event(struct pf_proto *w, const struct tv_event *ev)
{
	const struct pf_event_info *info = pf_info(w, ev);
	struct pf_domain *pd = &w->dom[ev->domain_index];
	size_t cpu = (size_t)ev->cpu & (MAX_CPUS - 1);
	struct pf_te te = { .type = TE_INSTANT };

	if (!info)
		return;
	te.name_iid = info->iid;
	pd->cpu_last[cpu] = ev->ts;
	if (!pd->group)		/* the layer's group and sync first */
		pf_group(w, ev->domain_index, ev);
	if (pd->kind == DK_UST) {
		pf_instant(w, ev->ts, pf_ust_track(w, ev), info->iid);
		return;
	}
	if (pd->kind != DK_XEN && pf_is_vcpu_event(ev, info->kind)) {
		if (info->kind == EK_KVM_EXIT)
			pf_kvm_exit(w, ev);
		else if (info->kind == EK_KVM_ENTRY)
			pf_kvm_entry(w, ev, info);
		else
			pf_instant(w, ev->ts, pf_vcpu_track(w, ev), info->iid);
		return;
	}
	te.track = pf_cpu_track(w, ev);
	pf_track_event(w, ev->ts, &te);
	if (info->kind == EK_SCHED_SWITCH && pd->kind != DK_XEN)
		pf_switch(w, ev, te.track);
	if (pd->kind != DK_XEN)
		return;
	if (ev->format->id == TV_XEN_EV_RUNSTATE)
		pf_xen_runstate(w, ev, te.track);
	pf_xen_exits(w, ev);
}

/* ------------------------------------------------------------ whole trace */

static int pf_domains_new(struct pf_proto *w)
{
	w->nr_dom = tv_reader_nr_domains(w->rd);
	w->dom = calloc(w->nr_dom ? w->nr_dom : 1, sizeof(*w->dom));
	if (!w->dom)
		return -ENOMEM;
	for (size_t d = 0; d < w->nr_dom; d++) {
		const struct tv_domain_info *di = tv_reader_domain(w->rd, d);
		const char *kind = tv_meta_get(di->meta, "kind");
		struct pf_domain *pd = &w->dom[d];

		pd->kind = kind && !strcmp(kind, "ust") ? DK_UST
			   : kind && !strcmp(kind, "xen-trace") ? DK_XEN
			   : !strncmp(di->subdir, "guest-", 6) ? DK_GUEST : DK_LINUX;
		pd->cpu_track = calloc(MAX_CPUS, sizeof(*pd->cpu_track));
		pd->cpu_task = calloc(MAX_CPUS, sizeof(*pd->cpu_task));
		pd->cpu_last = calloc(MAX_CPUS, sizeof(*pd->cpu_last));
		pd->xen_running = calloc(MAX_CPUS, sizeof(*pd->xen_running));
		if (!pd->cpu_track || !pd->cpu_task || !pd->cpu_last || !pd->xen_running)
			return -ENOMEM;
	}
	return 0;
}

static void pf_domains_free(struct pf_proto *w)
{
	for (size_t d = 0; w->dom && d < w->nr_dom; d++) {
		free(w->dom[d].cpu_track);
		free(w->dom[d].cpu_task);
		free(w->dom[d].cpu_last);
		free(w->dom[d].xen_running);
	}
	free(w->dom);
}

/*
 * The sequence's first packet: incremental state cleared, packets timed on
 * clock 64 by default; then the ClockSnapshot making 64 incremental from
 * BOOTTIME 0 (the reference clock), BOOTTIME the trace's clock.
 */
static void pf_preamble(struct pf_proto *w)
{
	struct pb b = { w->pkt, w->pkt + sizeof(w->pkt) };
	uint8_t *m, *c;

	pb_uint(&b, F_PKT_SEQ_ID, SEQ_ID);
	pb_uint(&b, F_PKT_SEQ_FLAGS, SEQ_CLEARED);
	pb_uint(&b, F_PKT_FIRST_ON_SEQ, 1);
	m = pb_open(&b, F_PKT_DEFAULTS);
	pb_uint(&b, F_PKT_CLOCK_ID, CLOCK_DELTA);
	pb_close(&b, m);
	pf_emit(w, b.p);

	b.p = w->pkt;
	pb_uint(&b, F_PKT_SEQ_ID, SEQ_ID);
	m = pb_open(&b, F_PKT_CLOCK_SNAPSHOT);
	c = pb_open(&b, F_CLOCKS);
	pb_uint(&b, F_CLOCK_ID, CLOCK_DELTA);
	pb_uint(&b, F_CLOCK_TS, 0);
	pb_uint(&b, F_CLOCK_INCREMENTAL, 1);
	pb_close(&b, c);
	pf_clock_pair(&b, CLOCK_BOOTTIME, 0);
	pb_uint(&b, F_PRIMARY_CLOCK, CLOCK_BOOTTIME);
	pb_close(&b, m);
	pf_emit(w, b.p);
}

/*
 * What is still open at the end: exits without an entry become instants,
 * task and running slices end at their CPU's last event.
 */
static void pf_finish(struct pf_proto *w)
{
	struct pf_te te = { .type = TE_END };

	for (size_t i = 0; i < w->exits.cap; i++) {
		struct tv_exit_slot *x = &w->exits.slots[i];
		uint32_t *track;

		if (!x->key || !x->open || w->host < 0)
			continue;
		track = pf_track_slot(w, TK_VCPU, w->host, (uint32_t)(x->key - 1));
		if (track && *track)
			pf_exit_unpaired(w, x, *track);
	}
	for (size_t d = 0; d < w->nr_dom; d++) {
		struct pf_domain *pd = &w->dom[d];

		for (size_t cpu = 0; cpu < MAX_CPUS; cpu++) {
			te.track = pd->cpu_track[cpu];
			if (pd->cpu_task[cpu])
				pf_track_event(w, pd->cpu_last[cpu], &te);
			if (pd->xen_running[cpu]) {
				pf_track_event(w, pd->cpu_last[cpu], &te);
				w->st->runstate_slices++;
			}
		}
	}
}

static int pf_export_proto(struct tv_reader *rd, const char *session_dir, const char *out,
			   struct tv_export_stats *st)
{
	struct pf_proto *w = calloc(1, sizeof(*w));
	struct tv_event ev;
	int ret;

	if (!w)
		return -ENOMEM;
	w->rd = rd;
	w->st = st;
	w->host = -1;
	ret = tv_sync_read(session_dir, &w->sync);
	if (ret && ret != -ENOENT)
		goto out;
	ret = pf_domains_new(w);
	w->buf = malloc(OUT_BUF);
	if (ret || !w->buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t d = 0; d < w->nr_dom; d++)
		if (!strcmp(tv_reader_domain(rd, d)->subdir, "host"))
			w->host = (int)d;
	w->f = fopen(out, "we");
	if (!w->f) {
		ret = -errno;
		tv_err("Cannot create output file: path=\"%s\", errno=%d (%s)", out, -ret, strerror(-ret));
		goto out;
	}
	w->xen_isa = tv_export_xen_isa(rd);
	pf_preamble(w);
	while (!w->err && (ret = tv_reader_next(rd, &ev)) > 0) {
		if (!ev.format)
			continue;
		st->events++;
		pf_event(w, &ev);
	}
	if (!w->err && ret >= 0)
		pf_finish(w);
	st->unpaired_exits = w->exits.unmatched + w->exits.backwards + tv_exit_tracker_open(&w->exits) +
			     w->xen_exits.unmatched + w->xen_exits.backwards +
			     tv_exit_tracker_open(&w->xen_exits);
	if (ret >= 0 && w->err)
		ret = w->err;
	if (pf_flush(w) && ret >= 0)
		ret = -EIO;
	if (fclose(w->f) && ret >= 0)
		ret = -errno;
	w->f = NULL;
	if (ret == -EIO || w->err == -EIO)
		tv_err("Cannot write output file: path=\"%s\", errno=%d (%s)", out, EIO, strerror(EIO));
out:
	if (w->f)
		fclose(w->f);
	tv_exit_tracker_free(&w->exits);
	tv_exit_tracker_free(&w->xen_exits);
	tv_sync_result_free(&w->sync);
	pf_map_free(&w->names);
	for (uint32_t i = 1; i <= w->next_iid && w->name_of; i++)
		free(w->name_of[i]);
	free(w->name_of);
	pf_map_free(&w->formats);
	pf_map_free(&w->tracks);
	pf_map_free(&w->vcpu_ids);
	free(w->infos);
	free(w->buf);
	pf_domains_free(w);
	free(w);
	return ret < 0 ? ret : 0;
}

int tv_export_perfetto(struct tv_reader *rd, const char *session_dir, const char *out,
		       struct tv_export_stats *st)
{
	return pf_export_proto(rd, session_dir, out, st);
}
