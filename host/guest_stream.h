/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The host's parser of a guest agent's byte stream: frames in, files of
 * DIR/guest-NAME/ out.  It is fed whatever the channel delivered, in any
 * pieces, and trusts nothing (doc/agent-protocol.md, "Host checks").
 */
#ifndef TV_KVM_GUEST_STREAM_H
#define TV_KVM_GUEST_STREAM_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct tv_meta;
struct tv_guest_ust;
struct tv_ust_meta_pool;
struct tv_proto_hdr;

#define TV_GUEST_MAX_FILES 4096
/* CPU stream files one guest holds open at once (host/guest_stream.c) */
#define TV_GUEST_MAX_OPEN_CPU_FILES 64

struct tv_guest_stream {
	char dir[PATH_MAX];		/* DIR/guest-NAME, created by the caller */
	uint64_t limit;			/* bytes accepted from the guest, in all */
	uint64_t total;
	unsigned char *buf;		/* the frame being assembled */
	size_t len, cap;
	int ncpus;			/* 0 until META */
	size_t subbuf_size;
	int *cpu_fd;			/* -1: closed (at most TV_GUEST_MAX_OPEN_CPU_FILES open) */
	uint64_t *cpu_bytes;
	unsigned fd_budget_said;	/* the guest went past it: said once */
	unsigned nr_files;
	struct tv_meta *guest_meta;	/* META + END keys, checked */
	int ready, ended;
	int failed;			/* -errno: the stream is dead */
	char error[320];
	unsigned filters_sent;		/* filter.N in START: META must say it took them */
	int ust_asked;			/* START had ust=: UST_* frames are allowed */
	/* what the session reader would refuse in the domain (tv_domain_check()) */
	char rejected[320];
	/*
	 * START's nonce (0: none sent).  Until the agent's HELLO echoing it,
	 * every byte is an earlier session's (a channel that outlives its
	 * sessions): searched through and counted in stale_bytes, never parsed.
	 */
	uint64_t nonce;
	int synced;			/* HELLO seen (or no nonce) */
	uint64_t stale_bytes;
	struct tv_guest_ust *ust[256];	/* TV_PROTO_MAX_UST traced processes (host/guest_ust.c) */
	/*
	 * The session reader's check of a domain directory (tv_domain_check(),
	 * set by host/guest.c; NULL: not checked, as in the fuzz target, which
	 * has no reader): 0, or -errno with @why set.
	 */
	int (*check_domain)(const char *dir, const struct tv_meta *meta, char *why, size_t size);
	struct tv_ust_meta_pool *ust_pool;	/* their metadata bytes, in all (host/guest_ust.c) */
	/*
	 * A flight recorder's guest (START had flight_bytes; host/
	 * flight_guest.c): META must come from an agent that keeps its ring
	 * (agent_version >= 4), and SNAP_DATA, SNAP_FILE, SNAP_UST, SNAP_END, TRIGGER frames after READY go to
	 * @on_flight (-EBADMSG with @err: a protocol error).  NULL: they are
	 * protocol errors.
	 */
	int flight_asked;
	int (*on_flight)(void *ctx, const struct tv_proto_hdr *h, const unsigned char *p, char *err,
			 size_t err_size);
	void *flight_ctx;
	void (*on_pong)(void *ctx, uint64_t seq);
	void (*on_hcall_done)(void *ctx, uint64_t first, uint32_t count, uint32_t done);
	void *ctx;
};

int tv_guest_stream_init(struct tv_guest_stream *gs, const char *dir, uint64_t limit);
/*
 * Consume @len bytes.  Return: 0, or -errno when the guest broke the
 * protocol, exceeded the limit or reported an error (gs->error says why;
 * every later call fails the same way).
 */
int tv_guest_stream_feed(struct tv_guest_stream *gs, const void *data, size_t len);
/* Expect the agent's HELLO with @nonce before anything else (call before feeding). */
void tv_guest_stream_expect_hello(struct tv_guest_stream *gs, uint64_t nonce);
/*
 * Check the guest's domain as the session reader will (header page,
 * formats, their word size against META's long_size), when it is described
 * (READY, and at the end for formats sent later): on a failure gs->rejected
 * says why (not logged: the guest's status, "rejected: WHY", is what its
 * recorder says) and 0 is returned, so the recorder marks the domain
 * status=rejected.  Return: 0 or -ENOMEM.
 */
int tv_guest_stream_check(struct tv_guest_stream *gs);
/* Close the CPU files (their sub-buffers stay whole); the meta stays. */
void tv_guest_stream_close_files(struct tv_guest_stream *gs);
void tv_guest_stream_fini(struct tv_guest_stream *gs);

/*
 * The guest's traced processes (host/guest_ust.c): one frame each; -EBADMSG
 * with @err for a protocol error (ends the stream), 0 when a process's data
 * lied (that process is cut off, logged), -errno.
 */
int tv_guest_ust_proc(struct tv_guest_stream *gs, uint32_t idx, const unsigned char *p, size_t len,
		      char *err, size_t err_size);
int tv_guest_ust_meta(struct tv_guest_stream *gs, uint32_t idx, const unsigned char *p, size_t len,
		      char *err, size_t err_size);
int tv_guest_ust_data(struct tv_guest_stream *gs, uint32_t arg, const unsigned char *p, size_t len,
		      char *err, size_t err_size);
int tv_guest_ust_end(struct tv_guest_stream *gs, uint32_t idx, const unsigned char *p, size_t len,
		     char *err, size_t err_size);
/* Write every process's meta; its subdirectories (up to @max) into @subdirs. */
/*
 * A flight snapshot's SNAP_UST (host/flight_guest.c, the guest's thread):
 * _check: its process announced (UST_PROC, not ended) and whole
 * sub-buffers of one of its buffers, else -EBADMSG with @err;
 * _write: into SNAP_DIR/../ust-NAME-PID (SNAP_DIR: snapshot-N/guest-NAME),
 * made on the process's first frame, records checked as UST_DATA's; past
 * @cap bytes per process dropped and added to *@dropped;
 * _finish: every process's snapshot domain finished with @status (its own
 * "truncated" if cut off) and freed; @list gets their subdirs, comma
 * separated.  Return: how many are listed.
 */
int tv_guest_ust_snap_check(struct tv_guest_stream *gs, uint32_t arg, size_t len, char *err,
			    size_t err_size);
int tv_guest_ust_snap_write(struct tv_guest_stream *gs, uint32_t arg, const unsigned char *p,
			    size_t len, const char *snap_dir, uint64_t cap, uint64_t *dropped);
size_t tv_guest_ust_snap_finish(struct tv_guest_stream *gs, const char *status, char *list, size_t size);
size_t tv_guest_ust_finish(struct tv_guest_stream *gs, const char **subdirs, size_t max);
/*
 * Into @st's ust_* fields: the processes with a domain (announced), their
 * valid records, their discarded events, and the ones not complete, by
 * why (a stopped stream).
 */
void tv_guest_ust_counts(const struct tv_guest_stream *gs, struct tv_guest_stats *st);
void tv_guest_ust_free(struct tv_guest_stream *gs);

#endif
