// SPDX-License-Identifier: LGPL-2.1
/*
 * Checks on an event format file before libtraceevent parses it.
 *
 * A session is untrusted input, and libtraceevent 1.7's format parser
 * dereferences NULL on several kinds of malformed text (each found by
 * tests/fuzz/fuzz_session.c, kept as a sample under tests/samples/fuzz-*).
 * These checks turn the kinds we know into a one-line error naming the file
 * and the offset; domain.c also runs the parser in a child process first, so
 * a kind we do not know yet is an error too, not a crash.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "format_io.h"

/* Is @name (@n bytes) the name of a "field:" line of format text @text? */
static int format_has_field(const char *text, const char *name, size_t n)
{
	for (const char *p = text; (p = strstr(p, "field:")); p++) {
		const char *end = strchr(p, ';'), *s;

		if (!end)
			return 0;
		/* the name ends at ';' or at its array bound: "char comm[16];" */
		s = end;
		while (s > p && (s[-1] == ' ' || s[-1] == '\t'))
			s--;
		if (s > p && s[-1] == ']')
			while (s > p && s[-1] != '[')
				s--;
		if (s > p && s[-1] == '[')
			s--;
		while (s > p && (s[-1] == ' ' || s[-1] == '\t'))
			s--;
		if ((size_t)(s - p) > n && !strncmp(s - n, name, n) &&
		    !(isalnum((unsigned char)s[-(long)n - 1]) || s[-(long)n - 1] == '_'))
			return 1;
	}
	return 0;
}

/*
 * libtraceevent 1.7 crashes on a print fmt that names a field the format
 * does not declare (e.g. REC->x inside __print_flags(), found by
 * tests/fuzz/fuzz_session.c: sample fuzz-print-fmt-undeclared-field).
 * Refuse such a format before it reaches the parser.
 */
static int print_fmt_fields_ok(const char *text, const char *path)
{
	const char *fmt = strstr(text, "print fmt:");
	int quoted = 0;

	/*
	 * Outside strings, "->" only follows REC or (REC) (libtraceevent 1.7 crashes
	 * on "X->field": sample fuzz-print-fmt-arrow).
	 */
	for (const char *p = fmt; p && *p; p++) {
		if (*p == '\\' && quoted && p[1]) {
			p++;
			continue;
		}
		if (*p == '"')
			quoted = !quoted;
		if (quoted || p[0] != '-' || p[1] != '>')
			continue;
		if (p - fmt >= 5 && !strncmp(p - 5, "(REC)", 5))
			continue;	/* "(REC)->field", as ftrace:func_repeats */
		if (p - fmt < 4 || strncmp(p - 3, "REC", 3) || isalnum((unsigned char)p[-4]) ||
		    p[-4] == '_') {
			tv_err("Corrupt event format: path=\"%s\", offset=%zu: \"->\" not after REC in print fmt",
			       path, (size_t)(p - text));
			return -EINVAL;
		}
	}

	for (const char *p = fmt; p && (p = strstr(p, "REC->")); ) {
		size_t n = 0;

		p += 5;
		while (isalnum((unsigned char)p[n]) || p[n] == '_')
			n++;
		if (!n || !format_has_field(text, p, n)) {
			tv_err("Corrupt event format: path=\"%s\": print fmt names an undeclared field \"%.*s\"",
			       path, (int)(n > 64 ? 64 : n), p);
			return -EINVAL;
		}
		p += n;
	}
	return 0;
}

/*
 * The shape libtraceevent's lexer assumes (it crashes on less, found by
 * tests/fuzz/fuzz_session.c: sample fuzz-format-field-bracket): printable
 * ASCII text, and every "field:" declaration ending in ';' with its
 * brackets closed.
 */
static int format_shape_ok(const char *text, size_t len, const char *path)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != '\t' && c != '\n' && (c < 0x20 || c > 0x7e)) {
			tv_err("Corrupt event format: path=\"%s\", offset=%zu: not a text file", path, i);
			return -EINVAL;
		}
	}
	for (const char *p = text; (p = strstr(p, "field:")); p++) {
		const char *end = strpbrk(p, ";\n");
		int depth = 0;

		for (const char *q = p; end && q < end; q++)
			depth += (*q == '[') - (*q == ']');
		if (!end || *end != ';' || depth) {
			tv_err("Corrupt event format: path=\"%s\", offset=%zu: field declaration not closed",
			       path, (size_t)(p - text));
			return -EINVAL;
		}
	}
	return 0;
}

static int nesting_error(const char *path, const char *text, const char *at, const char *what)
{
	tv_err("Corrupt event format: path=\"%s\", offset=%zu: print fmt %s", path,
	       (size_t)(at - text), what);
	return -EINVAL;
}

/*
 * Outside string literals, the print fmt's (), [] and {} nest properly and
 * every string ends (libtraceevent 1.7 dereferences NULL on "( ... }":
 * sample fuzz-print-fmt-nesting).
 */
static int print_fmt_nesting_ok(const char *text, const char *path)
{
	const char *fmt = strstr(text, "print fmt:");
	char stack[64];
	int depth = 0, quoted = 0;

	for (const char *p = fmt; p && *p; p++) {
		if (quoted) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				quoted = 0;
			continue;
		}
		if (*p == '"') {
			quoted = 1;
		} else if (strchr("([{", *p)) {
			if (depth == (int)sizeof(stack))
				return nesting_error(path, text, p, "nested too deeply");
			stack[depth++] = *p == '(' ? ')' : *p == '[' ? ']' : '}';
		} else if (strchr(")]}", *p) && *p && (!depth || stack[--depth] != *p)) {
			return nesting_error(path, text, p, "closes what it did not open");
		}
	}
	if (quoted)
		return nesting_error(path, text, fmt + strlen(fmt), "string not ended");
	if (depth)
		return nesting_error(path, text, fmt + strlen(fmt), "bracket not closed");
	return 0;
}

int tv_format_text_check(const char *text, size_t len, const char *path)
{
	return format_shape_ok(text, len, path) ?: print_fmt_nesting_ok(text, path) ?:
	       print_fmt_fields_ok(text, path);
}

/*
 * The type of a "field:TYPE NAME;" declaration (@decl, up to @end) is a
 * long or a pointer: the kernel's word, long_size bytes.  "long long",
 * arrays and __data_loc fields are not.
 */
static int field_is_word(const char *decl, const char *end)
{
	char type[128];
	const char *name = end;
	size_t n, longs = 0;
	char *save = NULL;

	while (name > decl && (name[-1] == ' ' || name[-1] == '\t'))
		name--;
	if (name > decl && name[-1] == ']')
		return 0;
	while (name > decl && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
		name--;
	n = (size_t)(name - decl);
	if (n == 0 || n >= sizeof(type) || memmem(decl, n, "__data_loc", 10))
		return 0;
	memcpy(type, decl, n);
	type[n] = '\0';
	if (strchr(type, '*'))
		return 1;
	for (char *w = strtok_r(type, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(w, "long"))
			longs++;
		else if (strcmp(w, "unsigned") && strcmp(w, "signed") && strcmp(w, "int") &&
			 strcmp(w, "const") && strcmp(w, "volatile"))
			return 0;
	}
	return longs == 1;
}

int tv_format_long_size_check(const char *text, int long_size, const char *path)
{
	for (const char *p = text; (p = strstr(p, "field:")); p++) {
		const char *decl = p + 6, *end = strchr(decl, ';'), *sz;
		unsigned int size;

		if (!end)
			return 0;
		sz = strstr(end, "size:");
		if (!sz || memchr(end, '\n', (size_t)(sz - end)) ||
		    sscanf(sz, "size:%u", &size) != 1 || !field_is_word(decl, end))
			continue;
		if (size != (unsigned int)long_size) {
			tv_err("Corrupt event format: path=\"%s\", offset=%zu: a long or pointer field of %u bytes, the domain's long_size is %d",
			       path, (size_t)(p - text), size, long_size);
			return -EINVAL;
		}
	}
	return 0;
}
