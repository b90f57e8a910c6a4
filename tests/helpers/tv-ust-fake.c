// SPDX-License-Identifier: GPL-2.0
/*
 * A synthetic traced process for record --ust's protocol tests: it speaks
 * lib/ust/ust_abi.h's registration protocol and writes records by its commit
 * protocol, one thread, in blocking mode (it waits for the consumer), so
 * counts are exact.  It can also lie, to test that the consumer cuts a
 * hostile process off and goes on with the others.  Not libtracevisor-ust:
 * the real library's tests use build/examples/ust-demo.
 *
 *   tv-ust-fake MODE PAIRS
 *   MODE: good   emit PAIRS demo:work_begin/work_end pairs, answer until closed
 *         die    emit them, reserve one more without committing, SIGKILL itself
 *         commit emit them, then claim commit[0] far beyond the buffer
 *         size   emit them with record 3's size lying
 * Prints "tv-ust-fake: pid=PID emitted=N" once the events are written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ust_abi.h"
#include "../unit/ust_demo_meta.h"

#define SB 4096u
#define NSB 4u
#define META_CAP 8192u

static const char meta_text[] = UST_DEMO_META_WORK;

static unsigned char *map;
static struct tv_ust_shm_header *hdr;
static struct tv_ust_buf_ctl *ctl;
static int sock, enabled;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void msg_send(uint16_t type, int64_t value, int fd)
{
	struct tv_ust_msg m = { .magic = TV_UST_MAGIC, .version = TV_UST_VERSION, .type = type,
				.value = value, .pid = getpid() };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	snprintf(m.arg, sizeof(m.arg), "tv-ust-fake");
	if (fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != sizeof(m))
		exit(3);
}

/* Answer what the consumer asks; 0 when it closed. */
static int serve(int timeout_ms)
{
	struct pollfd p = { sock, POLLIN, 0 };
	struct tv_ust_msg m;

	if (poll(&p, 1, timeout_ms) <= 0)
		return 1;
	if (recv(sock, &m, sizeof(m), 0) != sizeof(m))
		return 0;
	if (m.type == TV_UST_MSG_ENABLE)
		enabled = 1;
	if (m.type == TV_UST_MSG_DISABLE)
		enabled = 0;
	if (m.type == TV_UST_MSG_CONFIG && m.clock == TV_UST_CLOCK_X86_TSC + 1)
		hdr->clock = TV_UST_CLOCK_X86_TSC;
	if (m.type != TV_UST_MSG_CONFIG)
		msg_send(TV_UST_MSG_REPLY, m.type == TV_UST_MSG_ENABLE ? 2 : 0, -1);
	return 1;
}

static unsigned char *subbuf(uint64_t pos)
{
	return (unsigned char *)ctl + hdr->data_offset + ((pos / SB) % NSB) * SB;
}

/* Blocking mode: wait for the consumer rather than lose. */
static void emit(uint16_t id, uint64_t seq, int commit, uint16_t size)
{
	uint64_t pos = ctl->reserve, off = pos % SB;
	uint32_t thread = 0;
	struct tv_ust_record_hdr h = { now_ns(), id, size, getpid() };
	unsigned char *s;

	if (SB - off < size) {
		while (pos + SB - off - __atomic_load_n(&ctl->consumed, __ATOMIC_ACQUIRE) > SB * NSB)
			serve(1);
		s = subbuf(pos);
		memset(s + off, 0, 16);
		s[off + 10] = (unsigned char)(SB - off);
		s[off + 11] = (unsigned char)((SB - off) >> 8);
		__atomic_add_fetch(&ctl->commit[(pos / SB) % NSB], SB - off, __ATOMIC_RELEASE);
		pos += SB - off;
		off = 0;
	}
	while (pos + 32 - __atomic_load_n(&ctl->consumed, __ATOMIC_ACQUIRE) > SB * NSB)
		serve(1);
	__atomic_store_n(&ctl->reserve, pos + 32, __ATOMIC_RELEASE);
	s = subbuf(pos);
	memcpy(s + off, &h.ts, 8);
	memcpy(s + off + 16, &thread, 4);
	memcpy(s + off + 24, &seq, 8);
	if (!commit)
		return;
	__atomic_store_n((uint64_t *)(s + off + 8), *(uint64_t *)((char *)&h + 8), __ATOMIC_RELEASE);
	__atomic_add_fetch(&ctl->commit[(pos / SB) % NSB], 32, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	const char *path = getenv(TV_UST_SOCK_ENV);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t stride = ((sizeof(struct tv_ust_buf_ctl) + 8 * NSB + 63) & ~63ull) + SB * NSB;
	size_t size = 4096 + META_CAP + stride;
	const char *mode;
	long pairs;
	int fd;

	if (argc != 3)
		return 2;
	mode = argv[1];
	pairs = atol(argv[2]);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path ? path : TV_UST_SOCK_DEFAULT);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "tv-ust-fake: cannot connect to %s: %s\n", sa.sun_path, strerror(errno));
		return 1;
	}
	fd = memfd_create("tv-ust-fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		return 1;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	hdr = (struct tv_ust_shm_header *)map;
	*hdr = (struct tv_ust_shm_header){
		.magic = TV_UST_MAGIC, .version = TV_UST_VERSION, .header_size = sizeof(*hdr),
		.nr_bufs = 1, .subbuf_size = SB, .nr_subbufs = NSB, .mode = TV_UST_MODE_BLOCKING,
		.clock = TV_UST_CLOCK_MONO, .pid = getpid(), .meta_offset = 4096,
		.meta_capacity = META_CAP, .bufs_offset = 4096 + META_CAP, .buf_stride = stride,
		.data_offset = (sizeof(struct tv_ust_buf_ctl) + 8 * NSB + 63) & ~63ull,
		.shm_size = size, .per_thread = 1,
	};
	memcpy(hdr->comm, "tv-ust-fake", 12);
	memcpy(map + 4096, meta_text, sizeof(meta_text) - 1);
	__atomic_store_n(&hdr->meta_len, sizeof(meta_text) - 1, __ATOMIC_RELEASE);
	ctl = (struct tv_ust_buf_ctl *)(map + hdr->bufs_offset);
	ctl->owner_tid = getpid();
	msg_send(TV_UST_MSG_HELLO, 0, -1);
	serve(2000);	/* CONFIG (the clock) before the buffers are used */
	msg_send(TV_UST_MSG_REGISTER, 0, fd);
	while (!enabled)
		if (!serve(5000))
			return 1;
	for (long i = 0; i < pairs; i++) {
		emit(1, (uint64_t)i, 1, !strcmp(mode, "size") && i == 3 ? 0xfff0 : 32);
		emit(2, (uint64_t)i, 1, 32);
	}
	printf("tv-ust-fake: pid=%d emitted=%ld\n", getpid(), 2 * pairs);
	fflush(stdout);
	if (!strcmp(mode, "die")) {
		emit(1, (uint64_t)pairs, 0, 32);
		raise(SIGKILL);
	}
	if (!strcmp(mode, "commit"))
		ctl->commit[(ctl->reserve / SB) % NSB] = 1ull << 40;	/* the one the consumer waits on */
	while (serve(1000))
		;
	return 0;
}
