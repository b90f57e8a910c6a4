/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal unit-test harness: each test_*.c is one program; TV_CHECK records
 * a failure and goes on, and main() ends with tv_test_done(), which prints
 * "N passed, N failed" for the program and exits non-zero on any failure,
 * or when no check ran at all (a program whose checks were all skipped or
 * never reached proves nothing, and must not pass).
 */
#ifndef TV_TEST_H
#define TV_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int tv_test_passed, tv_test_failed;

#define TV_CHECK(cond, ...)                                                      \
	do {                                                                     \
		if (cond) {                                                      \
			tv_test_passed++;                                        \
		} else {                                                         \
			tv_test_failed++;                                        \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
		}                                                                \
	} while (0)

/* The whole file @path as a malloc'ed string, or NULL when it cannot be opened. */
static inline char *tv_test_slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			cap = (cap + 4096) * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

static inline int tv_test_done(const char *name)
{
	printf("%s: %d checks passed, %d failed\n", name, tv_test_passed, tv_test_failed);
	if (tv_test_passed + tv_test_failed == 0) {
		fprintf(stderr, "FAIL %s: no check ran\n", name);
		return 1;
	}
	return tv_test_failed ? 1 : 0;
}

#endif
