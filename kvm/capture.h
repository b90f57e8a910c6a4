/* SPDX-License-Identifier: LGPL-2.1 */
/* Per-CPU raw ring-buffer capture (splice), private to the recorder. */
#ifndef TV_KVM_CAPTURE_H
#define TV_KVM_CAPTURE_H

#include <pthread.h>
#include <stdint.h>

struct tv_capture {
	int cpu;
	int raw_fd;		/* per_cpu/cpuN/trace_pipe_raw, O_NONBLOCK */
	int out_fd;		/* DIR/host/cpuN.raw */
	int pipe_fd[2];
	int stop_fd;		/* shared eventfd: readable once stop is asked */
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

int tv_capture_open(struct tv_capture *cap, const char *raw_path, const char *out_path,
		    int stop_fd, size_t subbuf_size);
int tv_capture_start(struct tv_capture *cap);
/* Joins the thread (which drains everything left once stop_fd fires). */
int tv_capture_join(struct tv_capture *cap);
void tv_capture_close(struct tv_capture *cap);

#endif
