// SPDX-License-Identifier: LGPL-2.1
/*
 * Compressed stream files: DIR/D/cpuN.raw.zst is cpuN.raw as one zstd frame
 * that carries its content size (plain `zstd -d` gives the file back).
 * Recording writes raw files (splice, no copy); `tracevisor compress` or
 * `record --compress` turns them into .zst afterwards, and the reader
 * decompresses them in order, a sub-buffer at a time.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "tracevisor/tracevisor.h"
#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "format_io.h"

#define ZSTREAM_IN_SIZE (128 * 1024)
#define COMPRESS_LEVEL 3
#define COMPRESS_WINDOW_LOG 20
/* ZSTD_FRAMEHEADERSIZE_MAX, which zstd.h gives only to static linking. */
#define FRAME_HEADER_MAX 18

/*
 * libzstd loaded with dlopen() by the first compressed read or compress:
 * linked, every command loaded it, `record --xen` in a PV dom0 among them
 * (bench/xen-bench, startup row).  Below the loader each name is the
 * pointer it filled.
 */
#define ZSTD_DL_FUNCS(X)                                                                        \
	X(size_t, ZSTD_CCtx_setParameter, (ZSTD_CCtx *, ZSTD_cParameter, int))                 \
	X(size_t, ZSTD_CCtx_setPledgedSrcSize, (ZSTD_CCtx *, unsigned long long))             \
	X(size_t, ZSTD_CStreamInSize, (void))                                                  \
	X(size_t, ZSTD_CStreamOutSize, (void))                                                 \
	X(size_t, ZSTD_compressStream2, (ZSTD_CCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *, ZSTD_EndDirective)) \
	X(ZSTD_CCtx *, ZSTD_createCCtx, (void))                                                \
	X(ZSTD_DStream *, ZSTD_createDStream, (void))                                          \
	X(size_t, ZSTD_decompressStream, (ZSTD_DStream *, ZSTD_outBuffer *, ZSTD_inBuffer *))  \
	X(size_t, ZSTD_freeCCtx, (ZSTD_CCtx *))                                                \
	X(size_t, ZSTD_freeDStream, (ZSTD_DStream *))                                          \
	X(const char *, ZSTD_getErrorName, (size_t))                                           \
	X(unsigned long long, ZSTD_getFrameContentSize, (const void *, size_t))                \
	X(unsigned, ZSTD_isError, (size_t))
#define ZSTD_DL_MEMBER(ret, name, args) ret(*name) args;
static struct {
	ZSTD_DL_FUNCS(ZSTD_DL_MEMBER)
} zstd;
#undef ZSTD_DL_MEMBER
#define ZSTD_DL_SYM(ret, name, args) { "libzstd.so.1", #name, (void **)&zstd.name },
static const struct tv_dl_sym zstd_syms[] = { ZSTD_DL_FUNCS(ZSTD_DL_SYM) };
#undef ZSTD_DL_SYM

/* Return: 0, or -ENOENT (logged) when libzstd or one of its names is missing. */
static int zstd_load(void)
{
	static struct tv_dl_once once;

	return tv_dl_load(&once, "compressed streams", zstd_syms, sizeof(zstd_syms) / sizeof(zstd_syms[0]));
}

#define ZSTD_CCtx_setParameter (zstd.ZSTD_CCtx_setParameter)
#define ZSTD_CCtx_setPledgedSrcSize (zstd.ZSTD_CCtx_setPledgedSrcSize)
#define ZSTD_CStreamInSize (zstd.ZSTD_CStreamInSize)
#define ZSTD_CStreamOutSize (zstd.ZSTD_CStreamOutSize)
#define ZSTD_compressStream2 (zstd.ZSTD_compressStream2)
#define ZSTD_createCCtx (zstd.ZSTD_createCCtx)
#define ZSTD_createDStream (zstd.ZSTD_createDStream)
#define ZSTD_decompressStream (zstd.ZSTD_decompressStream)
#define ZSTD_freeCCtx (zstd.ZSTD_freeCCtx)
#define ZSTD_freeDStream (zstd.ZSTD_freeDStream)
#define ZSTD_getErrorName (zstd.ZSTD_getErrorName)
#define ZSTD_getFrameContentSize (zstd.ZSTD_getFrameContentSize)
#define ZSTD_isError (zstd.ZSTD_isError)

/* ------------------------------------------------------------ reading */

/*
 * Decompressed a window at a time: sub-buffer sized output calls would
 * cost zstd twice the time of the decoding itself.
 */
#define ZSTREAM_WINDOW (256 * 1024)

struct tv_zstream {
	int fd;
	ZSTD_DStream *ds;
	unsigned char *in;
	ZSTD_inBuffer inb;
	unsigned char *win;	/* decompressed, not yet handed out: [win_pos, win_len) */
	size_t win_pos, win_len;
	uint64_t pos;		/* decompressed bytes handed out so far */
	int eof;		/* the file is read to its end */
	int frame_done;		/* the frame ended (ZSTD_decompressStream returned 0) */
};

int tv_zstream_open(int fd, struct tv_zstream **out, uint64_t *content_size)
{
	unsigned char head[FRAME_HEADER_MAX];
	ssize_t n = pread(fd, head, sizeof(head), 0);
	unsigned long long size;
	struct tv_zstream *z;

	if (n < 0)
		return -errno;
	if (zstd_load())
		return -ENOENT;
	size = ZSTD_getFrameContentSize(head, (size_t)n);
	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
		return -EBADMSG;	/* not ours: we always write the size */
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->fd = fd;
	z->ds = ZSTD_createDStream();
	z->in = malloc(ZSTREAM_IN_SIZE);
	z->win = malloc(ZSTREAM_WINDOW);
	if (!z->ds || !z->in || !z->win) {
		tv_zstream_close(z);
		return -ENOMEM;
	}
	z->inb = (ZSTD_inBuffer){ z->in, 0, 0 };
	*content_size = size;
	*out = z;
	return 0;
}

/* More compressed input once the buffer is used up. */
static int zstream_fill(struct tv_zstream *z)
{
	ssize_t n;

	if (z->inb.pos < z->inb.size || z->eof)
		return 0;
	n = read(z->fd, z->in, ZSTREAM_IN_SIZE);
	if (n < 0)
		return -errno;
	z->eof = n == 0;
	z->inb = (ZSTD_inBuffer){ z->in, (size_t)n, 0 };
	return 0;
}

/* Decompress the next window; 0 with win_len 0 at the end of the frame. */
static int zstream_next_window(struct tv_zstream *z, const char **why)
{
	ZSTD_outBuffer outb = { z->win, ZSTREAM_WINDOW, 0 };

	while (outb.pos < outb.size && !z->frame_done) {
		size_t before = outb.pos, r;
		int ret = zstream_fill(z);

		if (ret)
			return ret;
		/* At the end of the file too: zstd may still hold output to flush. */
		r = ZSTD_decompressStream(z->ds, &outb, &z->inb);
		if (ZSTD_isError(r)) {
			*why = ZSTD_getErrorName(r);
			return -EBADMSG;
		}
		z->frame_done = r == 0;
		if (z->eof && outb.pos == before)
			break;	/* cut short: the caller sees a short read */
	}
	z->win_pos = 0;
	z->win_len = outb.pos;
	return 0;
}

ssize_t tv_zstream_read(struct tv_zstream *z, void *buf, size_t len, const char **why)
{
	size_t done = 0;

	while (done < len) {
		size_t n;

		if (z->win_pos == z->win_len) {
			int ret = zstream_next_window(z, why);

			if (ret)
				return ret;
			if (!z->win_len)
				break;
		}
		n = z->win_len - z->win_pos < len - done ? z->win_len - z->win_pos : len - done;
		memcpy((unsigned char *)buf + done, z->win + z->win_pos, n);
		z->win_pos += n;
		done += n;
	}
	z->pos += done;
	return (ssize_t)done;
}

uint64_t tv_zstream_pos(const struct tv_zstream *z)
{
	return z->pos;
}

void tv_zstream_close(struct tv_zstream *z)
{
	if (!z)
		return;
	ZSTD_freeDStream(z->ds);
	free(z->in);
	free(z->win);
	free(z);
}

/* ------------------------------------------------------------ writing */

/* Compress @in (size @size) into @out as one frame that records @size. */
static int compress_fd(int in, int out, uint64_t size, const char **why)
{
	size_t in_cap = ZSTD_CStreamInSize(), out_cap = ZSTD_CStreamOutSize();
	unsigned char *ibuf = malloc(in_cap), *obuf = malloc(out_cap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	int ret = ibuf && obuf && cc ? 0 : -ENOMEM;

	if (!ret) {
		ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, COMPRESS_LEVEL);
		/* A reader holds one window per CPU stream: 1 MiB, not level 3's 8. */
		ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, COMPRESS_WINDOW_LOG);
		/* Damage is then found (at the end of the frame) even in literals. */
		ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setPledgedSrcSize(cc, size);
	}
	for (int last = 0; !ret && !last;) {
		ssize_t n = read(in, ibuf, in_cap);
		ZSTD_inBuffer inb = { ibuf, n > 0 ? (size_t)n : 0, 0 };
		size_t left;

		if (n < 0) {
			ret = -errno;
			break;
		}
		last = n == 0;
		do {
			ZSTD_outBuffer outb = { obuf, out_cap, 0 };

			left = ZSTD_compressStream2(cc, &outb, &inb, last ? ZSTD_e_end : ZSTD_e_continue);
			if (ZSTD_isError(left)) {
				*why = ZSTD_getErrorName(left);
				ret = -EIO;
			} else if (write(out, obuf, outb.pos) != (ssize_t)outb.pos) {
				ret = errno ? -errno : -EIO;
			}
		} while (!ret && (last ? left != 0 : inb.pos < inb.size));
	}
	ZSTD_freeCCtx(cc);
	free(ibuf);
	free(obuf);
	return ret;
}

/* DIR/cpuN.raw -> cpuN.raw.zst (written aside, then renamed), raw removed;
 * cpuN.xen alike. */
static int compress_file(const char *dir, const char *name, struct tv_compress_stats *st)
{
	char src[PATH_MAX], tmp[PATH_MAX + 8], dst[PATH_MAX + 8];
	const char *why = "";
	struct stat sb;
	int in, out, ret = 0;

	snprintf(src, sizeof(src), "%s/%s", dir, name);
	snprintf(dst, sizeof(dst), "%s.zst", src);
	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &sb)) {
		ret = -errno;
		tv_err("Cannot open stream file: path=\"%s\", errno=%d (%s)", src, -ret, strerror(-ret));
		if (in >= 0)
			close(in);
		return ret;
	}
	out = tv_file_create(tmp, 0, "file");
	if (out < 0)
		ret = out;
	if (!ret)
		ret = compress_fd(in, out, (uint64_t)sb.st_size, &why);
	if (!ret && fsync(out))
		ret = -errno;
	if (out >= 0 && close(out) && !ret)
		ret = -errno;
	close(in);
	/* The raw file goes only once its compressed copy is safely on disk. */
	if (!ret && rename(tmp, dst))
		ret = -errno;
	if (ret) {
		tv_err("Cannot compress stream file: path=\"%s\", errno=%d (%s)%s%s", src, -ret, strerror(-ret),
		       *why ? ": " : "", why);
		unlink(tmp);
		return ret;
	}
	if (stat(dst, &sb) == 0)
		st->bytes_out += (uint64_t)sb.st_size;
	st->files++;
	return unlink(src) ? -errno : 0;
}

static int is_raw_stream(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	/* ftrace pages (cpuN.raw) and Xen records (cpuN.xen) */
	return !strncmp(de->d_name, "cpu", 3) && n > 7 &&
	       (!strcmp(de->d_name + n - 4, ".raw") || !strcmp(de->d_name + n - 4, ".xen"));
}

/*
 * Every cpuN.raw of one domain directory, listed before any is replaced:
 * readdir() over a directory that changes may skip or repeat entries.
 */
static int compress_domain(const char *dir, struct tv_compress_stats *st)
{
	struct dirent **names;
	int n = scandir(dir, &names, is_raw_stream, alphasort), ret = 0;

	if (n < 0) {
		int err = errno;

		tv_err("Cannot open domain directory: path=\"%s\", errno=%d (%s)", dir, err, strerror(err));
		return -err;
	}
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX + 300];
		struct stat sb;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (!ret && stat(path, &sb) == 0)
			st->bytes_in += (uint64_t)sb.st_size;
		if (!ret)
			ret = compress_file(dir, names[i]->d_name, st);
		free(names[i]);
	}
	free(names);
	return ret;
}

int tv_session_compress(const char *dir, struct tv_compress_stats *st)
{
	char path[PATH_MAX], *list, *save = NULL;
	struct tv_meta *m = NULL;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = zstd_load();
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/session.meta", dir);
	ret = tv_meta_read(path, &m);
	if (ret)
		return ret;
	list = strdup(tv_meta_get(m, "domains") ?: "");
	tv_meta_free(m);
	if (!list)
		return -ENOMEM;
	for (char *d = strtok_r(list, ",", &save); d && !ret; d = strtok_r(NULL, ",", &save)) {
		if (strchr(d, '/') || d[0] == '.') {
			tv_err("Invalid domain in session: path=\"%s\", domain=\"%s\"", path, d);
			ret = -EINVAL;
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, d);
		ret = compress_domain(path, st);
	}
	free(list);
	return ret;
}
