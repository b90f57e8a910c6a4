// SPDX-License-Identifier: LGPL-2.1
/*
 * Encoding and checking of agent protocol frames (doc/agent-protocol.md).
 * Only libc: this file is also linked into the static guest agent.
 * All integers are little endian, whatever the host is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

void tv_proto_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t tv_proto_get_u32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

void tv_proto_put_u64(unsigned char *p, uint64_t v)
{
	tv_proto_put_u32(p, (uint32_t)v);
	tv_proto_put_u32(p + 4, (uint32_t)(v >> 32));
}

uint64_t tv_proto_get_u64(const unsigned char *p)
{
	return tv_proto_get_u32(p) | (uint64_t)tv_proto_get_u32(p + 4) << 32;
}

void tv_proto_hdr_encode(unsigned char out[TV_PROTO_HDR_SIZE], uint16_t type, uint32_t arg,
			 uint32_t len)
{
	tv_proto_put_u32(out, TV_PROTO_MAGIC);
	out[4] = (unsigned char)type;
	out[5] = (unsigned char)(type >> 8);
	out[6] = out[7] = 0;
	tv_proto_put_u32(out + 8, arg);
	tv_proto_put_u32(out + 12, len);
}

void tv_proto_hello_encode(unsigned char out[TV_PROTO_HELLO_SIZE], uint64_t nonce)
{
	tv_proto_hdr_encode(out, TV_MSG_HELLO, 0, 8);
	tv_proto_put_u64(out + TV_PROTO_HDR_SIZE, nonce);
}

const char *tv_proto_type_name(uint16_t type)
{
	switch (type) {
	case TV_MSG_START: return "START";
	case TV_MSG_STOP: return "STOP";
	case TV_MSG_PING: return "PING";
	case TV_MSG_HCALL: return "HCALL";
	case TV_MSG_META: return "META";
	case TV_MSG_FILE: return "FILE";
	case TV_MSG_DATA: return "DATA";
	case TV_MSG_PONG: return "PONG";
	case TV_MSG_HCALL_DONE: return "HCALL_DONE";
	case TV_MSG_READY: return "READY";
	case TV_MSG_END: return "END";
	case TV_MSG_ERROR: return "ERROR";
	case TV_MSG_UST_PROC: return "UST_PROC";
	case TV_MSG_UST_META: return "UST_META";
	case TV_MSG_UST_DATA: return "UST_DATA";
	case TV_MSG_UST_END: return "UST_END";
	case TV_MSG_HELLO: return "HELLO";
	case TV_MSG_LOSS: return "LOSS";
	case TV_MSG_SNAP: return "SNAP";
	case TV_MSG_SNAP_DATA: return "SNAP_DATA";
	case TV_MSG_SNAP_FILE: return "SNAP_FILE";
	case TV_MSG_SNAP_END: return "SNAP_END";
	case TV_MSG_TRIGGER: return "TRIGGER";
	case TV_MSG_SNAP_UST: return "SNAP_UST";
	}
	return NULL;
}

int tv_proto_hdr_decode(const unsigned char in[TV_PROTO_HDR_SIZE], struct tv_proto_hdr *hdr)
{
	hdr->magic = tv_proto_get_u32(in);
	hdr->type = (uint16_t)(in[4] | in[5] << 8);
	hdr->flags = (uint16_t)(in[6] | in[7] << 8);
	hdr->arg = tv_proto_get_u32(in + 8);
	hdr->len = tv_proto_get_u32(in + 12);
	if (hdr->magic != TV_PROTO_MAGIC || hdr->flags || !tv_proto_type_name(hdr->type))
		return -EBADMSG;
	if (hdr->len > TV_PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	return 0;
}

void tv_sync_marker_encode(unsigned char out[TV_SYNC_MARKER_SIZE], uint16_t type,
			   uint16_t guest, uint64_t seq, uint64_t aux)
{
	tv_proto_put_u32(out, TV_SYNC_MAGIC);
	out[4] = (unsigned char)type;
	out[5] = (unsigned char)(type >> 8);
	out[6] = (unsigned char)guest;
	out[7] = (unsigned char)(guest >> 8);
	tv_proto_put_u64(out + 8, seq);
	tv_proto_put_u64(out + 16, aux);
}

int tv_sync_marker_decode(const void *record, size_t size, struct tv_sync_marker *m)
{
	const unsigned char *p = (const unsigned char *)record + 8;

	if (size < 8 + TV_SYNC_MARKER_SIZE)
		return -ENOMSG;
	m->magic = tv_proto_get_u32(p);
	m->type = (uint16_t)(p[4] | p[5] << 8);
	m->guest = (uint16_t)(p[6] | p[7] << 8);
	m->seq = tv_proto_get_u64(p + 8);
	m->aux = tv_proto_get_u64(p + 16);
	return m->magic == TV_SYNC_MAGIC ? 0 : -ENOMSG;
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

/* One path component of @len bytes: [A-Za-z0-9_.-]+, not "." or "..". */
static int check_component(const char *s, size_t len)
{
	if (len == 0 || len > 63)
		return -EINVAL;
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i]))
			return -EINVAL;
	return 0;
}

int tv_proto_check_path(const char *path, size_t len)
{
	static const char *const fixed[] = { "header_page", "header_event", "saved_cmdlines",
					     "saved_tgids" };
	const char *sys, *ev, *slash;

	if (len == 0 || len > TV_PROTO_MAX_PATH || memchr(path, '\0', len))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (len == strlen(fixed[i]) && !memcmp(path, fixed[i], len))
			return 0;
	/* events/SYS/EVENT/format */
	if (len < 7 + 1 + 1 + 7 || memcmp(path, "events/", 7) ||
	    memcmp(path + len - 7, "/format", 7))
		return -EINVAL;
	sys = path + 7;
	slash = memchr(sys, '/', (size_t)(path + len - 7 - sys));
	if (!slash)
		return -EINVAL;
	ev = slash + 1;
	if (check_component(sys, (size_t)(slash - sys)) ||
	    check_component(ev, (size_t)(path + len - 7 - ev)))
		return -EINVAL;
	return 0;
}

static int key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.';
}

int tv_proto_kv_parse(const char *text, size_t len,
		      int (*fn)(const char *key, const char *val, void *ctx), void *ctx)
{
	char key[64], val[1024];
	size_t i = 0;

	while (i < len) {
		size_t k = 0, v = 0;
		int ret;

		while (i < len && text[i] != '=' && text[i] != '\n') {
			if (k == sizeof(key) - 1 || !key_char(text[i]))
				return -EINVAL;
			key[k++] = text[i++];
		}
		if (k == 0 || i == len || text[i] != '=')
			return -EINVAL;
		i++;
		while (i < len && text[i] != '\n') {
			unsigned char c = (unsigned char)text[i];

			if (v == sizeof(val) - 1 || c < 0x20 || c > 0x7e)
				return -EINVAL;
			val[v++] = text[i++];
		}
		if (i == len)
			return -EINVAL;	/* every line ends with '\n' */
		i++;
		key[k] = val[v] = '\0';
		ret = fn(key, val, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int tv_proto_file_split(const unsigned char *p, size_t len, char path[TV_PROTO_MAX_PATH + 1],
			const unsigned char **content, size_t *content_len)
{
	size_t plen;

	if (len < 2)
		return -EINVAL;
	plen = (size_t)(p[0] | p[1] << 8);
	if (plen > len - 2 || tv_proto_check_path((const char *)p + 2, plen))
		return -EINVAL;
	memcpy(path, p + 2, plen);
	path[plen] = '\0';
	*content = p + 2 + plen;
	*content_len = len - 2 - plen;
	return 0;
}

/* The stamp token "SEC.FRAC:" (or "COUNT:" for a counter clock) in ns.  Return: 0 or -1. */
static int trace_stamp(const char *tok, size_t len, uint64_t *ns)
{
	unsigned long long sec, frac;
	int n;

	if (sscanf(tok, "%llu.%llu:%n", &sec, &frac, &n) == 2 && n == (int)len) {
		size_t digits = len - 1 - (size_t)(strchr(tok, '.') - tok) - 1;

		for (; digits < 9; digits++)
			frac *= 10;
		*ns = sec * 1000000000ULL + frac;
		return 0;
	}
	if (sscanf(tok, "%llu:%n", &sec, &n) == 1 && n == (int)len) {
		*ns = sec;	/* a counter clock (x86-tsc, counter) */
		return 0;
	}
	return -1;
}

int tv_proto_trace_line_parse(const char *line, int *cpu, uint64_t *ns)
{
	const char *b = strstr(line, "] "), *open = NULL;
	char tok[64];
	int off;

	for (const char *p = b; p && p > line && !open; p--)
		if (p[-1] == '[')
			open = p - 1;
	if (!open || sscanf(open + 1, "%d", cpu) != 1)
		return -1;
	/* after the CPU: an optional flags word, then the stamp with its ':' */
	for (const char *p = b + 1; sscanf(p, "%63s%n", tok, &off) == 1; p += off) {
		size_t len = strlen(tok);

		if (len < 2 || tok[len - 1] != ':')
			continue;
		return trace_stamp(tok, len, ns);
	}
	return -1;
}
