// SPDX-License-Identifier: LGPL-2.1
/*
 * Per-CPU capture of the raw ring buffer.
 *
 * Each CPU has one thread that moves whole sub-buffers from trace_pipe_raw
 * into its output file with splice() through a pipe, so the kernel hands the
 * pages over without a copy to user space and nothing is decoded here.  The
 * thread sleeps in poll(), which the kernel wakes when the CPU buffer is
 * buffer_percent full, or when the shared stop eventfd becomes readable.
 *
 * splice() only takes sub-buffers the writer has left; the last, partly
 * filled one is fetched with read() when draining after tracing stopped,
 * and on a flush asked while tracing (tv_capture_flush(): the live view
 * reads the session as it is written).
 *
 * A recorder killed with SIGKILL drains nothing: what its files hold is what
 * it wrote before.  buffer_percent alone would leave up to half the ring
 * buffer (seconds to hours of a quiet CPU) in the kernel, so each thread
 * also wakes at least every TV_CAPTURE_FLUSH_MS and writes what the CPU
 * buffer holds, the page the writer is on taken with read() and padded with
 * zeros (as the guest agent does).  A killed recorder loses at most the
 * events of that last interval; the rest is left in its tracefs instance,
 * which tv_session_recover() salvages.  Cost: one read() and one page
 * written per CPU per interval, whatever the event rate (none when the CPU
 * traced nothing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "capture.h"

#define CAPTURE_PIPE_BYTES (1024 * 1024)

int tv_capture_open(struct tv_capture *cap, const char *raw_path, const char *out_path,
		    int stop_fd, size_t subbuf_size)
{
	int ret, pipe_bytes;

	memset(cap, 0, sizeof(*cap));
	cap->raw_fd = cap->out_fd = cap->pipe_fd[0] = cap->pipe_fd[1] = cap->flush_fd = -1;
	cap->stop_fd = stop_fd;
	cap->subbuf_size = subbuf_size;
	snprintf(cap->out_path, sizeof(cap->out_path), "%s", out_path);

	cap->raw_fd = open(raw_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (cap->raw_fd < 0) {
		ret = -errno;
		tv_err("Cannot open ring buffer: path=\"%s\", errno=%d (%s)", raw_path, -ret, strerror(-ret));
		return ret;
	}
	cap->out_fd = tv_file_create(out_path, 0, "stream file");
	if (cap->out_fd < 0)
		return cap->out_fd;
	cap->flush_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cap->flush_fd < 0) {
		ret = -errno;
		tv_err("Cannot create eventfd for CPU %s: errno=%d (%s)", raw_path, -ret, strerror(-ret));
		return ret;
	}
	if (pipe2(cap->pipe_fd, O_CLOEXEC)) {
		ret = -errno;
		tv_err("Cannot create pipe for CPU %s: errno=%d (%s)", raw_path, -ret, strerror(-ret));
		return ret;
	}
	/* A bigger pipe lets one splice move many sub-buffers per wake-up. */
	pipe_bytes = fcntl(cap->pipe_fd[1], F_SETPIPE_SZ, CAPTURE_PIPE_BYTES);
	if (pipe_bytes < 0)
		pipe_bytes = fcntl(cap->pipe_fd[1], F_GETPIPE_SZ);
	if (pipe_bytes < (int)subbuf_size)
		pipe_bytes = (int)subbuf_size;
	cap->chunk = (size_t)pipe_bytes / subbuf_size * subbuf_size;
	return 0;
}

/* Move everything the pipe holds into the output file. */
static int capture_pipe_to_file(struct tv_capture *cap, size_t n)
{
	while (n > 0) {
		ssize_t w = splice(cap->pipe_fd[0], NULL, cap->out_fd, NULL, n, SPLICE_F_MOVE);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		n -= (size_t)w;
		__atomic_fetch_add(&cap->bytes, (uint64_t)w, __ATOMIC_RELAXED);
	}
	return 0;
}

/* Splice every full sub-buffer available now. Return 0 when none is left. */
static int capture_splice_available(struct tv_capture *cap)
{
	for (;;) {
		ssize_t n = splice(cap->raw_fd, NULL, cap->pipe_fd[1], NULL, cap->chunk,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		n = capture_pipe_to_file(cap, (size_t)n);
		if (n)
			return (int)n;
	}
}

/*
 * Up to @max_pages sub-buffers with read(), partly filled ones included,
 * each padded to full size.  Return 0 once the buffer is empty or
 * @max_pages were written, or -errno.
 */
static int capture_read_pages(struct tv_capture *cap, int max_pages)
{
	char *page = calloc(1, cap->subbuf_size);
	int ret = 0;

	if (!page)
		return -ENOMEM;
	for (int done = 0; done < max_pages;) {
		ssize_t n = read(cap->raw_fd, page, cap->subbuf_size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = (n < 0 && errno != EAGAIN) ? -errno : 0;
			break;
		}
		memset(page + n, 0, cap->subbuf_size - (size_t)n);
		if (write(cap->out_fd, page, cap->subbuf_size) != (ssize_t)cap->subbuf_size) {
			ret = errno ? -errno : -EIO;
			break;
		}
		__atomic_fetch_add(&cap->bytes, (uint64_t)cap->subbuf_size, __ATOMIC_RELAXED);
		done++;
	}
	free(page);
	return ret;
}

/* After tracing stopped, or a flush asked: the partly filled sub-buffers too. */
static int capture_read_remainder(struct tv_capture *cap)
{
	return capture_read_pages(cap, 1024);
}

/*
 * The periodic flush while tracing: the full sub-buffers by splice, then the
 * one the writer is on by a single read().  One page, not a loop: on a busy
 * CPU every read() would find a few new events and write a whole padded
 * page.  What is left was traced after the splice found nothing more.
 */
static int capture_flush_periodic(struct tv_capture *cap)
{
	int ret = capture_splice_available(cap);

	return ret ? ret : capture_read_pages(cap, 1);
}

static int64_t capture_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *capture_thread(void *arg)
{
	struct tv_capture *cap = arg;
	struct pollfd pfd[3] = {
		{ .fd = cap->raw_fd, .events = POLLIN },
		{ .fd = cap->stop_fd, .events = POLLIN },
		{ .fd = cap->flush_fd, .events = POLLIN },
	};
	int64_t next = capture_now_ms() + TV_CAPTURE_FLUSH_MS, now;
	uint64_t asked;
	int ret = 0, n;

	for (;;) {
		now = capture_now_ms();
		n = poll(pfd, 3, next > now ? (int)(next - now) : 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (pfd[1].revents & POLLIN)
			break;
		now = capture_now_ms();
		if (now >= next) {
			ret = capture_flush_periodic(cap);
			next = now + TV_CAPTURE_FLUSH_MS;
		} else if (n > 0) {
			ret = capture_splice_available(cap);
		}
		if (!ret && (pfd[2].revents & POLLIN) && read(cap->flush_fd, &asked, sizeof(asked)) > 0) {
			ret = capture_splice_available(cap);
			if (!ret)
				ret = capture_read_remainder(cap);
			/* publishes the flush's file writes (see capture.h) */
			__atomic_fetch_add(&cap->flushed, 1, __ATOMIC_RELEASE);
			next = now + TV_CAPTURE_FLUSH_MS;
		}
		if (ret)
			break;
	}
	/* Stop requested (tracing_on is already 0) or an error: drain. */
	if (!ret)
		ret = capture_splice_available(cap);
	if (!ret)
		ret = capture_read_remainder(cap);
	if (!ret && fsync(cap->out_fd) && errno != EINVAL)
		ret = -errno;
	cap->error = ret;
	return NULL;
}

int tv_capture_salvage(const char *raw_path, const char *out_path, size_t subbuf_size,
		       size_t max_pages, uint64_t *bytes)
{
	struct tv_capture cap = { .raw_fd = -1, .out_fd = -1, .subbuf_size = subbuf_size };
	struct stat st;
	int ret = 0;

	*bytes = 0;
	cap.raw_fd = open(raw_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (cap.raw_fd < 0) {
		ret = -errno;
		tv_err("Cannot open ring buffer: path=\"%s\", errno=%d (%s)", raw_path, -ret, strerror(-ret));
		return ret;
	}
	/* The session's own file, never a link out of it. */
	cap.out_fd = open(out_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (cap.out_fd < 0 || fstat(cap.out_fd, &st) || !S_ISREG(st.st_mode)) {
		ret = cap.out_fd < 0 ? -errno : -EINVAL;
		tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", out_path, -ret, strerror(-ret));
		goto out;
	}
	/* A write cut by the kill: its partial sub-buffer would shift every page after. */
	if (ftruncate(cap.out_fd, st.st_size - st.st_size % (off_t)subbuf_size) ||
	    lseek(cap.out_fd, 0, SEEK_END) < 0) {
		ret = -errno;
		tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", out_path, -ret, strerror(-ret));
		goto out;
	}
	ret = capture_read_pages(&cap, max_pages > INT_MAX ? INT_MAX : (int)max_pages);
	if (!ret && fsync(cap.out_fd) && errno != EINVAL)
		ret = -errno;
	if (ret)
		tv_err("Cannot salvage ring buffer: path=\"%s\" into \"%s\", errno=%d (%s)", raw_path,
		       out_path, -ret, strerror(-ret));
	*bytes = cap.bytes;
out:
	if (cap.out_fd >= 0)
		close(cap.out_fd);
	close(cap.raw_fd);
	return ret;
}

static uint64_t stats_value(const char *stats, const char *key)
{
	const char *p = strstr(stats, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

void tv_capture_parse_stats(const char *s, uint64_t *events, uint64_t *lost)
{
	/* "overrun:" is also the tail of "commit overrun:": match line starts. */
	*lost = stats_value(s, "\noverrun: ") + stats_value(s, "commit overrun: ") +
		stats_value(s, "dropped events: ");
	if (!strncmp(s, "overrun: ", 9))
		*lost += stats_value(s, "overrun: ");
	*events = stats_value(s, "read events: ");
}

uint64_t tv_capture_parse_overrun(const char *s)
{
	return !strncmp(s, "overrun: ", 9) ? stats_value(s, "overrun: ") : stats_value(s, "\noverrun: ");
}

int tv_capture_start(struct tv_capture *cap)
{
	int ret = pthread_create(&cap->thread, NULL, capture_thread, cap);

	if (ret) {
		tv_err("Cannot start capture thread: cpu=%d, errno=%d (%s)", cap->cpu, ret, strerror(ret));
		return -ret;
	}
	cap->started = 1;
	return 0;
}

int tv_capture_flush(struct tv_capture *cap)
{
	uint64_t one = 1;

	return write(cap->flush_fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

uint64_t tv_capture_flushed(const struct tv_capture *cap)
{
	return __atomic_load_n(&cap->flushed, __ATOMIC_ACQUIRE);
}

int tv_capture_join(struct tv_capture *cap)
{
	if (!cap->started)
		return 0;
	pthread_join(cap->thread, NULL);
	cap->started = 0;
	if (cap->error)
		tv_err("Cannot capture ring buffer: path=\"%s\", errno=%d (%s)",
		       cap->out_path, -cap->error, strerror(-cap->error));
	return cap->error;
}

void tv_capture_close(struct tv_capture *cap)
{
	int *fds[] = { &cap->raw_fd, &cap->out_fd, &cap->pipe_fd[0], &cap->pipe_fd[1],
		       &cap->flush_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}
