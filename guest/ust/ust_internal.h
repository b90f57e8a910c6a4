/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * libtracevisor-ust's internals, shared by its files (guest/ust/ only).
 */
#ifndef TV_UST_INTERNAL_H
#define TV_UST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define TV_UST_NO_MODULE
#include "tracevisor/ust.h"
#include "ust_abi.h"

/*
 * The process's buffers.  Created once (tv_ust_start()) and never freed:
 * the mapping outlives any consumer so a consumer can recover it after a
 * crash, and so the fast path reads it without a grace period.  Published
 * with rcu_assign_pointer (the fields are written before, the pointer
 * after); the fast path loads the pointer with rcu_dereference.
 */
struct ust_state {
	int memfd;
	char *base;			/* the whole mapping */
	struct tv_ust_shm_header *hdr;
	uint32_t nr_bufs;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	uint64_t buf_size;		/* nr_subbufs * subbuf_size */
	uint32_t max_record;		/* largest record a sub-buffer takes */
	int mode;
	int clock;
	bool per_thread;
	int block_timeout_ms;
	/*
	 * Blocking mode: per buffer, the @consumed value at which a writer
	 * gave up waiting (UINT64_MAX: none).  While @consumed stays there,
	 * writers drop at once instead of waiting again; written by writers
	 * with relaxed atomics (a hint, not a lock).
	 */
	uint64_t *stalled;
};

extern struct ust_state *tv_ust_state;

static inline struct tv_ust_buf_ctl *ust_buf(const struct ust_state *st, uint32_t i)
{
	return (struct tv_ust_buf_ctl *)(st->base + st->hdr->bufs_offset + (uint64_t)i * st->hdr->buf_stride);
}

static inline char *ust_buf_data(const struct ust_state *st, struct tv_ust_buf_ctl *b)
{
	return (char *)b + st->hdr->data_offset;
}

/* ust_log.c */
void ust_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ust_registry.c: the one mutex of the slow paths */
extern pthread_mutex_t ust_lock;
void ust_registry_init(void);
int ust_meta_append_all(struct ust_state *st);	/* under ust_lock */
int ust_registry_count(void);
void ust_disable_all(void);

/* ust_core.c */
int ust_start_locked(const struct tv_ust_config *cfg);
int ust_defaults(struct tv_ust_config *cfg);

/* ust_listener.c */
void ust_listener_start(void);
void ust_listener_wait_registered(void);

#endif
