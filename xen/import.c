// SPDX-License-Identifier: LGPL-2.1
/*
 * Import of a file written by Xen's xentrace: a sequence of windows, each a
 * TRC_TRACE_CPU_CHANGE record (header, cpu, window size) followed by that
 * many bytes of the CPU's t_rec stream.  The windows of each CPU are
 * concatenated into xen/cpuN.xen, which is what our own consumer writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_internal.h"
#include "xen_recorder.h"

#define IMPORT_MAX_CPUS 4096

struct import_ctx {
	FILE *in;
	const char *file;
	char dir[4200];
	FILE *out[IMPORT_MAX_CPUS];
	int ncpus;
	unsigned char buf[64 * 1024];
};

static FILE *import_cpu_file(struct import_ctx *c, unsigned int cpu)
{
	char path[4300];

	if (c->out[cpu])
		return c->out[cpu];
	snprintf(path, sizeof(path), "%s/cpu%u.xen", c->dir, cpu);
	c->out[cpu] = tv_file_fcreate(path, "stream file");
	if ((int)cpu >= c->ncpus)
		c->ncpus = (int)cpu + 1;
	return c->out[cpu];
}

static int import_window(struct import_ctx *c, unsigned int cpu, uint32_t size, long at)
{
	FILE *out = import_cpu_file(c, cpu);

	if (!out)
		return -errno;
	while (size) {
		size_t want = size < sizeof(c->buf) ? size : sizeof(c->buf);
		size_t n = fread(c->buf, 1, want, c->in);

		if (n != want) {
			tv_err("Truncated xentrace file: path=\"%s\", offset=%ld (window of cpu %u cut short)",
			       c->file, at, cpu);
			return -EBADMSG;
		}
		if (fwrite(c->buf, 1, n, out) != n) {
			int err = errno;

			tv_err("Cannot write stream file: cpu=%u, errno=%d (%s)", cpu, err, strerror(err));
			return -err;
		}
		size -= (uint32_t)n;
	}
	return 0;
}

static int import_windows(struct import_ctx *c)
{
	uint32_t hdr[3];
	long at = 0;
	int ret = 0;

	for (;;) {
		size_t n = fread(hdr, 1, sizeof(hdr), c->in);

		if (n == 0)
			break;
		if (n != sizeof(hdr) || hdr[0] != XT_CPU_CHANGE_HEADER) {
			tv_err("Not a xentrace file or corrupt: path=\"%s\", offset=%ld, header=0x%08x (expected a CPU change record 0x%08x)",
			       c->file, at, n >= 4 ? hdr[0] : 0, XT_CPU_CHANGE_HEADER);
			return -EBADMSG;
		}
		if (hdr[1] >= IMPORT_MAX_CPUS) {
			tv_err("Corrupt xentrace file: path=\"%s\", offset=%ld, cpu=%u", c->file, at, hdr[1]);
			return -EBADMSG;
		}
		ret = import_window(c, hdr[1], hdr[2], at);
		if (ret)
			return ret;
		at += (long)sizeof(hdr) + hdr[2];
	}
	if (at == 0) {
		tv_err("Empty xentrace file: path=\"%s\"", c->file);
		return -ENODATA;
	}
	return 0;
}

static int import_close_all(struct import_ctx *c)
{
	int ret = 0;

	for (int i = 0; i < c->ncpus; i++)
		if (c->out[i] && fclose(c->out[i]))
			ret = -EIO;
	return ret;
}

int tv_xen_import_xentrace(const char *file, const char *outdir, uint64_t cpu_khz)
{
	struct tv_xen_meta_info info = { 0 };
	struct import_ctx *c = calloc(1, sizeof(*c));
	struct tv_session_writer *w = NULL;
	int ret;

	if (!c || tv_session_writer_new(outdir, 0, &w)) {
		free(c);
		return -ENOMEM;
	}
	c->file = file;
	c->in = fopen(file, "re");
	if (!c->in) {
		ret = -errno;
		tv_err("Cannot open xentrace file: path=\"%s\", errno=%d (%s)", file, errno, strerror(errno));
		tv_session_writer_free(w);
		free(c);
		return ret;
	}
	ret = tv_xen_make_domain_dir(w, true, c->dir, sizeof(c->dir));
	if (!ret)
		ret = import_windows(c);
	if (import_close_all(c) && !ret)
		ret = -EIO;
	fclose(c->in);
	info.ncpus = c->ncpus;
	info.cpu_khz = cpu_khz ? cpu_khz : tv_xen_host_cpu_khz();
	info.khz_source = cpu_khz ? "option" : info.cpu_khz ? "xc_physinfo" : "default";
	if (!info.cpu_khz) {
		info.cpu_khz = 2400000;	/* xenalyze's default when it is not told */
		tv_warn("CPU frequency unknown (not on Xen dom0): assuming %llu kHz; use --cpu-khz",
			(unsigned long long)info.cpu_khz);
	}
	info.clock = "xen-tsc";
	info.source = "xentrace";
	if (!ret)
		ret = tv_xen_write_meta(c->dir, &info);
	if (!ret)
		ret = tv_session_writer_add_domain(w, "xen");
	if (!ret)
		ret = tv_session_writer_commit(w, "xen");
	tv_session_writer_free(w);
	free(c);
	return ret;
}
