// SPDX-License-Identifier: LGPL-2.1
/*
 * The flight recorder's exit-latency watchdog: kvm/bpf/flight_exits.bpf.c
 * (built into the library as bytes, like top's exit programs, whose
 * kvm_exit field offsets it shares: kvm/top_bpf.c) loaded with libbpf,
 * its tracepoint programs on kvm_exit and kvm_entry, its walk of the open
 * exits on a 1 kHz software clock event of CPU 0, its hits read from a
 * ring buffer.  top --bpf's programs are not changed: this object is
 * loaded beside them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "bpf/top_exits.h"
#include "bpf/flight_exits.h"
#include "flight_bpf.h"
#include "top_bpf.h"
#include "bpf_dl.h"

extern const unsigned char tv_flight_exits_bpf[];
extern const size_t tv_flight_exits_bpf_len;

#define TICK_NS 1000000ULL	/* the walk's period: a hit is at most this late */

struct tv_flight_bpf {
	struct bpf_object *obj;
	struct bpf_link *links[3];
	int perf_fd;
	int open_fd;
	struct ring_buffer *rb;
	tv_flight_hit_fn fn;
	void *ctx;
};

static int flight_ring_hit(void *ctx, void *data, size_t size)
{
	struct tv_flight_bpf *b = ctx;
	const struct flight_hit *h = data;
	struct tv_flight_exit_hit hit;

	if (size < sizeof(*h))
		return 0;
	hit.tid = (pid_t)h->tid;
	hit.tgid = (pid_t)h->tgid;
	hit.vcpu = h->vcpu;
	hit.reason = h->reason;
	hit.isa = h->isa;
	hit.exit_ts = h->exit_ts;
	hit.seen_ns = h->seen_ns;
	b->fn(b->ctx, &hit);
	return 0;
}

/* The settings: kvm_exit's fields, the rule. */
static int flight_cfg_fill(const struct tv_flight_bpf_opts *o, struct flight_cfg *fc)
{
	struct top_cfg tc = { 0 };
	int ret = tv_top_bpf_exit_fields(&tc);

	if (ret)
		return ret;
	memset(fc, 0, sizeof(*fc));
	fc->off_reason = tc.off_reason;
	fc->off_isa = tc.off_isa;
	fc->off_vcpu = tc.off_vcpu;
	fc->isa_default = tc.isa_default;
	fc->limit_ns = o->limit_ns;
	fc->tgid = (unsigned int)o->tgid;
	fc->match_reason = (unsigned int)o->match_reason;
	fc->reason_vmx = o->reason_vmx;
	fc->reason_svm = o->reason_svm;
	return 0;
}

/* The walk's clock: a software event on CPU 0 every TICK_NS. */
static int flight_attach_tick(struct tv_flight_bpf *b, struct bpf_program *prog)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = TICK_NS,
	};

	b->perf_fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (b->perf_fd < 0) {
		tv_err("Cannot open the exit watchdog's clock: perf_event_open(cpu-clock, cpu 0), errno=%d (%s)",
		       errno, strerror(errno));
		return -errno;
	}
	b->links[2] = bpf_program__attach_perf_event(prog, b->perf_fd);
	return b->links[2] ? 0 : -errno;
}

static int flight_load(struct tv_flight_bpf *b, const struct flight_cfg *fc)
{
	struct bpf_map *rodata;
	size_t size = 0;
	const char *progs[2] = { "tv_flight_exit", "tv_flight_entry" };
	int err;

	b->obj = bpf_object__open_mem(tv_flight_exits_bpf, tv_flight_exits_bpf_len, NULL);
	if (!b->obj)
		return -errno;
	rodata = bpf_object__find_map_by_name(b->obj, ".rodata");
	if (!rodata || !bpf_map__initial_value(rodata, &size) || size != sizeof(*fc))
		return -EINVAL;
	err = bpf_map__set_initial_value(rodata, fc, sizeof(*fc));
	if (!err)
		err = bpf_object__load(b->obj);
	for (int i = 0; i < 2 && !err; i++) {
		b->links[i] = bpf_program__attach(bpf_object__find_program_by_name(b->obj, progs[i]));
		err = b->links[i] ? 0 : -errno;
	}
	if (!err)
		err = flight_attach_tick(b, bpf_object__find_program_by_name(b->obj, "tv_flight_tick"));
	b->open_fd = bpf_object__find_map_fd_by_name(b->obj, "open");
	if (!err)
		b->rb = ring_buffer__new(bpf_object__find_map_fd_by_name(b->obj, "hits"), flight_ring_hit, b,
					 NULL);
	if (!err && !b->rb)
		err = -errno;
	return err;
}

int tv_flight_bpf_open(const struct tv_flight_bpf_opts *o, tv_flight_hit_fn fn, void *ctx,
		       struct tv_flight_bpf **out)
{
	struct tv_flight_bpf *b = NULL;
	struct flight_cfg fc;
	int ret;

	*out = NULL;
	ret = tv_bpf_load();
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->perf_fd = b->open_fd = -1;
	b->fn = fn;
	b->ctx = ctx;
	ret = flight_cfg_fill(o, &fc);
	if (!ret) {
		ret = flight_load(b, &fc);
		if (ret)
			tv_err("Cannot load the exit-latency watchdog (BPF on kvm:kvm_exit, kvm:kvm_entry and a perf event): errno=%d (%s) (TRACEVISOR_DEBUG=1 shows libbpf's log)",
			       -ret, strerror(-ret));
	}
	if (ret) {
		tv_flight_bpf_close(b);
		return ret;
	}
	*out = b;
	return 0;
}

int tv_flight_bpf_fd(const struct tv_flight_bpf *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

int tv_flight_bpf_consume(struct tv_flight_bpf *b)
{
	return ring_buffer__consume(b->rb);
}

int tv_flight_bpf_closed(struct tv_flight_bpf *b, const struct tv_flight_exit_hit *hit,
			 uint64_t *latency_ns)
{
	unsigned int tid = (unsigned int)hit->tid;
	struct flight_open o;

	if (bpf_map_lookup_elem(b->open_fd, &tid, &o))
		return -ENOENT;
	if (o.done_exit_ts == hit->exit_ts) {
		*latency_ns = o.done_latency_ns;
		return 1;
	}
	return o.ts == hit->exit_ts ? 0 : -ENOENT;
}

void tv_flight_bpf_close(struct tv_flight_bpf *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	for (int i = 0; i < 3; i++)
		bpf_link__destroy(b->links[i]);
	if (b->perf_fd >= 0)
		close(b->perf_fd);
	bpf_object__close(b->obj);
	free(b);
}
