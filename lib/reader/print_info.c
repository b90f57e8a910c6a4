// SPDX-License-Identifier: LGPL-2.1
/*
 * An event's text, as its print format says: the same characters as
 * libtraceevent's tep_print_event(..., TEP_PRINT_INFO), an order of
 * magnitude faster.
 *
 * libtraceevent walks the print format's argument trees and calls
 * vsnprintf for every conversion of every event.  Here each event type's
 * print format is compiled once into a list of segments (literal text,
 * a number, a string) over small expression trees whose field offsets are
 * resolved, and numbers are formatted by hand where printf's rules are
 * simple (flags '-' and '0', a width).  The semantics are libtraceevent's,
 * quirks included (arithmetic on unsigned 64-bit values, typecasts that
 * only mask, __print_flags/__print_symbolic rules), because a report must
 * not change with the renderer.  Whatever is not compiled here - %p
 * conversions, arrays, bitmasks, helper functions, binary printk, events
 * with a handler other than ours - is printed by tep_print_event itself,
 * so the output never depends on what this file supports.
 * tests/unit/test_print_info.c checks both renderers give the same text on
 * every format of the committed samples and of the running kernel.
 *
 * Not thread-safe: the cache lives in the domain, used by one reader.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include <trace-seq.h>

#include "reader_internal.h"

#define MAX_EVENT_ID 65536
#define MAX_SEGMENTS 64

/* Where a field is in a record; for __data_loc/__rel_loc, its descriptor. */
struct field_loc {
	unsigned int offset, size;
	int relative;		/* __rel_loc: offsets from the end of the descriptor */
};

static struct field_loc loc_of(const struct tep_format_field *field)
{
	return (struct field_loc){ (unsigned int)field->offset, (unsigned int)field->size,
				   !!(field->flags & TEP_FIELD_IS_RELATIVE) };
}

enum num_kind { NUM_CONST, NUM_FIELD, NUM_DYN_LEN, NUM_MASK, NUM_COND, NUM_UNARY, NUM_BINARY };

struct num_expr {
	enum num_kind kind;
	char op[3];			/* NUM_UNARY / NUM_BINARY: the C operator */
	struct field_loc loc;		/* NUM_FIELD, NUM_DYN_LEN */
	uint64_t value;			/* NUM_CONST; NUM_MASK: the mask */
	struct num_expr *a, *b, *c;
};

struct flag_sym {
	int64_t value;			/* as libtraceevent's eval_flag() reads it */
	const char *str;
};

enum str_kind { STR_EMPTY, STR_LITERAL, STR_CHARS, STR_DYN, STR_SYMBOL, STR_FLAGS, STR_COND };

struct str_expr {
	enum str_kind kind;
	const char *literal;		/* STR_LITERAL; STR_FLAGS: the delimiter */
	struct field_loc loc;		/* STR_CHARS (size 0: to the end), STR_DYN */
	struct num_expr *num;		/* STR_SYMBOL, STR_FLAGS, STR_COND */
	struct flag_sym *syms;
	size_t nr_syms;
	struct str_expr *yes, *no;	/* STR_COND */
};

enum seg_kind { SEG_TEXT, SEG_NUM, SEG_STR };

/* One printf conversion, with what the hand formatter needs to know of it. */
struct conv {
	char spec[32];		/* as written in the print format, "%08llx" */
	int ls;			/* libtraceevent's length: -2 char ... 2 long long */
	int simple;		/* only '-', '0' and a width: formatted by hand */
	int left, zero, width;
	char type;		/* d i u x X o c s */
	int bits;		/* what printf's length modifier keeps: 8..64 */
};

struct segment {
	enum seg_kind kind;
	char *text;
	size_t text_len;
	struct conv conv;
	struct num_expr *num;
	struct str_expr *str;
};

struct tv_info_fmt {
	struct segment segs[MAX_SEGMENTS];
	int nr_segs;
	int userspace_exit;	/* kvm_userspace_exit: our own printer */
	unsigned int reason_off, reason_size, errno_off, errno_size;
	struct tv_strbuf exit_text[64];	/* its text by reason, errno 0 */
	/* Every node compiled for this event, freed together. */
	void **allocs;
	size_t nr_allocs;
};

struct tv_info_cache {
	struct tv_info_fmt **fmts[256];	/* by event id, pages of 256 made on use; &not_compiled if tep prints it */
	struct trace_seq seq;
};

static struct tv_info_fmt not_compiled;

static void *fmt_alloc(struct tv_info_fmt *f, size_t size)
{
	void **grown = realloc(f->allocs, (f->nr_allocs + 1) * sizeof(*grown));
	void *p;

	if (!grown)
		return NULL;
	f->allocs = grown;
	p = calloc(1, size);
	if (p)
		f->allocs[f->nr_allocs++] = p;
	return p;
}

static void fmt_free(struct tv_info_fmt *f)
{
	if (!f || f == &not_compiled)
		return;
	for (size_t i = 0; i < f->nr_allocs; i++)
		free(f->allocs[i]);
	for (size_t i = 0; i < sizeof(f->exit_text) / sizeof(f->exit_text[0]); i++)
		tv_strbuf_free(&f->exit_text[i]);
	free(f->allocs);
	free(f);
}

/* libtraceevent's eval_flag(): numbers, a few known names, else -1. */
static int64_t flag_value(const char *s)
{
	static const struct {
		const char *name;
		int64_t value;
	} known[] = {
		{ "HI_SOFTIRQ", 0 }, { "TIMER_SOFTIRQ", 1 }, { "NET_TX_SOFTIRQ", 2 },
		{ "NET_RX_SOFTIRQ", 3 }, { "BLOCK_SOFTIRQ", 4 }, { "IRQ_POLL_SOFTIRQ", 5 },
		{ "TASKLET_SOFTIRQ", 6 }, { "SCHED_SOFTIRQ", 7 }, { "HRTIMER_SOFTIRQ", 8 },
		{ "RCU_SOFTIRQ", 9 }, { "HRTIMER_NORESTART", 0 }, { "HRTIMER_RESTART", 1 },
	};

	if (isdigit((unsigned char)s[0]))
		return (int64_t)strtoull(s, NULL, 0);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].name, s))
			return known[i].value;
	return -1;
}

/* What libtraceevent's eval_type_str() keeps of a value cast to @type. */
static uint64_t cast_mask(const char *type)
{
	size_t len = strlen(type);

	if (!len || type[len - 1] == '*' || !strncmp(type, "struct", 6))
		return UINT64_MAX;
	if (!strncmp(type, "unsigned ", 9))
		type += 9;
	if (!strcmp(type, "u8") || !strcmp(type, "s8") || !strcmp(type, "char"))
		return 0xff;
	if (!strcmp(type, "u16") || !strcmp(type, "s16") || !strcmp(type, "short"))
		return 0xffff;
	if (!strcmp(type, "u32") || !strcmp(type, "s32") || !strcmp(type, "int"))
		return 0xffffffff;
	return UINT64_MAX;
}

static struct tep_format_field *arg_field(struct tep_event *event, struct tep_print_arg *arg)
{
	if (!arg->field.field)
		arg->field.field = tep_find_any_field(event, arg->field.name);
	return arg->field.field;
}

static const char *const known_ops[] = {
	"!", "~", "|", "||", "&", "&&", "<", "<<", "<=", ">", ">>", ">=",
	"==", "!=", "-", "+", "/", "%", "*",
};

static struct num_expr *compile_num(struct tv_info_fmt *f, struct tep_event *event,
				    struct tep_print_arg *arg)
{
	struct tep_format_field *field;
	struct num_expr *e;
	char *end;

	if (!arg)
		return NULL;
	e = fmt_alloc(f, sizeof(*e));
	if (!e)
		return NULL;
	switch (arg->type) {
	case TEP_PRINT_NULL:
		e->kind = NUM_CONST;
		return e;
	case TEP_PRINT_ATOM:
		e->kind = NUM_CONST;
		e->value = strtoull(arg->atom.atom, &end, 0);
		/* 0 from a name means a kernel symbol libtraceevent looks up. */
		if (!e->value && !isdigit((unsigned char)arg->atom.atom[0]))
			return NULL;
		return e;
	case TEP_PRINT_FIELD:
		field = arg_field(event, arg);
		if (!field)
			return NULL;
		e->kind = NUM_FIELD;
		e->loc = loc_of(field);
		return e;
	case TEP_PRINT_DYNAMIC_ARRAY_LEN:
		field = arg->dynarray.field;
		if (!field)
			return NULL;
		e->kind = NUM_DYN_LEN;
		e->loc = loc_of(field);
		return e;
	case TEP_PRINT_TYPE:
		e->kind = NUM_MASK;
		e->value = cast_mask(arg->typecast.type);
		e->a = compile_num(f, event, arg->typecast.item);
		return e->a ? e : NULL;
	case TEP_PRINT_OP:
		break;
	default:
		return NULL;	/* flags, symbols, arrays... as numbers: tep's business */
	}
	if (!strcmp(arg->op.op, "?")) {
		struct tep_print_arg *colon = arg->op.right;

		if (!colon || colon->type != TEP_PRINT_OP || strcmp(colon->op.op, ":"))
			return NULL;
		e->kind = NUM_COND;
		e->a = compile_num(f, event, arg->op.left);
		e->b = compile_num(f, event, colon->op.left);
		e->c = compile_num(f, event, colon->op.right);
		return e->a && e->b && e->c ? e : NULL;
	}
	for (size_t i = 0; i < sizeof(known_ops) / sizeof(known_ops[0]); i++) {
		if (strcmp(arg->op.op, known_ops[i]))
			continue;
		memcpy(e->op, known_ops[i], strlen(known_ops[i]) + 1);
		e->kind = (e->op[0] == '!' && !e->op[1]) || e->op[0] == '~' ? NUM_UNARY
									       : NUM_BINARY;
		/* libtraceevent evaluates both sides of every operator. */
		e->a = arg->op.left ? compile_num(f, event, arg->op.left) : fmt_alloc(f, sizeof(*e));
		e->b = compile_num(f, event, arg->op.right);
		return e->a && e->b ? e : NULL;
	}
	return NULL;	/* "[" and anything new */
}

static uint64_t read_number(const uint8_t *p, unsigned int size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	case 8:
		memcpy(&u64, p, 8);
		return u64;
	default:
		return 0;
	}
}

/* A __data_loc / __rel_loc field: offset and length of its data, or 0/0. */
static void dyn_location(const uint8_t *data, unsigned int rec_size, struct field_loc loc,
			 unsigned int *off, unsigned int *len)
{
	unsigned int field_off = loc.offset, field_size = loc.size;
	uint64_t v;
	unsigned int o, l;

	*off = *len = 0;
	if (field_off + field_size > rec_size)
		return;
	v = read_number(data + field_off, field_size);
	o = (unsigned int)(v & 0xffff);
	l = field_size == 2 ? rec_size - o : (unsigned int)((v >> 16) & 0xffff);
	*off = o > rec_size ? 0 : o;
	*len = o + l > rec_size ? 0 : l;
	if (loc.relative)
		*off += field_off + field_size;
}

static uint64_t binary_op(const char *op, uint64_t l, uint64_t r)
{
	switch (op[0]) {
	case '|':
		return op[1] ? (l || r) : (l | r);
	case '&':
		return op[1] ? (l && r) : (l & r);
	case '<':
		return op[1] == '<' ? l << (r & 63) : op[1] == '=' ? l <= r : l < r;
	case '>':
		return op[1] == '>' ? l >> (r & 63) : op[1] == '=' ? l >= r : l > r;
	case '=':
		return l == r;
	case '!':
		return l != r;
	case '-':
		return l - r;
	case '+':
		return l + r;
	case '*':
		return l * r;
	case '/':	/* libtraceevent would trap on 0; print 0 */
		return r ? l / r : 0;
	case '%':
		return r ? l % r : 0;
	default:
		return 0;
	}
}

static uint64_t eval_num(const struct num_expr *e, const uint8_t *data, unsigned int size)
{
	unsigned int off, len;

	switch (e->kind) {
	case NUM_CONST:
		return e->value;
	case NUM_FIELD:
		return e->loc.offset + e->loc.size > size ? 0
							     : read_number(data + e->loc.offset, e->loc.size);
	case NUM_DYN_LEN:
		dyn_location(data, size, e->loc, &off, &len);
		return len;
	case NUM_MASK:
		return eval_num(e->a, data, size) & e->value;
	case NUM_COND:
		return eval_num(e->a, data, size) ? eval_num(e->b, data, size)
						  : eval_num(e->c, data, size);
	case NUM_UNARY:
		(void)eval_num(e->a, data, size);
		return e->op[0] == '!' ? !eval_num(e->b, data, size) : ~eval_num(e->b, data, size);
	case NUM_BINARY:
		return binary_op(e->op, eval_num(e->a, data, size), eval_num(e->b, data, size));
	}
	return 0;
}

static int compile_syms(struct tv_info_fmt *f, struct str_expr *s, struct tep_print_flag_sym *list)
{
	size_t n = 0;

	for (struct tep_print_flag_sym *fs = list; fs; fs = fs->next)
		n++;
	s->syms = fmt_alloc(f, (n ? n : 1) * sizeof(*s->syms));
	if (!s->syms)
		return -ENOMEM;
	for (struct tep_print_flag_sym *fs = list; fs; fs = fs->next) {
		s->syms[s->nr_syms].value = flag_value(fs->value);
		s->syms[s->nr_syms++].str = fs->str;
	}
	return 0;
}

static struct str_expr *compile_str(struct tv_info_fmt *f, struct tep_event *event,
				    struct tep_print_arg *arg, int long_size)
{
	struct tep_format_field *field;
	struct str_expr *s = fmt_alloc(f, sizeof(*s));
	struct tep_print_arg *colon;

	if (!s || !arg)
		return NULL;
	switch (arg->type) {
	case TEP_PRINT_NULL:
	case TEP_PRINT_TYPE:	/* libtraceevent prints nothing for a cast string */
		s->kind = STR_EMPTY;
		return s;
	case TEP_PRINT_ATOM:
		s->kind = STR_LITERAL;
		s->literal = arg->atom.atom;
		return s;
	case TEP_PRINT_FIELD:
		field = arg_field(event, arg);
		/* A long-sized scalar is taken for a pointer into printk formats. */
		if (!field || (!(field->flags & TEP_FIELD_IS_ARRAY) && field->size == long_size))
			return NULL;
		s->kind = STR_CHARS;
		s->loc = loc_of(field);
		return s;
	case TEP_PRINT_STRING:
		field = arg->string.field ? arg->string.field
					  : tep_find_any_field(event, arg->string.string);
		if (!field)
			return NULL;
		s->kind = STR_DYN;
		s->loc = loc_of(field);
		return s;
	case TEP_PRINT_SYMBOL:
		s->kind = STR_SYMBOL;
		s->num = compile_num(f, event, arg->symbol.field);
		return s->num && !compile_syms(f, s, arg->symbol.symbols) ? s : NULL;
	case TEP_PRINT_FLAGS:
		s->kind = STR_FLAGS;
		s->literal = arg->flags.delim;
		s->num = compile_num(f, event, arg->flags.field);
		return s->num && !compile_syms(f, s, arg->flags.flags) ? s : NULL;
	case TEP_PRINT_OP:
		colon = arg->op.right;
		if (strcmp(arg->op.op, "?") || !colon || colon->type != TEP_PRINT_OP ||
		    strcmp(colon->op.op, ":"))
			return NULL;
		s->kind = STR_COND;
		s->num = compile_num(f, event, arg->op.left);
		s->yes = compile_str(f, event, colon->op.left, long_size);
		s->no = compile_str(f, event, colon->op.right, long_size);
		return s->num && s->yes && s->no ? s : NULL;
	default:
		return NULL;
	}
}

/*
 * Parses the conversion at @p (just after '%') as libtraceevent's
 * parse_arg_format() does; returns its length from '%', 0 if it is not one
 * compiled here.
 */
static size_t parse_conv(const char *p, struct conv *c)
{
	const char *start = p - 1;
	int h = 0, l = 0, other = 0, prec = 0;
	size_t len;

	c->ls = 0;
	for (; *p; p++) {
		switch (*p) {
		case 'h':
			c->ls--;
			h++;
			continue;
		case 'l':
			c->ls++;
			l++;
			continue;
		case 'L':
			c->ls = 2;
			other++;
			continue;
		case 'z':
		case 'Z':
			c->ls = 1;
			other++;
			continue;
		case '*':	/* libtraceevent 1.7 prints "%.*s" as is: its business */
			return 0;
		case '.':
			prec++;
			continue;
		case '#':
		case '+':
			other++;
			continue;
		case '-':
		case '0' ... '9':
			continue;
		case 'c': case 'd': case 'u': case 'i': case 'x': case 'X': case 'o': case 's':
			break;
		default:
			return 0;	/* %p..., or a character libtraceevent prints oddly */
		}
		break;
	}
	if (!*p || c->ls < -2 || c->ls > 2 || (h && (l || other)))
		return 0;
	len = (size_t)(p + 1 - start);
	if (len >= sizeof(c->spec))
		return 0;
	memcpy(c->spec, start, len);
	c->spec[len] = '\0';
	c->type = *p;
	c->bits = h >= 2 ? 8 : h ? 16 : (l || c->ls > 0) ? 64 : 32;
	if (c->type == 's')
		c->ls = 0;
	/* Hand-formatted: "%[-][0][width]" and d i u x X s, nothing else. */
	c->simple = !prec && !other && strchr("diuxXs", c->type);
	for (const char *q = start + 1; c->simple && q < p; q++) {
		if (*q == '-')
			c->left = 1;
		else if (*q == '0' && !c->width)
			c->zero = 1;
		else if (isdigit((unsigned char)*q))
			c->width = c->width * 10 + (*q - '0');
		else if (*q != 'h' && *q != 'l')
			c->simple = 0;
	}
	if (c->width > 64 || (c->type == 's' && c->zero))
		c->simple = 0;
	return len;
}

/* Literal text up to the next conversion, with libtraceevent's escapes. */
static size_t parse_text(struct tv_info_fmt *f, const char *p, struct segment *seg)
{
	const char *start = p;
	char *out = fmt_alloc(f, strlen(p) + 1);
	size_t n = 0;

	if (!out)
		return 0;
	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			out[n++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
		} else if (*p == '%') {
			if (p[1] != '%')
				break;
			out[n++] = '%';
			p++;
		} else {
			out[n++] = *p;
		}
	}
	seg->kind = SEG_TEXT;
	seg->text = out;
	seg->text_len = n;
	return (size_t)(p - start);
}

static int compile_userspace_exit(struct tv_info_fmt *f, struct tep_event *event)
{
	struct tep_format_field *reason = tep_find_field(event, "reason");
	struct tep_format_field *err = tep_find_field(event, "errno");

	if (!reason || !err)
		return -EINVAL;
	f->userspace_exit = 1;
	f->reason_off = (unsigned int)reason->offset;
	f->reason_size = (unsigned int)reason->size;
	f->errno_off = (unsigned int)err->offset;
	f->errno_size = (unsigned int)err->size;
	return 0;
}

static int compile_segments(struct tv_info_fmt *f, struct tep_event *event, int long_size)
{
	struct tep_print_arg *arg = event->print_fmt.args;
	const char *p = event->print_fmt.format;

	while (p && *p) {
		struct segment *seg;
		size_t n;

		if (f->nr_segs == MAX_SEGMENTS)
			return -E2BIG;
		seg = &f->segs[f->nr_segs++];
		if (*p != '%' || p[1] == '%') {
			n = parse_text(f, p, seg);
			if (!n)
				return -ENOMEM;
			p += n;
			continue;
		}
		n = parse_conv(p + 1, &seg->conv);
		if (!n || !arg)
			return -EINVAL;
		if (seg->conv.type == 's') {
			seg->kind = SEG_STR;
			seg->str = compile_str(f, event, arg, long_size);
		} else {
			seg->kind = SEG_NUM;
			seg->num = compile_num(f, event, arg);
		}
		if (!seg->str && !seg->num)
			return -EINVAL;
		arg = arg->next;
		p += n;
	}
	return 0;
}

/* Compiled form of @event, or &not_compiled when tep_print_event must print it. */
static struct tv_info_fmt *compile_event(struct tep_handle *tep, struct tep_event *event,
					 int long_size)
{
	const int tep_only = TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT | TEP_EVENT_FL_PRINTRAW |
			     TEP_EVENT_FL_ISFTRACE;
	struct tv_info_fmt *f;
	int ret;

	if ((event->flags & tep_only) || tep_is_file_bigendian(tep) != tep_is_local_bigendian(tep))
		return &not_compiled;
	if (event->handler && (event->flags & TEP_EVENT_FL_NOHANDLE) == 0 &&
	    event->handler != tv_domain_print_userspace_exit)
		return &not_compiled;
	f = calloc(1, sizeof(*f));
	if (!f)
		return &not_compiled;
	if (event->handler && !(event->flags & TEP_EVENT_FL_NOHANDLE))
		ret = compile_userspace_exit(f, event);
	else
		ret = compile_segments(f, event, long_size);
	if (ret) {
		fmt_free(f);
		return &not_compiled;
	}
	return f;
}

static const char hex_lower[] = "0123456789abcdef", hex_upper[] = "0123456789ABCDEF";

static int append_padded(struct tv_strbuf *sb, const struct conv *c, const char *s, size_t n)
{
	size_t pad = (size_t)c->width > n ? (size_t)c->width - n : 0;
	char *out;

	if (tv_strbuf_reserve(sb, n + pad))
		return -ENOMEM;
	out = sb->data + sb->len;
	if (!c->left) {
		memset(out, ' ', pad);
		out += pad;
	}
	memcpy(out, s, n);
	out += n;
	if (c->left) {
		memset(out, ' ', pad);
		out += pad;
	}
	sb->len = (size_t)(out - sb->data);
	return 0;
}

/* Digits of @v in @base 10 or 16 at @out; the end. */
static char *put_digits(char *out, uint64_t v, char type)
{
	const char *hex = type == 'X' ? hex_upper : hex_lower;
	char tmp[16];
	int i = (int)sizeof(tmp);

	if (type != 'x' && type != 'X')
		return tv_put_u64(out, v, 1);
	do {
		tmp[--i] = hex[v & 15];
		v >>= 4;
	} while (v);
	memcpy(out, tmp + i, sizeof(tmp) - (size_t)i);
	return out + sizeof(tmp) - i;
}

/* printf's result for a "%[-][0][width](d|i|u|x|X)" of @v, by hand. */
static int append_simple_number(struct tv_strbuf *sb, const struct conv *c, uint64_t v)
{
	char digits[24], *out;
	int neg = 0, n, pad;

	if (c->bits < 64)
		v &= (1ULL << c->bits) - 1;
	if ((c->type == 'd' || c->type == 'i') && c->bits < 64 && (v >> (c->bits - 1)) & 1)
		v |= ~0ULL << c->bits;	/* sign-extend */
	if ((c->type == 'd' || c->type == 'i') && (int64_t)v < 0) {
		neg = 1;
		v = -v;
	}
	n = (int)(put_digits(digits, v, c->type) - digits);
	pad = c->width > n + neg ? c->width - n - neg : 0;
	if (tv_strbuf_reserve(sb, (size_t)(pad + neg + n)))
		return -ENOMEM;
	out = sb->data + sb->len;
	if (pad && !c->left && !c->zero) {
		memset(out, ' ', (size_t)pad);
		out += pad;
	}
	if (neg)
		*out++ = '-';
	if (pad && c->zero && !c->left) {
		memset(out, '0', (size_t)pad);
		out += pad;
	}
	memcpy(out, digits, (size_t)n);
	out += n;
	if (pad && c->left) {
		memset(out, ' ', (size_t)pad);
		out += pad;
	}
	sb->len = (size_t)(out - sb->data);
	sb->data[sb->len] = '\0';
	return 0;
}

/* Exactly what libtraceevent passes to printf for this length. */
static int append_printf_number(struct tv_strbuf *sb, const struct conv *c, uint64_t v)
{
	switch (c->ls) {
	case -2:
		return tv_strbuf_append(sb, c->spec, (char)v);
	case -1:
		return tv_strbuf_append(sb, c->spec, (short)v);
	case 0:
		return tv_strbuf_append(sb, c->spec, (int)v);
	case 1:
		return tv_strbuf_append(sb, c->spec, (long)v);
	default:
		return tv_strbuf_append(sb, c->spec, (long long)v);
	}
}

static int append_conv_string(struct tv_strbuf *sb, const struct conv *c, const char *s, size_t n)
{
	char *z;
	int ret;

	if (c->simple)
		return append_padded(sb, c, s, n);
	z = strndup(s, n);
	if (!z)
		return -ENOMEM;
	ret = tv_strbuf_append(sb, c->spec, z);
	free(z);
	return ret;
}

static int append_hex_ll(struct tv_strbuf *sb, uint64_t v)
{
	static const struct conv hex = { .type = 'x', .bits = 64, .simple = 1 };

	return tv_strbuf_append_mem(sb, "0x", 2) ?: append_simple_number(sb, &hex, v);
}

static int append_str(struct tv_strbuf *sb, const struct conv *c,
		      const struct str_expr *s, const uint8_t *data, unsigned int size)
{
	unsigned int off, n;
	int64_t v;
	int printed = 0, ret = 0;

	switch (s->kind) {
	case STR_EMPTY:
		return 0;
	case STR_LITERAL:
		return append_conv_string(sb, c, s->literal, strlen(s->literal));
	case STR_CHARS:
		if (s->loc.offset >= size)
			return append_conv_string(sb, c, "", 0);
		n = s->loc.size && s->loc.offset + s->loc.size <= size ? s->loc.size
								     : size - s->loc.offset;
		return append_conv_string(sb, c, (const char *)data + s->loc.offset,
					  strnlen((const char *)data + s->loc.offset, n));
	case STR_DYN:
		dyn_location(data, size, s->loc, &off, &n);
		if (!n || off >= size)
			return 0;
		return append_conv_string(sb, c, (const char *)data + off,
					  strnlen((const char *)data + off, size - off));
	case STR_COND:
		return append_str(sb, c, eval_num(s->num, data, size) ? s->yes : s->no, data, size);
	case STR_SYMBOL:
		v = (int64_t)eval_num(s->num, data, size);
		for (size_t i = 0; i < s->nr_syms; i++)
			if (s->syms[i].value == v)
				return append_conv_string(sb, c, s->syms[i].str,
							  strlen(s->syms[i].str));
		return append_hex_ll(sb, (uint64_t)v);
	case STR_FLAGS:
		v = (int64_t)eval_num(s->num, data, size);
		for (size_t i = 0; i < s->nr_syms && !ret; i++) {
			int64_t fv = s->syms[i].value;

			if (!v && fv < 0) {
				ret = append_conv_string(sb, c, s->syms[i].str,
							 strlen(s->syms[i].str));
				break;
			}
			if (fv > 0 && (v & fv) == fv) {
				if (printed && s->literal)
					ret = tv_strbuf_append_mem(sb, s->literal, strlen(s->literal));
				ret = ret ?: append_conv_string(sb, c, s->syms[i].str,
								strlen(s->syms[i].str));
				printed = 1;
				v &= ~fv;
			}
		}
		if (!ret && v) {
			if (printed && s->literal)
				ret = tv_strbuf_append_mem(sb, s->literal, strlen(s->literal));
			ret = ret ?: append_hex_ll(sb, (uint64_t)v);
		}
		return ret;
	}
	return 0;
}

/* Once per KVM_RUN: the few texts there are are made once. */
static int append_userspace_exit(struct tv_strbuf *sb, struct tv_info_fmt *f,
				 const uint8_t *data, unsigned int size)
{
	uint64_t reason, err;
	struct tv_strbuf *text;

	if (f->reason_off + f->reason_size > size || f->errno_off + f->errno_size > size)
		return 0;
	reason = read_number(data + f->reason_off, f->reason_size);
	err = read_number(data + f->errno_off, f->errno_size);
	if (err || reason >= sizeof(f->exit_text) / sizeof(f->exit_text[0]))
		return tv_append_userspace_exit(sb, reason, err);
	text = &f->exit_text[reason];
	if (!text->len && tv_append_userspace_exit(text, reason, 0))
		return -ENOMEM;
	return tv_strbuf_append_mem(sb, text->data, text->len);
}

static int append_compiled(struct tv_strbuf *sb, struct tv_info_fmt *f,
			   const uint8_t *data, unsigned int size)
{
	int ret = 0;

	if (f->userspace_exit)
		return append_userspace_exit(sb, f, data, size);
	for (int i = 0; i < f->nr_segs && !ret; i++) {
		const struct segment *seg = &f->segs[i];

		if (seg->kind == SEG_TEXT)
			ret = tv_strbuf_append_mem(sb, seg->text, seg->text_len);
		else if (seg->kind == SEG_STR)
			ret = append_str(sb, &seg->conv, seg->str, data, size);
		else if (seg->conv.simple)
			ret = append_simple_number(sb, &seg->conv, eval_num(seg->num, data, size));
		else
			ret = append_printf_number(sb, &seg->conv, eval_num(seg->num, data, size));
	}
	return ret;
}

static int append_by_tep(struct tv_info_cache *cache, const struct tv_event *ev,
			 struct tv_strbuf *sb)
{
	trace_seq_reset(&cache->seq);
	tep_print_event(ev->tep, &cache->seq, ev->record, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&cache->seq);
	return tv_strbuf_append_mem(sb, cache->seq.buffer, cache->seq.len);
}

static struct tv_info_cache *domain_cache(struct tv_domain *dom)
{
	if (dom->info_cache)
		return dom->info_cache;
	dom->info_cache = calloc(1, sizeof(*dom->info_cache));
	if (!dom->info_cache)
		return NULL;
	trace_seq_init(&dom->info_cache->seq);
	return dom->info_cache;
}

/* @id's slot (0 <= @id < MAX_EVENT_ID), its page made on first use: memory follows the ids used. */
static struct tv_info_fmt **fmt_slot(struct tv_info_cache *cache, int id)
{
	struct tv_info_fmt ***page = &cache->fmts[id >> 8];

	if (!*page)
		*page = calloc(256, sizeof(**page));
	return *page ? &(*page)[id & 0xff] : NULL;
}

int tv_event_append_info(const struct tv_event *ev, struct tv_strbuf *sb)
{
	struct tv_domain *dom = container_of(ev->domain_info, struct tv_domain, info);
	struct tv_info_cache *cache;
	struct tv_info_fmt **slot;
	int id;

	if (!ev->format || !ev->record)
		return 0;
	cache = domain_cache(dom);
	id = ev->format->id;
	if (!cache)
		return -ENOMEM;
	if (id < 0 || id >= MAX_EVENT_ID)
		return append_by_tep(cache, ev, sb);
	slot = fmt_slot(cache, id);
	if (!slot)
		return -ENOMEM;
	if (!*slot)
		*slot = compile_event(ev->tep, ev->format, dom->long_size);
	if (*slot == &not_compiled)
		return append_by_tep(cache, ev, sb);
	return append_compiled(sb, *slot, ev->record->data, (unsigned int)ev->record->size);
}

int tv_event_info_compiled(const struct tv_event *ev)
{
	struct tv_domain *dom = container_of(ev->domain_info, struct tv_domain, info);
	struct tv_info_cache *cache = domain_cache(dom);
	int id = ev->format ? ev->format->id : -1;
	struct tv_info_fmt **slot;

	if (!cache || id < 0 || id >= MAX_EVENT_ID || !(slot = fmt_slot(cache, id)))
		return 0;
	if (!*slot)
		*slot = compile_event(ev->tep, ev->format, dom->long_size);
	return *slot != &not_compiled;
}

void tv_info_cache_free(struct tv_info_cache *cache)
{
	if (!cache)
		return;
	for (int p = 0; p < 256; p++) {
		for (int i = 0; cache->fmts[p] && i < 256; i++)
			fmt_free(cache->fmts[p][i]);
		free(cache->fmts[p]);
	}
	trace_seq_destroy(&cache->seq);
	free(cache);
}
