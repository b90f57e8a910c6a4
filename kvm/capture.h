/* SPDX-License-Identifier: LGPL-2.1 */
/* Per-CPU raw ring-buffer capture (splice), private to the recorder. */
#ifndef TV_KVM_CAPTURE_H
#define TV_KVM_CAPTURE_H

#include <pthread.h>
#include <stdint.h>

/*
 * Threads: one capture thread per CPU (started by tv_capture_start) and
 * the recorder's thread.  The capture thread owns raw_fd, out_fd, pipe_fd,
 * bytes and error from start to tv_capture_join(); stop_fd is an eventfd
 * shared by every capture thread (readable once stop is asked); the rest
 * is set before the thread starts and read-only while it runs.
 * flush_fd is this capture's own eventfd: the recorder's thread writes it
 * to ask for a flush, the capture thread reads it; the capture thread then
 * publishes the flush as done by incrementing @flushed (release; the
 * recorder's thread reads it with acquire, which orders the file writes of
 * the flush before whatever the recorder's thread does next).
 */
struct tv_capture {
	int cpu;
	int raw_fd;		/* per_cpu/cpuN/trace_pipe_raw, O_NONBLOCK */
	int out_fd;		/* DIR/host/cpuN.raw */
	int pipe_fd[2];
	int stop_fd;		/* shared eventfd: readable once stop is asked */
	int flush_fd;		/* own eventfd: readable when a flush is asked */
	uint64_t flushed;	/* flushes done (atomic, see above) */
	size_t subbuf_size;
	size_t chunk;		/* bytes moved per splice */
	pthread_t thread;
	int started;
	/* Written by the capture thread, read by the main thread only after
	 * pthread_join() (which orders the accesses) or, for progress
	 * output, as a relaxed atomic snapshot. */
	uint64_t bytes;
	int error;		/* -errno of the first failure */
	char out_path[4096];
};

/*
 * The longest a traced event waits in the ring buffer before it is in its
 * stream file while tracing: what a SIGKILLed recorder can lose.  Under a
 * second with room for the capture thread's scheduling delay on a busy
 * host, so that the loss stays within the last second.
 */
#define TV_CAPTURE_FLUSH_MS 800

int tv_capture_open(struct tv_capture *cap, const char *raw_path, const char *out_path,
		    int stop_fd, size_t subbuf_size);
int tv_capture_start(struct tv_capture *cap);
/*
 * Ask the capture thread to write everything the CPU buffer holds now,
 * partly filled sub-buffer included; tv_capture_flushed() counts the
 * flushes done.  Return: 0 or -errno.
 */
int tv_capture_flush(struct tv_capture *cap);
uint64_t tv_capture_flushed(const struct tv_capture *cap);
/*
 * A killed recorder's leftovers: append what the ring buffer @raw_path
 * still holds (tracing off), up to @max_pages sub-buffers, to the stream
 * file @out_path, first cut to whole sub-buffers (a write cut short by the
 * kill).  *@bytes: bytes appended.  Return: 0 or -errno (logged).
 */
int tv_capture_salvage(const char *raw_path, const char *out_path, size_t subbuf_size,
		       size_t max_pages, uint64_t *bytes);
/* A per_cpu/cpuN/stats text: "read events" and overrun + commit overrun + dropped. */
void tv_capture_parse_stats(const char *stats, uint64_t *events, uint64_t *lost);
/* Its "overrun" alone: events overwritten (a flight recorder's ring: not a loss). */
uint64_t tv_capture_parse_overrun(const char *stats);
/* Joins the thread (which drains everything left once stop_fd fires). */
int tv_capture_join(struct tv_capture *cap);
void tv_capture_close(struct tv_capture *cap);

#endif
