/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Guests in the flight recorder (host/flight_guest.c): record
 * --flight-recorder SIZE --guest SPEC.  Each agent keeps the guest's ring
 * (SIZE per guest); a snapshot asks every agent for it (SNAP) and writes
 * what comes into DIR/snapshot-N/guest-NAME, whatever a guest does within
 * the limits below (TV_GUEST_SNAPSHOT_*).  --trigger guest=NAME:SYSTEM:EVENT[,filter=F]
 * rules are evaluated by NAME's agent, whose TRIGGER reaches host/flight.c.
 *
 * Threads: tv_guest_flight_snapshots_*() and _attach() run on the
 * session's thread; _frame() and _poll() on the guest's own thread; the
 * two meet in one struct tv_guest_flight under its lock.
 */
#ifndef TV_HOST_FLIGHT_GUEST_H
#define TV_HOST_FLIGHT_GUEST_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct tv_guest;
struct tv_guest_stream;
struct tv_flight;
struct tv_meta;
struct tv_session_writer;
struct tv_guest_spec;

/*
 * A guest answers a snapshot request within this (its first data), else it
 * is written truncated with what came (issue 25: a guest that does not
 * answer within 2 s).
 */
#define TV_GUEST_SNAPSHOT_WAIT_S 2.0
/*
 * Once it answered, its data may pause this long: vsock under nested TCG
 * (the lab's L2) held a frame 2-3 s now and then while the agent was
 * sending (kvm-svm-flight: 7 frames in 0.3 s, then none for 2 s, the
 * agent's whole answer 4.6 s for 560 KB), and the 2 s of the answer cut
 * such a guest short.  A guest frozen midway holds its snapshot this long.
 */
#define TV_GUEST_SNAPSHOT_PAUSE_S 5.0
/*
 * The time a guest's answer may take from the request: this, plus a
 * second for every TV_GUEST_SNAPSHOT_MIN_RATE bytes that came, at most
 * TV_GUEST_SNAPSHOT_LIMIT_S.  A ring of megabytes over a slow channel
 * (100-500 KB/s in the lab) thus comes whole, while a guest that drips
 * bytes is cut after about MAX_S and none holds a snapshot past LIMIT_S.
 */
#define TV_GUEST_SNAPSHOT_MAX_S 10.0
#define TV_GUEST_SNAPSHOT_MIN_RATE (64.0 * 1024)
#define TV_GUEST_SNAPSHOT_LIMIT_S 60.0
/* The agent version that keeps its ring until asked (doc/agent-protocol.md). */
#define TV_GUEST_FLIGHT_AGENT_VERSION 4

/* What a guest's flight state needs of its guest (host/guest.c). */
struct tv_guest_flight_io {
	/* send a command with @arg to the agent: 0 or -errno */
	int (*send)(void *ctx, uint16_t type, uint32_t arg);
	/* the guest's own keys of a domain meta (domain, kind, transport, sync_index...) */
	void (*base_meta)(void *ctx, struct tv_meta *m);
	void *ctx;
	const char *name;		/* the guest's name */
	const char *src_dir;		/* DIR/guest-NAME: the formats the agent sent at START */
	struct tv_guest_stream *gs;	/* the guest's stream (META: ncpus, subbuf_size) */
};

struct tv_guest_flight;

/* "guest=NAME:SYSTEM:EVENT[,filter=FILTER]": @name, @event "SYSTEM:EVENT", @filter (in @text, or NULL). */
int tv_flight_guest_rule_parse(const char *text, char *name, size_t name_size, char *system,
			       size_t system_size, char *event, size_t event_size, const char **filter);
/*
 * tv_flight_guest_rules_check - every guest= rule names one of the
 * session's guests (@specs), its filter fits START.
 * Return: 0, or -EINVAL with the rule logged.
 */
int tv_flight_guest_rules_check(const char *const *rules, size_t nr, const struct tv_guest_spec *specs,
				size_t nr_guests);

/*
 * tv_guest_flight_new - a guest's flight state: @bytes its ring (SIZE),
 * @rules the session's --trigger list (the guest= ones naming io->name are
 * its own, sent in START by their index).  @io is copied.  Free with
 * tv_guest_flight_free().  Return: 0 or -ENOMEM, @out NULL on failure.
 */
int tv_guest_flight_new(const struct tv_guest_flight_io *io, uint64_t bytes, const char *const *rules,
			size_t nr, struct tv_guest_flight **out);
void tv_guest_flight_free(struct tv_guest_flight *fl);
/* START's flight lines (flight_bytes, trigger.N, trigger_filter.N), owned by @fl. */
const char *tv_guest_flight_start_keys(const struct tv_guest_flight *fl);

/* The guest thread: one SNAP_DATA, SNAP_FILE, SNAP_UST, SNAP_END, TRIGGER frame (guest_stream.c's callback). -EBADMSG with @err. */
int tv_guest_flight_frame(void *ctx, const struct tv_proto_hdr *h, const unsigned char *p, char *err,
			  size_t err_size);
/* The guest thread, every turn of its loop: a request to send, a deadline passed. */
void tv_guest_flight_poll(struct tv_guest_flight *fl, double now);
/* Its counts over the recording (late snapshot bytes, TRIGGERs) into the session's guest meta @m. */
void tv_guest_flight_counts(const struct tv_guest_flight *fl, struct tv_meta *m);
/* The guest thread: its stream is ready (1) or over (0): snapshots may be asked or not. */
void tv_guest_flight_set_running(struct tv_guest_flight *fl, int running);

/*
 * The session thread: triggers from guests go to @f from now on (NULL:
 * no more; returns once no guest thread is inside @f).
 */
void tv_guest_flight_attach(struct tv_guest *const *guests, size_t n, struct tv_flight *f);
/*
 * tv_guest_flight_snapshots_begin - ask every running guest for its ring
 * into snapshot @id's writer @w (their guest-NAME directories), at once.
 */
void tv_guest_flight_snapshots_begin(struct tv_guest *const *guests, size_t n,
				     struct tv_session_writer *w, unsigned int id);
/*
 * tv_guest_flight_snapshots_end - wait for them (TV_GUEST_SNAPSHOT_LIMIT_S
 * after the begin at most, plus the writing), list in @w each guest whose domain
 * is readable, say each one incomplete in one line.
 * Return: 0 or -errno of the listing.
 */
int tv_guest_flight_snapshots_end(struct tv_guest *const *guests, size_t n, struct tv_session_writer *w);

/* host/guest.c: a guest's flight state (NULL: not a flight recorder) and its thread's wake-up. */
struct tv_guest_flight *tv_guest_flight_of(const struct tv_guest *g);
void tv_guest_wake(struct tv_guest *g);

#endif
