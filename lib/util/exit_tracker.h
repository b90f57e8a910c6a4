/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Exit -> entry pairing, one meaning for every analysis that times VM exits
 * (kvm/kvm_stat.c, xen/xen_stat.c, sync/vcpu_check.c, export/export_perfetto.c).
 *
 * A tracker holds one slot per key: a host thread (KVM), a physical CPU
 * (Xen), a vCPU (the vCPU check).  An exit opens the slot; the next entry
 * of the same key closes it and gives the exit's duration.  Nothing is
 * dropped: every exit that cannot be paired is counted in one of
 * @unmatched (a second exit came before the entry), @backwards (the entry
 * is timestamped before its exit) or tv_exit_tracker_open() (still open
 * when the session ended).  There is no limit on the number of keys.
 *
 * Threads: a tracker belongs to the thread that uses it; no locking.
 */
#ifndef TV_LIB_EXIT_TRACKER_H
#define TV_LIB_EXIT_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tv_exit_slot {
	uint64_t key;		/* the caller's key + 1; 0: a free slot */
	bool open;		/* an exit awaits its entry */
	uint64_t exit_ts;	/* the open exit's timestamp */
	/* The caller's, kept with the key (untouched by the tracker). */
	void *ptr;		/* e.g. the open exit's latency row */
	uint64_t data[2];	/* e.g. exit reason and ISA */
	int label;		/* e.g. the vCPU number learned; -1 at creation */
};

struct tv_exit_tracker {
	struct tv_exit_slot *slots;	/* open addressing by key */
	size_t cap, nr;
	uint64_t paired;	/* exits closed by their entry */
	uint64_t unmatched;	/* exits followed by another exit, no entry */
	uint64_t backwards;	/* entries timestamped before their exit */
};

/* The slot of @key, created (closed, label -1) on first use; NULL: -ENOMEM. */
struct tv_exit_slot *tv_exit_tracker_slot(struct tv_exit_tracker *t, uint64_t key);
/* The slot of @key if it was ever used, else NULL. */
struct tv_exit_slot *tv_exit_tracker_find(const struct tv_exit_tracker *t, uint64_t key);
/*
 * An exit of @key at @ts: opens the slot (an exit already open is counted
 * in @unmatched).  Returns the slot for the caller's data, NULL: -ENOMEM.
 */
struct tv_exit_slot *tv_exit_tracker_exit(struct tv_exit_tracker *t, uint64_t key, uint64_t ts);
/*
 * Close @s's open exit at @ts (its entry).  Returns 1 and the duration in
 * *@dur when paired; 0 when nothing was open, or when @ts is before the
 * exit (counted in @backwards).  The slot is closed either way.
 */
int tv_exit_tracker_close(struct tv_exit_tracker *t, struct tv_exit_slot *s, uint64_t ts,
			  uint64_t *dur);
/* Forget @s's open exit, untimed (its end was lost): counted in @unmatched. */
void tv_exit_tracker_drop(struct tv_exit_tracker *t, struct tv_exit_slot *s);
/* Exits still open (at the end of the session: never paired). */
uint64_t tv_exit_tracker_open(const struct tv_exit_tracker *t);
void tv_exit_tracker_free(struct tv_exit_tracker *t);

#endif
