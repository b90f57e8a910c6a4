// SPDX-License-Identifier: LGPL-2.1
/*
 * Event specs follow trace-cmd: "SYSTEM", "SYSTEM:EVENT", or globs in
 * either part ("kvm:*exit*"); a spec without ':' that names no system is
 * matched against event names of every system.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <tracefs.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "events.h"

static int event_list_add(struct tv_event_list *list, const char *sys, const char *ev,
			  size_t spec)
{
	struct tv_event_id *ids;

	for (size_t i = 0; i < list->nr; i++)
		if (!strcmp(list->ids[i].system, sys) && !strcmp(list->ids[i].event, ev))
			return 0;
	ids = realloc(list->ids, (list->nr + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	list->ids = ids;
	ids[list->nr].system = strdup(sys);
	ids[list->nr].event = strdup(ev);
	ids[list->nr].spec = spec;
	if (!ids[list->nr].system || !ids[list->nr].event)
		return -ENOMEM;
	list->nr++;
	return 1;
}

static int match_system(struct tv_event_list *list, const char *dir, const char *sys,
			const char *ev_glob, size_t spec)
{
	char **events = tracefs_system_events(dir, sys);
	int matched = 0;

	for (size_t i = 0; events && events[i]; i++) {
		if (fnmatch(ev_glob, events[i], 0))
			continue;
		if (event_list_add(list, sys, events[i], spec) < 0) {
			tracefs_list_free(events);
			return -ENOMEM;
		}
		matched++;
	}
	tracefs_list_free(events);
	return matched;
}

static int resolve_one(struct tv_event_list *list, const char *dir, char **systems,
		       const char *spec, size_t index)
{
	char sys_glob[256], ev_glob[256];
	const char *colon = strchr(spec, ':');
	int matched = 0, systems_named = 0;

	if (colon) {
		snprintf(sys_glob, sizeof(sys_glob), "%.*s", (int)(colon - spec), spec);
		snprintf(ev_glob, sizeof(ev_glob), "%s", colon + 1);
	} else {
		snprintf(sys_glob, sizeof(sys_glob), "%s", spec);
		snprintf(ev_glob, sizeof(ev_glob), "*");
	}
	for (size_t i = 0; systems && systems[i]; i++) {
		if (fnmatch(sys_glob, systems[i], 0))
			continue;
		systems_named++;
		int n = match_system(list, dir, systems[i], ev_glob, index);
		if (n < 0)
			return n;
		matched += n;
	}
	/* "kvm_exit" alone: an event name in any system. */
	for (size_t i = 0; !colon && !systems_named && systems && systems[i]; i++) {
		int n = match_system(list, dir, systems[i], spec, index);
		if (n < 0)
			return n;
		matched += n;
	}
	return matched;
}

int tv_event_list_resolve(struct tv_event_list *list, const char *tracing_dir,
			  const char *const *specs, size_t nr_specs)
{
	char **systems = tracefs_event_systems(tracing_dir);
	int ret = 0;

	if (!systems) {
		tv_err("Cannot list event systems: path=\"%s/events\"", tracing_dir);
		return -ENOENT;
	}
	for (size_t i = 0; i < nr_specs && !ret; i++) {
		int n = resolve_one(list, tracing_dir, systems, specs[i], i);

		if (n < 0) {
			ret = n;
		} else if (n == 0 && !strcmp(specs[i], TV_RECORD_DEFAULT_EVENTS)) {
			tv_err("No kvm events in %s/events: is the kvm module loaded?",
			       tracing_dir);
			ret = -ENOENT;
		} else if (n == 0) {
			tv_err("Unknown event: \"%s\" matches nothing in %s/events",
			       specs[i], tracing_dir);
			ret = -ENOENT;
		}
	}
	tracefs_list_free(systems);
	return ret;
}

void tv_event_list_free(struct tv_event_list *list)
{
	for (size_t i = 0; i < list->nr; i++) {
		free(list->ids[i].system);
		free(list->ids[i].event);
	}
	free(list->ids);
	list->ids = NULL;
	list->nr = 0;
}
