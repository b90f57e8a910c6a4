// SPDX-License-Identifier: LGPL-2.1
/*
 * The sync probes of a session, each in its own domain's clock: ftrace
 * markers (ping/pong, hypercall brackets, dom0/Xen brackets), the host's
 * kvm_hypercall, Xen's probe records and kvm_write_tsc_offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "sync_probes.h"
#include "tsc.h"
#include "sync_session.h"

/* Where its stream's clock is: sync_map_probes() follows TSC regions with it. */
static int scan_push(struct scan *sc, struct probe p)
{
	if (tv_array_grow(&sc->probes, &sc->cap_probes, sc->nr_probes, sizeof(*sc->probes), 1024))
		return -ENOMEM;
	p.stream_first = sc->cur->first;
	p.backs = sc->cur->backs;
	p.held = sc->cur->held;
	p.ambiguous = sc->cur->ambiguous;
	sc->probes[sc->nr_probes++] = p;
	return 0;
}

/*
 * Who names guest @d's probes (struct dom_scan): its sync_index and prober
 * come from its meta, which the host writes (a guest's META cannot set
 * them, host/guest_stream.c).  A prober that is no other linux-ftrace
 * domain of the session is none: -2, so nothing counts for it.
 */
static void scan_init_prober(struct scan *sc, size_t d)
{
	const struct tv_meta *meta = tv_reader_domain(sc->rd, d)->meta;
	const char *prober = tv_meta_get(meta, "sync_prober");
	long long idx = tv_meta_get_ll(meta, "sync_index", sc->dom[d].guest_index);
	struct dom_scan *ds = &sc->dom[d];

	ds->sync_index = idx >= 0 && idx <= 0xffff ? (int)idx : -1;
	ds->prober = -1;
	if (!prober)
		return;
	ds->prober = -2;
	for (size_t p = 0; p < sc->nr_domains && p < MAX_DOMAINS; p++) {
		const struct tv_domain_info *pi = tv_reader_domain(sc->rd, p);
		const char *kind = tv_meta_get(pi->meta, "kind");

		if (p != d && !strcmp(pi->subdir, prober) && kind && !strcmp(kind, "linux-ftrace"))
			ds->prober = (int)p;
	}
}

static void scan_init_domains(struct scan *sc)
{
	sc->nr_domains = tv_reader_nr_domains(sc->rd);
	sc->xen_dom = -1;
	for (size_t d = 0; d < sc->nr_domains && d < MAX_DOMAINS; d++) {
		const struct tv_domain_info *info = tv_reader_domain(sc->rd, d);
		const char *kind = tv_meta_get(info->meta, "kind");
		struct dom_scan *ds = &sc->dom[d];

		ds->raw_data = tep_find_event_by_name(info->tep, "ftrace", "raw_data");
		ds->hypercall = tep_find_event_by_name(info->tep, "kvm", "kvm_hypercall");
		ds->write_tsc = tep_find_event_by_name(info->tep, "kvm", "kvm_write_tsc_offset");
		ds->kvm_entry = tep_find_event_by_name(info->tep, "kvm", "kvm_entry");
		ds->xen_guest = tep_find_event_by_name(info->tep, "xen", "xen_guest");
		if (!strcmp(info->subdir, "xen"))
			sc->xen_dom = (int)d;
		ds->first = -1;
		ds->guest_index = -1;
		if (!strncmp(info->subdir, "guest-", 6)) {
			ds->is_guest = 1;
			ds->guest_index = (int)sc->nr_guests;
			sc->guest_dom[sc->nr_guests++] = (int)d;
		}
		ds->recorder = !ds->is_guest && kind && !strcmp(kind, "linux-ftrace");
	}
	for (size_t g = 0; g < sc->nr_guests; g++)
		scan_init_prober(sc, (size_t)sc->guest_dom[g]);
}

/*
 * The guest that probe index @g names when domain @writer wrote the probe
 * (-1: Xen's record of a domU's hypercall, numbered by the recorder), or
 * -1.  A recorder names only the guests it probes: the session's recorder
 * its own, a guest's (nested, meta sync_prober) those it declared.
 */
static int scan_guest_domain(const struct scan *sc, int writer, unsigned int g)
{
	for (size_t k = 0; k < sc->nr_guests; k++) {
		const struct dom_scan *ds = &sc->dom[sc->guest_dom[k]];

		if (ds->sync_index != (int)g || sc->guest_dom[k] == writer)
			continue;
		if (ds->prober == writer || (ds->prober == -1 && (writer < 0 || sc->dom[writer].recorder)))
			return sc->guest_dom[k];
	}
	return -1;
}

/*
 * A sync marker counts only for the domain whose own channel produced it
 * (doc/sync-probes.md, "Which markers count"): a guest writes its side of
 * its own probes (its sync_index in `guest`), a recorder the prober's side
 * of the guests it probes.  Any other marker in a guest's stream (naming
 * another guest, or of a type only a recorder writes) is ignored and
 * counted against that guest: a forged probe can spoil no other domain.
 */
static int scan_marker(struct scan *sc, const struct tv_event *ev, int d)
{
	struct dom_scan *ds = &sc->dom[d];
	struct tv_sync_marker m;
	int guest;

	if (tv_sync_marker_of_event(ev, &m) || m.type < TV_SYNC_PING_SEND ||
	    m.type > TV_SYNC_XEN_AFTER)
		return 0;
	/* dom0 brackets a record it injects into Xen: Xen is the probed side. */
	if (m.type == TV_SYNC_XEN_BEFORE || m.type == TV_SYNC_XEN_AFTER) {
		ds->foreign += ds->is_guest;
		if (sc->xen_dom < 0 || sc->xen_dom == d || !ds->recorder)
			return 0;
		return scan_push(sc, (struct probe){ m.seq, ev->ts_raw, sc->xen_dom, d, m.type,
						     ev->cpu });
	}
	if (m.type == TV_SYNC_PING_SEND || m.type == TV_SYNC_PONG_RECV) {
		guest = scan_guest_domain(sc, d, m.guest);
		if (guest < 0) {
			ds->foreign += ds->is_guest;
			return 0;
		}
		return scan_push(sc, (struct probe){ m.seq, ev->ts_raw, guest, d, m.type, ev->cpu });
	}
	if (!ds->is_guest)
		return 0;
	if (m.guest != ds->sync_index) {
		ds->foreign++;
		return 0;
	}
	return scan_push(sc, (struct probe){ m.seq, ev->ts_raw, d, -1, m.type, ev->cpu });
}

/*
 * Whether the host's kvm_hypercall from thread @pid may be guest @g's: not
 * when host/vcpus says the thread is another VM's vCPU (that VM's domain,
 * when in the session, is charged with it).  A thread not in host/vcpus
 * is allowed: a guest given without pid: (and not by libvirt) has none.
 */
static int hypercall_is_its_own(struct scan *sc, int d, int pid, int g)
{
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(tv_reader_domain(sc->rd, (size_t)d)->vcpus, pid);

	if (!t || !strcmp(tv_reader_domain(sc->rd, (size_t)g)->subdir + 6, t->vm_name))
		return 1;
	for (size_t k = 0; k < sc->nr_guests; k++)
		if (!strcmp(tv_reader_domain(sc->rd, (size_t)sc->guest_dom[k])->subdir + 6, t->vm_name))
			sc->dom[sc->guest_dom[k]].foreign++;
	return 0;
}

static int scan_hypercall(struct scan *sc, const struct tv_event *ev, int d)
{
	uint64_t nr, a0, a1;
	int guest;

	if (tv_event_field_u64(ev, "nr", &nr) || nr != TV_SYNC_HCALL_NR ||
	    tv_event_field_u64(ev, "a0", &a0) || tv_event_field_u64(ev, "a1", &a1) ||
	    (a1 & ~0xffULL) != TV_SYNC_HCALL_TAG)
		return 0;
	guest = scan_guest_domain(sc, d, (unsigned int)(a1 & 0xff));
	if (guest < 0 || !hypercall_is_its_own(sc, d, ev->pid, guest))
		return 0;
	return scan_push(sc, (struct probe){ a0, ev->ts_raw, guest, d, TV_PROBE_HCALL_HOST,
					     ev->cpu });
}

/* The u32 at index @i of @ev's data[] array field, or -ENOENT. */
static int data_word(const struct tv_event *ev, unsigned int i, uint32_t *val)
{
	struct tep_format_field *f = tep_find_field(ev->format, "data");

	if (!f || f->size < 4 * (int)(i + 1) || f->offset + 4 * (i + 1) > (unsigned)ev->record->size)
		return -ENOENT;
	*val = (uint32_t)tep_read_number(ev->tep, (char *)ev->record->data + f->offset + 4 * i, 4);
	return 0;
}

/*
 * Any domU may write any TRC_GUEST record: a probe naming guest @g counts
 * only when Xen ran that guest's domain (its xenstore domid) as it wrote it.
 */
static int domu_record_is_its_own(const struct scan *sc, const struct tv_event *ev, int g)
{
	long long domid = tv_meta_get_ll(tv_reader_domain(sc->rd, (size_t)g)->meta, "xen_domid", -1);
	uint64_t cur;

	return domid < 0 || (!tv_event_field_u64(ev, "cur_dom", &cur) && cur == (uint64_t)domid);
}

/*
 * Xen's side of a probe, a TRC_GUEST record (doc/sync-probes.md): dom0's
 * (TV_SYNC_XEN_EVENT, { magic, seq low, seq high }: Xen is the probed
 * domain, dom0's markers the bracket) or a domU's hypercall probe
 * (TV_SYNC_XEN_GUEST_EVENT, { magic, guest index, seq low, seq high }: the
 * domU is probed, Xen the peer).  Only a record Xen stamped with the TSC
 * (our patch) is on Xen's time line; stock Xen gives it the previous
 * record's time, which is no constraint at all, so it is only counted.
 */
static int scan_xen_guest(struct scan *sc, const struct tv_event *ev, int d)
{
	uint64_t id, nr, has_tsc, seq, cur;
	uint32_t w[4];
	int domu = 0, probed = d, peer = -1;

	if (d != sc->xen_dom || tv_event_field_u64(ev, "xen_event", &id) ||
	    tv_event_field_u64(ev, "nr_data", &nr) || tv_event_field_u64(ev, "has_tsc", &has_tsc))
		return 0;
	if ((id & 0xfff) == TV_SYNC_XEN_GUEST_EVENT)
		domu = 1;
	else if ((id & 0xfff) != TV_SYNC_XEN_EVENT)
		return 0;
	if (nr < 3u + domu)
		return 0;
	for (unsigned int i = 0; i < 3u + domu; i++)
		if (data_word(ev, i, &w[i]))
			return 0;
	if (w[0] != TV_SYNC_MAGIC)
		return 0;
	if (domu) {
		probed = scan_guest_domain(sc, -1, w[1]);
		if (probed < 0 || !domu_record_is_its_own(sc, ev, probed))
			return 0;	/* not a guest of this session, or forged by another */
		peer = d;
	} else if (!tv_event_field_u64(ev, "cur_dom", &cur) && cur != 0) {
		return 0;	/* dom0's probe, written by a domU */
	}
	if (!has_tsc) {
		if (domu)
			sc->dom[probed].xen_hcall_untimed++;
		else
			sc->dom[d].xen_untimed++;
		return 0;
	}
	seq = w[1 + domu] | (uint64_t)w[2 + domu] << 32;
	return scan_push(sc, (struct probe){ seq, ev->ts_raw, probed, peer,
					     domu ? TV_PROBE_XEN_HCALL : TV_PROBE_XEN_RECORD,
					     ev->cpu });
}

/* The slot of host thread @pid's last kvm_entry; NULL when there are too many threads. */
static struct vcpu_entry *entry_slot(struct scan *sc, int pid)
{
	for (size_t k = 0; k < sc->nr_entries; k++)
		if (sc->entries[k].pid == pid)
			return &sc->entries[k];
	if (sc->nr_entries == sizeof(sc->entries) / sizeof(sc->entries[0]))
		return NULL;
	sc->entries[sc->nr_entries] = (struct vcpu_entry){ pid, 0 };
	return &sc->entries[sc->nr_entries++];
}

static int scan_entry(struct scan *sc, const struct tv_event *ev)
{
	struct vcpu_entry *e = entry_slot(sc, ev->pid);

	if (e)
		e->ts = ev->ts_raw;
	return 0;
}

/* kvm_write_tsc_offset belongs to the guest whose vCPU thread wrote it. */
static int scan_write_tsc(struct scan *sc, const struct tv_event *ev, int d)
{
	const struct tv_domain_info *info = tv_reader_domain(sc->rd, (size_t)d);
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(info->vcpus, ev->pid);
	const struct vcpu_entry *entered;
	uint64_t prev, next, vcpu;
	int guest = -1;

	if (tv_event_field_u64(ev, "next_tsc_offset", &next) ||
	    tv_event_field_u64(ev, "previous_tsc_offset", &prev) ||
	    tv_event_field_u64(ev, "vcpu_id", &vcpu))
		return 0;
	for (size_t g = 0; g < sc->nr_guests; g++) {
		const struct tv_domain_info *gi = tv_reader_domain(sc->rd, (size_t)sc->guest_dom[g]);

		if ((t && !strcmp(gi->subdir + 6, t->vm_name)) || sc->nr_guests == 1)
			guest = sc->guest_dom[g];
	}
	if (guest < 0)
		return 0;
	entered = entry_slot(sc, ev->pid);
	return tv_tsc_segments_add(&sc->tsc[guest], (uint32_t)vcpu, ev->ts_raw, prev, next,
				   entered ? entered->ts : 0);
}

/* Follow the event's (domain, CPU) stream: where its clock goes back. */
static int scan_stream(struct scan *sc, const struct tv_event *ev)
{
	struct stream_scan *s = NULL;

	if (sc->cur && sc->cur->d == ev->domain_index && sc->cur->cpu == ev->cpu)
		s = sc->cur;
	for (size_t k = 0; k < sc->nr_streams && !s; k++)
		if (sc->streams[k].d == ev->domain_index && sc->streams[k].cpu == ev->cpu)
			s = &sc->streams[k];
	if (!s) {
		if (tv_array_grow(&sc->streams, &sc->cap_streams, sc->nr_streams,
				  sizeof(*sc->streams), 64))
			return -ENOMEM;
		s = &sc->streams[sc->nr_streams++];
		*s = (struct stream_scan){ ev->domain_index, ev->cpu, ev->ts_raw, ev->ts_raw, 0, 0 };
	} else {
		s->held = ev->ts_raw >= s->last && ev->ts_raw - s->last < TV_SYNC_HELD_NS;
	}
	s->backs += ev->ts_raw < s->last;
	s->last = ev->ts_raw;
	s->ambiguous = ev->time_ambiguous;
	sc->cur = s;
	return 0;
}

static int scan_event(struct scan *sc, const struct tv_event *ev)
{
	int d = ev->domain_index;
	struct dom_scan *ds = &sc->dom[d];

	if (scan_stream(sc, ev))
		return -ENOMEM;

	if (ds->first < 0)
		ds->first = (int64_t)ev->ts_raw;
	ds->last = (int64_t)ev->ts_raw;
	if (!ev->format)
		return 0;
	if (ev->format == ds->raw_data)
		return scan_marker(sc, ev, d);
	if (ev->format == ds->hypercall)
		return scan_hypercall(sc, ev, d);
	if (ev->format == ds->kvm_entry)
		return scan_entry(sc, ev);
	if (ev->format == ds->write_tsc)
		return scan_write_tsc(sc, ev, d);
	if (ev->format == ds->xen_guest)
		return scan_xen_guest(sc, ev, d);
	return 0;
}

int sync_scan_session(struct scan *sc, const char *dir, const struct tv_sync_result *line)
{
	struct tv_event ev;
	int ret;

	ret = line ? tv_reader_open_moved(dir, line, 0, &sc->rd) : tv_reader_open_raw(dir, &sc->rd);
	if (ret)
		return ret;
	if (tv_reader_nr_domains(sc->rd) > MAX_DOMAINS) {
		/* a guest's many traced processes must not cost the session its sync */
		tv_warn("More than %d domains to synchronise: the traced processes' domains (ust-*) are left out, each read in its parent's clock: path=\"%s\"",
			MAX_DOMAINS, dir);
		tv_reader_close(sc->rd);
		sc->rd = NULL;
		ret = line ? tv_reader_open_moved(dir, line, 1, &sc->rd) : tv_reader_open_probes(dir, NULL, &sc->rd);
		if (ret)
			return ret;
	}
	if (tv_reader_nr_domains(sc->rd) > MAX_DOMAINS) {
		tv_err("Too many domains to synchronise: path=\"%s\", %zu domains besides the traced processes, at most %d",
		       dir, tv_reader_nr_domains(sc->rd), MAX_DOMAINS);
		return -E2BIG;
	}
	scan_init_domains(sc);
	while ((ret = tv_reader_next(sc->rd, &ev)) > 0) {
		ret = scan_event(sc, &ev);
		if (ret < 0)
			return ret;
	}
	return ret;
}

int sync_cmp_probe(const void *a, const void *b)
{
	const struct probe *x = a, *y = b;

	if (x->guest != y->guest)
		return x->guest - y->guest;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->type - y->type;
}
