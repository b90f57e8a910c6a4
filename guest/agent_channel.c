// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's side of the channel: framed messages, sent whole under the
 * session's send lock, and read with a timeout (doc/agent-protocol.md).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>


#include "agent.h"
#include "write_all.h"

/* The channel is full: wait for the host to read, but not for ever. */
int wait_writable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	/* A host that reads nothing for SEND_TIMEOUT_MS is gone. */
	int r = poll(&pfd, 1, SEND_TIMEOUT_MS / 5);

	if (r == 0) {
		/* Said on the guest console: tells a stalled channel from a stalled guest. */
		if (verbose)
			say("Host channel full for %d ms: waiting for the host to read",
			    SEND_TIMEOUT_MS / 5);
		r = poll(&pfd, 1, SEND_TIMEOUT_MS - SEND_TIMEOUT_MS / 5);
	}
	if (r < 0 && errno == EINTR)
		return 0;	/* the caller writes again, and waits again if full */
	if (r <= 0)
		return r < 0 ? -errno : -ETIMEDOUT;
	/* virtio-serial: POLLHUP while no host is connected. */
	return (pfd.revents & POLLOUT) ? 0 : -EPIPE;
}

int write_all(int fd, const void *buf, size_t len)
{
	return tv_write_all_wait(fd, buf, len, wait_writable);
}

int send_frame(struct session *s, uint16_t type, uint32_t arg, const void *payload,
		      size_t len)
{
	unsigned char hdr[TV_PROTO_HDR_SIZE];
	int ret = -EPIPE;

	tv_proto_hdr_encode(hdr, type, arg, (uint32_t)len);
	pthread_mutex_lock(&s->send_lock);
	if (!s->dead) {
		ret = write_all(s->fd, hdr, sizeof(hdr));
		if (!ret && len)
			ret = write_all(s->fd, payload, len);
		if (ret) {
			s->dead = 1;
			say("Cannot send to host: type=%s, errno=%d", tv_proto_type_name(type), -ret);
		}
	}
	pthread_mutex_unlock(&s->send_lock);
	return ret;
}

int send_text(struct session *s, uint16_t type, const char *text)
{
	return send_frame(s, type, 0, text, strlen(text));
}

int send_text_arg(struct session *s, uint16_t type, uint32_t arg, const char *text)
{
	return send_frame(s, type, arg, text, strlen(text));
}

static int read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&pfd, 1, timeout_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * One command from the host; *payload is malloc'ed (NULL when empty).
 * A serial channel outlives host sessions, and a host that died may have
 * left part of a frame in it: bytes that do not start a valid header are
 * skipped one at a time until one does (counted, said once per frame).
 */
int recv_frame(int fd, struct tv_proto_hdr *hdr, unsigned char **payload, int timeout_ms)
{
	unsigned char raw[TV_PROTO_HDR_SIZE];
	unsigned long long skipped = 0;
	int ret = read_all(fd, raw, sizeof(raw), timeout_ms);

	*payload = NULL;
	while (!ret && (tv_proto_hdr_decode(raw, hdr) || hdr->len > 65536)) {
		memmove(raw, raw + 1, sizeof(raw) - 1);
		skipped++;
		ret = read_all(fd, raw + sizeof(raw) - 1, 1, timeout_ms);
	}
	if (skipped)
		say("Skipped %llu stray bytes from the host channel before a frame", skipped);
	if (ret)
		return ret;
	if (!hdr->len)
		return 0;
	*payload = malloc(hdr->len + 1);
	if (!*payload)
		return -ENOMEM;
	ret = read_all(fd, *payload, hdr->len, 5000);
	if (ret) {
		free(*payload);
		*payload = NULL;
		return ret;
	}
	(*payload)[hdr->len] = '\0';
	return 0;
}
