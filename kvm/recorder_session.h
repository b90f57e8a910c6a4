/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The host recorder inside a session another owns (kvm/kvm_recorder.c): `record`
 * (host/recorder.c) owns the session writer and hands it here; the
 * recorder writes only DIR/host/ (and DIR/recorder, its tie for crash
 * recovery, kvm/recover.c) and lists "host" first.
 */
#ifndef TV_KVM_RECORDER_SESSION_H
#define TV_KVM_RECORDER_SESSION_H

#include <stdbool.h>

struct tv_session_writer;
struct tv_record_opts;
struct tv_recorder;

/*
 * tv_recorder_create_in - tv_recorder_create() into @w's session (borrowed:
 * it must outlive the recorder; its owner commits session.meta after
 * tv_recorder_stop(); opts->outdir is not read).  @w NULL: a writer of
 * the recorder's own for opts->outdir, committed at its stop (what
 * tv_recorder_create() does).  Return: as tv_recorder_create(), *@out
 * NULL on failure.
 */
int tv_recorder_create_in(struct tv_session_writer *w, const struct tv_record_opts *opts,
			  struct tv_recorder **out);
/*
 * The session @rec writes into: for a guest started on a recorder alone
 * (tv_guest_start(), top's live view) to register with.  Owned by @rec or
 * by the session owner; never NULL.
 */
struct tv_session_writer *tv_recorder_session(const struct tv_recorder *rec);
/*
 * host/ is whole after tv_recorder_stop(): its maps and final meta written
 * (a capture thread's failure, which _stop() returns, leaves them whole):
 * the owner may commit session.meta.
 */
bool tv_recorder_finished(const struct tv_recorder *rec);

#endif
