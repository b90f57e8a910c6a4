// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the host's parser of a guest agent's stream
 * (host/guest_stream.c), which takes untrusted bytes from a guest.
 * Input byte 0: bit 0 prepends a valid META frame (to reach the DATA and
 * FILE paths quickly), bits 1-7 pick the piece size the rest is fed in.
 * Without META the stream expects a HELLO (a nonce was sent): the first
 * half of the rest is searched through as stale bytes, then a valid HELLO
 * is fed, then the second half is parsed.
 * Each input gets a fresh directory; after it, nothing may exist outside
 * that directory (checked: the parent must hold only it and the domains of
 * the guest's traced processes, ust-g-PID, whose names the host makes;
 * fuzz_dir.h).
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "guest_stream.h"
#include "fuzz_dir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char meta[] = "ncpus=2\nsubbuf_size=4096\nlong_size=8\nclock=local\n";
	unsigned char hdr[TV_PROTO_HDR_SIZE];
	struct tv_guest_stream gs;
	char dir[96];
	size_t piece;

	if (size < 1)
		return 0;
	fuzz_dir_make("tv-fuzz", dir, sizeof(dir));
	tv_guest_stream_init(&gs, dir, 1 << 20);
	gs.ust_asked = 1;	/* START had ust=: the UST frames are parsed too */
	if (data[0] & 1) {
		tv_proto_hdr_encode(hdr, TV_MSG_META, 0, sizeof(meta) - 1);
		tv_guest_stream_feed(&gs, hdr, sizeof(hdr));
		tv_guest_stream_feed(&gs, meta, sizeof(meta) - 1);
	}
	piece = (size_t)(data[0] >> 1) + 1;
	if (!(data[0] & 1)) {
		size_t mid = 1 + (size - 1) / 2;
		unsigned char hello[TV_PROTO_HELLO_SIZE];

		tv_guest_stream_expect_hello(&gs, 0x0123456789abcdefull);
		for (size_t off = 1; off < mid; off += piece)
			tv_guest_stream_feed(&gs, data + off, mid - off < piece ? mid - off : piece);
		tv_proto_hello_encode(hello, 0x0123456789abcdefull);
		tv_guest_stream_feed(&gs, hello, sizeof(hello));
		data += mid - 1;
		size -= mid - 1;
	}
	for (size_t off = 1; off < size; off += piece)
		tv_guest_stream_feed(&gs, data + off, size - off < piece ? size - off : piece);
	tv_guest_stream_fini(&gs);
	fuzz_dir_check_clean();
	return 0;
}
