// SPDX-License-Identifier: LGPL-2.1
/* Growable string buffer used by the JSON and text printers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

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

void tv_strbuf_free(struct tv_strbuf *sb)
{
	free(sb->data);
	memset(sb, 0, sizeof(*sb));
}

/*
 * Terminal-safe text (tv_strbuf_append_text, tv_strbuf_escape_from,
 * tv_text_escape).  Recorded strings come from guests and from any host
 * process: printed raw, an escape sequence clears the screen and a newline
 * starts a forged line.  What passes: printable ASCII and valid UTF-8 of
 * characters that are not controls; what is escaped: C0 (\n, \t, \r by
 * name, the rest \xNN), DEL, C1 as a raw byte or as UTF-8 (U+0080-U+009F),
 * the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069,
 * which reorder the rest of the line on screen), and every byte of an
 * invalid or overlong UTF-8 sequence, each byte as \xNN.  A backslash is
 * kept: the text is for reading, not for parsing back (--json is exact).
 */

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/*
 * Whether any of @n bytes at @s is < 0x20, 0x7f or >= 0x80, eight at a time.
 * (x - 0x20) & ~x flags a byte below 0x20, (x + 1) | x one at or above
 * 0x7f; a borrow or carry only crosses from a byte that is itself flagged.
 */
static inline __attribute__((always_inline)) int text_needs_escape(const unsigned char *s, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x;

		memcpy(&x, s + i, 8);
		if ((((x - 0x20 * ONES) & ~x) | (x + ONES) | x) & HIGHS)
			return 1;
	}
	for (; i < n; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f)
			return 1;
	return 0;
}

/* Length of the valid UTF-8 sequence of a printable character at @s, or 0. */
static size_t utf8_printable_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;	/* the second byte's range */

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;	/* a continuation byte, C0/C1 overlong, or past U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (c == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (c == 0xf0)
		lo = 0x90;	/* overlong */
	else if (c == 0xf4)
		hi = 0x8f;	/* past U+10FFFF */
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (c == 0xc2 && s[1] <= 0x9f)
		return 0;	/* C1 control, U+0080-U+009F */
	if (c == 0xe2 && ((s[1] == 0x80 && s[2] >= 0xaa && s[2] <= 0xae) ||
			  (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
		return 0;	/* bidi overrides and isolates */
	return len;
}

/* The escaped form of @n bytes at @s at @out (room for 4 * @n); the end. */
static char *text_escape(char *out, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t len;

		if (c >= 0x20 && c < 0x7f) {
			*out++ = (char)c;
			i++;
			continue;
		}
		len = c >= 0x80 ? utf8_printable_len(s + i, n - i) : 0;
		if (len) {
			memcpy(out, s + i, len);
			out += len;
			i += len;
			continue;
		}
		*out++ = '\\';
		if (c == '\n' || c == '\t' || c == '\r') {
			*out++ = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else {
			*out++ = 'x';
			*out++ = hex[c >> 4];
			*out++ = hex[c & 15];
		}
		i++;
	}
	return out;
}

int tv_strbuf_append_text(struct tv_strbuf *sb, const char *s, size_t n)
{
	if (!text_needs_escape((const unsigned char *)s, n))
		return tv_strbuf_append_mem(sb, s, n);
	if (tv_strbuf_reserve(sb, 4 * n))
		return -ENOMEM;
	sb->len = (size_t)(text_escape(sb->data + sb->len, (const unsigned char *)s, n) - sb->data);
	sb->data[sb->len] = '\0';
	return 0;
}

int tv_strbuf_escape_from(struct tv_strbuf *sb, size_t from)
{
	unsigned char *raw;
	size_t n;
	int ret;

	if (from >= sb->len || !text_needs_escape((unsigned char *)sb->data + from, sb->len - from))
		return 0;
	n = sb->len - from;
	raw = malloc(n);
	if (!raw)
		return -ENOMEM;
	memcpy(raw, sb->data + from, n);
	sb->len = from;
	ret = tv_strbuf_append_text(sb, (const char *)raw, n);
	free(raw);
	return ret;
}

const char *tv_text_escape(char *out, size_t size, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), used = 0;
	char tmp[4];

	if (!size)
		return out;
	/* One character (or one escape) at a time, none cut by @size. */
	for (size_t i = 0; i < n;) {
		size_t in = u[i] >= 0x80 ? utf8_printable_len(u + i, n - i) : 0, w;

		in = in ? in : 1;
		if (in > 1) {
			memcpy(tmp, u + i, in);
			w = in;
		} else {
			w = (size_t)(text_escape(tmp, u + i, 1) - tmp);
		}
		if (used + w >= size)
			break;
		memcpy(out + used, tmp, w);
		used += w;
		i += in;
	}
	out[used] = '\0';
	return out;
}
