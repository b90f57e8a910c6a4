// SPDX-License-Identifier: LGPL-2.1
/* Field access on decoded events; records were bounds-checked on reading. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <event-parse.h>

#include "internal.h"

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

int tv_event_fields_json(const struct tv_event *ev, struct tv_strbuf *sb)
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
