/* SPDX-License-Identifier: LGPL-2.1 */
/* Resolution of event specs ("kvm", "kvm:kvm_exit", "kvm:*exit*") to events. */
#ifndef TV_KVM_EVENTS_H
#define TV_KVM_EVENTS_H

#include <stddef.h>

struct tv_event_id {
	char *system;
	char *event;
	size_t spec;	/* index of the first spec that matched it */
};

struct tv_event_list {
	struct tv_event_id *ids;
	size_t nr;
};

/* Return: 0, -ENOENT when a spec matches nothing (logged), -errno. */
int tv_event_list_resolve(struct tv_event_list *list, const char *tracing_dir,
			  const char *const *specs, size_t nr_specs);
void tv_event_list_free(struct tv_event_list *list);

#endif
