/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The one owner of a session directory (lib/format/session_writer.c): it creates
 * DIR, gives each recorder its domain's subfolder, keeps the domain list in
 * the order the recorders give it, and writes DIR/session.meta, the last
 * file of a complete session (doc/session-format.md, "who writes what").
 *
 * Who owns it: `record` (host/recorder.c) makes one per session and one
 * per flight-recorder snapshot, and hands it to the host (kvm/), Xen,
 * guest and UST recorders, which write only their own subfolders.  A
 * recorder made on its own (tv_recorder_create(), tv_xen_recorder_create(),
 * xen import) makes its own writer and commits it at its stop.
 *
 * Threads: _add_domain() and _domain_dir() take the writer's lock (guests
 * register from their own threads); the rest is the owner's thread, with
 * every recorder stopped before _commit().
 */
#ifndef TV_LIB_SESSION_WRITER_H
#define TV_LIB_SESSION_WRITER_H

#include <stdbool.h>
#include <stddef.h>

struct tv_session_writer;

/* mkdir failures are not logged: the caller says them in its own words */
#define TV_SESSION_WRITER_QUIET 0x1

/*
 * tv_session_writer_new - a writer for the session directory @dir (copied)
 * @flags: 0 or TV_SESSION_WRITER_QUIET
 * @out: set to the writer (owned by the caller: tv_session_writer_free()),
 *       NULL on failure
 *
 * Nothing is created yet: DIR is made with the first subfolder asked for
 * (or tv_session_writer_mkdir()), so that a recorder that fails before it
 * leaves nothing behind.  Return: 0 or -ENOMEM.
 */
int tv_session_writer_new(const char *dir, unsigned int flags, struct tv_session_writer **out);
/*
 * tv_session_writer_use - the writer a recorder writes through: @w, the
 * session's (borrowed), or when @w is NULL a new one for @dir, which the
 * recorder owns (*@own set: it commits and frees it at its end).
 * Return: 0, or -ENOMEM with *@out NULL.
 */
int tv_session_writer_use(struct tv_session_writer *w, const char *dir,
			  struct tv_session_writer **out, bool *own);
/* The session directory (owned by @w). */
const char *tv_session_writer_dir(const struct tv_session_writer *w);
/*
 * tv_session_writer_mkdir - create DIR now, new: -EEXIST (logged as "Output
 * exists" unless quiet) when something is there.  Return: 0 or -errno.
 */
int tv_session_writer_mkdir(struct tv_session_writer *w);
/*
 * tv_session_writer_domain_dir - create DIR (if not yet) and DIR/@subdir
 * for one recorder; its path into @path.  Threads: any.
 * Return: 0, -ENAMETOOLONG, or -errno of mkdir (logged).
 */
int tv_session_writer_domain_dir(struct tv_session_writer *w, const char *subdir, char *path,
				 size_t size);
/*
 * tv_session_writer_add_domain - list @subdir in session.meta, after those
 * listed before (a recorder lists its domain when its data is whole; the
 * first listed is the reference).  Threads: any.
 * Return: 0, -EINVAL (not a plain name), -ENOMEM.
 */
int tv_session_writer_add_domain(struct tv_session_writer *w, const char *subdir);
/*
 * tv_session_writer_commit - write DIR/session.meta (tmp + rename) with the
 * domains listed so far; @reference NULL: the first of them.  Called once,
 * when every recorder has stopped.  Return: 0 or -errno (logged).
 */
int tv_session_writer_commit(struct tv_session_writer *w, const char *reference);
/*
 * tv_session_writer_set - one more key of session.meta, written by the
 * commit after the standard ones (a flight recorder's snapshot: its
 * trigger).  @key and @value are copied; no '=' in @key, no newline in
 * either.  Return: 0, -EINVAL or -ENOMEM.
 */
int tv_session_writer_set(struct tv_session_writer *w, const char *key, const char *value);
/*
 * tv_session_writer_discard - a recorder failed to start: remove DIR (all
 * of it) when it was made for @subdir's recorder and nothing committed;
 * otherwise leave it.  Logs a warning when the removal fails.
 */
void tv_session_writer_discard(struct tv_session_writer *w, const char *subdir);
/* NULL-safe; the directory stays. */
void tv_session_writer_free(struct tv_session_writer *w);

#endif
