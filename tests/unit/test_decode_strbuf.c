// SPDX-License-Identifier: GPL-2.0
/* lib/strbuf.c: growth and JSON string escaping. */
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
	return tv_test_done("test_decode_strbuf");
}
