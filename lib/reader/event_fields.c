// SPDX-License-Identifier: LGPL-2.1
/* Field access on decoded events; records were bounds-checked on reading. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "reader_internal.h"

int tv_event_field_u64(const struct tv_event *ev, const char *name, uint64_t *val)
{
	struct tep_format_field *f = ev->format ? tep_find_field(ev->format, name) : NULL;

	if (!f || f->size > 8 || (f->flags & TEP_FIELD_IS_DYNAMIC) ||
	    f->offset + f->size > ev->record->size)
		return -ENOENT;
	*val = tep_read_number(ev->tep, (char *)ev->record->data + f->offset, f->size);
	return 0;
}

static long long sign_extend(unsigned long long v, int size)
{
	int shift = 64 - 8 * size;

	return size >= 8 ? (long long)v : (long long)(v << shift) >> shift;
}

static int field_json_number(const struct tv_event *ev, struct tep_format_field *f,
			     const unsigned char *p, struct tv_strbuf *sb)
{
	unsigned long long v = tep_read_number(ev->tep, p, f->size);

	if (f->flags & TEP_FIELD_IS_SIGNED)
		return tv_strbuf_append_i64(sb, sign_extend(v, f->size));
	return tv_strbuf_append_u64(sb, v);
}

static int field_json_array(const struct tv_event *ev, struct tep_format_field *f,
			    const unsigned char *p, unsigned int len, struct tv_strbuf *sb)
{
	unsigned int el = f->elementsize ? f->elementsize : 1;
	int ret = tv_strbuf_append_mem(sb, "[", 1);

	if (el > 8)
		el = 1;
	for (unsigned int i = 0; !ret && i + el <= len; i += el) {
		unsigned long long v = tep_read_number(ev->tep, p + i, (int)el);

		if (i)
			ret = tv_strbuf_append_mem(sb, ",", 1);
		if (!ret)
			ret = tv_strbuf_append_u64(sb, v);
	}
	return ret ? ret : tv_strbuf_append_mem(sb, "]", 1);
}

static int field_json(const struct tv_event *ev, struct tep_format_field *f,
		      struct tv_strbuf *sb)
{
	const unsigned char *data = ev->record->data;
	const unsigned char *p = data + f->offset;
	unsigned int len = (unsigned int)f->size;

	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		unsigned int loc = (unsigned int)tep_read_number(ev->tep, p, 4);
		unsigned int off = loc & 0xffff;

		len = loc >> 16;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += (unsigned int)(f->offset + f->size);
		p = data + off;	/* in bounds: checked when the record was read */
	} else if ((f->flags & TEP_FIELD_IS_ARRAY) && f->size == 0 && !f->next &&
		   (unsigned int)f->offset <= (unsigned int)ev->record->size) {
		/* A trailing flexible array (ftrace:raw_data's buf): the rest of
		 * the record, as bytes, so markers' payloads can be read. */
		return field_json_array(ev, f, p, (unsigned int)(ev->record->size - f->offset), sb);
	}
	if ((f->flags & TEP_FIELD_IS_STRING) || strstr(f->type, "char ") == f->type ||
	    strstr(f->type, "__data_loc char"))
		if (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC))
			return tv_strbuf_append_json_string(sb, (const char *)p,
							    strnlen((const char *)p, len));
	if (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC))
		return field_json_array(ev, f, p, len, sb);
	return field_json_number(ev, f, p, sb);
}

static int fields_json_slow(const struct tv_event *ev, struct tv_strbuf *sb)
{
	struct tep_format_field *f;
	int ret = tv_strbuf_append_mem(sb, "{", 1);

	for (f = ev->format ? ev->format->format.fields : NULL; f && !ret; f = f->next) {
		if (f != ev->format->format.fields)
			ret = tv_strbuf_append_mem(sb, ",", 1);
		if (!ret)
			ret = tv_strbuf_append_json_string(sb, f->name, strlen(f->name));
		if (!ret)
			ret = tv_strbuf_append_mem(sb, ":", 1);
		if (!ret)
			ret = field_json(ev, f, sb);
	}
	return ret ? ret : tv_strbuf_append_mem(sb, "}", 1);
}

/*
 * The same output from a layout compiled once per event id: keys already
 * quoted, each field's kind decided, then bytes written straight into a
 * buffer reserved once per event.  This is the per-event hot path of
 * report --json and the Perfetto export.
 */
enum json_kind { JK_NUMBER, JK_SIGNED, JK_STRING, JK_ARRAY, JK_TAIL };

struct json_field {
	char key[80];		/* ,"name": */
	unsigned int key_len;
	enum json_kind kind;
	int offset, size, dynamic, relative;
	unsigned int elem;
};

struct json_layout {
	int nr;
	size_t keys_len;
	struct json_field f[];
};

void tv_json_layout_free(struct json_layout *l)
{
	free(l);
}

static enum json_kind json_kind_of(const struct tep_format_field *f)
{
	int text = (f->flags & TEP_FIELD_IS_STRING) || strstr(f->type, "char ") == f->type ||
		   strstr(f->type, "__data_loc char");

	if (!(f->flags & TEP_FIELD_IS_DYNAMIC) && (f->flags & TEP_FIELD_IS_ARRAY) &&
	    f->size == 0 && !f->next)
		return JK_TAIL;		/* as field_json(): the record's remaining bytes */
	if (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC))
		return text ? JK_STRING : JK_ARRAY;
	return (f->flags & TEP_FIELD_IS_SIGNED) ? JK_SIGNED : JK_NUMBER;
}

static struct json_layout *json_layout_compile(struct tep_event *event)
{
	struct tv_strbuf key = { 0 };
	struct json_layout *l;
	struct tep_format_field *f;
	int n = 0;

	for (f = event->format.fields; f; f = f->next)
		n++;
	l = calloc(1, sizeof(*l) + (size_t)n * sizeof(l->f[0]));
	if (!l)
		return NULL;
	for (f = event->format.fields; f; f = f->next, l->nr++) {
		struct json_field *jf = &l->f[l->nr];

		tv_strbuf_reset(&key);
		if (tv_strbuf_append_mem(&key, ",", f == event->format.fields ? 0 : 1) ||
		    tv_strbuf_append_json_string(&key, f->name, strlen(f->name)) ||
		    tv_strbuf_append_mem(&key, ":", 1) || key.len >= sizeof(jf->key)) {
			tv_strbuf_free(&key);
			free(l);
			return NULL;	/* the slow path handles odd names */
		}
		memcpy(jf->key, key.data, key.len);
		jf->key_len = (unsigned int)key.len;
		l->keys_len += key.len;
		jf->kind = json_kind_of(f);
		jf->offset = f->offset;
		jf->size = f->size;
		jf->dynamic = !!(f->flags & TEP_FIELD_IS_DYNAMIC);
		jf->relative = !!(f->flags & TEP_FIELD_IS_RELATIVE);
		jf->elem = f->elementsize && f->elementsize <= 8 ? f->elementsize : 1;
	}
	tv_strbuf_free(&key);
	return l;
}

static char *put_u64(char *out, uint64_t v)
{
	char tmp[24];
	int i = (int)sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(out, tmp + i, sizeof(tmp) - (size_t)i);
	return out + sizeof(tmp) - i;
}

static char *put_i64(char *out, int64_t v)
{
	if (v >= 0)
		return put_u64(out, (uint64_t)v);
	*out++ = '-';
	return put_u64(out, -(uint64_t)v);
}

/* Room for any value of a record of @size bytes: 21 characters per byte. */
static char *json_value(const struct tv_event *ev, const struct json_field *jf, char *out,
			struct tv_strbuf *sb)
{
	const unsigned char *data = ev->record->data, *p = data + jf->offset;
	unsigned int len = (unsigned int)jf->size;

	if (jf->dynamic) {
		unsigned int loc = (unsigned int)tep_read_number(ev->tep, p, 4);
		unsigned int off = (loc & 0xffff) + (jf->relative ? (unsigned int)(jf->offset + jf->size) : 0);

		len = loc >> 16;
		p = data + off;	/* in bounds: checked when the record was read */
	} else if (jf->kind == JK_TAIL) {
		len = ev->record->size > jf->offset ? (unsigned int)(ev->record->size - jf->offset) : 0;
	}
	switch (jf->kind) {
	case JK_NUMBER:
		return put_u64(out, tep_read_number(ev->tep, p, jf->size));
	case JK_SIGNED:
		return put_i64(out, sign_extend(tep_read_number(ev->tep, p, jf->size), jf->size));
	case JK_STRING:
		sb->len = (size_t)(out - sb->data);
		tv_strbuf_append_json_string(sb, (const char *)p, strnlen((const char *)p, len));
		return sb->data + sb->len;
	case JK_ARRAY:
	case JK_TAIL:
	default:
		*out++ = '[';
		for (unsigned int i = 0; i + jf->elem <= len; i += jf->elem) {
			if (i)
				*out++ = ',';
			out = put_u64(out, tep_read_number(ev->tep, p + i, (int)jf->elem));
		}
		*out++ = ']';
		return out;
	}
}

static struct json_layout *json_layout_of(const struct tv_event *ev)
{
	struct tv_domain *dom;
	struct event_bounds *b;

	if (!ev->domain_info || !ev->format)
		return NULL;
	dom = (struct tv_domain *)((char *)ev->domain_info - offsetof(struct tv_domain, info));
	b = tv_domain_bounds(dom, (unsigned int)ev->format->id & 0xffff);
	if (!b)
		return NULL;
	if (!b->json)
		b->json = json_layout_compile(ev->format);
	return b->json;
}

int tv_event_fields_json(const struct tv_event *ev, struct tv_strbuf *sb)
{
	const struct json_layout *l = json_layout_of(ev);
	char *out;

	if (!l)
		return fields_json_slow(ev, sb);
	/* Strings may escape a byte into 6; numbers take at most 21 per byte. */
	if (tv_strbuf_reserve(sb, 2 + l->keys_len + 23 * (size_t)l->nr +
				      21 * (size_t)ev->record->size))
		return -ENOMEM;
	out = sb->data + sb->len;
	*out++ = '{';
	for (int i = 0; i < l->nr; i++) {
		memcpy(out, l->f[i].key, l->f[i].key_len);
		out = json_value(ev, &l->f[i], out + l->f[i].key_len, sb);
	}
	*out++ = '}';
	*out = '\0';
	sb->len = (size_t)(out - sb->data);
	return 0;
}
