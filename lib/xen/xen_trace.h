/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * Xen trace records (xen/include/public/trace.h) and their translation into
 * libtraceevent records of the synthesized "xen" event system, shared by the
 * dom0 consumer, the xentrace importer and the session reader (kind
 * "xen-trace").  Values are little endian: Xen traces only x86 here.
 */
#ifndef TV_XEN_TRACE_H
#define TV_XEN_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Xen's public trace ABI, restated so the reader builds without libxen-dev. */
#define XT_EXTRA_MAX		7
#define XT_GEN			0x0001f000u
#define XT_LOST_RECORDS		(XT_GEN + 1)
#define XT_WRAP_BUFFER		(XT_GEN + 2)
#define XT_CPU_CHANGE		(XT_GEN + 3)
#define XT_TSCALE		(XT_GEN + 4)	/* our patch: a CPU's TSC scale */
#define XT_SCHED_MIN		0x00021000u
#define XT_SCHED_RUNSTATE	(XT_SCHED_MIN + 1)
#define XT_SCHED_CONTINUE	(XT_SCHED_MIN + 2)
#define XT_SCHED_VERBOSE	0x00028000u
#define XT_SCHED_SLEEP		(XT_SCHED_VERBOSE + 3)
#define XT_SCHED_WAKE		(XT_SCHED_VERBOSE + 4)
#define XT_SCHED_SWITCH		(XT_SCHED_VERBOSE + 10)
#define XT_HVM_ENTRYEXIT	0x00081000u
#define XT_HVM_HANDLER		0x00082000u
#define XT_HVM_NESTEDFLAG	0x400u
#define XT_64_FLAG		0x100u
#define XT_HVM_VMENTRY		(XT_HVM_ENTRYEXIT + 0x01)
#define XT_HVM_VMEXIT		(XT_HVM_ENTRYEXIT + 0x02)
#define XT_HVM_VMEXIT64		(XT_HVM_ENTRYEXIT + XT_64_FLAG + 0x02)
#define XT_PV_ENTRY		0x00201000u
#define XT_PV_HYPERCALL_V1	0x00201001u
#define XT_PV_HYPERCALL_V2	0x0020100du
#define XT_PV_HYPERCALL_SUBCALL	0x0020200eu
#define XT_SCHED_SWITCH_INFPREV	(XT_SCHED_VERBOSE + 14)
#define XT_GUEST		0x0800f000u
#define XT_HYPERCALL_ARG_MASK	0xfff00000u
#define XT_CPU_CHANGE_HEADER	(XT_CPU_CHANGE | (2u << 28))
#define XT_DOMID_IDLE		0x7fff
#define XT_REC_MAX		(4 + 8 + 4 * XT_EXTRA_MAX)

/* One t_rec as found in a buffer. */
struct tv_xen_rec {
	uint32_t event;		/* 28-bit event id */
	unsigned int nr_extra;
	bool has_tsc;
	uint64_t tsc;
	uint32_t extra[XT_EXTRA_MAX];
	unsigned int size;	/* bytes in the buffer */
};

/**
 * tv_xen_rec_parse - parse the t_rec at @p
 * @p: record bytes
 * @avail: bytes available at @p
 * @rec: filled on success
 *
 * Return: the record size, 0 when @avail cuts the record short.
 */
unsigned int tv_xen_rec_parse(const unsigned char *p, size_t avail, struct tv_xen_rec *rec);

/* Synthesized event ids (common_type) of the "xen" event system. */
enum tv_xen_event_id {
	TV_XEN_EV_RUNSTATE = 1,
	TV_XEN_EV_CONTINUE,
	TV_XEN_EV_SWITCH,
	TV_XEN_EV_WAKE,
	TV_XEN_EV_SLEEP,
	TV_XEN_EV_VMEXIT,
	TV_XEN_EV_VMENTRY,
	TV_XEN_EV_HVM_HANDLER,
	TV_XEN_EV_HYPERCALL,
	TV_XEN_EV_LOST,
	TV_XEN_EV_WRAP,
	TV_XEN_EV_GUEST,
	TV_XEN_EV_OTHER,
	TV_XEN_EV_TSCALE,
	TV_XEN_EV_SUBCALL,	/* TRC_PV_HYPERCALL_SUBCALL: a multicall's entry */
	TV_XEN_EV_FIXED_COUNT,
	/* From here, the table-driven events of lib/xen/xen_events.c. */
	TV_XEN_EV_GEN_BASE = 32
};

/* Name of the synthesized event of @id ("xen_vmexit"...), NULL if unknown. */
const char *tv_xen_event_name(int id);
/* Which synthesized event a Xen record becomes. */
int tv_xen_event_of(uint32_t event);
/* One past the highest synthesized event id. */
int tv_xen_event_count(void);

/*
 * Table-driven events (lib/xen/xen_events.c): up to TV_XEN_GEN_MAX_FIELDS
 * fields, each a u64 after the common header; a name suffix ":x" prints
 * in hex, ":d" is signed.  Unused entries are NULL.
 */
#define TV_XEN_GEN_MAX_FIELDS 8
struct tv_xen_gen_event {
	const char *name;
	const char *fields[TV_XEN_GEN_MAX_FIELDS];
};

/* The table event of Xen event id @event, -1 when it has none. */
int tv_xen_gen_event_of(uint32_t event);
/* The descriptor of synthesized event @id, NULL if not a table event. */
const struct tv_xen_gen_event *tv_xen_gen_event(int id);
int tv_xen_gen_count(void);
/* The field values of @rec (its decoder's order) into @vals. */
void tv_xen_gen_fill(uint64_t *vals, const struct tv_xen_rec *rec);
/* Self-check of the tables (sorted, field counts): 0 or -(row + 1). */
int tv_xen_gen_check(void);

/*
 * tv_xen_rec_prev_running - what @rec says ran on its CPU before it
 * Return: 1 with *dom, *vcpu set when @rec shows the vCPU that was running
 * on its physical CPU just before it (a switch's prev, a runstate change
 * out of running, a continue_running); -1 when nothing before @rec can be
 * inferred from later records (lost records); 0 otherwise.
 */
int tv_xen_rec_prev_running(const struct tv_xen_rec *rec, uint16_t *dom, uint16_t *vcpu);

/* Per physical CPU decoding state: inherited TSC and the running vCPU. */
struct tv_xen_cpu_state {
	uint64_t last_tsc;
	bool have_tsc;
	uint16_t cur_dom;	/* 0xffff: not known yet */
	uint16_t cur_vcpu;
	uint8_t isa;		/* enum tv_kvm_isa: how to name exit reasons */
};

void tv_xen_cpu_state_init(struct tv_xen_cpu_state *cs);

/* Longest synthesized record (common fields + xen header + 6 u64 args). */
#define TV_XEN_EVENT_MAX 80

/**
 * tv_xen_rec_to_event - synthesize the libtraceevent record of @rec
 * @cs: this CPU's state, updated (TSC inheritance, running vCPU)
 * @rec: the parsed record
 * @out: TV_XEN_EVENT_MAX bytes
 * @tsc: the record's TSC (its own, or inherited from the previous record)
 *
 * Return: the record's size in @out, 0 for records that carry no event
 * (CPU change markers of xentrace files).
 */
unsigned int tv_xen_rec_to_event(struct tv_xen_cpu_state *cs, const struct tv_xen_rec *rec,
				 unsigned char *out, uint64_t *tsc);

/* header_page and events/xen/NAME/format for every synthesized event. */
int tv_xen_write_formats(const char *domain_dir);
/*
 * header_page alone: a domain without events/ reads with the formats built
 * into the reader (lib/reader/domain.c), the same text these files hold.
 */
int tv_xen_write_header_page(const char *domain_dir);
/* The format file text of synthesized event @id (caller frees), NULL if
 * @id is not one or memory ran out. */
char *tv_xen_format_text(int id, size_t *len);

/* TSC → ns with a fixed frequency; 128-bit intermediate, no overflow. */
uint64_t tv_xen_tsc_to_ns(uint64_t tsc, uint64_t khz);

/*
 * Xen system time from a TSC with Xen's own per-CPU scale (tsc_to_system_mul
 * and tsc_shift of struct vcpu_time_info), relative to (@tsc0, @stime0).
 */
uint64_t tv_xen_tsc_to_stime(uint64_t tsc, uint64_t tsc0, uint64_t stime0,
			     uint32_t mul, int8_t shift);

/* Names for stat and report. */
const char *tv_xen_runstate_name(unsigned int state);
const char *tv_xen_hypercall_name(unsigned int op);
const char *tv_xen_hvm_handler_name(uint32_t event);

/* A piece of a ring's data area: where it starts, how long. */
struct tv_xen_piece {
	const unsigned char *data;
	uint32_t len;
};

/*
 * One ring: its t_buf header (cons, prod) and @data_size bytes of data.
 * Finds what lies between cons and prod, in place: one piece, or two when it
 * wraps (the end of the data area, then its start); *new_cons is the value
 * to publish once they are consumed.
 * Return: the number of pieces (0: empty), or -EBADMSG on an impossible
 * cons/prod.
 */
int tv_xen_ring_window(uint32_t cons, uint32_t prod, const unsigned char *data,
		       uint32_t data_size, struct tv_xen_piece piece[2], uint32_t *new_cons);

/*
 * tv_xen_ring_window()'s window copied to @out (data_size bytes).
 * Return: bytes copied, or -EBADMSG on an impossible cons/prod.
 */
long tv_xen_ring_copy(uint32_t cons, uint32_t prod, const unsigned char *data,
		      uint32_t data_size, unsigned char *out, uint32_t *new_cons);

/**
 * tv_xen_tinfo_cpu - where CPU @cpu's buffer pages are listed in t_info
 * @tinfo: the mapped t_info area (struct t_info: u16 tbuf_size, u16 mfn_offset[])
 * @size: its size in bytes
 * @cpu: physical CPU
 * @mfns: set to the CPU's list of tbuf_size MFNs (u32 each)
 *
 * Return: tbuf_size (pages per CPU), 0 for a CPU without a buffer (offset
 * 0: offline at allocation), -EBADMSG when the list lies outside t_info.
 */
int tv_xen_tinfo_cpu(const void *tinfo, size_t size, int cpu, const uint32_t **mfns);

#endif
