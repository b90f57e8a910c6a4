/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Dynamic probes of one recording (kvm/probes.c): kprobes, kretprobes,
 * uprobes and uretprobes created through tracefs dynamic events, in groups
 * named after the recorder's pid so that a later run can tell a killed
 * run's probes (their pid is dead) from one in use and remove them.
 *
 * Threads: a probe set belongs to the recorder's thread.
 */
#ifndef TV_KVM_PROBES_H
#define TV_KVM_PROBES_H

#include <stdbool.h>
#include <stddef.h>

/* Group prefixes in tracefs; the session stores them as systems "probes" and "func". */
#define TV_PROBE_GROUP_PREFIX "tvprobe_"
#define TV_FUNC_GROUP_PREFIX "tvfunc_"

struct tracefs_dynevent;

struct tv_probe_set {
	char probe_group[32];		/* tvprobe_PID: -e kprobe:... and friends */
	char func_group[32];		/* tvfunc_PID: --time-function's pairs */
	struct tracefs_dynevent **events;	/* created, removed by destroy */
	size_t nr, cap;
};

/* Is @spec a dynamic probe: "kprobe:", "kretprobe:", "uprobe:" or "uretprobe:"? */
bool tv_probe_spec_is_dynamic(const char *spec);
/* Remove the probes of tracevisor runs that are gone; returns how many. */
int tv_probes_cleanup_stale(void);
/*
 * Create the dynamic event of @spec (see tracevisor-record(1)) and write
 * the event spec that enables it ("GROUP:NAME") into @event_spec.
 * Return: 0, or -errno with a one-line error naming the spec and what the
 * kernel or the file said (no kprobe_events, unknown symbol, ...).
 */
int tv_probe_create(struct tv_probe_set *set, const char *tracing_dir, const char *spec,
		    char *event_spec, size_t size);
/*
 * Entry and return probes timing function @func: a kernel SYMBOL (kprobe
 * and kretprobe) or PATH:SYMBOL (uprobe and uretprobe).  Their event specs
 * ("GROUP:NAME__entry", "GROUP:NAME__return") go into @entry and @ret.
 * Return: 0 or -errno (logged, as tv_probe_create()).
 */
int tv_probe_time_function(struct tv_probe_set *set, const char *tracing_dir, const char *func,
			   char *entry, char *ret, size_t size);
/*
 * A uprobe's TARGET, PATH:SYMBOL or PATH:OFFSET, as the kernel takes it:
 * PATH into @path (of @size bytes) and the file offset into @offset (a
 * SYMBOL looked up in the file's ELF symbols).  @spec names the probe in
 * errors.  Return: 0, or -errno with one line naming the file or symbol.
 */
int tv_probe_uprobe_target(const char *spec, const char *target, char *path, size_t size,
			   unsigned long long *offset);
/* Remove every probe of @set (disabled first, wherever enabled). */
void tv_probes_destroy(struct tv_probe_set *set);
/*
 * The system a group's events have in the session: "probes" or "func" for
 * our groups, else @group itself.
 */
const char *tv_probe_session_system(const char *group);

#endif
