/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * A growable text buffer the caller owns, and the escapes and number
 * formatting the text and JSON writers use on their hot path.
 *
 * Part of libtracevisor's public API: include <tracevisor/tracevisor.h>,
 * which says who owns what and which thread may call what.
 */
#ifndef TRACEVISOR_STRBUF_H
#define TRACEVISOR_STRBUF_H

#ifndef TV_INSIDE_TRACEVISOR_H
#error "include <tracevisor/tracevisor.h>, not <tracevisor/strbuf.h>"
#endif

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#pragma GCC visibility push(default)

/*
 * A growable text buffer the caller owns (zero-initialise it; free with
 * tv_strbuf_free()).  Its fields are public on purpose, like libtraceevent's
 * struct trace_seq: @data holds @len bytes and a NUL, and a writer may
 * reserve room (tv_strbuf_reserve()) and write at @data + @len itself, as
 * the report writer does on its hot path.  Threads: one thread at a time.
 */
struct tv_strbuf {
	char *data;	/* NUL-terminated once anything was appended; NULL before */
	size_t len;	/* bytes of text, without the NUL */
	size_t cap;	/* bytes allocated at @data */
};

/**
 * tv_strbuf_append - append printf-formatted text
 * @sb: the buffer (the caller owns it and frees it with tv_strbuf_free())
 * @fmt: format
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append(struct tv_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * tv_strbuf_append_json_string - append @n bytes of @s as a quoted, escaped JSON string
 * @sb: the buffer
 * @s: the bytes
 * @n: their number
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_json_string(struct tv_strbuf *sb, const char *s, size_t n);

/**
 * tv_strbuf_append_text - append @n bytes of @s, escaped for a terminal
 * @sb: the buffer
 * @s: the bytes (a recorded string: a comm, a field, a meta value)
 * @n: their number (a NUL among them is escaped too)
 *
 * Printable ASCII and valid UTF-8 of printable characters are copied; C0
 * controls become \n, \t, \r or \xNN, and so do DEL, C1 controls (raw
 * or as UTF-8), the bidirectional overrides and isolates and each byte of
 * invalid UTF-8.  A backslash is kept as is: the text is for reading (the
 * exact bytes are in --json).  Clean text costs a scan of 8 bytes a step.
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_text(struct tv_strbuf *sb, const char *s, size_t n);

/**
 * tv_strbuf_escape_from - escape, as tv_strbuf_append_text(), what @sb holds past @from
 * @sb: the buffer
 * @from: the offset of the text to escape (an event's info, just appended)
 *
 * Return: 0 or -ENOMEM (the text is then cut at @from).
 */
int tv_strbuf_escape_from(struct tv_strbuf *sb, size_t from);

/**
 * tv_text_escape - NUL-terminated @s escaped as tv_strbuf_append_text() does, into @out
 * @out: the caller's buffer
 * @size: its size; the text is cut before an escape or character that does not fit
 * @s: a NUL-terminated string
 *
 * Return: @out.
 */
const char *tv_text_escape(char *out, size_t size, const char *s);

/* Fast paths for per-event output: raw bytes, decimal integers. */
/**
 * tv_put_u64 - write @v in decimal at @out, zero-padded to @min_digits
 * @out: room for 24 bytes is enough
 * @v: the value
 * @min_digits: at most 20
 *
 * Return: the end; no NUL is written.
 */
char *tv_put_u64(char *out, uint64_t v, int min_digits);

/**
 * tv_strbuf_reserve - room for @extra more bytes and a NUL
 * @sb: the buffer (may move sb->data)
 * @extra: bytes
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_reserve(struct tv_strbuf *sb, size_t extra);

/*
 * The hot path of the text and JSON writers: no format string to parse, and
 * inline, since most appends are a few bytes.
 */
static inline int tv_strbuf_append_mem(struct tv_strbuf *sb, const char *s, size_t n)
{
	if (sb->len + n + 1 > sb->cap && tv_strbuf_reserve(sb, n))
		return -ENOMEM;
	memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
	return 0;
}

/**
 * tv_strbuf_append_u64 - append @v in decimal
 * @sb: the buffer
 * @v: the value
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_u64(struct tv_strbuf *sb, uint64_t v);

/**
 * tv_strbuf_append_i64 - append @v in decimal
 * @sb: the buffer
 * @v: the value
 *
 * Return: 0 or -ENOMEM.
 */
int tv_strbuf_append_i64(struct tv_strbuf *sb, int64_t v);
/**
 * tv_strbuf_reset - empty @sb, keeping its memory
 * @sb: the buffer
 */
static inline void tv_strbuf_reset(struct tv_strbuf *sb)
{
	sb->len = 0;
	if (sb->data)
		sb->data[0] = '\0';
}

/**
 * tv_strbuf_free - free the buffer's memory and empty it
 * @sb: the buffer; the struct itself is the caller's
 */
void tv_strbuf_free(struct tv_strbuf *sb);

#pragma GCC visibility pop

#endif /* TRACEVISOR_STRBUF_H */
