// SPDX-License-Identifier: LGPL-2.1
/* Growable string buffer used by the JSON and text printers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "internal.h"

int tv_strbuf_reserve(struct tv_strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	size_t cap = sb->cap ? sb->cap : 256;
	char *data;

	if (need <= sb->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	data = realloc(sb->data, cap);
	if (!data)
		return -ENOMEM;
	sb->data = data;
	sb->cap = cap;
	return 0;
}

int tv_strbuf_append(struct tv_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (tv_strbuf_reserve(sb, (size_t)n))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

char *tv_put_u64(char *out, uint64_t v, int min_digits)
{
	static const char pairs[] =
		"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	static const uint64_t pow10[] = {
		1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
		100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
		1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
		1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL, 10000000000000000000ULL,
	};
	/* log10 from the bit length (1233/4096 ~ log10 2), one compare to round. */
	int t = ((64 - __builtin_clzll(v | 1)) * 1233) >> 12;
	int digits = t + (v >= pow10[t]), n;
	char *p;

	if (!digits)
		digits = 1;
	if (min_digits > 20)
		min_digits = 20;
	n = digits > min_digits ? digits : min_digits;
	if (n > digits)
		memset(out, '0', (size_t)(n - digits));
	/* Written from the end, two digits per division. */
	p = out + n;
	while (v >= 100) {
		unsigned int r = (unsigned int)(v % 100);

		v /= 100;
		*--p = pairs[2 * r + 1];
		*--p = pairs[2 * r];
	}
	if (v >= 10) {
		*--p = pairs[2 * v + 1];
		*--p = pairs[2 * v];
	} else {
		*--p = (char)('0' + v);
	}
	return out + n;
}

int tv_strbuf_append_u64(struct tv_strbuf *sb, uint64_t v)
{
	if (tv_strbuf_reserve(sb, 24))
		return -ENOMEM;
	sb->len = (size_t)(tv_put_u64(sb->data + sb->len, v, 1) - sb->data);
	sb->data[sb->len] = '\0';
	return 0;
}

int tv_strbuf_append_i64(struct tv_strbuf *sb, int64_t v)
{
	if (v >= 0)
		return tv_strbuf_append_u64(sb, (uint64_t)v);
	if (tv_strbuf_append_mem(sb, "-", 1))
		return -ENOMEM;
	return tv_strbuf_append_u64(sb, -(uint64_t)v);
}

int tv_strbuf_append_json_string(struct tv_strbuf *sb, const char *s, size_t n)
{
	/* Worst case every byte becomes \u00XX, plus the quotes. */
	if (tv_strbuf_reserve(sb, n * 6 + 2))
		return -ENOMEM;
	sb->data[sb->len++] = '"';
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			sb->data[sb->len++] = '\\';
			sb->data[sb->len++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			/* Non-ASCII bytes from kernel strings are not
			 * guaranteed UTF-8: escape them to stay valid JSON. */
			static const char hex[] = "0123456789abcdef";

			memcpy(sb->data + sb->len, "\\u00", 4);
			sb->data[sb->len + 4] = hex[c >> 4];
			sb->data[sb->len + 5] = hex[c & 15];
			sb->len += 6;
		} else {
			sb->data[sb->len++] = (char)c;
		}
	}
	sb->data[sb->len++] = '"';
	sb->data[sb->len] = '\0';
	return 0;
}

void tv_strbuf_reset(struct tv_strbuf *sb)
{
	sb->len = 0;
	if (sb->data)
		sb->data[0] = '\0';
}

void tv_strbuf_free(struct tv_strbuf *sb)
{
	free(sb->data);
	memset(sb, 0, sizeof(*sb));
}
