// SPDX-License-Identifier: LGPL-2.1
/* Growable string buffer used by the JSON and text printers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"

static int strbuf_reserve(struct tv_strbuf *sb, size_t extra)
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
	if (strbuf_reserve(sb, (size_t)n))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

int tv_strbuf_append_json_string(struct tv_strbuf *sb, const char *s, size_t n)
{
	/* Worst case every byte becomes \u00XX, plus the quotes. */
	if (strbuf_reserve(sb, n * 6 + 2))
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
			sb->len += (size_t)sprintf(sb->data + sb->len, "\\u%04x", c);
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
