// SPDX-License-Identifier: GPL-2.0
/*
 * tv-sync-probe: plays both sides of the ping/pong clock-sync protocol of
 * doc/sync-probes.md between two tracefs instances of this machine, so a
 * test can record a "host" and a stand-in "guest" with different trace
 * clocks and check what tracevisor sync makes of them.  Each marker write
 * is timestamped by the kernel in its instance's own clock, and the writes
 * happen in protocol order, so every one-way constraint holds for real.
 *
 * usage: tv-sync-probe HOST_INSTANCE_DIR GUEST_INSTANCE_DIR ROUNDS INTERVAL_US [FIRST_SEQ]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct marker {
	uint32_t magic;
	uint16_t type;
	uint16_t guest;
	uint64_t seq;
	uint64_t aux;
} __attribute__((packed));

static int open_marker(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/trace_marker_raw", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		perror(path);
	return fd;
}

static int put(int fd, uint16_t type, uint64_t seq)
{
	struct marker m = { 0x59535654u, type, 0, seq, 0 };

	return write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m) ? 0 : -1;
}

int main(int argc, char **argv)
{
	int host, guest;
	long rounds, interval, first;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: tv-sync-probe HOST_INSTANCE_DIR GUEST_INSTANCE_DIR ROUNDS INTERVAL_US [FIRST_SEQ]\n");
		return 2;
	}
	host = open_marker(argv[1]);
	guest = open_marker(argv[2]);
	rounds = atol(argv[3]);
	interval = atol(argv[4]);
	first = argc == 6 ? atol(argv[5]) : 0;
	if (host < 0 || guest < 0)
		return 1;
	for (long i = first; i < first + rounds; i++) {
		if (put(host, 1, (uint64_t)i) || put(guest, 2, (uint64_t)i) ||
		    put(guest, 3, (uint64_t)i) || put(host, 4, (uint64_t)i)) {
			perror("trace_marker_raw");
			return 1;
		}
		usleep((useconds_t)interval);
	}
	return 0;
}
