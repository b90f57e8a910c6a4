/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * A host recorder tied to its tracefs instance, so that what a killed one
 * left in the kernel can be salvaged into its session (kvm/recover.c).
 * Private to kvm/kvm_recorder.c and kvm/recover.c.
 */
#ifndef TV_KVM_RECOVER_H
#define TV_KVM_RECOVER_H

/* Where a recorder names its session for a later run (tmpfs: one boot). */
#define TV_RECOVER_RUN_DIR "/run/tracevisor"
#define TV_RECOVER_REGISTRY TV_RECOVER_RUN_DIR "/instances"

/*
 * Tie this process's instance @name (already created under @tracing_dir)
 * to the session @session_dir: write DIR/recorder and the registry entry.
 * The registry is optional (a warning): `recover DIR` still works without.
 * Return: 0 or -errno (logged).
 */
int tv_recover_tie_write(const char *session_dir, const char *tracing_dir, const char *name);
/* At a clean end, once the instance is gone: both files removed. */
void tv_recover_tie_remove(const char *session_dir, const char *name);

enum tv_stale_state {
	TV_STALE_ALIVE,		/* its recorder runs: leave it */
	TV_STALE_DEAD,		/* its recorder is dead, nothing to salvage: remove it */
	TV_STALE_DONE,		/* salvaged into its session and removed */
};
/*
 * The instance @name of recorder @pid, found by a new recorder: salvaged into
 * its session (one info line) when the registry ties it to a session dir
 * that still exists and is incomplete.  Without a registry entry the pid
 * alone decides (dead: ESRCH).
 */
enum tv_stale_state tv_recover_stale(const char *tracing_dir, const char *name, int pid);
/* Registry entries whose instance is gone (removed by hand, or by an older tracevisor). */
void tv_recover_prune_registry(const char *tracing_dir);

#endif
