/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * One guest's recording (host/guest.c), driven by the session recording
 * (host/recorder.c) and top --guest (host/top_guest.c); a client program
 * records guests through tv_session_record_start() with opts.guests.
 */
#ifndef TV_HOST_GUEST_H
#define TV_HOST_GUEST_H

#include "tracevisor/tracevisor.h"

/**
 * tv_guest_start - start recording one guest beside the host
 * @rec: the host recorder (started): sync markers go into its trace
 * @spec: the guest (copied)
 * @opts: guest-side options (copied; its strings must outlive @out)
 * @out: the guest handle, owned by the caller (tv_guest_destroy())
 *
 * Creates DIR/guest-NAME and a thread that connects to the agent, streams
 * its data into that directory and runs the sync probes.  Never blocks on
 * the guest.  Threads: the other tv_guest_* functions are called from the
 * thread that started the guest; the guest's own thread uses @rec through
 * its thread-safe functions only.
 * Return: 0 or -errno (nothing was started).
 */
int tv_guest_start(struct tv_recorder *rec, const struct tv_guest_spec *spec,
		   const struct tv_guest_opts *opts, struct tv_guest **out);

/**
 * tv_guest_wait_ready - wait until the guest traces
 * @g: the guest
 * @timeout_ms: how long at most
 *
 * A guest that fails before tracing is not logged again by tv_guest_stop():
 * its status (tv_guest_get_stats()) says why, for the caller to tell.
 * Return: 0, -ETIMEDOUT, -ECANCELED (its agent refused what it was asked,
 * e.g. an event filter its kernel rejects), or another failure.
 */
int tv_guest_wait_ready(struct tv_guest *g, int timeout_ms);

/**
 * tv_guest_connect_error - why the guest's channel does not connect yet
 * @g: the guest
 *
 * Safe from any thread while the guest's thread runs (its last attempt's
 * result, stored atomically).
 * Return: the last failed attempt's -errno while the guest's thread is
 * still trying to connect; 0 once connected (or before the first try).
 */
int tv_guest_connect_error(struct tv_guest *g);

/**
 * tv_guest_stop - final probes, STOP, drain, guest-NAME/meta; joins its thread
 * @g: the guest
 *
 * Call before tv_recorder_stop() (the probes need host tracing).
 * Return: 0 when the guest's domain is decodable and listed, else -errno (logged).
 */
int tv_guest_stop(struct tv_guest *g);

/**
 * tv_guest_request_stop - start the end sequence without waiting
 * @g: the guest
 *
 * To stop many guests in parallel; tv_guest_stop() then waits.
 */
void tv_guest_request_stop(struct tv_guest *g);

/**
 * tv_guest_destroy - stop the guest's thread if still running, free @g
 * @g: a guest, or NULL
 */
void tv_guest_destroy(struct tv_guest *g);

#endif
