/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * `record --ust` on a host (host/ust_record.c): the registration socket's
 * listener and the consumer of every process that registers.
 */
#ifndef TV_HOST_UST_RECORD_H
#define TV_HOST_UST_RECORD_H

#include <stddef.h>
#include <stdint.h>

struct tv_session_writer;
struct tv_ust_recorder;
struct tv_ust_policy;

struct tv_ust_record_opts {
	struct tv_session_writer *session;	/* the session (borrowed): processes' folders in its DIR */
	const char *clock;		/* the session's trace clock: mono or x86-tsc (NULL: mono) */
	const char *const *patterns;	/* globs on PROVIDER:EVENT, kept by the caller */
	size_t nr_patterns;
	const char *socket;		/* NULL: $TRACEVISOR_UST_SOCK, else TV_UST_SOCK_DEFAULT */
	uint64_t flight_bytes;		/* > 0: flight recorder, the last this many bytes per process */
	const char *mode;		/* the processes' policy (tv_session_record_opts.ust_mode) */
	uint32_t subbuf_size, nr_subbufs;
};

/*
 * The policy @opts asks of the processes, checked (before anything is
 * created).  Return: 0, or -EINVAL (logged).
 */
int tv_ust_recorder_policy(const struct tv_ust_record_opts *opts, struct tv_ust_policy *out);
/*
 * Listen and consume from now on (a thread).  Return: 0, or -errno (logged)
 * with *@out to destroy.
 */
int tv_ust_recorder_start(const struct tv_ust_record_opts *opts, struct tv_ust_recorder **out);
/*
 * Disable, flush and copy every live process, write every domain and list
 * them with @session (NULL: not listed).  Return: 0 or -1 (logged).
 */
int tv_ust_recorder_stop(struct tv_ust_recorder *u, struct tv_session_writer *session);
/*
 * Flight recorder (opts.flight_bytes): the last flight_bytes of every
 * traced process into the new session directory @dir (created by the
 * caller's snapshot writer, which commits its session.meta from
 * @domains), while the recording goes on.  Blocks until
 * the listener thread has written it.  Return: 0, -ENODATA (no process
 * registered or traced an event yet), -EINVAL (not a flight recorder), -errno (logged).
 */
int tv_ust_recorder_snapshot(struct tv_ust_recorder *u, const char *dir, char *domains,
			     size_t domains_size);
/* Processes recorded, their events and the events they discarded (after stop). */
void tv_ust_recorder_summary(const struct tv_ust_recorder *u, size_t *procs, uint64_t *events,
			     uint64_t *lost);
/* Stops if still running; closes and removes the socket.  NULL-safe. */
void tv_ust_recorder_destroy(struct tv_ust_recorder *u);

#endif
