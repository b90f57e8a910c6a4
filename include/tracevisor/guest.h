/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Guests recorded beside the host through their agent (tracevisor-record(1)
 * --guest): where a guest is, what it records, what it sent.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_GUEST_H
#define TRACEVISOR_GUEST_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/guest.h>"
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#pragma GCC visibility push(default)

#define TV_GUEST_DEFAULT_LIMIT_MB 2048
/* Items of a guest event list that may carry a filter (the agent's limit). */
#define TV_GUEST_MAX_FILTERED_ITEMS 64
#define TV_GUEST_DEFAULT_SYNC_INTERVAL 1.0
#define TV_GUEST_NAME_MAX 32
#define TV_GUEST_MAX_VCPUS 256

/*
 * Where a guest's agent is and which host process runs it
 * (tracevisor-record(1), --guest):
 *   NAME                           a libvirt domain on qemu:///system
 *   vsock:CID[:PORT],pid:PID,name:NAME   or   serial:PATH,pid:PID,name:NAME
 *   xen:NAME                       a Xen domU (from dom0): domid, vCPUs and the
 *                                  dom0 end of its org.tracevisor.0 console
 *                                  channel come from xenstore
 */
struct tv_guest_spec {
	char name[TV_GUEST_NAME_MAX + 1];	/* [A-Za-z0-9_.-], not starting with '.' */
	char libvirt[128];		/* libvirt domain name, or "" */
	unsigned int vsock_cid;		/* 0: no vsock */
	unsigned int vsock_port;	/* 0: the agent's default, 7476 */
	char serial[256];		/* host end of the virtio-serial port, or "" */
	pid_t qemu_pid;			/* 0: unknown (no vCPU attribution) */
	unsigned int nr_vcpus;		/* vCPU threads known from libvirt (QMP), or a Xen domain's vCPUs */
	pid_t vcpu_tid[TV_GUEST_MAX_VCPUS];	/* [cpu-index] = thread id, 0: unknown */
	char xen[TV_GUEST_NAME_MAX + 1];	/* Xen domain name (xen:NAME), or "" */
	int xen_domid;			/* from xenstore; -1: not a Xen domain */
};

/**
 * tv_guest_spec_parse - parse a --guest SPEC
 * @text: the SPEC (see struct tv_guest_spec)
 * @spec: filled in (caller's storage)
 *
 * Return: 0, or -EINVAL with the reason logged.
 */
int tv_guest_spec_parse(const char *text, struct tv_guest_spec *spec);

/**
 * tv_guest_spec_resolve - fill a libvirt or Xen SPEC from where it is known
 * @spec: a parsed spec.  libvirt (qemu:///system): its pid, vsock CID /
 *        serial path and vCPU threads are set; xen:NAME (xenstore): its
 *        domid, vCPU count and serial path (the channel's unix socket)
 *
 * A no-op for vsock:/serial: specs.  libvirt is dlopen()ed on first use.
 * Return: 0, -ENOTSUP when built without libvirt (or Xen), or -errno
 * (logged).
 */
int tv_guest_spec_resolve(struct tv_guest_spec *spec);

struct tv_guest_opts {
	const char *events;	/* comma list for the agent, NULL: its default */
	/*
	 * event_filters[i] (NULL: none) is the ftrace filter of item i of
	 * @events (items counted with empty ones), written by the agent to
	 * each of that item's events (doc/agent-protocol.md); at most 64
	 * items, each filter printable ASCII up to 1023 bytes.
	 */
	const char *const *event_filters;
	size_t nr_event_filters;
	const char *clock;	/* guest trace clock, NULL: "local" */
	unsigned int buffer_kb;	/* guest ring buffer per CPU, 0: 2048 */
	double sync_interval;	/* seconds between probe rounds, 0: default */
	uint64_t max_bytes;	/* accepted from the guest, 0: default limit */
	unsigned int index;	/* the guest's number in the session (markers) */
	/* record --guest ... --ust: comma list of globs on PROVIDER:EVENT the
	 * agent enables in the guest's traced processes; NULL: none traced */
	const char *ust;
	/* with @ust: the processes' buffer policy (START's ust_mode,
	 * ust_subbuf_size, ust_nr_subbufs; as tv_session_record_opts's
	 * fields of the same names); NULL / 0: the process's default */
	const char *ust_mode;
	uint32_t ust_subbuf_size, ust_nr_subbufs;
	/* > 0: a flight recorder (record --flight-recorder SIZE): the agent
	 * keeps the last @flight_bytes in the guest until a snapshot asks;
	 * @triggers (the session's --trigger rules): the guest=NAME ones
	 * naming this guest are evaluated by its agent (doc/agent-protocol.md) */
	uint64_t flight_bytes;
	const char *const *triggers;
	size_t nr_triggers;
};

struct tv_guest_stats {
	uint64_t bytes, events, lost;
	unsigned int pings, pongs, hcalls_asked, hcalls_done;
	int listed;		/* the guest's domain is in the session */
	/* 1: events and lost came with the agent's END; 2: lost only, from the
	 * LOSS frame the agent sends before its last drain (no END came) */
	int counts_known;
	char status[300];	/* "complete", "truncated: ...", "failed: ..." */
	/* --ust: the guest's traced processes, their events and the events
	 * they discarded; known once the guest is stopped (0 before) */
	unsigned int ust_procs;
	uint64_t ust_events, ust_lost;
	/* of ust_procs, the ones not complete: cut off by the host (past a
	 * limit, a record that lied: status truncated), rejected (a domain the
	 * readers would refuse), not ended by the agent (no UST_END), or ended
	 * by the agent with another status than complete */
	unsigned int ust_cut, ust_rejected, ust_unended, ust_other;
	/* PONGs and HCALL_DONEs that answered no outstanding request: dropped
	 * (pongs <= pings and hcalls_done <= hcalls_asked always hold) */
	uint64_t pongs_dropped, hcalls_dropped;
	/* every byte accepted from the agent's channel so far (frames of any
	 * kind: data, a flight recorder's snapshots, probes' answers) */
	uint64_t stream_bytes;
};

/*
 * One guest of a session recording (tv_session_record_guest()).  Threads:
 * each guest recording runs its own thread while the session records;
 * tv_guest_get_stats() is safe meanwhile, the other tv_guest_* functions
 * belong to the thread that owns the session.
 */
struct tv_guest;

/**
 * tv_guest_get_stats - a snapshot of the guest's counters and status
 * @g: the guest
 * @st: filled in (caller's storage)
 *
 * Threads: safe while the guest's thread runs.
 */
void tv_guest_get_stats(const struct tv_guest *g, struct tv_guest_stats *st);

/**
 * tv_guest_name - the guest's NAME
 * @g: the guest
 *
 * Return: a string owned by @g.
 */
const char *tv_guest_name(const struct tv_guest *g);

#pragma GCC visibility pop

#endif /* TRACEVISOR_GUEST_H */
