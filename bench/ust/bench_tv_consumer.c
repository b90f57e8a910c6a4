// SPDX-License-Identifier: GPL-2.0
/*
 * bench_tv_consumer SOCK OUT MODE SUBBUF NR_SUBBUFS GLOB - bench/ust-bench's
 * consumer for libtracevisor-ust, in its own process as lttng's consumer
 * daemon is: it listens on SOCK, configures the one process that
 * registers (MODE discard|blocking, sub-buffer size and count), enables
 * GLOB, writes every complete sub-buffer to OUT (as lttng writes its
 * trace), and when the process closes the socket reads what is left and
 * prints "records=N lost=L".  The buffer reading and the messages are
 * tests/unit/ust_consumer.h's.
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

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tv_ust_msg m = { 0 };
	struct timespec nap = { 0, 100000 };
	struct ustc c;
	int out_fd, lfd, fd, memfd = -1;

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
	if (fd < 0 || ustc_recv_msg(fd, &m, NULL) < 0 || m.type != TV_UST_MSG_HELLO) {
		fprintf(stderr, "bench_tv_consumer: no HELLO\n");
		return 1;
	}
	memset(&m, 0, sizeof(m));
	m.clock = TV_UST_CLOCK_MONO + 1;
	m.mode = (strcmp(argv[3], "blocking") ? TV_UST_MODE_DISCARD : TV_UST_MODE_BLOCKING) + 1;
	m.subbuf_size = (uint32_t)strtoul(argv[4], NULL, 0);
	m.nr_subbufs = (uint32_t)strtoul(argv[5], NULL, 0);
	if (ustc_send_msg(fd, TV_UST_MSG_CONFIG, NULL, &m) < 0 || ustc_recv_msg(fd, &m, &memfd) < 0 || m.type != TV_UST_MSG_REGISTER ||
	    memfd < 0 || ustc_map(&c, memfd) < 0) {
		fprintf(stderr, "bench_tv_consumer: registration failed\n");
		return 1;
	}
	/* 0 is fine: events registered later (constructors still running) follow the rule */
	if (ustc_send_msg(fd, TV_UST_MSG_ENABLE, argv[6], NULL) < 0 || ustc_recv_msg(fd, &m, NULL) < 0 ||
	    m.value < 0) {
		fprintf(stderr, "bench_tv_consumer: enable %s failed\n", argv[6]);
		return 1;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };

		if (!ustc_poll_write(&c, NULL, NULL, out_fd)) {
			if (poll(&p, 1, 0) == 1)
				break;	/* the process is gone (or said something): finish */
			nanosleep(&nap, NULL);
		}
	}
	ustc_poll_write(&c, NULL, NULL, out_fd);
	ustc_recover(&c, NULL, NULL);
	printf("records=%llu lost=%llu\n", (unsigned long long)c.records, (unsigned long long)ustc_lost(&c));
	return 0;
}
