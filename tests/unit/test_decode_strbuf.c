// SPDX-License-Identifier: GPL-2.0
/* lib/util/strbuf.c: growth, JSON string escaping and terminal-safe text. */
#include <stdio.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"

static const char *json(const char *s, size_t n)
{
	static struct tv_strbuf sb;

	tv_strbuf_reset(&sb);
	tv_strbuf_append_json_string(&sb, s, n);
	return sb.data;
}

/* @n bytes of @s as tv_strbuf_append_text() writes them. */
static const char *text(const char *s, size_t n)
{
	static struct tv_strbuf sb;

	tv_strbuf_reset(&sb);
	if (tv_strbuf_append_text(&sb, s, n))
		return "(ENOMEM)";
	return sb.data ? sb.data : "";
}

#define TEXT_IS(in, want) \
	TV_CHECK(!strcmp(text(in, sizeof(in) - 1), want), "text %s: got \"%s\", want \"%s\"", #in, \
		 text(in, sizeof(in) - 1), want)

/* The golden cases of terminal-safe text. */
static void check_text(void)
{
	struct tv_strbuf sb = { 0 };
	char out[16], all[256 + 1];

	TEXT_IS("CPU 0/KVM", "CPU 0/KVM");
	TEXT_IS("", "");
	TEXT_IS(" ~/\\\"%", " ~/\\\"%");	/* printable ASCII, backslash included */
	TEXT_IS("a\nb\tc\rd", "a\\nb\\tc\\rd");
	TEXT_IS("\x1b[2J\x1b]0;x\x07", "\\x1b[2J\\x1b]0;x\\x07");
	TEXT_IS("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
	TEXT_IS("a\0b", "a\\x00b");
	TEXT_IS("\nhost kvm:kvm_exit", "\\nhost kvm:kvm_exit");
	/* C1 as raw bytes, and as UTF-8 (U+0085 NEL, U+009B CSI) */
	TEXT_IS("\x80\x85\x9b\x9f", "\\x80\\x85\\x9b\\x9f");
	TEXT_IS("\xc2\x85x\xc2\x9b[2J", "\\xc2\\x85x\\xc2\\x9b[2J");
	/* printable UTF-8 passes: U+00A0, é, €, 日本, U+1F600, U+10FFFF */
	TEXT_IS("\xc2\xa0\xc3\xa9\xe2\x82\xac\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf",
		"\xc2\xa0\xc3\xa9\xe2\x82\xac\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
	/* invalid UTF-8: a lone continuation, overlongs, a surrogate, past U+10FFFF, cut */
	TEXT_IS("\xbf", "\\xbf");
	TEXT_IS("\xc0\xaf\xe0\x80\xaf", "\\xc0\\xaf\\xe0\\x80\\xaf");
	TEXT_IS("\xed\xa0\x80", "\\xed\\xa0\\x80");
	TEXT_IS("\xf4\x90\x80\x80\xff", "\\xf4\\x90\\x80\\x80\\xff");
	TEXT_IS("ab\xe2\x82", "ab\\xe2\\x82");
	TEXT_IS("\xc3\x1b", "\\xc3\\x1b");
	/* bidi override and isolate: reorder the rest of the line on screen */
	TEXT_IS("a\xe2\x80\xae" "b\xe2\x81\xa6" "c", "a\\xe2\\x80\\xae" "b\\xe2\\x81\\xa6" "c");
	/* the 8-byte scan: a control at each position of a long clean string */
	for (int i = 0; i < 24; i++) {
		static const char xs[] = "xxxxxxxxxxxxxxxxxxxxxxxx";
		char in[25], want[40];

		memset(in, 'x', 24);
		in[24] = '\0';
		in[i] = '\x1b';
		snprintf(want, sizeof(want), "%.*s\\x1b%.*s", i, xs, 23 - i, xs);
		TV_CHECK(!strcmp(text(in, 24), want), "ESC at %d: %s", i, text(in, 24));
		in[i] = '\x7f';
		TV_CHECK(strstr(text(in, 24), "\\x7f"), "DEL at %d", i);
		in[i] = (char)0xff;
		TV_CHECK(strstr(text(in, 24), "\\xff"), "0xff at %d", i);
		in[i] = '~';
		TV_CHECK(!strchr(text(in, 24), '\\'), "~ at %d", i);
	}
	/* every byte value: nothing below 0x20, DEL or a C1 byte left raw */
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	tv_strbuf_append_text(&sb, all, 256);
	for (size_t i = 0; i < sb.len; i++)
		TV_CHECK((unsigned char)sb.data[i] >= 0x20 && (unsigned char)sb.data[i] != 0x7f &&
			 (unsigned char)sb.data[i] < 0x80, "all bytes: raw 0x%02x at %zu",
			 (unsigned char)sb.data[i], i);
	/* in place, after a prefix that is kept */
	tv_strbuf_reset(&sb);
	tv_strbuf_append_mem(&sb, "\x1b[kept] ", 8);
	tv_strbuf_append_mem(&sb, "x=\x1b[2J\n", 7);
	TV_CHECK(!tv_strbuf_escape_from(&sb, 8) && !strcmp(sb.data, "\x1b[kept] x=\\x1b[2J\\n") &&
		 sb.len == strlen(sb.data), "escape_from: %s", sb.data);
	TV_CHECK(!tv_strbuf_escape_from(&sb, sb.len) && sb.len == strlen(sb.data), "escape_from end");
	tv_strbuf_free(&sb);
	/* into a fixed buffer: cut before an escape or a character that does not fit */
	TV_CHECK(!strcmp(tv_text_escape(out, sizeof(out), "vm\x1b[2J"), "vm\\x1b[2J"), "fixed: %s", out);
	TV_CHECK(!strcmp(tv_text_escape(out, 8, "abcdef\n"), "abcdef"), "cut escape: %s", out);
	TV_CHECK(!strcmp(tv_text_escape(out, 7, "abcde\xc3\xa9"), "abcde"), "cut UTF-8: %s", out);
	TV_CHECK(!strcmp(tv_text_escape(out, 8, "abcde\xc3\xa9"), "abcde\xc3\xa9"), "UTF-8 fits: %s", out);
	TV_CHECK(!strcmp(tv_text_escape(out, 1, "abc"), ""), "size 1: %s", out);
}

int main(void)
{
	struct tv_strbuf sb = { 0 };
	char big[5000];

	TV_CHECK(tv_strbuf_append(&sb, "%d-%s", 42, "x") == 0 && !strcmp(sb.data, "42-x"), "append");
	TV_CHECK(sb.len == 4, "len %zu", sb.len);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	TV_CHECK(tv_strbuf_append(&sb, "%s", big) == 0, "grow");
	TV_CHECK(sb.len == 4 + sizeof(big) - 1 && sb.cap > sb.len && sb.data[sb.len] == '\0' &&
		 !strncmp(sb.data, "42-xaaa", 7), "grown: len %zu cap %zu", sb.len, sb.cap);
	tv_strbuf_reset(&sb);
	TV_CHECK(sb.len == 0 && sb.data[0] == '\0', "reset");
	tv_strbuf_free(&sb);
	TV_CHECK(sb.data == NULL && sb.len == 0 && sb.cap == 0, "free");
	tv_strbuf_reset(&sb);	/* on an empty buffer */

	TV_CHECK(!strcmp(json("CPU 0/KVM", 9), "\"CPU 0/KVM\""), "plain: %s", json("CPU 0/KVM", 9));
	TV_CHECK(!strcmp(json("", 0), "\"\""), "empty");
	TV_CHECK(!strcmp(json("a\"b\\c", 5), "\"a\\\"b\\\\c\""), "quote, backslash: %s",
		 json("a\"b\\c", 5));
	TV_CHECK(!strcmp(json("\n\t\r\x01\x1f", 5), "\"\\u000a\\u0009\\u000d\\u0001\\u001f\""),
		 "control characters: %s", json("\n\t\r\x01\x1f", 5));
	TV_CHECK(!strcmp(json("\x7f\x80\xc3\xa9\xff", 5), "\"\\u007f\\u0080\\u00c3\\u00a9\\u00ff\""),
		 "DEL and non-ASCII bytes (not known to be UTF-8): %s", json("\x7f\x80\xc3\xa9\xff", 5));
	TV_CHECK(!strcmp(json("abcdef", 3), "\"abc\""), "only n bytes");
	TV_CHECK(!strcmp(json("ab\0cd", 5), "\"ab\""), "stops at NUL");
	TV_CHECK(!strcmp(json(" ~/", 3), "\" ~/\""), "printable ASCII as is");

	/* worst case: every byte escaped, past the first allocation */
	memset(big, 1, 1000);
	tv_strbuf_append_json_string(&sb, big, 1000);
	TV_CHECK(sb.len == 2 + 6 * 1000 && sb.data[sb.len] == '\0', "escaped 1000 bytes: %zu", sb.len);
	TV_CHECK(tv_strbuf_append(&sb, "%s", "!") == 0 && sb.data[sb.len - 1] == '!', "append after");
	tv_strbuf_free(&sb);
	check_text();
	return tv_test_done("test_decode_strbuf");
}
