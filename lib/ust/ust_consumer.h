/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The consumer of one traced process's user-space buffers (lib/ust/ust_abi.h):
 * validates the mapping's header against the mapping's real size, reads
 * complete sub-buffers by the commit protocol, hands them back to the
 * writer, and recovers what a dead process committed.  Also the record
 * walker the session reader and the host's guest stream use on sub-buffers
 * that came from elsewhere.
 *
 * Plain C, libc only, no logging (the agent links it): a function that
 * finds a lie fills @why in the consumer and returns -EBADMSG; the caller
 * says it once, naming the process.  Everything read from the mapping is
 * untrusted; a value that does not fit cuts this process off (c->cut),
 * never the caller, and no loop runs longer than the sub-buffer it walks.
 *
 * Threads: a consumer belongs to one thread.  The writer runs concurrently
 * in another process; the shared words are read with acquire loads and the
 * consumer's position is published with a release store (see each use).
 */
#ifndef TV_LIB_UST_CONSUMER_H
#define TV_LIB_UST_CONSUMER_H

#include <stddef.h>
#include <stdint.h>

#include "ust_abi.h"

#define TV_UST_MAX_BUFS		1024
#define TV_UST_MAX_ID		4095	/* highest event id a process may use */
#define TV_UST_MAX_META		(4u << 20)
#define TV_UST_MAX_DYN		8
#define TV_UST_NAME_MAX		63

/*
 * A budget of metadata bytes shared by several processes (every traced
 * process of one guest, or of the host's recorder): each byte a consumer
 * copies counts against it, so a guest's processes together cannot make
 * the recorder hold more than @max bytes.  A process whose metadata would
 * pass it is cut off (its why names @owner and the limit).
 */
struct tv_ust_meta_pool {
	uint64_t used, max;
	const char *owner;		/* "guest", "recorder": for the reason */
};

/* One event of the metadata, as checked. */
struct tv_ust_event {
	uint16_t id;
	uint16_t nr_dyn;
	uint32_t min_size;		/* bytes from common_type on, at least */
	uint16_t dyn_off[TV_UST_MAX_DYN];	/* __data_loc words, from common_type */
	char provider[TV_UST_NAME_MAX + 1];
	char name[TV_UST_NAME_MAX + 1];
	const char *format;		/* its format file's text, in c->meta */
	size_t format_off;		/* where in c->meta */
	size_t format_len;
};

/* Per buffer: what the consumer read of it. */
struct tv_ust_buf_state {
	uint64_t pos;			/* next sub-buffer to read (bytes since the start) */
	uint64_t subbufs;		/* sub-buffers read */
	uint64_t records;		/* records in them */
	uint64_t overwritten;		/* sub-buffers skipped: the writer lapped (overwrite mode) */
};

struct tv_ust_consumer {
	unsigned char *map;		/* the whole mapping, shared with the writer */
	size_t map_size;		/* from fstat, never from the mapping */
	struct tv_ust_shm_header hdr;	/* checked copy; the mapping's is not read again */
	struct tv_ust_buf_state *bufs;	/* hdr.nr_bufs */
	char *meta;			/* private copy of the metadata read so far */
	size_t meta_len;		/* bytes copied */
	size_t meta_cap;		/* bytes allocated at @meta (grown geometrically) */
	size_t meta_parsed;		/* bytes of whole entries parsed */
	/*
	 * The entry at @meta_parsed was searched up to here and is not whole
	 * yet: the next search starts here, so each byte is looked at a
	 * bounded number of times however the metadata arrives (linear time).
	 */
	size_t meta_scanned;
	/* Shared by the consumers of one guest or recorder (NULL: none), set by the caller. */
	struct tv_ust_meta_pool *pool;
	struct tv_ust_event *events;	/* by id; events[id].id == 0: unknown */
	size_t nr_events;		/* entries parsed */
	int cut;			/* a lie was seen: read nothing more */
	char why[240];
};

/*
 * tv_ust_consumer_init - check a process's mapping and start consuming it
 * @c: zeroed by the call; release with tv_ust_consumer_release()
 * @map: the mapping (PROT_READ|PROT_WRITE, MAP_SHARED), still the caller's
 * @map_size: its size as fstat() gave it
 *
 * Return: 0, -EBADMSG with c->why when the header lies, -ENOMEM.
 */
int tv_ust_consumer_init(struct tv_ust_consumer *c, void *map, size_t map_size);
void tv_ust_consumer_release(struct tv_ust_consumer *c);

/*
 * tv_ust_consumer_meta_update - read the metadata appended since last time
 *
 * Return: the number of new events (0: none), -EBADMSG (c->why, c->cut),
 * -ENOMEM.  New events are c->events[id] for the ids listed in @new_ids
 * (up to @max_new, may be NULL) in order of appearance.
 */
int tv_ust_consumer_meta_update(struct tv_ust_consumer *c, uint16_t *new_ids, size_t max_new);

/*
 * tv_ust_meta_append - parse metadata that came another way (a guest's
 * agent): @c zeroed, or a consumer of a mapping.  Same returns as
 * tv_ust_consumer_meta_update(); a cap of TV_UST_MAX_META bytes in all,
 * and of c->pool's when set.  Linear: a call costs O(@len + the entries it
 * completes), whatever was appended before (an empty append is O(1)).
 */
int tv_ust_meta_append(struct tv_ust_consumer *c, const void *text, size_t len, uint16_t *new_ids,
		       size_t max_new);

/*
 * tv_ust_consumer_read - the next complete sub-buffer of buffer @b
 * @out: hdr.subbuf_size bytes
 *
 * Copies it to @out, checks every record (a bad one ends the valid part:
 * the rest of @out is zeroed, c->cut is set and c->why says why), gives the
 * sub-buffer back to the writer and moves on.
 * Return: 1 (one sub-buffer in @out), 0 (none complete), -EBADMSG (cut:
 * nothing read), -ENOMEM.
 */
int tv_ust_consumer_read(struct tv_ust_consumer *c, unsigned int b, unsigned char *out);

/*
 * tv_ust_consumer_recover - a dead process's next partial sub-buffer of @b
 *
 * Once the writer is gone for good and tv_ust_consumer_read() returned 0:
 * copies the committed records of the next reserved sub-buffer to @out,
 * record by record while the header is non-zero and fits, up to @reserve,
 * skipping reservations still marked TV_UST_ID_UNCOMMITTED (the records
 * after one are moved up; the rest of @out is zeroed).
 * Return: 1 (a sub-buffer in @out, maybe empty of records), 0 (nothing
 * more reserved), -EBADMSG (cut).
 */
int tv_ust_consumer_recover(struct tv_ust_consumer *c, unsigned int b, unsigned char *out);

/*
 * tv_ust_consumer_copy_partial - the committed records of @b's next
 * reserved sub-buffer, for a live process whose writers are quiescent
 * (events disabled, FLUSH answered): copied to @out as recover does, but
 * the sub-buffer stays the writer's (nothing zeroed, @consumed unchanged),
 * so the process can go on tracing for a later consumer.  Same returns.
 */
int tv_ust_consumer_copy_partial(struct tv_ust_consumer *c, unsigned int b, unsigned char *out);

/*
 * tv_ust_consumer_snapshot - the newest sub-buffers of overwrite buffer @b,
 * copied without consuming them (a flight recorder's snapshot; the writer
 * goes on, and a later snapshot may copy them again)
 * @out: room for @max sub-buffers of hdr.subbuf_size bytes; filled oldest
 *	first, the last one possibly the current, partial sub-buffer (its
 *	committed records, the rest zeroed)
 * @n: set to the sub-buffers copied (<= @max), contiguous in the writer's order
 * @whole: set to 1 when they reach back to the buffer's first event (nothing
 *	older was overwritten), else 0
 *
 * A sub-buffer the writer is rewriting is not copied, and nothing older
 * than it is.  Return: 0, -EBADMSG (cut: the records lie), -EINVAL (not an
 * overwrite buffer).
 */
int tv_ust_consumer_snapshot(struct tv_ust_consumer *c, unsigned int b, unsigned char *out,
			     unsigned int max, unsigned int *n, int *whole);

/*
 * tv_ust_flight_policy - a flight recorder's ring for one traced process:
 * about @flight_bytes over its @nr_cpus buffers (one per configured CPU),
 * sub-buffers of at most 64 KiB and at least four per buffer where the
 * size allows.  Sets *@subbuf_size and *@nr_subbufs (the process's
 * CONFIG, overwrite mode).  The host's recorder and the guest's agent both
 * size their processes' rings so.
 */
void tv_ust_flight_policy(uint64_t flight_bytes, long nr_cpus, uint32_t *subbuf_size,
			  uint32_t *nr_subbufs);

/*
 * struct tv_ust_tail - a flight snapshot of one process: the newest
 * sub-buffers of each of its buffers, trimmed to a gap-free tail
 * @max: sub-buffers room per buffer
 * @n: per buffer, how many were copied (oldest first)
 * @kept: per sub-buffer (buffer b's i-th at b * max + i), its records kept
 * @all: nr_bufs * max sub-buffers; buffer b's i-th at (b * max + i) * subbuf_size
 */
struct tv_ust_tail {
	uint32_t max;
	unsigned int *n;
	size_t *kept;
	unsigned char *all;
};

/*
 * tv_ust_consumer_tail - the newest sub-buffers of every buffer of @c (at
 * most @bytes in all, one sub-buffer per buffer at least), copied without
 * taking them (tv_ust_consumer_snapshot()), then trimmed: when a buffer's
 * oldest events were overwritten, the events older than the first one it
 * still holds are dropped from every buffer, so that no thread's sequence
 * has a hole (a thread that moved between CPUs leaves its older events in
 * several buffers).  A record that lies cuts @c off (c->cut): what came
 * before it is kept.  @t is the caller's, freed with
 * tv_ust_tail_release() whatever the return.  Return: 0, -ENOMEM,
 * -EBADMSG (cut), -EINVAL (not an overwrite buffer).
 */
int tv_ust_consumer_tail(struct tv_ust_consumer *c, uint64_t bytes, struct tv_ust_tail *t);
void tv_ust_tail_release(struct tv_ust_tail *t);

/* Events the writer counted as discarded in buffer @b (untrusted, for the record). */
uint64_t tv_ust_consumer_lost(const struct tv_ust_consumer *c, unsigned int b);

/*
 * tv_ust_subbuf_walk - check the records of one sub-buffer
 * @events: by id (entries with id 0 unknown), @nr_ids entries
 * @end: set to the end of the valid records (the first bad one's offset)
 * @records: set to how many valid records there are
 * @why: set to a static text when a record is bad
 *
 * A record with id TV_UST_ID_PADDING (or fewer bytes left than a header)
 * ends the sub-buffer.  Return: 0 (all valid) or -EBADMSG.
 */
int tv_ust_subbuf_walk(const unsigned char *sb, size_t size, const struct tv_ust_event *events,
		       size_t nr_ids, size_t *end, uint64_t *records, const char **why);

/*
 * tv_ust_format_scan - the bounds of an ftrace format text
 * Fills @ev->min_size and the __data_loc offsets.  Return: 0 or -EBADMSG
 * with *@why (no common_type at 0, a field past 64 KiB, too many dynamic
 * fields, no fields).
 */
int tv_ust_format_scan(const char *text, size_t len, struct tv_ust_event *ev, const char **why);

/**
 * tv_ust_mode_name() - "discard", "blocking" or "overwrite"
 * @mode: enum tv_ust_mode (anything else reads as discard, the default)
 */
const char *tv_ust_mode_name(uint32_t mode);

#endif
