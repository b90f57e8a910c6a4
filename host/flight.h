/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * A flight recorder's triggers (host/flight.c): record --trigger RULE.
 * The rules are watched by a thread of their own (the host events in a
 * tracefs instance each, the exit latencies by kvm/flight_bpf.c); a hit
 * becomes the one pending trigger, which the session's thread turns into
 * a snapshot once its time has come (--post after it; for an exit, after
 * the exit's end).  Threads: tv_flight_arm/_due/_done/_disarm from the
 * session's thread; the watcher thread only fills the pending slot.
 */
#ifndef TV_HOST_FLIGHT_H
#define TV_HOST_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

struct tv_xen_recorder;

struct tv_flight_opts {
	const char *const *rules;
	size_t nr_rules;
	uint64_t post_ns;		/* after the trigger (an exit: after its end) */
	uint64_t holdoff_ns;		/* after a snapshot, before the next trigger counts */
	unsigned int max_snapshots;	/* 0: TV_FLIGHT_DEFAULT_MAX_SNAPSHOTS */
	const char *clock;		/* the host's trace clock (NULL: local) */
	struct tv_xen_recorder *xen;	/* exit rules on Xen's records (host/flight_xen.c), NULL: BPF */
};

/* The trigger that fired, as session.meta keys: key, value, ..., NULL. */
#define TV_FLIGHT_MAX_KEYS 16
struct tv_flight_fire {
	const char *keys[2 * TV_FLIGHT_MAX_KEYS + 1];
	char buf[2048];			/* the values */
};

struct tv_flight;

/* "200ms", "1s", "1.5s", "500us", "100ns" (the unit is required).  Return: 0 or -1. */
int tv_flight_parse_duration(const char *s, uint64_t *ns);

/*
 * tv_flight_rules_check - parse every rule (before anything is created).
 * Return: 0, or -EINVAL with the rule and what is wrong logged in one line.
 */
int tv_flight_rules_check(const char *const *rules, size_t nr);
/*
 * tv_flight_arm - watch the rules (instances, BPF, the thread); @out
 * NULL on failure.  Return: 0 or -errno (logged); nothing stays armed.
 */
int tv_flight_arm(const struct tv_flight_opts *o, struct tv_flight **out);
/* An eventfd readable when a trigger fired (poll it with the session's waits). */
int tv_flight_fd(const struct tv_flight *f);
/* Milliseconds until tv_flight_due() has work (a pending trigger), -1: none. */
int tv_flight_next_ms(struct tv_flight *f);
/*
 * tv_flight_due - a snapshot to take now: 1 with @fire filled (its keys),
 * 0 none yet.  The caller then takes it and calls tv_flight_done().
 */
int tv_flight_due(struct tv_flight *f, struct tv_flight_fire *fire);
/* The snapshot of the last tv_flight_due() was taken (@ok) or failed: holdoff, counts. */
void tv_flight_done(struct tv_flight *f, int ok);
/*
 * Triggers not taken since the last call, and why (one line each is the
 * caller's to say): busy (a snapshot pending or being written), holdoff,
 * the --max-snapshots limit.
 */
void tv_flight_refused(struct tv_flight *f, unsigned int *busy, unsigned int *holdoff,
		       unsigned int *max);
/*
 * tv_flight_guest_hit - a guest= rule's event, seen by the guest's agent
 * (host/flight_guest.c, from the guest's thread): @rule its index in
 * opts.rules, @time_ns and @cpu the guest's.  Refused like any hit (busy,
 * holdoff, --max-snapshots: counted).  Return: 1 taken, 0 refused,
 * -EINVAL when @rule is not a guest= rule naming @guest.
 */
int tv_flight_guest_hit(struct tv_flight *f, size_t rule, const char *guest, uint64_t time_ns, int cpu);
/* Stop watching, free; NULL-safe. */
void tv_flight_disarm(struct tv_flight *f);

struct tv_session_record;
/*
 * tv_session_record_snapshot_keys - tv_session_record_snapshot() with
 * @keys (key, value, ..., NULL: copied) added to the snapshot's
 * session.meta: serve's POST /snapshot (an alert's name and VM).
 */
int tv_session_record_snapshot_keys(struct tv_session_record *s, const char *const *keys, char *path,
				    size_t size);

#define TV_FLIGHT_DEFAULT_POST_NS 100000000ULL		/* 100 ms */
#define TV_FLIGHT_DEFAULT_HOLDOFF_NS 10000000000ULL	/* 10 s */
#define TV_FLIGHT_DEFAULT_MAX_SNAPSHOTS 10
#define TV_FLIGHT_EXIT_WAIT_NS 10000000000ULL	/* an exit still open after 10 s: snapshot anyway */

#endif
