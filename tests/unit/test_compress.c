// SPDX-License-Identifier: GPL-2.0
/*
 * Compressed sessions (lib/format/compress.c): every committed sample, compressed
 * with tv_session_compress(), reports exactly its expected output, the
 * corrupt ones with the same errors (naming the .zst file); `zstd -d` gives
 * the raw file back; damaged compressed files give one clear error naming
 * the file and offset, and the events before the damage still print.
 * Runs the tracevisor binary ($TV, default build/tracevisor).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"

#define SAMPLES "tests/samples"

static const char *const samples[] = {
	"abs-ts", "padding", "time-extend", "missed", "svm-exits", "vmx-exits", "truncated",
	"corrupt-commit", "corrupt-event-id", "corrupt-padding", "corrupt-record",
};

static char tmpdir[] = "/tmp/tv-compress.XXXXXX";
static const char *tv;


/* @text with every @from replaced by @to (a new string). */
static char *replace_all(const char *text, const char *from, const char *to)
{
	size_t n = 0, fl = strlen(from), tl = strlen(to);
	const char *p;
	char *out, *o;

	for (p = text; (p = strstr(p, from)); p += fl)
		n++;
	out = malloc(strlen(text) + n * (tl + 1) + 1);
	if (!out)
		abort();
	for (o = out, p = text;;) {
		const char *q = strstr(p, from);

		if (!q)
			break;
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, to, tl);
		o += tl;
		p = q + fl;
	}
	strcpy(o, p);
	return out;
}

/* `tracevisor report DIR`: exit status, stdout and stderr in files of tmpdir. */
static int report(const char *dir, const char *tag)
{
	char cmd[2048];
	int rc;

	snprintf(cmd, sizeof(cmd), "%s report %s >%s/%s.out 2>%s/%s.err", tv, dir, tmpdir, tag,
		 tmpdir, tag);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	return system(cmd);
}

/* Expected output of sample @name, and its stderr with paths into @dir's .zst files. */
static void check_sample(const char *name)
{
	char dir[600], path[700], zpath[700], raw_prefix[300], zst_prefix[700];
	struct tv_compress_stats st;
	char *want, *got, *want_err, *err, *tmp;
	int ret, rc;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	TV_CHECK(run("cp -r " SAMPLES "/%s %s", name, dir) == 0, "copy %s", name);
	ret = tv_session_compress(dir, &st);
	TV_CHECK(ret == 0 && st.files >= 1 && st.bytes_out > 0, "%s: compress: %d, %llu files",
		 name, ret, (unsigned long long)st.files);
	snprintf(path, sizeof(path), "%s/host/cpu0.raw", dir);
	snprintf(zpath, sizeof(zpath), "%s.zst", path);
	TV_CHECK(access(path, F_OK) && !access(zpath, F_OK), "%s: cpu0.raw not replaced by .zst",
		 name);
	/* Plain zstd gives the committed file back. */
	TV_CHECK(run("zstd -q -d -c %s | cmp -s - " SAMPLES "/%s/host/cpu0.raw", zpath, name) == 0,
		 "%s: zstd -d does not give cpu0.raw back", name);
	rc = report(dir, name);
	snprintf(path, sizeof(path), SAMPLES "/%s/expected.txt", name);
	want = tv_test_slurp(path);
	snprintf(path, sizeof(path), "%s/%s.out", tmpdir, name);
	got = tv_test_slurp(path);
	TV_CHECK(want && got && !strcmp(want, got), "%s: report of the compressed session differs",
		 name);
	snprintf(path, sizeof(path), SAMPLES "/%s/expected.stderr", name);
	want_err = tv_test_slurp(path);
	snprintf(path, sizeof(path), "%s/%s.err", tmpdir, name);
	err = tv_test_slurp(path);
	if (want_err) {
		/* The same errors, naming the compressed file ("raw.zst"). */
		snprintf(raw_prefix, sizeof(raw_prefix), SAMPLES "/%s/", name);
		snprintf(zst_prefix, sizeof(zst_prefix), "%s/", dir);
		tmp = replace_all(want_err, raw_prefix, zst_prefix);
		free(want_err);
		want_err = replace_all(tmp, ".raw\"", ".raw.zst\"");
		free(tmp);
		TV_CHECK(rc != 0, "%s: corrupt, but exit 0", name);
		TV_CHECK(err && !strcmp(want_err, err), "%s: stderr\n%s\nwant\n%s", name,
			 err ? err : "(none)", want_err);
	} else {
		TV_CHECK(rc == 0 && err && !*err, "%s: exit %d, stderr: %s", name, rc, err ? err : "");
	}
	free(want);
	free(got);
	free(want_err);
	free(err);
}

/* Damage to a compressed file: one error naming file and offset, exit 1. */
static void check_damage(const char *tag, const char *damage, const char *want)
{
	char dir[600], zst[700], cmd[1600];
	struct tv_compress_stats st;
	char path[700], *err;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, tag);
	TV_CHECK(run("cp -r " SAMPLES "/%s %s", "vmx-exits", dir) == 0, "copy");
	TV_CHECK(tv_session_compress(dir, &st) == 0, "%s: compress", tag);
	snprintf(zst, sizeof(zst), "%s/host/cpu0.raw.zst", dir);
	snprintf(cmd, sizeof(cmd), damage, zst);
	TV_CHECK(system(cmd) == 0, "%s", cmd);
	TV_CHECK(report(dir, tag) == 1, "%s: report did not exit 1", tag);
	snprintf(path, sizeof(path), "%s/%s.err", tmpdir, tag);
	err = tv_test_slurp(path);
	TV_CHECK(err && strstr(err, "Corrupt stream file: path=\"") && strstr(err, "cpu0.raw.zst") &&
		 strstr(err, want) && strchr(err, '\n') == err + strlen(err) - 1,
		 "%s: stderr: %s", tag, err ? err : "(none)");
	free(err);
}

/* An interrupted compress leaves a .tmp beside the raw file: the raw one is read. */
static void check_interrupted(void)
{
	char dir[600], path[700];
	char *want, *got;

	snprintf(dir, sizeof(dir), "%s/interrupted", tmpdir);
	TV_CHECK(run("cp -r " SAMPLES "/%s %s", "vmx-exits", dir) == 0, "copy");
	TV_CHECK(run("head -c 100 /dev/urandom >%s/host/cpu0.raw.zst.tmp%s", dir, "") == 0, "tmp");
	TV_CHECK(report(dir, "interrupted") == 0, "interrupted: report failed");
	snprintf(path, sizeof(path), SAMPLES "/vmx-exits/expected.txt");
	want = tv_test_slurp(path);
	snprintf(path, sizeof(path), "%s/interrupted.out", tmpdir);
	got = tv_test_slurp(path);
	TV_CHECK(want && got && !strcmp(want, got), "interrupted: report differs");
	free(want);
	free(got);
}

int main(void)
{
	char cmd[600];

	tv = getenv("TV") ? getenv("TV") : "build/tracevisor";
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (system("command -v zstd >/dev/null")) {
		fprintf(stderr, "test_compress: needs the zstd command (make deps)\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		check_sample(samples[i]);
	check_damage("flipped", "printf '\\377\\377\\377\\377' | dd of=%s bs=1 seek=40 conv=notrunc status=none",
		     "compressed data is corrupt");
	check_damage("cut", "truncate -s 60 %s", "truncated sub-buffer");
	check_damage("not-zstd", "cp tests/samples/vmx-exits/host/cpu0.raw %s",
		     "offset=0: not a zstd frame with its size");
	check_interrupted();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (!tv_test_failed && system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return tv_test_done("test_compress");
}
