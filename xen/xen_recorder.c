// SPDX-License-Identifier: LGPL-2.1
/*
 * The dom0 consumer of Xen's per-CPU trace buffers.  The buffers, event
 * mask, CPU mask and enable flag are global hypervisor state: what we change
 * is put back on every exit path (tv_xen_recorder_stop/destroy).  Xen has no
 * getter for the CPU mask or the enable flag: we restore the CPU mask to all
 * CPUs (Xen's boot default) and leave tracing disabled, which is the state
 * with no consumer running; the event mask is read (TBUFOP_get_info) and
 * restored exactly.
 *
 * A drain thread writes each CPU's window cons..prod into xen/cpuN.xen
 * straight from the mapped buffer (one writev(), two pieces when it wraps;
 * through a copy onto a file system that cannot pin foreign pages, 9p or
 * NFS: tv_write_mapped()),
 * counts its records for the meta as it goes, and then publishes cons, when
 * VIRQ_TBUF fires or every 100 ms, like xentrace.  Per window: no copy and
 * one system call (xentrace: two); per record: the count's ten or so
 * instructions (xen/session.c), which xentrace does not spend (it keeps no
 * counts), and which spare stop from reading every file back.  Where the
 * rest goes (bench/xen-bench, icount lab, 178k records): the writev()
 * into the page cache 23 instructions per record, the same kernel path as
 * xentrace's write(), poll() and the event channel 12, the count 11.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xenctrl.h>
#include <xenevtchn.h>
#include <xenforeignmemory.h>
#include <xentoollog.h>

#include "tracevisor/tracevisor.h"
#include "xen_internal.h"
#include "tv_internal.h"
#include "xen_recorder.h"
#include "xen_flight.h"

#define XEN_PAGE 4096u
#define DRAIN_POLL_MS 100
#define XEN_MAX_WATCHES 16	/* host/flight.c's MAX_RULES */

/* Our sub-op of the patched hypervisor (xen/patches/): per-CPU time scale. */
#define TV_TBUFOP_get_tscale 6

/* Its per-CPU answer, the layout of the patch's struct xen_sysctl_tscale. */
struct tv_xen_time_scale {
	uint64_t tsc;		/* TSC at the last calibration ... */
	uint64_t stime;		/* ... and Xen system time (ns) then */
	uint32_t mul;		/* tsc_to_system_mul */
	int8_t shift;		/* tsc_shift */
	uint8_t pad[3];
};

struct xen_cpu_buf {
	unsigned char *map;	/* t_buf header + data */
	int fd;
	struct tv_bounce bounce;	/* its file system cannot take the mapping: a copy */
	uint64_t bytes;
	struct tv_xen_counter count;	/* records written, for the meta */
};

/*
 * Threads: the drain thread (xen_drain_thread) and the caller's thread.
 *   cpus[i].map          shared with Xen itself: cons/prod are read and
 *                        written as volatile words, with the fences in
 *                        xen_drain_cpu() ordering data against them
 *   cpus[i].fd, .bytes,  the drain thread's from tv_xen_recorder_start()
 *   .count, drain_err    to the pthread_join() in _stop(), which orders
 *                        them before the caller reads them
 *   stop_fd              an eventfd: the caller writes it, the thread polls
 *   drains               written by the thread (release) after each pass,
 *                        read by tv_xen_recorder_flush() (acquire)
 *   the rest             the caller's; set before the thread starts
 * The drain thread logs through tv_log(), whose callback is atomic.
 */
struct tv_xen_recorder {
	struct tv_xen_record_opts opts;
	struct tv_session_writer *session;	/* gives DIR/xen; "xen" listed at stop */
	bool own_session;		/* tv_xen_recorder_create(): committed at stop */
	xentoollog_logger_stdiostream *log;
	xc_interface *xch;
	xenforeignmemory_handle *fmem;
	xenevtchn_handle *xce;
	int virq_port;
	void *tinfo;
	unsigned int tinfo_pages;
	unsigned int pages;		/* per CPU buffer */
	uint32_t data_size;
	int ncpus;
	struct xen_cpu_buf *cpus;
	struct tv_xen_cpu_count *counts;	/* the meta's, from cpus[i].count */
	uint32_t old_mask;
	int changed;			/* global state touched: restore */
	int started;
	pthread_t thread;
	int stop_fd;
	int drain_err;
	uint64_t drains;		/* passes over every CPU, atomic (flush) */
	char dir[4200];
	struct tv_xen_meta_info info;
	/* per CPU: 4 time scale keys (patched Xen) + cpuN.running */
	struct tv_xen_meta_kv scale[5 * 256];
	size_t nr_scale;		/* of them the time scale keys (the first) */
	struct tv_xen_time_scale scale0;	/* pCPU 0's then (mul 0: stock Xen) */
	/*
	 * A flight recorder (opts.flight_bytes, xen/xen_flight.c): the drain
	 * thread feeds rings[cpu] instead of cpuN.xen, and the exit watches
	 * attached (one per exit rule); all under flight_lock, which
	 * snapshots take to copy.
	 */
	struct tv_xen_fring *rings;
	size_t ring_bytes;		/* per CPU */
	struct tv_xen_exit_watch *watch[XEN_MAX_WATCHES];
	int nr_watch;
	pthread_mutex_t flight_lock;
};

uint64_t tv_xen_host_cpu_khz(void)
{
	xentoollog_logger_stdiostream *log = xtl_createlogger_stdiostream(stderr, XTL_CRITICAL, 0);
	xc_interface *xch = xc_interface_open((xentoollog_logger *)log, NULL, 0);
	xc_physinfo_t pi = { 0 };
	uint64_t khz = 0;

	if (xch && !xc_physinfo(xch, &pi))
		khz = pi.cpu_khz;
	if (xch)
		xc_interface_close(xch);
	if (log)
		xtl_logger_destroy((xentoollog_logger *)log);
	return khz;
}

static int tbuf_get_info(struct tv_xen_recorder *rec, uint32_t *mask, uint64_t *mfn,
			 uint32_t *size)
{
	struct xen_sysctl sysctl = { 0 };

	sysctl.cmd = XEN_SYSCTL_tbuf_op;
	sysctl.interface_version = XEN_SYSCTL_INTERFACE_VERSION;
	sysctl.u.tbuf_op.cmd = XEN_SYSCTL_TBUFOP_get_info;
	if (xc_sysctl(rec->xch, &sysctl)) {
		int err = errno;

		tv_err("Cannot read trace buffer state: errno=%d (%s)", err, strerror(err));
		return -err;
	}
	*mask = sysctl.u.tbuf_op.evt_mask;
	*mfn = sysctl.u.tbuf_op.buffer_mfn;
	*size = sysctl.u.tbuf_op.size;
	return 0;
}

static int xen_open_handles(struct tv_xen_recorder *rec)
{
	rec->log = xtl_createlogger_stdiostream(stderr, XTL_CRITICAL, 0);
	rec->xch = xc_interface_open((xentoollog_logger *)rec->log, NULL, 0);
	if (!rec->xch) {
		tv_err("Cannot open Xen control interface: errno=%d (%s) (not running on Xen dom0?)",
		       errno, strerror(errno));
		return -ENODEV;
	}
	rec->fmem = xenforeignmemory_open((xentoollog_logger *)rec->log, 0);
	rec->xce = xenevtchn_open((xentoollog_logger *)rec->log, 0);
	if (!rec->fmem || !rec->xce) {
		tv_err("Cannot open Xen %s: errno=%d (%s) (xen-privcmd, xen-evtchn loaded?)",
		       rec->fmem ? "event channels" : "foreign memory", errno, strerror(errno));
		return -ENODEV;
	}
	return 0;
}

static void *map_pages(struct tv_xen_recorder *rec, const uint32_t *mfns, unsigned int n,
		       int prot)
{
	xen_pfn_t *pfns = calloc(n, sizeof(*pfns));
	int *errs = calloc(n, sizeof(*errs));
	void *p = NULL;

	if (pfns && errs) {
		for (unsigned int i = 0; i < n; i++)
			pfns[i] = mfns[i];
		p = xenforeignmemory_map(rec->fmem, DOMID_XEN, prot, n, pfns, errs);
	}
	free(pfns);
	free(errs);
	return p;
}

/* Map t_info and every CPU's buffer; a CPU without a buffer has offset 0. */
static int xen_map_buffers(struct tv_xen_recorder *rec, uint64_t tinfo_mfn, uint32_t tinfo_size)
{
	const uint16_t *tinfo;
	uint32_t first = (uint32_t)tinfo_mfn;

	rec->tinfo_pages = (tinfo_size + XEN_PAGE - 1) / XEN_PAGE;
	{
		uint32_t mfns[rec->tinfo_pages];

		for (unsigned int i = 0; i < rec->tinfo_pages; i++)
			mfns[i] = first + i;
		rec->tinfo = map_pages(rec, mfns, rec->tinfo_pages, PROT_READ);
	}
	if (!rec->tinfo) {
		int err = errno;

		tv_err("Cannot map trace buffer info: mfn=0x%llx, errno=%d (%s)",
		       (unsigned long long)tinfo_mfn, err, strerror(err));
		return -err;
	}
	tinfo = rec->tinfo;
	rec->pages = tinfo[0];
	if (!rec->pages) {
		tv_err("Trace buffers have no pages (t_info tbuf_size 0)");
		return -EINVAL;
	}
	rec->data_size = rec->pages * XEN_PAGE - 8;	/* minus struct t_buf */
	for (int cpu = 0; cpu < rec->ncpus; cpu++) {
		const uint32_t *mfns;
		int n = tv_xen_tinfo_cpu(rec->tinfo, rec->tinfo_pages * XEN_PAGE, cpu, &mfns);

		if (n < 0) {
			tv_err("Corrupt trace buffer info: cpu=%d", cpu);
			return n;
		}
		if (n == 0)
			continue;	/* no buffer for this CPU (offline at allocation) */
		rec->cpus[cpu].map = map_pages(rec, mfns, rec->pages, PROT_READ | PROT_WRITE);
		if (!rec->cpus[cpu].map) {
			int err = errno;

			tv_err("Cannot map trace buffer: cpu=%d, errno=%d (%s)", cpu, err, strerror(err));
			return -err;
		}
	}
	return 0;
}

static volatile uint32_t *buf_cons(struct xen_cpu_buf *b)
{
	return (volatile uint32_t *)b->map;
}

static volatile uint32_t *buf_prod(struct xen_cpu_buf *b)
{
	return (volatile uint32_t *)b->map + 1;
}

/* A flight recorder's window: into the CPU's ring and the exit watch, not to disk. */
static void xen_flight_feed(struct tv_xen_recorder *rec, int cpu, const struct tv_xen_piece *piece, int n)
{
	pthread_mutex_lock(&rec->flight_lock);
	for (int i = 0; i < n; i++) {
		tv_xen_fring_feed(&rec->rings[cpu], piece[i].data, piece[i].len);
		for (int w = 0; w < rec->nr_watch; w++)
			tv_xen_exit_watch_feed(rec->watch[w], cpu, piece[i].data, piece[i].len);
		rec->cpus[cpu].bytes += piece[i].len;
	}
	pthread_mutex_unlock(&rec->flight_lock);
}

/*
 * Write one CPU's window from the mapping itself (as xentrace does: Xen does
 * not touch cons..prod until we publish cons), then publish the new cons.
 */
static int xen_drain_cpu(struct tv_xen_recorder *rec, int cpu)
{
	struct xen_cpu_buf *b = &rec->cpus[cpu];
	struct tv_xen_piece piece[2];
	struct iovec iov[2];
	uint32_t cons, prod, new_cons;
	ssize_t len = 0;
	int n, ret;

	if (!b->map)
		return 0;
	cons = *buf_cons(b);
	prod = *buf_prod(b);
	/* The load of prod before our reads of the records it covers. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	n = tv_xen_ring_window(cons, prod, b->map + 8, rec->data_size, piece, &new_cons);
	if (n < 0) {
		tv_err("Corrupt trace buffer: cpu=%d, cons=%u, prod=%u", cpu, cons, prod);
		return n;
	}
	if (!n)
		return 0;
	if (rec->rings) {
		xen_flight_feed(rec, cpu, piece, n);
		goto publish;
	}
	for (int i = 0; i < n; i++) {
		iov[i].iov_base = (void *)piece[i].data;
		iov[i].iov_len = piece[i].len;
		len += piece[i].len;
	}
	ret = tv_write_mapped(b->fd, iov, n, &b->bounce);
	if (ret) {
		tv_err("Cannot write stream file: cpu=%d, errno=%d (%s)", cpu, -ret, strerror(-ret));
		return -EIO;
	}
	for (int i = 0; i < n; i++)
		tv_xen_count_feed(&b->count, piece[i].data, piece[i].len);
	b->bytes += (uint64_t)len;
publish:
	/* Our reads of the window (writev's and the count's) happen before the
	 * store of cons that lets Xen overwrite it (a full fence, as xentrace's
	 * mb()). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*buf_cons(b) = new_cons;
	return 0;
}

static int xen_drain_all(struct tv_xen_recorder *rec)
{
	int ret = 0;

	for (int cpu = 0; cpu < rec->ncpus && !ret; cpu++)
		ret = xen_drain_cpu(rec, cpu);
	return ret;
}

static void *xen_drain_thread(void *arg)
{
	struct tv_xen_recorder *rec = arg;
	struct pollfd pfd[2] = {
		{ .fd = xenevtchn_fd(rec->xce), .events = POLLIN },
		{ .fd = rec->stop_fd, .events = POLLIN },
	};

	while (!rec->drain_err) {
		int n = poll(pfd, 2, DRAIN_POLL_MS);

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			int port = xenevtchn_pending(rec->xce);

			if (port >= 0)
				xenevtchn_unmask(rec->xce, (evtchn_port_t)port);
		}
		rec->drain_err = xen_drain_all(rec);
		if (rec->rings) {
			pthread_mutex_lock(&rec->flight_lock);
			for (int w = 0; w < rec->nr_watch; w++)
				tv_xen_exit_watch_pass(rec->watch[w]);
			pthread_mutex_unlock(&rec->flight_lock);
		}
		/* the pass's writes (and drain_err) before the count a flush waits on */
		__atomic_add_fetch(&rec->drains, 1, __ATOMIC_RELEASE);
		if (n > 0 && (pfd[1].revents & POLLIN))
			break;
	}
	return NULL;
}

/* Discard records of earlier sessions left in already allocated buffers. */
static void xen_discard_stale(struct tv_xen_recorder *rec)
{
	for (int cpu = 0; cpu < rec->ncpus; cpu++)
		if (rec->cpus[cpu].map)
			*buf_cons(&rec->cpus[cpu]) = *buf_prod(&rec->cpus[cpu]);
}

static int xen_set_cpu_mask(struct tv_xen_recorder *rec, const char *list)
{
	xc_cpumap_t map = xc_cpumap_alloc(rec->xch);
	int ret = 0;

	if (!map)
		return -ENOMEM;
	for (int cpu = 0; cpu < rec->ncpus; cpu++)
		if (!list || tv_xen_cpu_in_list(list, cpu))
			map[cpu / 8] |= (uint8_t)(1u << (cpu % 8));
	if (xc_tbuf_set_cpu_mask(rec->xch, map)) {
		ret = -errno;
		tv_err("Cannot set trace CPU mask: errno=%d (%s)", -ret, strerror(-ret));
	}
	free(map);
	return ret;
}

/*
 * The patched hypervisor (xen/patches/) answers XEN_SYSCTL_TBUFOP_get_tscale:
 * per CPU, the TSC → Xen system time scale (struct tv_xen_time_scale) in the
 * buffer passed as cpu_mask.bitmap, nr_bits its size in bits.  Stock Xen
 * says -EINVAL: TSC / cpu_khz is what we have then.
 */
static void xen_read_time_scale(struct tv_xen_recorder *rec)
{
	size_t bytes = (size_t)rec->ncpus * sizeof(struct tv_xen_time_scale), k = 0;
	struct xen_sysctl sysctl = { 0 };
	struct tv_xen_time_scale *ts;
	DECLARE_HYPERCALL_BUFFER(uint8_t, buf);

	rec->info.clock = "xen-tsc";
	snprintf(rec->info.missing, sizeof(rec->info.missing),
		 "tscale (stock Xen: times are TSC / cpu_khz, not Xen system time)");
	buf = xc_hypercall_buffer_alloc(rec->xch, buf, bytes);
	if (!buf)
		return;
	memset(buf, 0, bytes);
	sysctl.cmd = XEN_SYSCTL_tbuf_op;
	sysctl.interface_version = XEN_SYSCTL_INTERFACE_VERSION;
	sysctl.u.tbuf_op.cmd = TV_TBUFOP_get_tscale;
	sysctl.u.tbuf_op.cpu_mask.nr_bits = (uint32_t)(bytes * 8);
	set_xen_guest_handle(sysctl.u.tbuf_op.cpu_mask.bitmap, buf);
	if (xc_sysctl(rec->xch, &sysctl) == 0) {
		for (int cpu = 0; cpu < rec->ncpus && cpu < 256; cpu++) {
			ts = (struct tv_xen_time_scale *)buf + cpu;
			if (cpu == 0)
				rec->scale0 = *ts;
			snprintf(rec->scale[k].key, 48, "cpu%d.tsc_to_system_mul", cpu);
			snprintf(rec->scale[k++].value, 48, "%u", ts->mul);
			snprintf(rec->scale[k].key, 48, "cpu%d.tsc_shift", cpu);
			snprintf(rec->scale[k++].value, 48, "%d", ts->shift);
			snprintf(rec->scale[k].key, 48, "cpu%d.tsc_timestamp", cpu);
			snprintf(rec->scale[k++].value, 48, "%llu", (unsigned long long)ts->tsc);
			snprintf(rec->scale[k].key, 48, "cpu%d.system_time", cpu);
			snprintf(rec->scale[k++].value, 48, "%llu", (unsigned long long)ts->stime);
		}
		rec->info.clock = "xen-system";
		rec->info.missing[0] = '\0';
		rec->info.extra = rec->scale;
		rec->info.nr_extra = k;
		rec->nr_scale = k;
	}
	xc_hypercall_buffer_free(rec->xch, buf);
}

/*
 * Which vCPU each physical CPU runs as tracing starts (xc_vcpu_getinfo of
 * every vCPU of every domain): the reader's start state for a CPU whose
 * records show no scheduler record to learn it from (lib/reader/xen_stream.c).
 * Taken just after tracing is enabled, so a switch in between is in the
 * records.  A CPU no vCPU runs on runs its idle vCPU (idle vCPU N is on CPU
 * N).  Best effort: a domain that goes away meanwhile is skipped.
 */
#define XEN_SNAPSHOT_BATCH 64	/* domains per hypercall (a bounce buffer each) */
static void xen_snapshot_running(struct tv_xen_recorder *rec)
{
	xc_domaininfo_t *doms = calloc(XEN_SNAPSHOT_BATCH, sizeof(*doms));
	size_t k = rec->info.nr_extra;
	int n, ncpus = rec->ncpus < 256 ? rec->ncpus : 256;
	int *running = calloc((size_t)ncpus, sizeof(*running));
	uint32_t first = 0;

	if (!doms || !running)
		goto out;
	for (int cpu = 0; cpu < ncpus; cpu++)
		running[cpu] = -1;
	/* A few domains in one small batch: a large bounce buffer costs more
	 * than the call in a PV dom0. */
	do {
		n = xc_domain_getinfolist(rec->xch, first, XEN_SNAPSHOT_BATCH, doms);
		for (int i = 0; i < n; i++) {
			for (unsigned int v = 0; v <= doms[i].max_vcpu_id; v++) {
				xc_vcpuinfo_t vi;

				if (xc_vcpu_getinfo(rec->xch, doms[i].domain, v, &vi) || !vi.running ||
				    vi.cpu >= (uint32_t)ncpus)
					continue;
				running[vi.cpu] = (int)((doms[i].domain & 0xffff) << 16 | (v & 0xffff));
			}
			first = doms[i].domain + 1;
		}
	} while (n == XEN_SNAPSHOT_BATCH && first < DOMID_FIRST_RESERVED);
	if (n < 0) {
		tv_warn("Cannot list domains for the running vCPUs: errno=%d (%s)", errno, strerror(errno));
		goto out;
	}
	for (int cpu = 0; cpu < ncpus && k < sizeof(rec->scale) / sizeof(rec->scale[0]); cpu++) {
		snprintf(rec->scale[k].key, 48, "cpu%d.running", cpu);
		if (running[cpu] < 0)
			snprintf(rec->scale[k++].value, 48, "%u.%d", XT_DOMID_IDLE, cpu);
		else
			snprintf(rec->scale[k++].value, 48, "%u.%u", (unsigned int)running[cpu] >> 16,
				 (unsigned int)running[cpu] & 0xffff);
	}
	rec->info.extra = rec->scale;
	rec->info.nr_extra = k;
out:
	free(doms);
	free(running);
}

static int xen_open_files(struct tv_xen_recorder *rec)
{
	char path[4300];

	for (int cpu = 0; cpu < rec->ncpus; cpu++) {
		rec->cpus[cpu].fd = -1;
		if (!rec->cpus[cpu].map || rec->rings)
			continue;
		snprintf(path, sizeof(path), "%s/cpu%d.xen", rec->dir, cpu);
		rec->cpus[cpu].fd = tv_file_create(path, 0, "stream file");
		if (rec->cpus[cpu].fd < 0)
			return rec->cpus[cpu].fd;
	}
	return 0;
}

/* The CPU vendor decides whether exit reasons are VMX or SVM codes. */
static const char *host_hvm_isa(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];
	const char *isa = NULL;

	while (f && !isa && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "vendor_id", 9))
			continue;
		isa = strstr(line, "GenuineIntel") ? "vmx" : strstr(line, "AuthenticAMD") ? "svm" : "";
	}
	if (f)
		fclose(f);
	return isa && *isa ? isa : NULL;
}

static int xen_physinfo(struct tv_xen_recorder *rec)
{
	xc_physinfo_t pi = { 0 };
	int v;

	if (xc_physinfo(rec->xch, &pi)) {
		int err = errno;

		tv_err("Cannot read Xen physical info: errno=%d (%s)", err, strerror(err));
		return -err;
	}
	rec->ncpus = (int)pi.max_cpu_id + 1;
	rec->info.ncpus = rec->ncpus;
	rec->info.cpu_khz = pi.cpu_khz;
	rec->info.khz_source = "xc_physinfo";
	rec->info.hvm_isa = host_hvm_isa();
	v = xc_version(rec->xch, XENVER_version, NULL);
	snprintf(rec->info.xen_version, sizeof(rec->info.xen_version), "%d.%d", v >> 16, v & 0xffff);
	rec->cpus = calloc((size_t)rec->ncpus, sizeof(*rec->cpus));
	rec->counts = calloc((size_t)rec->ncpus, sizeof(*rec->counts));
	return rec->cpus && rec->counts ? 0 : -ENOMEM;
}

/* --flight-recorder SIZE: SIZE over the CPUs that have a buffer, a ring each. */
static int xen_flight_rings(struct tv_xen_recorder *rec)
{
	int n = 0, ret = 0;

	for (int cpu = 0; cpu < rec->ncpus; cpu++)
		n += rec->cpus[cpu].map != NULL;
	rec->ring_bytes = n ? (size_t)(rec->opts.flight_bytes / (uint64_t)n) & ~(size_t)3 : 0;
	if (rec->ring_bytes < TV_XEN_FRING_MIN_BYTES || rec->ring_bytes > TV_XEN_FRING_MAX_BYTES) {
		tv_err("Invalid flight recorder size for Xen: bytes=%llu over %d pCPUs gives %zu bytes per CPU (%u..%llu)",
		       (unsigned long long)rec->opts.flight_bytes, n, rec->ring_bytes,
		       TV_XEN_FRING_MIN_BYTES, (unsigned long long)TV_XEN_FRING_MAX_BYTES);
		return -EINVAL;
	}
	rec->rings = calloc((size_t)rec->ncpus, sizeof(*rec->rings));
	if (!rec->rings)
		return -ENOMEM;
	for (int cpu = 0; cpu < rec->ncpus && !ret; cpu++)
		if (rec->cpus[cpu].map)
			ret = tv_xen_fring_init(&rec->rings[cpu], rec->ring_bytes);
	rec->info.flight_bytes = rec->opts.flight_bytes;
	rec->info.flight_ring_bytes = rec->ring_bytes;
	return ret;
}

static int xen_setup(struct tv_xen_recorder *rec)
{
	uint64_t mfn;
	uint32_t size;
	int ret;

	ret = xen_physinfo(rec);
	if (!ret)
		ret = tbuf_get_info(rec, &rec->old_mask, &mfn, &size);
	if (ret)
		return ret;
	if (size == 0) {
		/* Not allocated yet: allocate ours (the size is fixed until reboot). */
		if (xc_tbuf_set_size(rec->xch, rec->opts.pages)) {
			int err = errno;

			tv_err("Cannot allocate trace buffers: pages=%u, errno=%d (%s)", rec->opts.pages, err, strerror(err));
			return -err;
		}
		ret = tbuf_get_info(rec, &rec->old_mask, &mfn, &size);
		if (ret)
			return ret;
	}
	ret = xen_map_buffers(rec, mfn, size);
	if (!ret && rec->opts.flight_bytes)
		ret = xen_flight_rings(rec);
	if (ret)
		return ret;
	rec->virq_port = xenevtchn_bind_virq(rec->xce, VIRQ_TBUF);
	if (rec->virq_port < 0) {
		int err = errno;

		tv_err("Cannot bind VIRQ_TBUF: errno=%d (%s) (another trace consumer running?)", err, strerror(err));
		return -err;
	}
	return xen_open_files(rec);
}

int tv_xen_recorder_create(const struct tv_xen_record_opts *opts, struct tv_xen_recorder **out)
{
	return tv_xen_recorder_create_in(NULL, opts, out);
}

/* The options with their defaults, before any step can fail. */
static struct tv_xen_recorder *xen_recorder_alloc(const struct tv_xen_record_opts *opts)
{
	struct tv_xen_recorder *rec = calloc(1, sizeof(*rec));

	if (!rec)
		return NULL;
	rec->opts = *opts;
	rec->stop_fd = -1;
	if (!rec->opts.pages)
		rec->opts.pages = TV_XEN_DEFAULT_PAGES;
	if (!rec->opts.evt_mask)
		rec->opts.evt_mask = TV_XEN_DEFAULT_MASK;
	/*
	 * Xen filters its own TRC_GEN records by the mask too, the patched
	 * hypervisor's per-CPU time scale (TRC_TRACE_TSCALE, about one per
	 * CPU a second) among them: without them the reader extrapolates each
	 * CPU's first scale, milliseconds off after seconds under TCG
	 * (doc/sync-probes.md, "Xen domUs in the lab").
	 */
	rec->opts.evt_mask |= TV_XEN_GEN_CLASS;
	pthread_mutex_init(&rec->flight_lock, NULL);
	rec->info.source = "tracevisor";
	/* 174 format files were 40% of the fixed cost (lib/xen/xen_decode.c) */
	rec->info.builtin_formats = true;
	rec->info.evt_mask = rec->opts.evt_mask;
	return rec;
}

int tv_xen_recorder_create_in(struct tv_session_writer *w, const struct tv_xen_record_opts *opts,
			      struct tv_xen_recorder **out)
{
	struct tv_xen_recorder *rec = xen_recorder_alloc(opts);
	int ret = -ENOMEM;

	*out = NULL;
	if (!rec)
		goto out;
	ret = tv_session_writer_use(w, opts->outdir, &rec->session, &rec->own_session);
	if (!ret)
		ret = xen_open_handles(rec);
	if (!ret)
		ret = tv_xen_make_domain_dir(rec->session, false, rec->dir, sizeof(rec->dir));
	if (!ret)
		ret = xen_setup(rec);
	/* the session goes only if it was made for xen/ (a Xen-only one) */
	if (ret && rec->session)
		tv_session_writer_discard(rec->session, "xen");
out:
	if (ret) {
		tv_xen_recorder_destroy(rec);
		return ret;
	}
	rec->info.tbuf_pages = rec->pages;
	*out = rec;
	return 0;
}

/*
 * The exit watches' times on the xen domain's clock (xen-system: pCPU 0's
 * scale); known once tracing is on (tv_xen_recorder_start), and a watch may
 * be added before or after.
 */
static void xen_watch_set_scale(const struct tv_xen_recorder *rec, struct tv_xen_exit_watch *w)
{
	if (rec->info.clock && !strcmp(rec->info.clock, "xen-system"))
		tv_xen_exit_watch_set_scale(w, rec->scale0.tsc, rec->scale0.stime, rec->scale0.mul,
					    rec->scale0.shift);
}

static void xen_watches_set_scale(struct tv_xen_recorder *rec)
{
	pthread_mutex_lock(&rec->flight_lock);
	for (int i = 0; i < rec->nr_watch; i++)
		xen_watch_set_scale(rec, rec->watch[i]);
	pthread_mutex_unlock(&rec->flight_lock);
}

int tv_xen_recorder_start(struct tv_xen_recorder *rec)
{
	int ret;

	rec->changed = 1;
	ret = xen_set_cpu_mask(rec, rec->opts.cpus);
	if (!ret && xc_tbuf_set_evt_mask(rec->xch, rec->opts.evt_mask)) {
		ret = -errno;
		tv_err("Cannot set trace event mask: mask=0x%08x, errno=%d (%s)", rec->opts.evt_mask, -ret, strerror(-ret));
	}
	/*
	 * Xen enables tracing with its current mask as soon as it allocates the
	 * buffers (tracing may also be on already): drop what came before ours.
	 */
	xen_discard_stale(rec);
	if (!ret) {
		unsigned long mfn, size;

		if (xc_tbuf_enable(rec->xch, rec->pages, &mfn, &size)) {
			ret = -errno;
			tv_err("Cannot enable trace buffers: errno=%d (%s)", -ret, strerror(-ret));
		}
	}
	/*
	 * The scales in force once tracing is on: Xen traces each later
	 * recalibration (TRC_TRACE_TSCALE), but not one between here and
	 * create, which under TCG may be a second before (the host recorder
	 * starts in between); a scale read then was 1 s stale and off by
	 * 10-20 ms on a pCPU whose time Xen had warped forward meanwhile
	 * (lab free run of 2026-11-26, doc/sync-probes.md).
	 */
	if (!ret) {
		xen_read_time_scale(rec);
		xen_watches_set_scale(rec);
	}
	if (!ret)
		xen_snapshot_running(rec);
	rec->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (!ret && rec->stop_fd < 0)
		ret = -errno;
	/* a flight recorder's sizes, for the user before any snapshot */
	if (!ret && rec->rings)
		ret = tv_xen_write_meta(rec->dir, &rec->info);
	if (!ret && pthread_create(&rec->thread, NULL, xen_drain_thread, rec))
		ret = -EAGAIN;
	rec->started = !ret;
	return ret;
}

static int xen_flight_stop(struct tv_xen_recorder *rec);

/* Put back what we changed: no consumer → disabled; the mask read at start. */
static void xen_restore(struct tv_xen_recorder *rec)
{
	xc_cpumap_t map;

	if (!rec->changed)
		return;
	rec->changed = 0;
	if (xc_tbuf_disable(rec->xch))
		tv_warn("Cannot disable trace buffers: errno=%d (%s)", errno, strerror(errno));
	if (xc_tbuf_set_evt_mask(rec->xch, rec->old_mask))
		tv_warn("Cannot restore trace event mask: mask=0x%08x, errno=%d (%s)", rec->old_mask, errno, strerror(errno));
	map = xc_cpumap_alloc(rec->xch);
	if (map) {
		memset(map, 0xff, (size_t)xc_get_cpumap_size(rec->xch));
		if (xc_tbuf_set_cpu_mask(rec->xch, map))
			tv_warn("Cannot restore trace CPU mask: errno=%d (%s)", errno, strerror(errno));
		free(map);
	}
}

/* Read the event mask back, so the session shows it was restored. */
static void xen_check_restored(struct tv_xen_recorder *rec)
{
	uint64_t mfn;
	uint32_t size, mask;

	if (tbuf_get_info(rec, &mask, &mfn, &size))
		return;
	rec->info.have_mask_state = true;
	rec->info.mask_before = rec->old_mask;
	rec->info.mask_after = mask;
	if (mask != rec->old_mask)
		tv_warn("Trace event mask not restored: before=0x%08x, now=0x%08x", rec->old_mask, mask);
}

int tv_xen_recorder_stop(struct tv_xen_recorder *rec)
{
	uint64_t one = 1;
	int ret;

	if (!rec->started)
		return -EINVAL;
	rec->started = 0;
	/* Disable first: after it returns no more records are written. */
	if (xc_tbuf_disable(rec->xch))
		tv_warn("Cannot disable trace buffers: errno=%d (%s)", errno, strerror(errno));
	if (write(rec->stop_fd, &one, sizeof(one)) != sizeof(one))
		tv_warn("Cannot signal drain thread: errno=%d (%s)", errno, strerror(errno));
	pthread_join(rec->thread, NULL);
	ret = rec->drain_err ? rec->drain_err : xen_drain_all(rec);
	xen_restore(rec);
	xen_check_restored(rec);
	/* a flight recorder's last records: the session itself (Ctrl-C) */
	if (rec->rings)
		return ret ? ret : xen_flight_stop(rec);
	for (int cpu = 0; cpu < rec->ncpus; cpu++) {
		if (rec->cpus[cpu].fd >= 0 && close(rec->cpus[cpu].fd) && !ret)
			ret = -EIO;
		rec->cpus[cpu].fd = -1;
		tv_bounce_free(&rec->cpus[cpu].bounce);
		rec->counts[cpu] = rec->cpus[cpu].count.cnt;
	}
	/* counted as written: the meta need not read the files back */
	rec->info.counts = rec->counts;
	if (!ret)
		ret = tv_xen_write_meta(rec->dir, &rec->info);
	/* listed after the guests and processes that ended before it */
	if (!ret)
		ret = tv_session_writer_add_domain(rec->session, "xen");
	if (!ret && rec->own_session)
		ret = tv_session_writer_commit(rec->session, "xen");
	return ret;
}

/*
 * The rings as they are now into @dir (cpuN.xen, meta): a snapshot's or,
 * at the stop, the session's.  The start's cpuN.running keys are left out:
 * the rings start later, with the scheduler records of their own.
 */
static int xen_flight_dump(struct tv_xen_recorder *rec, const char *dir)
{
	struct tv_xen_cpu_count *counts = calloc((size_t)rec->ncpus, sizeof(*counts));
	unsigned char *buf = malloc(rec->ring_bytes);
	struct tv_xen_meta_info info = rec->info;
	char path[4300];
	int ret = counts && buf ? 0 : -ENOMEM;

	for (int cpu = 0; cpu < rec->ncpus && !ret; cpu++) {
		struct tv_xen_counter c = { 0 };
		size_t len;
		int fd;

		if (!rec->rings[cpu].buf)
			continue;
		pthread_mutex_lock(&rec->flight_lock);
		len = tv_xen_fring_copy(&rec->rings[cpu], buf);
		info.flight_dropped += rec->rings[cpu].dropped;
		pthread_mutex_unlock(&rec->flight_lock);
		snprintf(path, sizeof(path), "%s/cpu%d.xen", dir, cpu);
		fd = tv_file_create(path, 0, "stream file");
		if (fd < 0) {
			ret = fd;
			break;
		}
		ret = tv_write_all(fd, buf, len);
		if (close(fd) && !ret)
			ret = -EIO;
		if (ret)
			tv_err("Cannot write stream file: path=\"%s\", errno=%d (%s)", path, -ret, strerror(-ret));
		tv_xen_count_feed(&c, buf, len);
		counts[cpu] = c.cnt;
	}
	info.counts = counts;
	info.nr_extra = rec->nr_scale;
	if (!ret)
		ret = tv_xen_write_meta(dir, &info);
	free(counts);
	free(buf);
	return ret;
}

/* A flight recorder's stop: the rings are the session's xen/. */
static int xen_flight_stop(struct tv_xen_recorder *rec)
{
	int ret = xen_flight_dump(rec, rec->dir);

	if (!ret)
		ret = tv_session_writer_add_domain(rec->session, "xen");
	if (!ret && rec->own_session)
		ret = tv_session_writer_commit(rec->session, "xen");
	return ret;
}

int tv_xen_recorder_flight_write(struct tv_xen_recorder *rec, struct tv_session_writer *w)
{
	char dir[4200];
	int ret;

	if (!rec->rings)
		return -EINVAL;
	/* every record Xen wrote until now into the rings first */
	ret = rec->started ? tv_xen_recorder_flush(rec, 2000) : 0;
	if (!ret)
		ret = tv_xen_make_domain_dir(w, false, dir, sizeof(dir));
	if (!ret)
		ret = xen_flight_dump(rec, dir);
	return ret ? ret : tv_session_writer_add_domain(w, "xen");
}

int tv_xen_recorder_flight_bytes(const struct tv_xen_recorder *rec, size_t *per_cpu, int *ncpus)
{
	int n = 0;

	for (int cpu = 0; rec->rings && cpu < rec->ncpus; cpu++)
		n += rec->rings[cpu].buf != NULL;
	*per_cpu = rec->ring_bytes;
	*ncpus = n;
	return rec->rings ? 0 : -EINVAL;
}

int tv_xen_recorder_watch_exits(struct tv_xen_recorder *rec, const struct tv_xen_exit_rule *rule,
				struct tv_xen_exit_watch **out)
{
	struct tv_xen_exit_rule r = *rule;
	int ret;

	*out = NULL;
	if (!rec->rings)
		return -EINVAL;
	if (!r.match_reason)
		r.hlt = tv_xen_recorder_hlt_code(rec);
	ret = tv_xen_exit_watch_new(&r, rec->ncpus, rec->info.cpu_khz, out);
	if (ret)
		return ret;
	xen_watch_set_scale(rec, *out);
	pthread_mutex_lock(&rec->flight_lock);
	if (rec->nr_watch == XEN_MAX_WATCHES) {
		ret = -EBUSY;
		tv_xen_exit_watch_free(*out);
		*out = NULL;
	} else {
		rec->watch[rec->nr_watch++] = *out;
	}
	pthread_mutex_unlock(&rec->flight_lock);
	return ret;
}

void tv_xen_recorder_unwatch_exits(struct tv_xen_recorder *rec, struct tv_xen_exit_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&rec->flight_lock);
	for (int i = 0; i < rec->nr_watch; i++)
		if (rec->watch[i] == w)
			rec->watch[i--] = rec->watch[--rec->nr_watch];
	pthread_mutex_unlock(&rec->flight_lock);
	tv_xen_exit_watch_free(w);
}

int tv_xen_recorder_isa(const struct tv_xen_recorder *rec)
{
	const char *isa = rec->info.hvm_isa;

	return !isa ? 0 : !strcmp(isa, "vmx") ? TV_KVM_ISA_VMX : TV_KVM_ISA_SVM;
}

uint32_t tv_xen_recorder_hlt_code(const struct tv_xen_recorder *rec)
{
	int isa = tv_xen_recorder_isa(rec);

	for (uint32_t code = 0; isa && code < 0x500; code++) {
		const char *name = tv_kvm_exit_reason_name((enum tv_kvm_isa)isa, code);

		if (name && !strcasecmp(name, "hlt"))
			return code;
	}
	return ~0u;
}

int tv_xen_recorder_checkpoint(struct tv_xen_recorder *rec)
{
	if (!rec->started)
		return -EINVAL;
	/* info.counts is set at stop only (the drain thread owns the counts
	 * until the join): a checkpoint counts the files as they are */
	return tv_xen_write_meta(rec->dir, &rec->info);
}

int tv_xen_recorder_flush(struct tv_xen_recorder *rec, int timeout_ms)
{
	/* two passes: the one under way may have started before the call */
	uint64_t want = __atomic_load_n(&rec->drains, __ATOMIC_ACQUIRE) + 2;

	if (!rec->started)
		return -EINVAL;
	for (int waited = 0; __atomic_load_n(&rec->drains, __ATOMIC_ACQUIRE) < want; waited++) {
		if (__atomic_load_n(&rec->drain_err, __ATOMIC_RELAXED))
			break;
		if (waited >= timeout_ms) {
			tv_err("Xen's trace buffers were not drained in %d ms", timeout_ms);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	return __atomic_load_n(&rec->drain_err, __ATOMIC_ACQUIRE);
}

int tv_xen_recorder_nr_cpus(const struct tv_xen_recorder *rec)
{
	return rec->ncpus;
}

uint64_t tv_xen_recorder_bytes(const struct tv_xen_recorder *rec)
{
	uint64_t total = 0;

	for (int cpu = 0; cpu < rec->ncpus; cpu++)
		total += rec->cpus[cpu].bytes;
	return total;
}

void tv_xen_recorder_destroy(struct tv_xen_recorder *rec)
{
	if (!rec)
		return;
	if (rec->started)
		tv_xen_recorder_stop(rec);
	xen_restore(rec);
	for (int cpu = 0; rec->cpus && cpu < rec->ncpus; cpu++) {
		if (rec->cpus[cpu].map)
			xenforeignmemory_unmap(rec->fmem, rec->cpus[cpu].map, rec->pages);
		if (rec->cpus[cpu].fd > 0)
			close(rec->cpus[cpu].fd);
		tv_bounce_free(&rec->cpus[cpu].bounce);
	}
	if (rec->tinfo)
		xenforeignmemory_unmap(rec->fmem, rec->tinfo, rec->tinfo_pages);
	if (rec->xce && rec->virq_port > 0)
		xenevtchn_unbind(rec->xce, (evtchn_port_t)rec->virq_port);
	if (rec->xce)
		xenevtchn_close(rec->xce);
	if (rec->fmem)
		xenforeignmemory_close(rec->fmem);
	if (rec->xch)
		xc_interface_close(rec->xch);
	if (rec->log)
		xtl_logger_destroy((xentoollog_logger *)rec->log);
	if (rec->stop_fd >= 0)
		close(rec->stop_fd);
	for (int cpu = 0; rec->rings && cpu < rec->ncpus; cpu++)
		tv_xen_fring_free(&rec->rings[cpu]);
	free(rec->rings);
	pthread_mutex_destroy(&rec->flight_lock);
	free(rec->cpus);
	free(rec->counts);
	if (rec->own_session)
		tv_session_writer_free(rec->session);
	free(rec);
}
