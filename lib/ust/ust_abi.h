/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The user-space tracer's shared-memory layout: the contract between
 * libtracevisor-ust (guest/ust/, in the traced process: the writer) and
 * its consumers (tracevisor-agent in a guest, `record --ust` on a host,
 * and the session reader's "ust" stream source).  Plain C, libc only,
 * like lib/format/proto.h: any layer and the guest side may include it.
 *
 * Everything in the mapping is written by the traced process and is
 * therefore UNTRUSTED for a consumer: every offset, size and counter read
 * from it is checked against the mapping's size before use, and a value
 * that does not fit cuts that buffer off (never the consumer).
 *
 * One memfd per process, passed to a consumer with SCM_RIGHTS:
 *
 *   offset 0                struct tv_ust_shm_header
 *   meta_offset             metadata: the event formats, text, appended
 *   bufs_offset + i*stride  buffer i: struct tv_ust_buf_ctl, then at
 *                           data_offset (from the buffer's start)
 *                           nr_subbufs sub-buffers of subbuf_size bytes
 *
 * Records (8-byte aligned, never straddling a sub-buffer):
 *
 *   struct tv_ust_record_hdr, then the payload (fields as the format says)
 *
 * The part from @id on is laid out as an ftrace event (common_type at 0,
 * common_pid at 4), so the reader hands it to libtraceevent with a
 * format file from the metadata, exactly as it does for kernel events:
 * report, stat, sync and both exports read user-space events unchanged.
 * A record with id TV_UST_ID_PADDING fills the rest of a sub-buffer.  Its
 * size is at most TV_UST_PADDING_MAX (a uint16_t), so a longer tail holds
 * several padding records back to back: a consumer may either skip to the
 * sub-buffer's end at the first one or walk them by size.
 *
 * Commit protocol (per buffer):
 * - @reserve is the writer's position in bytes since the start (it only
 *   grows); sub-buffer index = (pos / subbuf_size) % nr_subbufs.
 * - A writer that reserved [pos, pos+size) writes the payload, then the
 *   header's word at offset 8 (id, size, tid) with a release store, then
 *   adds size to @commit[index] (cumulative over laps).  So sub-buffer
 *   index of lap L is complete when commit[index] == (L + 1) * subbuf_size.
 * - The consumer reads complete sub-buffers in order, zeroes each one it
 *   has read, then release-stores @consumed (a sub-buffer boundary) — only
 *   then may a writer (discard and blocking modes) reserve in it again.
 * - A process gone for good (exit, crash, SIGKILL): the consumer still has
 *   the mapping and reads the last, incomplete sub-buffer record by record
 *   while the header word is non-zero and its size fits; a zero header is a
 *   reservation its writer never committed, and ends what is recovered of
 *   that sub-buffer.  (Additive, writer side: the writer stores a header
 *   word with id TV_UST_ID_UNCOMMITTED and the record's real size and tid
 *   as part of its reservation, before the record is written; the commit
 *   replaces it.  So a reservation that was never committed normally shows
 *   that id, and recovery skips its size and goes on with the records
 *   committed after it in the same sub-buffer.  Recovery stops at
 *   @reserve: nothing beyond it was reserved.  A complete sub-buffer never
 *   holds that id.)
 * - Overwrite mode (flight recorder): writers ignore @consumed and reuse
 *   the oldest sub-buffer; nobody zeroes it, so only complete sub-buffers
 *   (commit[index] == (L + 1) * subbuf_size) are valid, and a snapshot
 *   reader copies one and then re-reads @reserve: if it moved beyond that
 *   sub-buffer's next lap start, the copy is stale and dropped.  The
 *   incomplete sub-buffer of an overwrite buffer is recovered only when
 *   commit[index] - L * subbuf_size == reserve % (nr_subbufs*subbuf_size)
 *   - index * subbuf_size (everything reserved in it is committed).
 *
 * Registration (SOCK_SEQPACKET unix socket, messages struct tv_ust_msg):
 *   process -> consumer  HELLO     pid, comm; sent on every (re)connection
 *   consumer -> process  CONFIG    clock, mode, sizes (0: the process's
 *                                  default); applies only when the process
 *                                  has no buffers yet (they are created
 *                                  once and kept for the process's life);
 *                                  the process's TRACEVISOR_UST_MODE,
 *                                  _SUBBUF_SIZE and _NR_SUBBUFS, when set,
 *                                  win over CONFIG's mode and sizes
 *   process -> consumer  REGISTER  the memfd as SCM_RIGHTS; the header in
 *                                  it says the settings really in force
 *   consumer -> process  ENABLE / DISABLE  arg = a glob on
 *                                  "PROVIDER:EVENT" (fnmatch); the process
 *                                  answers REPLY (value: see below)
 *   consumer -> process  FLUSH     the process waits (bounded, 1 s) until
 *                                  every reservation made so far is
 *                                  committed and answers REPLY (0 or
 *                                  -ETIMEDOUT); with events disabled first,
 *                                  the buffers are then quiescent
 *   consumer -> process  LIST      REPLY value = number of registered
 *                                  events (their formats are in the
 *                                  metadata)
 * ENABLE/DISABLE's REPLY value is the number of registered events the glob
 * matches (>= 0; events registered later by a dlopen'ed library are
 * enabled as they register).  When the consumer closes the socket, the
 * process disables every event, keeps its buffers, and goes back to
 * connecting quietly (every TV_UST_RETRY_MS); a new consumer gets the same
 * memfd and continues from @consumed.
 */
#ifndef TV_LIB_UST_ABI_H
#define TV_LIB_UST_ABI_H

#include <stdint.h>

#define TV_UST_MAGIC		0x53555654u	/* "TVUS" little endian */
#define TV_UST_VERSION		1
#define TV_UST_ID_PADDING	0		/* fills a sub-buffer's tail */
#define TV_UST_ID_FIRST		1		/* first event id of a process */
#define TV_UST_ID_UNCOMMITTED	0xffff		/* reserved, not (yet) committed: skip */
#define TV_UST_RECORD_ALIGN	8
/* Where a traced process finds its consumer (SOCK_SEQPACKET, unix). */
#define TV_UST_SOCK_ENV		"TRACEVISOR_UST_SOCK"
#define TV_UST_SOCK_DEFAULT	"/run/tracevisor/ust.sock"
/* Glob of events enabled from the first constructor on, before main(). */
#define TV_UST_TRACE_ENV	"TRACEVISOR_UST"
/* How long a starting process waits to be registered with a listening consumer. */
#define TV_UST_REGISTER_TIMEOUT_ENV	"TRACEVISOR_UST_REGISTER_TIMEOUT"
#define TV_UST_REGISTER_TIMEOUT_MS	3000
/* The process's defaults when it traces before any consumer configured it:
 * "mono" or "x86-tsc"; "discard", "blocking" or "overwrite"; bytes; count. */
#define TV_UST_CLOCK_ENV	"TRACEVISOR_UST_CLOCK"
#define TV_UST_MODE_ENV		"TRACEVISOR_UST_MODE"
#define TV_UST_SUBBUF_ENV	"TRACEVISOR_UST_SUBBUF_SIZE"
#define TV_UST_NSUBBUF_ENV	"TRACEVISOR_UST_NR_SUBBUFS"
#define TV_UST_SUBBUF_DEFAULT	65536
#define TV_UST_NSUBBUF_DEFAULT	8
#define TV_UST_PADDING_MAX	0xfff8		/* largest padding record */
#define TV_UST_RETRY_MS		200		/* reconnection period */

enum tv_ust_mode {
	TV_UST_MODE_DISCARD = 0,	/* full: the event is dropped, @lost counts it */
	TV_UST_MODE_BLOCKING = 1,	/* full: the writer waits (bounded) for the consumer */
	TV_UST_MODE_OVERWRITE = 2,	/* flight recorder: the oldest sub-buffer is reused */
};

enum tv_ust_clock {
	TV_UST_CLOCK_MONO = 0,		/* CLOCK_MONOTONIC ns (the kernel's "mono") */
	TV_UST_CLOCK_X86_TSC = 1,	/* rdtsc (the kernel's "x86-tsc") */
};

struct tv_ust_shm_header {
	uint32_t magic;
	uint32_t version;
	uint32_t header_size;	/* sizeof(struct tv_ust_shm_header) as written */
	uint32_t nr_bufs;	/* per-CPU buffers, or per-thread slots */
	uint32_t subbuf_size;	/* power of two, 4096 ... 1 MiB */
	uint32_t nr_subbufs;	/* power of two, >= 2 */
	uint32_t mode;		/* enum tv_ust_mode */
	uint32_t clock;		/* enum tv_ust_clock */
	int32_t pid;
	uint32_t per_thread;	/* 0: buffer i is CPU i (rseq); 1: thread slots */
	uint64_t meta_offset;	/* metadata area */
	uint64_t meta_capacity;
	uint64_t meta_len;	/* bytes of metadata written; release-stored after the text */
	uint64_t bufs_offset;	/* buffer 0 */
	uint64_t buf_stride;	/* bytes from one buffer to the next */
	uint64_t data_offset;	/* sub-buffer 0 from the start of its buffer */
	uint64_t shm_size;	/* the whole mapping */
	char comm[16];		/* the process's name, for the session */
};

struct tv_ust_buf_ctl {
	uint64_t reserve;	/* writer position (bytes since the start) */
	uint64_t consumed;	/* consumer position (a sub-buffer boundary) */
	uint64_t lost;		/* events discarded, counted exactly */
	int32_t owner_tid;	/* per-thread slot: its thread (0: free); per-CPU: 0 */
	uint32_t cpu;		/* per-CPU buffer: its CPU */
	uint64_t commit[];	/* nr_subbufs cumulative committed byte counts */
};

struct tv_ust_record_hdr {
	uint64_t ts;		/* in the header's clock */
	uint16_t id;		/* common_type: event id from the metadata */
	uint16_t size;		/* whole record, header included, multiple of 8 */
	int32_t tid;		/* common_pid */
};

/*
 * Metadata: a sequence of entries, each
 *   "event ID PROVIDER:EVENT\n" followed by an ftrace format file's text
 *   ("name: EVENT\nID: ID\nformat:\n\tfield:unsigned short common_type;..."
 *    with common_type at offset 0 size 2, common_size at 2 size 2,
 *    common_pid at 4 size 4, then the fields from offset 8)
 *   ending with a line "end\n".
 * Appended (never rewritten) as providers register; an event of a library
 * unloaded with dlclose keeps its id (ids are never reused in a process).
 */
#define TV_UST_META_EVENT	"event "
#define TV_UST_META_END		"end\n"

/*
 * The memfd (additive): created with MFD_ALLOW_SEALING and sealed
 * F_SEAL_SHRINK before it is registered.  A consumer maps it, so a memfd
 * the process could shrink afterwards would make the consumer's next read
 * of the lost pages a SIGBUS; a consumer refuses a memfd without that seal
 * (adding it itself when sealing is allowed).
 */

/* Registration protocol (see the top of this file). */
enum tv_ust_msg_type {
	TV_UST_MSG_HELLO = 1,		/* process: pid, arg = comm */
	TV_UST_MSG_CONFIG = 2,		/* consumer: clock, mode, subbuf_size, nr_subbufs */
	TV_UST_MSG_REGISTER = 3,	/* process: pid, with the memfd (SCM_RIGHTS) */
	TV_UST_MSG_ENABLE = 4,		/* consumer: arg = glob */
	TV_UST_MSG_DISABLE = 5,		/* consumer: arg = glob */
	TV_UST_MSG_FLUSH = 6,		/* consumer: wait for every commit */
	TV_UST_MSG_LIST = 7,		/* consumer: count registered events */
	TV_UST_MSG_REPLY = 8,		/* process: value = result or -errno */
	/*
	 * consumer (additive): the session's ENABLE/DISABLE rules are all
	 * sent; a process waits for it (TRACEVISOR_UST_REGISTER_TIMEOUT) in
	 * its constructor, so its first events follow the session's rules.
	 */
	TV_UST_MSG_READY = 9,
};

#define TV_UST_MSG_ARG_MAX	224

struct tv_ust_msg {
	uint32_t magic;		/* TV_UST_MAGIC */
	uint16_t version;	/* TV_UST_VERSION */
	uint16_t type;		/* enum tv_ust_msg_type */
	int64_t value;		/* REPLY: result or -errno */
	int32_t pid;		/* HELLO, REGISTER */
	uint32_t clock;		/* CONFIG: enum tv_ust_clock + 1, 0 = default */
	uint32_t mode;		/* CONFIG: enum tv_ust_mode + 1, 0 = default */
	uint32_t subbuf_size;	/* CONFIG: 0 = default */
	uint32_t nr_subbufs;	/* CONFIG: 0 = default */
	uint32_t reserved;	/* 0 */
	char arg[TV_UST_MSG_ARG_MAX];	/* NUL-terminated (glob, comm) */
};

#endif
