// SPDX-License-Identifier: LGPL-2.1
/*
 * Dynamic probes through tracefs dynamic events (libtracefs' dynevent API).
 *
 *   kprobe:NAME=SYMBOL[+OFFS] [FETCHARGS]      kretprobe:NAME=SYMBOL [$retval]
 *   uprobe:NAME=PATH:SYMBOL|OFFSET [FETCHARGS] uretprobe:NAME=PATH:SYMBOL|OFFSET [FETCHARGS]
 *
 * The kernel takes uprobes as PATH:OFFSET, so a SYMBOL is looked up in the
 * file's ELF symbols (lib/util/elf_sym.c).  Every probe lives in a group named
 * after this process (tvprobe_PID, tvfunc_PID): removed on every exit path
 * by tv_probes_destroy(), and by the next run if this one was killed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracefs.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "elf_sym.h"
#include "probes.h"

#define MAX_NAME 64	/* the kernel's MAX_EVENT_NAME_LEN, NUL included */

enum probe_kind { KPROBE, KRETPROBE, UPROBE, URETPROBE };

static const struct {
	const char *prefix;
	enum probe_kind kind;
	const char *file;	/* the tracefs file that must exist */
} kinds[] = {
	{ "kprobe:", KPROBE, "kprobe_events" },
	{ "kretprobe:", KRETPROBE, "kprobe_events" },
	{ "uprobe:", UPROBE, "uprobe_events" },
	{ "uretprobe:", URETPROBE, "uprobe_events" },
};

bool tv_probe_spec_is_dynamic(const char *spec)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(spec, kinds[i].prefix, strlen(kinds[i].prefix)))
			return true;
	return false;
}

const char *tv_probe_session_system(const char *group)
{
	if (!strncmp(group, TV_PROBE_GROUP_PREFIX, strlen(TV_PROBE_GROUP_PREFIX)))
		return "probes";
	if (!strncmp(group, TV_FUNC_GROUP_PREFIX, strlen(TV_FUNC_GROUP_PREFIX)))
		return "func";
	return group;
}

/* The pid of one of our groups, or -1. */
static int group_pid(const char *group)
{
	const char *p = NULL;
	char *end;
	long pid;

	if (!strncmp(group, TV_PROBE_GROUP_PREFIX, strlen(TV_PROBE_GROUP_PREFIX)))
		p = group + strlen(TV_PROBE_GROUP_PREFIX);
	else if (!strncmp(group, TV_FUNC_GROUP_PREFIX, strlen(TV_FUNC_GROUP_PREFIX)))
		p = group + strlen(TV_FUNC_GROUP_PREFIX);
	if (!p || !*p)
		return -1;
	pid = strtol(p, &end, 10);
	return (!*end && pid > 0 && pid <= INT_MAX) ? (int)pid : -1;
}

int tv_probes_cleanup_stale(void)
{
	struct tracefs_dynevent **all = tracefs_dynevent_get_all(
		TRACEFS_DYNEVENT_KPROBE | TRACEFS_DYNEVENT_KRETPROBE | TRACEFS_DYNEVENT_UPROBE |
		TRACEFS_DYNEVENT_URETPROBE, NULL);
	int removed = 0;

	for (size_t i = 0; all && all[i]; i++) {
		char *sys = NULL, *ev = NULL;
		int pid;

		tracefs_dynevent_info(all[i], &sys, &ev, NULL, NULL, NULL);
		pid = sys ? group_pid(sys) : -1;
		if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) {
			/* dynamic_events and k/uprobe_events may both list it */
			if (tracefs_dynevent_destroy(all[i], true) == 0) {
				tv_info("Removed stale probe: name=\"%s:%s\"", sys, ev);
				removed++;
			} else if (errno != ENOENT) {
				tv_warn("Cannot remove stale probe: name=\"%s:%s\", errno=%d (%s)", sys,
					ev, errno, strerror(errno));
			}
		}
		free(sys);
		free(ev);
	}
	tracefs_dynevent_list_free(all);
	return removed;
}

static int valid_name(const char *s, size_t n)
{
	if (!n || n >= MAX_NAME || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

static int set_add(struct tv_probe_set *set, struct tracefs_dynevent *ev)
{
	if (tv_array_grow(&set->events, &set->cap, set->nr, sizeof(*set->events), 8))
		return -ENOMEM;
	set->events[set->nr++] = ev;
	return 0;
}

static void set_groups(struct tv_probe_set *set)
{
	if (set->probe_group[0])
		return;
	snprintf(set->probe_group, sizeof(set->probe_group), TV_PROBE_GROUP_PREFIX "%d", (int)getpid());
	snprintf(set->func_group, sizeof(set->func_group), TV_FUNC_GROUP_PREFIX "%d", (int)getpid());
}

int tv_probe_uprobe_target(const char *spec, const char *target, char *path, size_t size,
			   unsigned long long *offset)
{
	const char *colon = strrchr(target, ':');
	uint64_t off;
	char *end;
	int ret;

	if (!colon || colon == target || !colon[1] || (size_t)(colon - target) >= size) {
		tv_err("Invalid probe: \"%s\" (a uprobe is PATH:SYMBOL or PATH:OFFSET)", spec);
		return -EINVAL;
	}
	snprintf(path, size, "%.*s", (int)(colon - target), target);
	/* a missing file is not a missing function */
	if (access(path, R_OK)) {
		ret = -errno;
		tv_err("Cannot open file for uprobe: path=\"%s\", errno=%d (%s)", path, -ret,
		       strerror(-ret));
		return ret;
	}
	errno = 0;
	*offset = strtoull(colon + 1, &end, 0);
	if (!*end && !errno && isdigit((unsigned char)colon[1]))
		return 0;
	ret = tv_elf_symbol_offset(path, colon + 1, &off);
	if (ret) {
		tv_err("Cannot find function for uprobe: path=\"%s\", symbol=\"%s\", errno=%d (%s)",
		       path, colon + 1, -ret,
		       ret == -ENOENT ? "no such function" : ret == -ENOEXEC ? "not an ELF64 file" : strerror(-ret));
		return ret;
	}
	*offset = off;
	return 0;
}

static struct tracefs_dynevent *probe_alloc(enum probe_kind kind, const char *group,
					    const char *name, const char *target, const char *args,
					    const char *spec, int *err)
{
	unsigned long long offset;
	char path[PATH_MAX];

	*err = 0;
	if (kind == KPROBE)
		return tracefs_kprobe_alloc(group, name, target, args);
	if (kind == KRETPROBE)
		return tracefs_kretprobe_alloc(group, name, target, args, 0);
	*err = tv_probe_uprobe_target(spec, target, path, sizeof(path), &offset);
	if (*err)
		return NULL;
	if (kind == UPROBE)
		return tracefs_uprobe_alloc(group, name, path, offset, args);
	return tracefs_uretprobe_alloc(group, name, path, offset, args);
}

/* Allocate and create one probe; the kernel's complaint goes into the error. */
static int probe_make(struct tv_probe_set *set, const char *tracing_dir, enum probe_kind kind,
		      const char *group, const char *name, const char *target, const char *args,
		      const char *spec)
{
	static const char *const files[] = { "kprobe_events", "kprobe_events", "uprobe_events",
					     "uprobe_events" };
	char file[PATH_MAX];
	struct tracefs_dynevent *ev;
	int err;

	snprintf(file, sizeof(file), "%s/%s", tracing_dir, files[kind]);
	if (access(file, W_OK)) {
		tv_err("Cannot create probe \"%s\": this kernel has no %s (CONFIG_%s_EVENTS): path=\"%s\"",
		       spec, files[kind], kind <= KRETPROBE ? "KPROBE" : "UPROBE", file);
		return -EOPNOTSUPP;
	}
	ev = probe_alloc(kind, group, name, target, args && *args ? args : NULL, spec, &err);
	if (!ev)
		return err ? err : -ENOMEM;
	tracefs_error_clear(NULL);
	if (tracefs_dynevent_create(ev)) {
		int e = errno ? errno : EINVAL;
		char *why = tracefs_error_last(NULL);

		if (why)
			why[strcspn(why, "\n")] = '\0';
		tv_err("Cannot create probe \"%s\": errno=%d (%s)%s%s", spec, e, strerror(e),
		       why ? ": " : "", why ? why : "");
		free(why);
		tracefs_dynevent_free(ev);
		return -e;
	}
	err = set_add(set, ev);
	if (err) {
		tracefs_dynevent_destroy(ev, true);
		tracefs_dynevent_free(ev);
	}
	return err;
}

int tv_probe_create(struct tv_probe_set *set, const char *tracing_dir, const char *spec,
		    char *event_spec, size_t size)
{
	const char *body = NULL, *eq, *sp;
	char name[MAX_NAME], target[PATH_MAX + 128];
	enum probe_kind kind = KPROBE;
	int ret;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!strncmp(spec, kinds[i].prefix, strlen(kinds[i].prefix))) {
			body = spec + strlen(kinds[i].prefix);
			kind = kinds[i].kind;
		}
	}
	eq = body ? strchr(body, '=') : NULL;
	if (!eq || !valid_name(body, (size_t)(eq - body))) {
		tv_err("Invalid probe: \"%s\" (TYPE:NAME=TARGET [ARGS], NAME of letters, digits and _)",
		       spec);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(eq - body), body);
	sp = eq + 1 + strcspn(eq + 1, " \t");
	if (sp == eq + 1 || (size_t)(sp - eq - 1) >= sizeof(target)) {
		tv_err("Invalid probe: \"%s\" (no target after NAME=)", spec);
		return -EINVAL;
	}
	snprintf(target, sizeof(target), "%.*s", (int)(sp - eq - 1), eq + 1);
	while (*sp == ' ' || *sp == '\t')
		sp++;
	set_groups(set);
	ret = probe_make(set, tracing_dir, kind, set->probe_group, name, target, sp, spec);
	if (!ret)
		snprintf(event_spec, size, "%s:%s", set->probe_group, name);
	return ret;
}

int tv_probe_time_function(struct tv_probe_set *set, const char *tracing_dir, const char *func,
			   char *entry, char *ret_spec, size_t size)
{
	const char *colon = strrchr(func, ':');
	const char *sym = colon ? colon + 1 : func;
	char name[MAX_NAME], ename[MAX_NAME + 16];
	size_t n = strlen(sym);
	int ret;

	/* NAME__return must fit the kernel's 63 characters */
	if (!valid_name(sym, n) || n + 8 >= MAX_NAME) {
		tv_err("Invalid function to time: \"%s\" (SYMBOL or PATH:SYMBOL, a C name of at most %d characters)",
		       func, MAX_NAME - 9);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%s", sym);
	set_groups(set);
	snprintf(ename, sizeof(ename), "%s__entry", name);
	ret = probe_make(set, tracing_dir, colon ? UPROBE : KPROBE, set->func_group, ename, func,
			 NULL, func);
	snprintf(ename, sizeof(ename), "%s__return", name);
	if (!ret)
		ret = probe_make(set, tracing_dir, colon ? URETPROBE : KRETPROBE, set->func_group,
				 ename, func, NULL, func);
	if (!ret) {
		snprintf(entry, size, "%s:%s__entry", set->func_group, name);
		snprintf(ret_spec, size, "%s:%s__return", set->func_group, name);
	}
	return ret;
}

void tv_probes_destroy(struct tv_probe_set *set)
{
	for (size_t i = 0; i < set->nr; i++) {
		char *sys = NULL, *ev = NULL;

		if (tracefs_dynevent_destroy(set->events[i], true)) {
			tracefs_dynevent_info(set->events[i], &sys, &ev, NULL, NULL, NULL);
			tv_warn("Cannot remove probe: name=\"%s:%s\", errno=%d (%s) (the next run removes it)",
				sys ? sys : "?", ev ? ev : "?", errno, strerror(errno));
			free(sys);
			free(ev);
		}
		tracefs_dynevent_free(set->events[i]);
	}
	free(set->events);
	set->events = NULL;
	set->nr = set->cap = 0;
}
