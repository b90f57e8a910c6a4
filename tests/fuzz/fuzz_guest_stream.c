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
 * the guest's traced processes, ust-g-PID, whose names the host makes).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "guest_stream.h"

static char base[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The guest's traced processes: ust-g-PID[.N] beside g, by design (host/guest_ust.c). */
static int is_ust_dir(const char *name)
{
	const char *p = name + 6;

	if (strncmp(name, "ust-g-", 6) || !*p)
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	return !*p;
}

static void remove_ust_dirs(void)
{
	char path[160];
	DIR *d = opendir(base);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (is_ust_dir(de->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
			nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		}
	if (d)
		closedir(d);
}

static void check_nothing_outside(void)
{
	DIR *d = opendir(base);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && strcmp(de->d_name, "g") && !is_ust_dir(de->d_name)) {
			fprintf(stderr, "file written outside the guest directory: %s/%s\n", base,
				de->d_name);
			abort();
		}
	if (d)
		closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char meta[] = "ncpus=2\nsubbuf_size=4096\nlong_size=8\nclock=local\n";
	unsigned char hdr[TV_PROTO_HDR_SIZE];
	struct tv_guest_stream gs;
	char dir[96];
	size_t piece;

	if (!base[0]) {
		snprintf(base, sizeof(base), "/tmp/tv-fuzz.XXXXXX");
		if (!mkdtemp(base))
			abort();
	}
	if (size < 1)
		return 0;
	snprintf(dir, sizeof(dir), "%s/g", base);
	if (mkdir(dir, 0755))
		abort();
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
	check_nothing_outside();
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	remove_ust_dirs();
	return 0;
}
