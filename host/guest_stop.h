/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The end of a guest's recording, for the session (host/recorder.c): the
 * public tv_guest_request_stop() and tv_guest_stop() bound it to
 * STOP_MAX_S (host/guest.c); these let the session wait for many guests
 * at once while it watches for an interruption, and cut them short.
 */
#ifndef TV_HOST_GUEST_STOP_H
#define TV_HOST_GUEST_STOP_H

#include <stdbool.h>

struct tv_guest;

/*
 * tv_guest_abort - end the guest's recording now: no more waiting for its
 * END (its status becomes "truncated: the stop was cut short..."); what it
 * sent is kept.  tv_guest_stop() still writes guest-NAME/meta.  Threads:
 * the caller's thread (as tv_guest_request_stop()).
 */
void tv_guest_abort(struct tv_guest *g);
/*
 * tv_guest_finished - whether the guest's thread has ended (or never ran),
 * so that tv_guest_stop() will not wait.  Threads: the caller's thread.
 */
bool tv_guest_finished(struct tv_guest *g);

#endif
