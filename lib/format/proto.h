/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The host <-> guest agent wire protocol (doc/agent-protocol.md).
 * Shared by the host (host/guest*.c) and the static agent (guest/agent.c):
 * plain C and libc only.  Everything a guest sends is untrusted: the
 * decoders below check every length before it is used.
 */
#ifndef TV_LIB_PROTO_H
#define TV_LIB_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define TV_PROTO_MAGIC		0x47415654u	/* "TVAG" little endian */
#define TV_PROTO_VERSION	1
#define TV_PROTO_HDR_SIZE	16
/* Largest payload either side accepts: 64 sub-buffers of 16 KiB. */
#define TV_PROTO_MAX_PAYLOAD	(1u << 20)
#define TV_PROTO_MAX_CPUS	1024
#define TV_PROTO_MAX_PATH	200
#define TV_AGENT_VSOCK_PORT	7476
#define TV_AGENT_SERIAL_NAME	"org.tracevisor.0"

enum tv_proto_type {
	/* host -> guest */
	TV_MSG_START = 0x01,	/* text key=value: events, clock, buffer_kb, guest */
	TV_MSG_STOP = 0x02,
	TV_MSG_PING = 0x03,	/* u64 seq */
	TV_MSG_HCALL = 0x04,	/* u64 first seq, u32 count */
	/* a flight recorder's snapshot (START "flight_bytes"): arg = its id */
	TV_MSG_SNAP = 0x05,
	/* guest -> host */
	TV_MSG_META = 0x10,	/* text key=value */
	TV_MSG_FILE = 0x11,	/* u16 path length, path, content */
	TV_MSG_DATA = 0x12,	/* arg = cpu; whole sub-buffers */
	TV_MSG_PONG = 0x13,	/* u64 seq */
	TV_MSG_HCALL_DONE = 0x14,	/* u64 first seq, u32 count, u32 done */
	TV_MSG_READY = 0x15,	/* tracing is on */
	TV_MSG_END = 0x16,	/* text key=value: final stats; last frame */
	TV_MSG_ERROR = 0x17,	/* text: why the agent gave up */
	/* guest -> host: the guest's traced processes (START key "ust") */
	TV_MSG_UST_PROC = 0x18,	/* arg = process index; text key=value: its settings */
	TV_MSG_UST_META = 0x19,	/* arg = process index; metadata appended (lib/ust/ust_abi.h) */
	TV_MSG_UST_DATA = 0x1a,	/* arg = index << 16 | buffer; whole sub-buffers */
	TV_MSG_UST_END = 0x1b,	/* arg = process index; text: status, cpuN.lost */
	/* guest -> host: the first reply to a START with a nonce, before all else */
	TV_MSG_HELLO = 0x1c,	/* u64 nonce, START's echoed */
	/* guest -> host, to a host that sent a nonce: the loss counts, final
	 * once tracing is off, sent before the last drain (END may not come) */
	TV_MSG_LOSS = 0x1d,	/* text: cpuN.lost, lost_total */
	/* guest -> host, a flight recorder (agent version 4, host/flight_guest.c) */
	TV_MSG_SNAP_DATA = 0x1e,	/* arg = snapshot id << 16 | cpu; whole sub-buffers */
	TV_MSG_SNAP_FILE = 0x1f,	/* arg = snapshot id; as FILE: saved_cmdlines, saved_tgids */
	TV_MSG_SNAP_END = 0x20,	/* arg = snapshot id; text: cpuN.lost, lost_total, gap_ns */
	TV_MSG_TRIGGER = 0x21,	/* arg = rule (START's trigger.N); text: time, cpu */
	/* a flight snapshot of a guest's traced process (START "ust" and "flight_bytes") */
	TV_MSG_SNAP_UST = 0x22,	/* arg: TV_PROTO_SNAP_UST_ARG; whole sub-buffers */
};

/* A SNAP_DATA frame's arg: the snapshot id (low 16 bits) and the CPU. */
#define TV_PROTO_SNAP_ARG(id, cpu)	((uint32_t)((id) & 0xffffu) << 16 | ((uint32_t)(cpu) & 0xffffu))
#define TV_PROTO_SNAP_ID(arg)		((arg) >> 16)
/*
 * A SNAP_UST frame's arg: the snapshot id's low 8 bits (24-31), the
 * process index of its UST_PROC (16-23, below TV_PROTO_MAX_UST) and the
 * buffer (0-15, below the process's nr_bufs, at most TV_UST_MAX_BUFS).
 */
#define TV_PROTO_SNAP_UST_ARG(id, idx, b) \
	((uint32_t)((id) & 0xffu) << 24 | ((uint32_t)(idx) & 0xffu) << 16 | ((uint32_t)(b) & 0xffffu))
#define TV_PROTO_SNAP_UST_ID(arg)	((arg) >> 24)
#define TV_PROTO_SNAP_UST_IDX(arg)	(((arg) >> 16) & 0xffu)
#define TV_PROTO_SNAP_UST_BUF(arg)	((arg) & 0xffffu)
#define TV_PROTO_SNAP_CPU(arg)		((arg) & 0xffffu)

/*
 * The HELLO frame an agent answers START "nonce=N" with: a fixed 24 bytes,
 * so a host reading a channel that may still hold an earlier session's
 * bytes (a Xen PV console, a virtio-serial port) can find where this
 * session starts by searching for them.
 */
#define TV_PROTO_HELLO_SIZE	(TV_PROTO_HDR_SIZE + 8)
void tv_proto_hello_encode(unsigned char out[TV_PROTO_HELLO_SIZE], uint64_t nonce);

/* Traced processes one guest may describe (UST_PROC indexes 0 .. max - 1). */
#define TV_PROTO_MAX_UST	256

struct tv_proto_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t flags;		/* 0 */
	uint32_t arg;
	uint32_t len;		/* payload bytes that follow */
};

/* The payload of ftrace:raw_data sync markers (doc/sync-probes.md). */
#define TV_SYNC_MAGIC		0x59535654u
#define TV_SYNC_HCALL_NR	0x7476
#define TV_SYNC_MARKER_SIZE	24

enum tv_sync_type {
	TV_SYNC_PING_SEND = 1,
	TV_SYNC_PING_RECV = 2,
	TV_SYNC_PONG_SEND = 3,
	TV_SYNC_PONG_RECV = 4,
	TV_SYNC_HCALL_BEFORE = 5,
	TV_SYNC_HCALL_AFTER = 6,
	TV_SYNC_XEN_BEFORE = 7,
	TV_SYNC_XEN_AFTER = 8,
	/*
	 * Not a probe: the recorder's wall-clock pair, aux = CLOCK_REALTIME in
	 * ns when it wrote the marker (seq 0 at the start, 1 at the end), so
	 * the trace clock can be shown as a date (the CTF clock offset).
	 */
	TV_SYNC_CLOCK_REALTIME = 16,
};

/* TRC_GUEST | TV_SYNC_XEN_EVENT, data { magic, seq low, seq high }. */
#define TV_SYNC_XEN_EVENT	0x476
/*
 * A domU's hypercall probe: TRC_GUEST | TV_SYNC_XEN_GUEST_EVENT, data
 * { magic, guest index, seq low, seq high }, bracketed by HCALL_BEFORE and
 * HCALL_AFTER markers whose aux is TV_SYNC_HCALL_AUX_XEN.
 */
#define TV_SYNC_XEN_GUEST_EVENT	0x477
#define TV_SYNC_HCALL_AUX_XEN	1

void tv_proto_hdr_encode(unsigned char out[TV_PROTO_HDR_SIZE], uint16_t type, uint32_t arg,
			 uint32_t len);
/* Return: 0, or -EBADMSG (bad magic/flags/type) / -EMSGSIZE (len > max). */
int tv_proto_hdr_decode(const unsigned char in[TV_PROTO_HDR_SIZE], struct tv_proto_hdr *hdr);
const char *tv_proto_type_name(uint16_t type);

void tv_proto_put_u64(unsigned char *p, uint64_t v);
uint64_t tv_proto_get_u64(const unsigned char *p);
void tv_proto_put_u32(unsigned char *p, uint32_t v);
uint32_t tv_proto_get_u32(const unsigned char *p);

void tv_sync_marker_encode(unsigned char out[TV_SYNC_MARKER_SIZE], uint16_t type,
			   uint16_t guest, uint64_t seq, uint64_t aux);

/* A sync marker as read back (doc/sync-probes.md). */
struct tv_sync_marker {
	uint32_t magic;
	uint16_t type;
	uint16_t guest;
	uint64_t seq;
	uint64_t aux;
};

/*
 * The marker in an ftrace:raw_data record of @size bytes: after its 8-byte
 * common header, the "id" field holds the magic and "buf" the rest.
 * Return: 0 with *m set, or -ENOMSG (too short or not our magic).
 */
int tv_sync_marker_decode(const void *record, size_t size, struct tv_sync_marker *m);

/*
 * A session-relative path a guest may name in a FILE frame: header_page,
 * header_event, saved_cmdlines, saved_tgids or events/SYS/EVENT/format,
 * whose SYS and EVENT are [A-Za-z0-9_.-]+ and not "." or "..".
 * Return: 0 or -EINVAL.
 */
int tv_proto_check_path(const char *path, size_t len);

/*
 * Walk the "key=value\n" lines of a text payload.  Keys are
 * [A-Za-z0-9_.]{1,63}, values printable ASCII up to 255 bytes.
 * Calls @fn for each; stops at its first non-zero return.
 * Return: 0, -EINVAL on a malformed line, or @fn's value.
 */
int tv_proto_kv_parse(const char *text, size_t len,
		      int (*fn)(const char *key, const char *val, void *ctx), void *ctx);

/* Split a FILE payload into path and content. Return: 0 or -EINVAL. */
int tv_proto_file_split(const unsigned char *p, size_t len, char path[TV_PROTO_MAX_PATH + 1],
			const unsigned char **content, size_t *content_len);

/*
 * The CPU and time stamp of a text trace line ("  comm-pid  [001] d..1.
 * 1234.567890: name: ..."; a counter clock's stamp is one integer): the
 * trace_pipe of a trigger's instance, on the host (host/flight.c) and in
 * the agent (guest/agent_flight.c).  Return: 0 or -1 (not an event line).
 */
int tv_proto_trace_line_parse(const char *line, int *cpu, uint64_t *ns);

#endif
