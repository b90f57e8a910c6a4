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

/* The hot paths of the JSON writers: no format string to parse. */
int tv_strbuf_append_mem(struct tv_strbuf *sb, const char *s, size_t n)
{
	if (tv_strbuf_reserve(sb, n))
		return -ENOMEM;
	memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
	return 0;
}

int tv_strbuf_append_u64(struct tv_strbuf *sb, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return tv_strbuf_append_mem(sb, tmp + i, sizeof(tmp) - i);
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
