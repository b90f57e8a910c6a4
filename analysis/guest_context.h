/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * What each guest vCPU runs, through the merged read (analysis/guest_context.c),
 * for stat --by guest-task.  Threads: a context belongs to one thread.
 */
#ifndef TV_SYNC_GUEST_CONTEXT_H
#define TV_SYNC_GUEST_CONTEXT_H

#include "tracevisor/tracevisor.h"

struct tv_guest_context;

/*
 * A context for @rd's session in @dir (guest domains: subdirectories
 * guest-NAME); reads each guest domain once to know where its trace ends.
 */
int tv_guest_context_new(struct tv_reader *rd, const char *dir, struct tv_guest_context **out);
/*
 * A context for a session being recorded (a following reader): the guests'
 * traces have no end; the caller gives each guest CPU's events in order,
 * each before the exits that follow it on that vCPU (host/top_guest.c).
 */
int tv_guest_context_new_live(struct tv_reader *rd, struct tv_guest_context **out);
/* Every event of the merged read, in order, before the analyses see it. */
int tv_guest_context_event(struct tv_guest_context *c, const struct tv_event *ev);
/* A tv_exit_guest_fn (lib/util/latency_table.h), for KVM's exits and Xen's; @arg is the context. */
int tv_guest_context_of(void *arg, const struct tv_event *exit, int vcpu,
			struct tv_exit_stat_row *out);
void tv_guest_context_free(struct tv_guest_context *c);

#endif
