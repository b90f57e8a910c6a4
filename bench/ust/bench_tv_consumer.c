// SPDX-License-Identifier: GPL-2.0
/*
 * bench_tv_consumer SOCK OUT MODE SUBBUF NR_SUBBUFS GLOB - bench/ust-bench's
 * consumer for libtracevisor-ust, in its own process as lttng's consumer
 * daemon is: it listens on SOCK, configures the one process that
 * registers (MODE discard|blocking, sub-buffer size and count), enables
 * GLOB, writes every complete sub-buffer to OUT (as lttng writes its
 * trace), and when the process closes the socket reads what is left and
 * prints "records=N lost=L".  The buffer reading is tests/unit/ust_consumer.h's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ust_consumer.h"

static int out_fd;

static int send_msg(int fd, const struct tv_ust_msg *m)
{
	return send(fd, m, sizeof(*m), MSG_NOSIGNAL) == sizeof(*m) ? 0 : -1;
}

static int recv_msg(int fd, struct tv_ust_msg *m, int *passed)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };

	if (recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) != sizeof(*m) || m->magic != TV_UST_MAGIC)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_type == SCM_RIGHTS && passed)
			memcpy(passed, CMSG_DATA(c), sizeof(int));
	return 0;
}

/* Complete sub-buffers: written out, counted, zeroed, released. */
static int drain(struct ustc *c)
{
	uint32_t sb = c->h->subbuf_size, nr = c->h->nr_subbufs;
	int n = 0;

	for (uint32_t i = 0; i < c->h->nr_bufs; i++) {
		struct tv_ust_buf_ctl *b = ustc_buf(c, i);
		char *data = (char *)b + c->h->data_offset;

		for (;;) {
			uint64_t pos = b->consumed, sub = pos / sb;
			char *s = data + (sub % nr) * sb;

			if (__atomic_load_n(&b->commit[sub % nr], __ATOMIC_ACQUIRE) < (sub / nr + 1) * sb)
				break;
			if (write(out_fd, s, sb) != (ssize_t)sb)
				perror("write");
			ustc_walk(c, i, s, sb, false, NULL, NULL);
			memset(s, 0, sb);
			/* release: the zeroes before the writers may reserve there again */
			__atomic_store_n(&b->consumed, pos + sb, __ATOMIC_RELEASE);
			n++;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tv_ust_msg m = { 0 };
	struct timespec nap = { 0, 100000 };
	struct ustc c;
	int lfd, fd, memfd = -1;

	if (argc != 7) {
		fprintf(stderr, "usage: bench_tv_consumer SOCK OUT MODE SUBBUF NR_SUBBUFS GLOB\n");
		return 2;
	}
	out_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	if (out_fd < 0 || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0) {
		perror("bench_tv_consumer");
		return 1;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0 || recv_msg(fd, &m, NULL) < 0 || m.type != TV_UST_MSG_HELLO) {
		fprintf(stderr, "bench_tv_consumer: no HELLO\n");
		return 1;
	}
	memset(&m, 0, sizeof(m));
	m.magic = TV_UST_MAGIC;
	m.version = TV_UST_VERSION;
	m.type = TV_UST_MSG_CONFIG;
	m.clock = TV_UST_CLOCK_MONO + 1;
	m.mode = (strcmp(argv[3], "blocking") ? TV_UST_MODE_DISCARD : TV_UST_MODE_BLOCKING) + 1;
	m.subbuf_size = (uint32_t)strtoul(argv[4], NULL, 0);
	m.nr_subbufs = (uint32_t)strtoul(argv[5], NULL, 0);
	if (send_msg(fd, &m) < 0 || recv_msg(fd, &m, &memfd) < 0 || m.type != TV_UST_MSG_REGISTER ||
	    memfd < 0 || ustc_map(&c, memfd) < 0) {
		fprintf(stderr, "bench_tv_consumer: registration failed\n");
		return 1;
	}
	m.type = TV_UST_MSG_ENABLE;
	snprintf(m.arg, sizeof(m.arg), "%s", argv[6]);
	/* 0 is fine: events registered later (constructors still running) follow the rule */
	if (send_msg(fd, &m) < 0 || recv_msg(fd, &m, NULL) < 0 || m.value < 0) {
		fprintf(stderr, "bench_tv_consumer: enable %s failed\n", argv[6]);
		return 1;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };

		if (!drain(&c)) {
			if (poll(&p, 1, 0) == 1)
				break;	/* the process is gone (or said something): finish */
			nanosleep(&nap, NULL);
		}
	}
	drain(&c);
	ustc_recover(&c, NULL, NULL);
	printf("records=%llu lost=%llu\n", (unsigned long long)c.records, (unsigned long long)ustc_lost(&c));
	return 0;
}
