/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The consumer's side of the registration socket (lib/ust/ust_abi.h), shared
 * by `record --ust` (host/ust_record.c) and the guest agent
 * (guest/agent_ust.c): listen on TRACEVISOR_UST_SOCK, and per connected
 * process receive HELLO (answered with CONFIG), REGISTER (its memfd, by
 * SCM_RIGHTS, sealed against shrinking and mapped) and REPLY, and send
 * ENABLE / DISABLE / FLUSH.
 *
 * Plain C, libc only, no logging (the agent links it): functions return
 * -errno; a process that lies gets @why filled and -EBADMSG, the caller
 * says it once, naming the process.  Everything a process sends is
 * untrusted.
 *
 * Threads: a connection belongs to one thread (the caller's listener).
 */
#ifndef TV_LIB_UST_LISTEN_H
#define TV_LIB_UST_LISTEN_H

#include <stddef.h>
#include <stdint.h>

#include "ust_abi.h"

/* One traced process's registration connection. */
struct tv_ust_conn {
	int fd;			/* -1 once closed */
	int pid;		/* 0 before HELLO; > 0, or -1 if HELLO gave none */
	char comm[17];		/* from HELLO: printable, no '=' (it goes into key=value text) */
	void *map;		/* its memfd, mapped on REGISTER; NULL before */
	size_t map_size;
	int replies;		/* REPLY messages received */
	/* what CONFIG asks for, set by the caller after accept (0: the process's own default) */
	uint32_t cfg_mode;	/* enum tv_ust_mode + 1 */
	uint32_t cfg_subbuf_size;
	uint32_t cfg_nr_subbufs;
};

/*
 * The buffer policy a consumer asks of the processes (record --ust-mode,
 * --ust-buffer; START's ust_mode, ust_subbuf_size, ust_nr_subbufs).
 */
struct tv_ust_policy {
	uint32_t mode;		/* enum tv_ust_mode + 1, 0: the process's own default */
	uint32_t subbuf_size;	/* 0, or a power of two, 4 KiB ... 1 MiB */
	uint32_t nr_subbufs;	/* 0, or a power of two, 2 ... 4096 */
};

/**
 * tv_ust_policy_parse() - a policy from its words, checked
 * @mode: "discard", "blocking" or "overwrite"; NULL or "": the default
 * @subbuf_size, @nr_subbufs: 0 (the default) or in the ranges of
 *	struct tv_ust_policy (what a process accepts: guest/ust/ust_core.c)
 * @out: filled; all zero on failure
 *
 * Return: 0, or -EINVAL with @why (NUL-terminated) saying which.
 */
int tv_ust_policy_parse(const char *mode, uint32_t subbuf_size, uint32_t nr_subbufs,
			struct tv_ust_policy *out, char *why, size_t why_size);

/* CONFIG of @conn asks for @pol (after accept, before HELLO is answered). */
void tv_ust_conn_set_policy(struct tv_ust_conn *conn, const struct tv_ust_policy *pol);

/**
 * tv_ust_listen_open() - listen for traced processes on @path
 * @path: the socket's path; its parent directory is created if missing
 * @fd: set to the listening socket (non-blocking, close-on-exec); the
 *	caller closes it and unlinks @path
 *
 * Return: 0, -EADDRINUSE if another consumer already listens there (its
 * processes are not stolen), or -errno of socket/bind/listen.
 */
int tv_ust_listen_open(const char *path, int *fd);

/**
 * tv_ust_conn_accept() - a connection waiting on @listen_fd, accepted
 * @conn: zeroed and filled by the call
 *
 * Return: 0, or -errno (-EAGAIN: nobody waiting).
 */
int tv_ust_conn_accept(int listen_fd, struct tv_ust_conn *conn);

/**
 * tv_ust_conn_send() - one message to the process, without blocking
 * @type: TV_UST_MSG_*; @arg: its text (NULL: none); @clock: enum
 *	tv_ust_clock, for TV_UST_MSG_CONFIG only (which also carries the
 *	conn's cfg_* settings)
 *
 * Return: 0, or -EIO (closed, or its socket is full).
 */
int tv_ust_conn_send(struct tv_ust_conn *conn, uint16_t type, const char *arg, uint32_t clock);

/**
 * tv_ust_conn_receive() - one message from the process, without blocking
 * @clock: the session's clock (enum tv_ust_clock), sent back on HELLO
 * @why: filled when the process lied (-EBADMSG)
 *
 * Return: 0 nothing waiting; TV_UST_MSG_HELLO (pid and comm set, CONFIG
 * sent); TV_UST_MSG_REGISTER (map and map_size set: the caller validates
 * the buffers); TV_UST_MSG_REPLY (replies counted); -EPIPE the connection
 * ended; -EBADMSG the process lied (@why); -errno mmap failed (@why).
 * Any fd the message carried is closed.
 */
int tv_ust_conn_receive(struct tv_ust_conn *conn, uint32_t clock, char *why, size_t why_size);

/**
 * tv_ust_conn_rules() - the session's rules to a process that registered:
 * ENABLE for each of @globs, then READY (its constructor waits for it, so
 * its first events follow these rules)
 *
 * Return: 0, or -EIO.
 */
int tv_ust_conn_rules(struct tv_ust_conn *conn, const char *const *globs, size_t nr_globs);

/**
 * tv_ust_conn_quiesce() - the end of the session for this process: its
 * events disabled (DISABLE "*") and every reservation committed (FLUSH)
 *
 * tv_ust_conn_quiesced() says when both were answered (REPLY, counted by
 * tv_ust_conn_receive()); its last sub-buffers can then be copied.
 * Return: 0, or -EIO.
 */
int tv_ust_conn_quiesce(struct tv_ust_conn *conn);

static inline int tv_ust_conn_quiesced(const struct tv_ust_conn *conn)
{
	return conn->replies >= 2;
}

/* Closes the connection (fd -1); the mapping stays. */
void tv_ust_conn_close(struct tv_ust_conn *conn);

/* Closes the connection and unmaps the memfd. */
void tv_ust_conn_release(struct tv_ust_conn *conn);

#endif
