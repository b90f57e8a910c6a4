// SPDX-License-Identifier: GPL-2.0
/*
 * The agent protocol (lib/format/proto.c) and the host's guest-stream parser
 * (host/guest_stream.c): round trips, and hostile input from a guest —
 * oversized lengths, truncated frames, bad names and paths, out-of-range
 * CPUs, partial sub-buffers, a size limit — each rejected with a clear
 * message and nothing written outside the guest's directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tv_test.h"
#include "tracevisor/tracevisor.h"
#include "proto.h"
#include "guest_stream.h"
#include "guest_libvirt.h"

#define SUBBUF 4096

static char root[64];

static size_t frame(unsigned char *out, uint16_t type, uint32_t arg, const void *p, size_t len)
{
	tv_proto_hdr_encode(out, type, arg, (uint32_t)len);
	memcpy(out + TV_PROTO_HDR_SIZE, p, len);
	return TV_PROTO_HDR_SIZE + len;
}

static size_t file_frame(unsigned char *out, const char *path, const char *content)
{
	unsigned char p[512];
	size_t n = strlen(path), c = strlen(content);

	p[0] = (unsigned char)n;
	p[1] = (unsigned char)(n >> 8);
	memcpy(p + 2, path, n);
	memcpy(p + 2 + n, content, c);
	return frame(out, TV_MSG_FILE, 0, p, n + c + 2);
}

static const char good_meta[] = "kernel_release=6.1.0\nclock=local\nncpus=2\nsubbuf_size=4096\n"
				"long_size=8\ndomain=evil\nstatus=complete\n";

static void test_header(void)
{
	unsigned char h[TV_PROTO_HDR_SIZE];
	struct tv_proto_hdr hdr;

	tv_proto_hdr_encode(h, TV_MSG_DATA, 7, 4096);
	TV_CHECK(tv_proto_hdr_decode(h, &hdr) == 0, "valid header rejected");
	TV_CHECK(hdr.type == TV_MSG_DATA && hdr.arg == 7 && hdr.len == 4096, "round trip");
	TV_CHECK(h[0] == 'T' && h[1] == 'V' && h[2] == 'A' && h[3] == 'G', "magic is \"TVAG\" on the wire");
	tv_proto_hdr_encode(h, TV_MSG_DATA, 0, TV_PROTO_MAX_PAYLOAD + 1);
	TV_CHECK(tv_proto_hdr_decode(h, &hdr) == -EMSGSIZE, "oversized length accepted");
	tv_proto_hdr_encode(h, 0x99, 0, 0);
	TV_CHECK(tv_proto_hdr_decode(h, &hdr) == -EBADMSG, "unknown type accepted");
	tv_proto_hdr_encode(h, TV_MSG_PING, 0, 8);
	h[6] = 1;
	TV_CHECK(tv_proto_hdr_decode(h, &hdr) == -EBADMSG, "non-zero flags accepted");
	tv_proto_hdr_encode(h, TV_MSG_PING, 0, 8);
	h[0] ^= 0xff;
	TV_CHECK(tv_proto_hdr_decode(h, &hdr) == -EBADMSG, "bad magic accepted");
}

static void test_marker(void)
{
	unsigned char m[TV_SYNC_MARKER_SIZE];

	tv_sync_marker_encode(m, TV_SYNC_HCALL_BEFORE, 3, 0x1122334455667788ULL, 9);
	TV_CHECK(tv_proto_get_u32(m) == 0x59535654 && m[4] == 5 && m[6] == 3, "marker head");
	TV_CHECK(tv_proto_get_u64(m + 8) == 0x1122334455667788ULL && tv_proto_get_u64(m + 16) == 9,
		 "marker seq/aux");
}

static void test_paths(void)
{
	static const char *const good[] = { "header_page", "header_event", "saved_cmdlines",
					    "saved_tgids", "events/sched/sched_switch/format",
					    "events/ftrace/raw_data/format", "events/a-b/c.d/format" };
	static const char *const bad[] = { "", "/etc/passwd", "../meta", "meta", "cpu0.raw",
					   "events/../x/format", "events/a/../format",
					   "events/./a/format", "events/a/b/c/format",
					   "events//a/format", "events/a b/c/format",
					   "events/a/b/format/x", "events/a/b", "header_page/",
					   "events/a/b\\c/format" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		TV_CHECK(tv_proto_check_path(good[i], strlen(good[i])) == 0, "rejected %s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		TV_CHECK(tv_proto_check_path(bad[i], strlen(bad[i])) == -EINVAL, "accepted \"%s\"", bad[i]);
	TV_CHECK(tv_proto_check_path("header_page\0x", 13) == -EINVAL, "accepted an embedded NUL");
}

static int count_kv(const char *k, const char *v, void *ctx)
{
	(void)k;
	(void)v;
	(*(int *)ctx)++;
	return 0;
}

static void test_kv(void)
{
	char longval[1100];	/* values hold at most 1023 bytes (lib/format/proto.c) */
	int n = 0;

	TV_CHECK(tv_proto_kv_parse("a=1\nb.c=x y\n", 12, count_kv, &n) == 0 && n == 2, "kv lines");
	TV_CHECK(tv_proto_kv_parse("a=1", 3, count_kv, &n) == -EINVAL, "unterminated line accepted");
	TV_CHECK(tv_proto_kv_parse("a/b=1\n", 6, count_kv, &n) == -EINVAL, "bad key accepted");
	TV_CHECK(tv_proto_kv_parse("=1\n", 3, count_kv, &n) == -EINVAL, "empty key accepted");
	TV_CHECK(tv_proto_kv_parse("a=\x1b[2J\n", 7, count_kv, &n) == -EINVAL, "control char accepted");
	memset(longval, 'x', sizeof(longval));
	memcpy(longval, "k=", 2);
	longval[sizeof(longval) - 1] = '\n';
	TV_CHECK(tv_proto_kv_parse(longval, sizeof(longval), count_kv, &n) == -EINVAL,
		 "1097-byte value accepted");
	n = 0;
	longval[1000] = '\n';	/* 998 bytes: a long --guest-events list */
	TV_CHECK(tv_proto_kv_parse(longval, 1001, count_kv, &n) == 0 && n == 1, "998-byte value refused");
}

/* A fresh guest directory under root. */
static void new_stream(struct tv_guest_stream *gs, const char *name, uint64_t limit)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	mkdir(dir, 0755);
	tv_guest_stream_init(gs, dir, limit);
}

static off_t file_size(const char *dir, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) ? -1 : st.st_size;
}

static int pongs;
static void on_pong(void *ctx, uint64_t seq)
{
	(void)ctx;
	pongs += seq == 42;
}

static void test_stream_good(void)
{
	static unsigned char buf[4 * SUBBUF + 4096];
	static unsigned char page[2 * SUBBUF];
	struct tv_guest_stream gs;
	unsigned char seq[8];
	size_t n = 0;
	int ret = 0;

	memset(page, 0xab, sizeof(page));
	tv_proto_put_u64(seq, 42);
	n += frame(buf + n, TV_MSG_META, 0, good_meta, strlen(good_meta));
	n += file_frame(buf + n, "header_page", "hp");
	n += file_frame(buf + n, "events/sched/sched_switch/format", "fmt");
	n += frame(buf + n, TV_MSG_READY, 0, "", 0);
	n += frame(buf + n, TV_MSG_DATA, 1, page, sizeof(page));
	n += frame(buf + n, TV_MSG_PONG, 0, seq, 8);
	n += frame(buf + n, TV_MSG_END, 0, "cpu1.lost=3\nlost_total=3\nstatus=x\ncpu0.events=5\n", 48);
	new_stream(&gs, "good", 1 << 20);
	gs.on_pong = on_pong;
	/* One byte at a time: frames may arrive in any pieces. */
	for (size_t i = 0; i < n && !ret; i++)
		ret = tv_guest_stream_feed(&gs, buf + i, 1);
	TV_CHECK(ret == 0, "valid stream rejected: %s", gs.error);
	TV_CHECK(gs.ready && gs.ended && gs.ncpus == 2 && pongs == 1, "state after a valid stream");
	TV_CHECK(file_size(gs.dir, "cpu1.raw") == 2 * SUBBUF, "cpu1.raw size %lld",
		 (long long)file_size(gs.dir, "cpu1.raw"));
	TV_CHECK(file_size(gs.dir, "cpu0.raw") == 0, "cpu0.raw exists and is empty");
	TV_CHECK(file_size(gs.dir, "events/sched/sched_switch/format") == 3, "format file written");
	TV_CHECK(tv_meta_get(gs.guest_meta, "domain") == NULL &&
		 tv_meta_get(gs.guest_meta, "status") == NULL, "guest set a host-owned meta key");
	TV_CHECK(tv_meta_get_ll(gs.guest_meta, "cpu1.lost", -1) == 3 &&
		 tv_meta_get_ll(gs.guest_meta, "cpu0.events", -1) == 5, "END counts kept");
	TV_CHECK(tv_guest_stream_feed(&gs, buf, 1) == -EBADMSG, "data after END accepted");
	tv_guest_stream_fini(&gs);
}

/*
 * A channel that outlived an earlier session (Xen PV console, virtio-serial):
 * the host reads that session's leftovers before its own.  Stale bytes,
 * including whole valid frames (META, DATA, END) and an old session's HELLO
 * with another nonce, and a HELLO cut short, come before this session's
 * HELLO: all counted, none parsed; what follows is this session, whole.
 */
static void test_stream_resync(void)
{
	static unsigned char buf[8 * SUBBUF], page[SUBBUF];
	unsigned char hello[TV_PROTO_HELLO_SIZE];
	const uint64_t nonce = 0x1234567890abcdefull;
	struct tv_guest_stream gs;
	size_t n = 0, stale, step;
	int ret = 0;

	memset(page, 0xcd, sizeof(page));
	/* garbage: the tail of a DATA frame cut mid-payload */
	memset(buf, 0xab, 1000);
	n = 1000;
	/* an old session's whole frames */
	n += frame(buf + n, TV_MSG_META, 0, good_meta, strlen(good_meta));
	n += frame(buf + n, TV_MSG_DATA, 0, page, sizeof(page));
	tv_proto_hello_encode(hello, nonce ^ 1);	/* another session's HELLO */
	memcpy(buf + n, hello, sizeof(hello));
	n += sizeof(hello);
	tv_proto_hello_encode(hello, nonce);
	memcpy(buf + n, hello, 20);		/* ours, cut short, then more stale bytes */
	n += 20;
	n += frame(buf + n, TV_MSG_END, 0, "lost_total=9\n", 13);
	memcpy(buf + n, hello, 7);		/* a prefix that fails late */
	n += 7;
	stale = n;
	memcpy(buf + n, hello, sizeof(hello));
	n += sizeof(hello);
	n += frame(buf + n, TV_MSG_META, 0, good_meta, strlen(good_meta));
	n += file_frame(buf + n, "header_page", "hp");
	n += frame(buf + n, TV_MSG_READY, 0, "", 0);
	n += frame(buf + n, TV_MSG_DATA, 1, page, sizeof(page));
	n += frame(buf + n, TV_MSG_END, 0, "lost_total=2\n", 13);
	/* in one piece, one byte at a time, and in 7-byte pieces */
	for (step = 1; step <= n; step = step == 1 ? 7 : step == 7 ? n : n + 1) {
		char name[32];

		snprintf(name, sizeof(name), "resync%zu", step);
		new_stream(&gs, name, 1 << 20);
		tv_guest_stream_expect_hello(&gs, nonce);
		ret = 0;
		for (size_t i = 0; i < n && !ret; i += step)
			ret = tv_guest_stream_feed(&gs, buf + i, i + step <= n ? step : n - i);
		TV_CHECK(ret == 0, "resync (pieces of %zu): %s", step, gs.error);
		TV_CHECK(gs.synced && gs.stale_bytes == stale, "resync (pieces of %zu): %llu stale bytes, want %zu",
			 step, (unsigned long long)gs.stale_bytes, stale);
		TV_CHECK(gs.ended && gs.ncpus == 2 && file_size(gs.dir, "cpu1.raw") == SUBBUF &&
			 file_size(gs.dir, "cpu0.raw") == 0 &&
			 tv_meta_get_ll(gs.guest_meta, "lost_total", -1) == 2,
			 "resync (pieces of %zu): this session's frames not as sent", step);
		tv_guest_stream_fini(&gs);
	}
	/* no HELLO at all: nothing is taken, everything is stale */
	new_stream(&gs, "nohello", 1 << 20);
	tv_guest_stream_expect_hello(&gs, nonce);
	TV_CHECK(tv_guest_stream_feed(&gs, buf, stale) == 0 && !gs.synced && !gs.ncpus &&
		 gs.stale_bytes + gs.len == stale, "a stream without our HELLO was parsed");
	tv_guest_stream_fini(&gs);
	/* a second HELLO once in session is a protocol error */
	new_stream(&gs, "hello2", 1 << 20);
	tv_guest_stream_expect_hello(&gs, nonce);
	ret = tv_guest_stream_feed(&gs, hello, sizeof(hello));
	if (!ret)
		ret = tv_guest_stream_feed(&gs, hello, sizeof(hello));
	TV_CHECK(ret == -EBADMSG && strstr(gs.error, "second HELLO"), "a second HELLO: %d %s", ret,
		 gs.error);
	tv_guest_stream_fini(&gs);
	/* LOSS (before the agent's last drain): the losses known without END */
	new_stream(&gs, "loss", 1 << 20);
	n = frame(buf, TV_MSG_META, 0, good_meta, strlen(good_meta));
	n += frame(buf + n, TV_MSG_LOSS, 0, "cpu1.lost=4\nlost_total=4\n", 25);
	n += frame(buf + n, TV_MSG_DATA, 1, page, sizeof(page));
	TV_CHECK(tv_guest_stream_feed(&gs, buf, n) == 0 && !gs.ended &&
		 tv_meta_get_ll(gs.guest_meta, "lost_total", -1) == 4 &&
		 !tv_meta_get(gs.guest_meta, "events_total"), "LOSS: %s", gs.error);
	/* a CPU number has no leading zero: cpu01 is no CPU's counter (sscanf took it for 1) */
	n = frame(buf, TV_MSG_LOSS, 0, "cpu01.lost=7\n", 13);
	TV_CHECK(tv_guest_stream_feed(&gs, buf, n) == 0 && !tv_meta_get(gs.guest_meta, "cpu01.lost") &&
		 tv_meta_get_ll(gs.guest_meta, "cpu1.lost", -1) == 4,
		 "LOSS keys that are no CPU's kept: %s", gs.error);
	tv_guest_stream_fini(&gs);
}

/* Feed META then @bad; expect @err and @what in the message. */
static void expect_reject(const char *name, const unsigned char *bad, size_t len, int err,
			  const char *what)
{
	static unsigned char buf[TV_PROTO_HDR_SIZE + sizeof(good_meta)];
	struct tv_guest_stream gs;
	size_t n = frame(buf, TV_MSG_META, 0, good_meta, strlen(good_meta));
	int ret;

	new_stream(&gs, name, 1 << 20);
	ret = tv_guest_stream_feed(&gs, buf, n);
	if (!ret)
		ret = tv_guest_stream_feed(&gs, bad, len);
	TV_CHECK(ret == err, "%s: got %d, want %d (%s)", name, ret, err, gs.error);
	TV_CHECK(strstr(gs.error, what) != NULL, "%s: message \"%s\" lacks \"%s\"", name, gs.error,
		 what);
	TV_CHECK(tv_guest_stream_feed(&gs, buf, 1) == ret, "%s: a dead stream came back", name);
	tv_guest_stream_fini(&gs);
}

static void test_stream_hostile(void)
{
	static unsigned char b[2 * SUBBUF + 64], page[SUBBUF + 100];
	unsigned char h[TV_PROTO_HDR_SIZE];
	struct tv_guest_stream gs;
	char outside[128];
	size_t n;

	tv_proto_hdr_encode(h, TV_MSG_DATA, 0, 0xffffffffu);
	expect_reject("oversized", h, sizeof(h), -EMSGSIZE, "frame of 4294967295 bytes");
	n = file_frame(b, "../../escape", "x");
	expect_reject("dotdot", b, n, -EBADMSG, "path outside");
	snprintf(outside, sizeof(outside), "%s/escape", root);
	TV_CHECK(access(outside, F_OK) != 0, "a file was written outside the guest directory");
	n = file_frame(b, "events/x/../../../format", "x");
	expect_reject("dotdot2", b, n, -EBADMSG, "path outside");
	n = frame(b, TV_MSG_DATA, 2, page, SUBBUF);
	expect_reject("cpu-range", b, n, -EBADMSG, "cpu 2 of 2");
	n = frame(b, TV_MSG_DATA, 0, page, SUBBUF + 100);
	expect_reject("partial-subbuf", b, n, -EBADMSG, "not whole");
	n = frame(b, TV_MSG_META, 0, good_meta, strlen(good_meta));
	expect_reject("second-meta", b, n, -EBADMSG, "second META");
	n = frame(b, TV_MSG_STOP, 0, "", 0);
	expect_reject("host-command", b, n, -EBADMSG, "host command");
	n = frame(b, TV_MSG_ERROR, 0, "no tracefs\n\x1b", 12);
	expect_reject("agent-error", b, n, -ECANCELED, "guest agent: no tracefs??");
	n = frame(b, TV_MSG_PONG, 0, "1234", 4);
	expect_reject("short-pong", b, n, -EBADMSG, "PONG of 4 bytes");
	n = frame(b, TV_MSG_END, 0, "cpu9.lost=1\n", 12);
	expect_reject("end-cpu-range", b, n, -EBADMSG, "malformed END");
	/* sscanf's %d took cpu4294967296 for CPU 0, 2^32 + 1 for CPU 1 */
	n = frame(b, TV_MSG_END, 0, "cpu4294967296.lost=1\n", 21);
	expect_reject("end-cpu-wrap", b, n, -EBADMSG, "malformed END");
	n = frame(b, TV_MSG_LOSS, 0, "cpu4294967297.lost=1\n", 21);
	expect_reject("loss-cpu-wrap", b, n, -EBADMSG, "malformed LOSS");
	n = frame(b, TV_MSG_LOSS, 0, "cpu99999999999999999999.events=1\n", 33);
	expect_reject("loss-cpu-huge", b, n, -EBADMSG, "malformed LOSS");

	/* Before META: no DATA, and META values are range-checked. */
	new_stream(&gs, "early", 1 << 20);
	n = frame(b, TV_MSG_DATA, 0, page, SUBBUF);
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == -EBADMSG && strstr(gs.error, "before META"),
		 "DATA before META: %s", gs.error);
	tv_guest_stream_fini(&gs);
	new_stream(&gs, "badmeta", 1 << 20);
	n = frame(b, TV_MSG_META, 0, "ncpus=100000\nsubbuf_size=4096\nlong_size=8\n", 42);
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == -EBADMSG && strstr(gs.error, "ncpus 1..1024"),
		 "absurd ncpus: %s", gs.error);
	tv_guest_stream_fini(&gs);
	new_stream(&gs, "badsubbuf", 1 << 20);
	n = frame(b, TV_MSG_META, 0, "ncpus=1\nsubbuf_size=4097\nlong_size=8\n", 37);
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == -EBADMSG, "subbuf_size 4097 accepted");
	tv_guest_stream_fini(&gs);

	/* Filters sent in START: META must say the agent took them all. */
	new_stream(&gs, "oldagent", 1 << 20);
	gs.filters_sent = 2;
	n = frame(b, TV_MSG_META, 0, good_meta, strlen(good_meta));
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == -EPROTONOSUPPORT &&
		 strstr(gs.error, "did not take the 2 event filters"),
		 "an agent without filters= accepted with filters: %s", gs.error);
	tv_guest_stream_fini(&gs);
	{
		char meta[512];

		snprintf(meta, sizeof(meta), "%sfilters=1\n", good_meta);
		new_stream(&gs, "fewfilters", 1 << 20);
		gs.filters_sent = 2;
		n = frame(b, TV_MSG_META, 0, meta, strlen(meta));
		TV_CHECK(tv_guest_stream_feed(&gs, b, n) == -EPROTONOSUPPORT,
			 "filters=1 accepted for 2 sent");
		tv_guest_stream_fini(&gs);
		snprintf(meta, sizeof(meta), "%sfilters=2\n", good_meta);
		new_stream(&gs, "filters", 1 << 20);
		gs.filters_sent = 2;
		n = frame(b, TV_MSG_META, 0, meta, strlen(meta));
		TV_CHECK(tv_guest_stream_feed(&gs, b, n) == 0, "filters=2 for 2 sent: %s", gs.error);
		tv_guest_stream_fini(&gs);
	}

	/* The size limit ends the stream, and says so. */
	new_stream(&gs, "limit", 2 * SUBBUF);
	n = frame(b, TV_MSG_META, 0, good_meta, strlen(good_meta));
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == 0, "META under the limit");
	n = frame(b, TV_MSG_DATA, 0, page, SUBBUF);
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == 0, "first page under the limit");
	TV_CHECK(tv_guest_stream_feed(&gs, b, n) == -EFBIG && strstr(gs.error, "size limit"),
		 "limit: %s", gs.error);
	TV_CHECK(file_size(gs.dir, "cpu0.raw") == SUBBUF, "whole pages kept before the limit");
	tv_guest_stream_fini(&gs);

	/* A truncated last frame writes nothing partial. */
	new_stream(&gs, "truncated", 1 << 20);
	n = frame(b, TV_MSG_META, 0, good_meta, strlen(good_meta));
	tv_guest_stream_feed(&gs, b, n);
	n = frame(b, TV_MSG_DATA, 0, page, SUBBUF);
	TV_CHECK(tv_guest_stream_feed(&gs, b, n - 1) == 0, "truncated frame is not an error yet");
	TV_CHECK(file_size(gs.dir, "cpu0.raw") == 0, "a partial frame reached the file");
	tv_guest_stream_fini(&gs);
}

static void test_specs(void)
{
	struct tv_guest_spec s;

	TV_CHECK(tv_guest_spec_parse("vsock:3,pid:1234,name:vm1", &s) == 0 && s.vsock_cid == 3 &&
		 s.qemu_pid == 1234 && !strcmp(s.name, "vm1"), "vsock spec");
	TV_CHECK(tv_guest_spec_parse("vsock:5:9000", &s) == 0 && s.vsock_port == 9000 &&
		 !strcmp(s.name, "cid5"), "vsock port and default name");
	TV_CHECK(tv_guest_spec_parse("serial:/run/x.sock,name:a.b-c", &s) == 0 &&
		 !strcmp(s.serial, "/run/x.sock"), "serial spec");
	TV_CHECK(tv_guest_spec_parse("myvm", &s) == 0 && !strcmp(s.libvirt, "myvm"), "libvirt name");
	TV_CHECK(tv_guest_spec_parse("vsock:3,name:../x", &s) == -EINVAL, "name with / accepted");
	TV_CHECK(tv_guest_spec_parse("vsock:3,name:.hidden", &s) == -EINVAL, "dot name accepted");
	TV_CHECK(tv_guest_spec_parse("vsock:2", &s) == -EINVAL, "CID 2 (the host) accepted");
	TV_CHECK(tv_guest_spec_parse("vsock:3,serial:/x", &s) == -EINVAL, "two transports accepted");
	TV_CHECK(tv_guest_spec_parse("pid:12", &s) == -EINVAL, "no transport accepted");
	TV_CHECK(tv_guest_spec_parse("vsock:3,pid:-1", &s) == -EINVAL, "negative pid accepted");
	TV_CHECK(tv_guest_spec_parse("vsock:3,color:red", &s) == -EINVAL, "unknown key accepted");
	TV_CHECK(tv_guest_spec_parse("xen:d1", &s) == 0 && !strcmp(s.xen, "d1") &&
		 !strcmp(s.name, "d1") && !s.serial[0] && s.xen_domid == -1, "xen spec");
	TV_CHECK(tv_guest_spec_parse("xen:d1,name:web", &s) == 0 && !strcmp(s.xen, "d1") &&
		 !strcmp(s.name, "web"), "xen spec with a name");
	TV_CHECK(tv_guest_spec_parse("xen:d1,serial:/x", &s) == -EINVAL, "xen with a serial path accepted");
	TV_CHECK(tv_guest_spec_parse("xen:d1,pid:3", &s) == -EINVAL, "xen with a pid accepted");
	TV_CHECK(tv_guest_spec_parse("xen:../d1", &s) == -EINVAL, "xen name with / accepted");
	TV_CHECK(tv_guest_spec_parse("xen:", &s) == -EINVAL, "empty xen name accepted");
}

/* Domain XML as `virsh dumpxml` prints it for a running domain. */
static void test_libvirt_xml(void)
{
	static const char vsock_xml[] =
		"<domain type='kvm' id='3'>\n  <name>vm1</name>\n  <devices>\n"
		"    <channel type='unix'>\n"
		"      <source mode='bind' path='/run/libvirt/qemu/channel/3-vm1/org.qemu.guest_agent.0'/>\n"
		"      <target type='virtio' name='org.qemu.guest_agent.0' state='connected'/>\n"
		"    </channel>\n"
		"    <vsock model='virtio'>\n      <cid auto='yes' address='7'/>\n"
		"      <alias name='vsock0'/>\n    </vsock>\n  </devices>\n</domain>\n";
	static const char serial_xml[] =
		"<domain type='kvm' id='4'>\n  <devices>\n"
		"    <channel type='unix'>\n"
		"      <source mode='bind' path='/run/libvirt/qemu/channel/4-vm2/org.qemu.guest_agent.0'/>\n"
		"      <target type='virtio' name='org.qemu.guest_agent.0'/>\n    </channel>\n"
		"    <channel type='unix'>\n"
		"      <source mode='bind' path='/run/libvirt/qemu/channel/4-vm2/org.tracevisor.0'/>\n"
		"      <target type='virtio' name='org.tracevisor.0' state='disconnected'/>\n"
		"    </channel>\n  </devices>\n</domain>\n";
	/*
	 * libvirt 9.0's live XML of the lab's KVM domain (tests/e2e/
	 * guest-libvirt-vsock.sh): a fixed CID, then the PCI <address> whose
	 * attributes must not be taken for the CID's.
	 */
	static const char lab_xml[] =
		"<domain type='kvm' id='1'>\n  <name>tvvsock</name>\n  <devices>\n"
		"    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n"
		"    <filesystem type='mount' accessmode='squash'>\n"
		"      <source dir='/tmp/l2'/>\n      <target dir='out'/>\n"
		"      <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x0'/>\n"
		"    </filesystem>\n"
		"    <vsock model='virtio'>\n      <cid auto='no' address='3'/>\n"
		"      <alias name='vsock0'/>\n"
		"      <address type='pci' domain='0x0000' bus='0x00' slot='0x03' function='0x0'/>\n"
		"    </vsock>\n  </devices>\n</domain>\n";
	struct tv_guest_spec s = { 0 };

	tv_guest_spec_from_libvirt_xml(&s, lab_xml);
	TV_CHECK(s.vsock_cid == 3 && !s.serial[0], "vsock CID from the lab's live XML: %u", s.vsock_cid);
	memset(&s, 0, sizeof(s));
	tv_guest_spec_from_libvirt_xml(&s, vsock_xml);
	TV_CHECK(s.vsock_cid == 7 && !s.serial[0], "vsock CID from XML: %u", s.vsock_cid);
	memset(&s, 0, sizeof(s));
	tv_guest_spec_from_libvirt_xml(&s, serial_xml);
	TV_CHECK(!s.vsock_cid && !strcmp(s.serial, "/run/libvirt/qemu/channel/4-vm2/org.tracevisor.0"),
		 "serial channel from XML: \"%s\"", s.serial);
	memset(&s, 0, sizeof(s));
	tv_guest_spec_from_libvirt_xml(&s, "<domain><devices></devices></domain>");
	TV_CHECK(!s.vsock_cid && !s.serial[0], "no channel in XML");
}

/* A real reply (libvirt 9.0, QEMU 7.2 TCG, 2 vCPUs), listed out of order. */
static void test_qmp_cpus(void)
{
	static const char reply[] =
		"{\"return\":[{\"thread-id\":15928,\"props\":{\"core-id\":0,\"thread-id\":0,"
		"\"socket-id\":1},\"qom-path\":\"/machine/unattached/device[2]\",\"cpu-index\":1,"
		"\"target\":\"x86_64\"},{\"thread-id\": 15927,\"props\":{\"core-id\":0,"
		"\"thread-id\":0,\"socket-id\":0},\"qom-path\":\"/machine/unattached/device[0]\","
		"\"cpu-index\": 0,\"target\":\"x86_64\"}],\"id\":\"libvirt-413\"}";
	struct tv_guest_spec s = { 0 };

	tv_guest_spec_from_qmp_cpus(&s, reply);
	TV_CHECK(s.nr_vcpus == 2 && s.vcpu_tid[0] == 15927 && s.vcpu_tid[1] == 15928,
		 "QMP vCPU threads: %u: %d %d", s.nr_vcpus, (int)s.vcpu_tid[0], (int)s.vcpu_tid[1]);
	memset(&s, 0, sizeof(s));
	tv_guest_spec_from_qmp_cpus(&s, "{\"error\":{\"class\":\"CommandNotFound\"}}");
	TV_CHECK(s.nr_vcpus == 0, "QMP error: %u vCPUs", s.nr_vcpus);
	tv_guest_spec_from_qmp_cpus(&s, "{\"return\":[{\"cpu-index\":99999,\"thread-id\":5},"
					"{\"thread-id\":6,\"cpu-index\":0");
	TV_CHECK(s.nr_vcpus == 0, "out-of-range or truncated QMP: %u vCPUs", s.nr_vcpus);
}

/* A trigger instance's trace_pipe lines: CPU and stamp (ns; a counter clock's as is). */
static void test_trace_line(void)
{
	uint64_t ns = 0;
	int cpu = -1;

	TV_CHECK(!tv_proto_trace_line_parse("  python3-3035    [001] d..1. 22930.096393: sys_enter_getpid: ()",
					    &cpu, &ns) && cpu == 1 && ns == 22930096393000ULL,
		 "flags and a us stamp: cpu %d ns %llu", cpu, (unsigned long long)ns);
	TV_CHECK(!tv_proto_trace_line_parse("  a-[12]-7 [3] 1234567: x: y", &cpu, &ns) && cpu == 3 &&
		 ns == 1234567, "a counter clock, a comm with brackets: cpu %d ns %llu", cpu,
		 (unsigned long long)ns);
	TV_CHECK(tv_proto_trace_line_parse("# tracer: nop", &cpu, &ns) == -1, "a header line parsed");
	TV_CHECK(tv_proto_trace_line_parse("x [001] d..1. notastamp: y", &cpu, &ns) == -1,
		 "a line without a stamp parsed");
}

/* SNAP_* and TRIGGER: protocol errors unless the stream is a flight recorder's; an old agent refused. */
static void test_stream_flight(void)
{
	static const char v3_meta[] = "ncpus=1\nsubbuf_size=4096\nlong_size=8\nagent_version=3\n";
	unsigned char buf[4096];
	struct tv_guest_stream gs;
	size_t n = 0;
	int ret;

	n += frame(buf + n, TV_MSG_META, 0, good_meta, strlen(good_meta));
	n += file_frame(buf + n, "header_page", "hp");
	n += frame(buf + n, TV_MSG_READY, 0, "", 0);
	n += frame(buf + n, TV_MSG_TRIGGER, 0, "time=1\ncpu=0\n", 14);
	new_stream(&gs, "flight-none", 1 << 20);
	ret = tv_guest_stream_feed(&gs, buf, n);
	TV_CHECK(ret == -EBADMSG && strstr(gs.error, "not a flight recorder"), "TRIGGER without a flight recorder: %d %s",
		 ret, gs.error);
	tv_guest_stream_fini(&gs);
	n = frame(buf, TV_MSG_META, 0, v3_meta, strlen(v3_meta));
	new_stream(&gs, "flight-old", 1 << 20);
	gs.flight_asked = 1;
	ret = tv_guest_stream_feed(&gs, buf, n);
	TV_CHECK(ret == -EPROTONOSUPPORT && strstr(gs.error, "(version 3) cannot keep its ring"),
		 "an agent of version 3 for a flight recorder: %d %s", ret, gs.error);
	tv_guest_stream_fini(&gs);
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/tv-test-proto.XXXXXX");
	if (!mkdtemp(root))
		return 2;
	test_header();
	test_marker();
	test_paths();
	test_kv();
	test_stream_good();
	test_stream_hostile();
	test_stream_resync();
	test_trace_line();
	test_stream_flight();
	test_specs();
	test_libvirt_xml();
	test_qmp_cpus();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", root);
	}
	return tv_test_done("test_proto");
}
