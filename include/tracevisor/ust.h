/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * libtracevisor-ust — static tracepoints for applications (tracevisor-ust(3)).
 *
 * A provider is declared once, in a header of the application or library:
 *
 *   TV_UST_ENUM(demo, state, { 0, "idle" }, { 1, "busy" })
 *   TV_UST_EVENT(demo, tick,
 *           TV_UST_ARGS(int thread, uint64_t seq, const char *who),
 *           TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
 *                         tv_ust_field_integer(uint64_t, seq, seq),
 *                         tv_ust_field_string(who, who),
 *                         tv_ust_field_bytes(raw, &seq, sizeof(seq)),
 *                         tv_ust_field_enum(demo, state, int, st, seq & 1)))
 *
 * and an event is emitted with tv_ust_trace(demo, tick, t, i, "me").
 * Every translation unit that includes the provider header gets its own
 * copy of the event's descriptor, placed in the ELF section
 * "tv_ust_tracepoints" of its executable or shared object; a constructor
 * (defined below, once per object through the hidden section bounds)
 * registers that section with the library and a destructor unregisters it
 * (exit, dlclose).  No special linker or compiler support is needed beyond
 * GNU C (section attributes, asm goto).
 *
 * The layout each event gets in the trace (an ftrace format file) and the
 * shared-memory contract with consumers are in lib/ust/ust_abi.h and
 * doc/ust-format.md.
 *
 * Cost:
 * - disabled: on x86_64 the call site is one 5-byte nop (a static branch,
 *   patched to a jmp when the event is enabled), nothing is loaded; on
 *   other architectures one load and a predicted branch.
 * - enabled: one call; no system call, no lock, no atomic read-modify-write
 *   on the reservation (rseq, per-CPU buffers), the record written once in
 *   place, one release store and one atomic add to commit it.
 *
 * Concurrency contract:
 * - tv_ust_trace() may be called from any thread, at any time, including
 *   signal handlers (even one interrupting a tv_ust_trace() of the same
 *   thread) and before main() (constructors); it never blocks except in
 *   blocking mode when its buffer is full (bounded, see tv_ust_config; a
 *   handler that interrupted an emit never waits: the last sub-buffer of
 *   each buffer is kept for it).
 * - Field expressions are evaluated only when the event is enabled, maybe
 *   more than once (size, then copy): keep them free of side effects.
 * - tv_ust_start(), tv_ust_enable(), tv_ust_disable(), tv_ust_flush() and
 *   (un)registration may be called from any thread; they serialise on one
 *   mutex of the library and never run inside a signal handler.
 * - The registry (events, modules) is read lock-free under RCU
 *   (liburcu-bp) and updated under that mutex; a module unregistered by
 *   dlclose is freed after a grace period.
 * - After fork() the child does not trace (its buffers would be its
 *   parent's): events are dropped silently there.
 */
#ifndef TRACEVISOR_UST_H
#define TRACEVISOR_UST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

/* ------------------------------------------------------------ descriptors */

enum tv_ust_field_kind {
	TV_UST_FIELD_INTEGER,
	TV_UST_FIELD_STRING,	/* __data_loc char[] */
	TV_UST_FIELD_BYTES,	/* __data_loc unsigned char[] */
	TV_UST_FIELD_ENUM,	/* an integer printed with its labels */
};

struct tv_ust_enum_label {
	int64_t value;
	const char *label;
};

struct tv_ust_field {
	const char *name;
	const char *type;	/* C type of an integer field, as written */
	uint16_t offset;	/* in the payload (ftrace offset - 8) */
	uint16_t size;
	uint8_t kind;		/* enum tv_ust_field_kind */
	uint8_t is_signed;
	uint16_t nr_labels;
	const struct tv_ust_enum_label *labels;
};

/* One per event per translation unit; the registry owns @id and @priv. */
struct tv_ust_tracepoint {
	const char *provider;
	const char *name;
	const struct tv_ust_field *fields;
	uint32_t nr_fields;
	uint32_t fixed_size;	/* bytes of the fixed part of the payload */
	int enabled;		/* the load-and-branch (non-x86_64) state */
	uint16_t id;		/* event id in the process (lib/ust/ust_abi.h) */
	void *priv;		/* the registry's event */
};

/* Where a record being written lives (between reserve and commit). */
struct tv_ust_ctx {
	void *buf;
	char *rec;
	uint32_t size;
	uint32_t index;
	uint64_t word;
};

/* ------------------------------------------------------------------- API */

/* Settings of the process's buffers; 0 (or -1 for the enums) = default. */
struct tv_ust_config {
	int clock;		/* enum tv_ust_clock (lib/ust/ust_abi.h), -1: env or mono */
	int mode;		/* enum tv_ust_mode, -1: env or discard */
	uint32_t subbuf_size;	/* power of two 4096 .. 1 MiB; 0: env or 64 KiB */
	uint32_t nr_subbufs;	/* power of two >= 2; 0: env or 8 */
	int per_thread;		/* 1: per-thread slots even when rseq works */
	int block_timeout_ms;	/* blocking mode: longest wait per full buffer; 0: 1000 */
};

/**
 * tv_ust_start - create the process's buffers (a memfd) if not yet done
 * @cfg: settings, or NULL for the defaults (environment, lib/ust/ust_abi.h)
 *
 * Buffers are created once per process and kept until it ends, so a
 * consumer (or the test that called this) can read them, even after a
 * crash.  Called again, it returns 0 and changes nothing.
 * Return: 0, or -errno (-EINVAL for a bad size, -ENOMEM, memfd errors).
 * Threads: any thread; not from a signal handler.
 */
int tv_ust_start(const struct tv_ust_config *cfg);

/**
 * tv_ust_memfd - the buffers' memfd (owned by the library: do not close)
 * Return: the descriptor, or -ENOENT before tv_ust_start().
 */
int tv_ust_memfd(void);

/**
 * tv_ust_enable - enable the events whose "PROVIDER:EVENT" matches @glob
 * @glob: fnmatch(3) pattern; also applies to events registered later
 *
 * Creates the buffers with the defaults if tv_ust_start() was not called.
 * Return: the number of registered events @glob matches, or -errno
 * (-EPERM when a call site's code could not be patched).
 * Threads: any thread; not from a signal handler.
 */
int tv_ust_enable(const char *glob);

/**
 * tv_ust_disable - disable the events whose name matches @glob
 * Return: the number of registered events matched, or -errno.
 */
int tv_ust_disable(const char *glob);

/**
 * tv_ust_event_enabled - whether the event @name ("PROVIDER:EVENT") is on
 * Return: 1, 0, or -ENOENT when no such event is registered.  Lock-free.
 */
int tv_ust_event_enabled(const char *name);

/**
 * tv_ust_flush - wait until every reservation made so far is committed
 * @timeout_ms: longest wait
 * Return: 0, -ETIMEDOUT, or -ENOENT without buffers.
 */
int tv_ust_flush(int timeout_ms);

typedef void (*tv_ust_log_fn)(const char *msg, void *ctx);

/**
 * tv_ust_log_set_callback - where the library's messages go (one line each)
 * @fn: NULL (the default) drops them, unless TRACEVISOR_UST_LOG=1 in the
 *      environment sends them to stderr
 */
void tv_ust_log_set_callback(tv_ust_log_fn fn, void *ctx);

/* Used by the macros below: not to be called directly. */
int tv_ust_module_register(struct tv_ust_tracepoint *const *start,
			   struct tv_ust_tracepoint *const *stop,
			   const void *jump_start, const void *jump_stop);
void tv_ust_module_unregister(struct tv_ust_tracepoint *const *start);
void *tv_ust_reserve(struct tv_ust_ctx *ctx, const struct tv_ust_tracepoint *tp,
		     size_t payload);
void tv_ust_commit(struct tv_ust_ctx *ctx);

#pragma GCC visibility pop

/* ----------------------------------------------------------------- macros */

#define TV_UST_ARGS(...) (__VA_ARGS__)
#define TV_UST_FIELDS(...) __VA_ARGS__

/* Each field is a tuple (KIND, C type, name, expression, extra). */
#define tv_ust_field_integer(type, name, expr) (INTEGER, type, name, expr, 0)
#define tv_ust_field_string(name, expr) (STRING, const char *, name, expr, 0)
#define tv_ust_field_bytes(name, ptr, len) (BYTES, const void *, name, ptr, len)
#define tv_ust_field_enum(prov, enm, type, name, expr) \
	(ENUM, type, name, expr, tv_ust__enum_##prov##_##enm)

#define TV_UST_ENUM(prov, enm, ...) \
	static const struct tv_ust_enum_label tv_ust__enum_##prov##_##enm[] = { __VA_ARGS__ };

/* Longest string or byte array field (longer ones are cut). */
#define TV_UST_DYN_MAX 4096

/* for-each over up to 16 fields: M applied to every tuple */
/* (GNU C: ", ##" drops the comma when there is no field, so the count is 0) */
#define TV_UST__N(...) TV_UST__N_(_, ##__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TV_UST__N_(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, ...) n
#define TV_UST__CAT(a, b) TV_UST__CAT_(a, b)
#define TV_UST__CAT_(a, b) a##b
#define TV_UST__EACH(M, P, ...) TV_UST__CAT(TV_UST__E, TV_UST__N(__VA_ARGS__))(M, P, __VA_ARGS__)
#define TV_UST__E0(M, P, ...)
#define TV_UST__E1(M, P, a) M(P, TV_UST__UNP a)
#define TV_UST__E2(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E1(M, P, __VA_ARGS__)
#define TV_UST__E3(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E2(M, P, __VA_ARGS__)
#define TV_UST__E4(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E3(M, P, __VA_ARGS__)
#define TV_UST__E5(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E4(M, P, __VA_ARGS__)
#define TV_UST__E6(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E5(M, P, __VA_ARGS__)
#define TV_UST__E7(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E6(M, P, __VA_ARGS__)
#define TV_UST__E8(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E7(M, P, __VA_ARGS__)
#define TV_UST__E9(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E8(M, P, __VA_ARGS__)
#define TV_UST__E10(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E9(M, P, __VA_ARGS__)
#define TV_UST__E11(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E10(M, P, __VA_ARGS__)
#define TV_UST__E12(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E11(M, P, __VA_ARGS__)
#define TV_UST__E13(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E12(M, P, __VA_ARGS__)
#define TV_UST__E14(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E13(M, P, __VA_ARGS__)
#define TV_UST__E15(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E14(M, P, __VA_ARGS__)
#define TV_UST__E16(M, P, a, ...) M(P, TV_UST__UNP a) TV_UST__E15(M, P, __VA_ARGS__)
#define TV_UST__UNP(...) __VA_ARGS__
/* Apply M to an unpacked tuple: M(P, KIND, type, name, expr, extra). */
#define TV_UST__APPLY(M, ...) M(__VA_ARGS__)

/* the payload's fixed part: integers in place, dynamic fields as data_loc */
#define TV_UST__MEMBER(P, ...) TV_UST__APPLY(TV_UST__MEMBER_, P, __VA_ARGS__)
#define TV_UST__MEMBER_(P, k, t, n, e, x) TV_UST__MEMBER_##k(t, n)
#define TV_UST__MEMBER_INTEGER(t, n) t n;
#define TV_UST__MEMBER_ENUM(t, n) t n;
#define TV_UST__MEMBER_STRING(t, n) uint32_t n;
#define TV_UST__MEMBER_BYTES(t, n) uint32_t n;

/* the descriptors (the format text is built from them at registration) */
#define TV_UST__DESC(P, ...) TV_UST__APPLY(TV_UST__DESC_, P, __VA_ARGS__)
#define TV_UST__DESC_(P, k, t, n, e, x) TV_UST__DESC_##k(P, t, n, x)
#define TV_UST__DESC_INTEGER(P, t, n, x) \
	{ #n, #t, offsetof(struct P, n), sizeof(t), TV_UST_FIELD_INTEGER, !((t)-1 > 0), 0, NULL },
#define TV_UST__DESC_ENUM(P, t, n, x) \
	{ #n, #t, offsetof(struct P, n), sizeof(t), TV_UST_FIELD_ENUM, !((t)-1 > 0), \
	  sizeof(x) / sizeof(x[0]), x },
#define TV_UST__DESC_STRING(P, t, n, x) \
	{ #n, "char", offsetof(struct P, n), 4, TV_UST_FIELD_STRING, 1, 0, NULL },
#define TV_UST__DESC_BYTES(P, t, n, x) \
	{ #n, "unsigned char", offsetof(struct P, n), 4, TV_UST_FIELD_BYTES, 0, 0, NULL },

/* bytes of the dynamic part */
#define TV_UST__DYN(P, ...) TV_UST__APPLY(TV_UST__DYN_, P, __VA_ARGS__)
#define TV_UST__DYN_(P, k, t, n, e, x) TV_UST__DYN_##k(e, x)
#define TV_UST__DYN_INTEGER(e, x)
#define TV_UST__DYN_ENUM(e, x)
#define TV_UST__DYN_STRING(e, x) + tv_ust__str_len(e)
#define TV_UST__DYN_BYTES(e, x) + tv_ust__bytes_len(x)

/* writing the fields into the reserved record, once */
#define TV_UST__WRITE(P, ...) TV_UST__APPLY(TV_UST__WRITE_, P, __VA_ARGS__)
#define TV_UST__WRITE_(P, k, t, n, e, x) TV_UST__WRITE_##k(t, n, e, x)
#define TV_UST__WRITE_INTEGER(t, n, e, x) tv_ust__p->n = (e);
#define TV_UST__WRITE_ENUM(t, n, e, x) tv_ust__p->n = (e);
#define TV_UST__WRITE_STRING(t, n, e, x) \
	tv_ust__p->n = tv_ust__put(tv_ust__p, &tv_ust__dyn, (e), tv_ust__str_len(e), 1);
#define TV_UST__WRITE_BYTES(t, n, e, x) \
	tv_ust__p->n = tv_ust__put(tv_ust__p, &tv_ust__dyn, (e), tv_ust__bytes_len(x), 0);

static inline size_t tv_ust__str_len(const char *s)
{
	size_t n = s ? strnlen(s, TV_UST_DYN_MAX - 1) : 0;

	return n + 1;
}

static inline size_t tv_ust__bytes_len(size_t n)
{
	return n < TV_UST_DYN_MAX ? n : TV_UST_DYN_MAX;
}

/*
 * Copy one dynamic field after the fixed part; the data_loc word says where
 * (low 16 bits: offset from the ftrace event start, which is 8 bytes into
 * the record, i.e. 8 before the payload; high 16 bits: length).
 */
static inline uint32_t tv_ust__put(void *payload, char **dyn, const void *src, size_t len,
				   int nul)
{
	uint32_t off = (uint32_t)(*dyn - (char *)payload) + 8;

	if (src)
		memcpy(*dyn, src, nul ? len - 1 : len);
	else
		memset(*dyn, 0, len);
	if (nul)
		(*dyn)[len - 1] = '\0';
	*dyn += len;
	return (uint32_t)len << 16 | off;
}

/*
 * The static branch.  x86_64: a 5-byte nop, placed so that it does not cross
 * an 8-byte boundary (one aligned 8-byte store replaces it whole, so a
 * thread running the site sees either the nop or the jmp, never a mix),
 * and an entry {site, target, key} in the section "tv_ust_jump" that the
 * library patches.  Elsewhere: a relaxed load of tp->enabled.
 */
#if defined(__x86_64__) && !defined(TV_UST_NO_STATIC_BRANCH)
#define TV_UST__BRANCH(tp, on)                                                   \
	__asm__ goto(".balign 8\n\t"                                             \
		     "1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                 \
		     ".pushsection tv_ust_jump, \"aw\"\n\t"                      \
		     ".balign 8\n\t"                                             \
		     ".quad 1b, %l[" #on "], %c0\n\t"                            \
		     ".popsection"                                               \
		     : : "i"(tp) : : on)
#define TV_UST_STATIC_BRANCH 1
#else
#define TV_UST__BRANCH(tp, on)                                                   \
	do {                                                                     \
		if (__builtin_expect(__atomic_load_n(&(tp)->enabled, __ATOMIC_RELAXED), 0)) \
			goto on;                                                 \
	} while (0)
#define TV_UST_STATIC_BRANCH 0
#endif

/* A jump entry as the assembler writes it. */
struct tv_ust_jump_entry {
	uintptr_t site;
	uintptr_t target;
	struct tv_ust_tracepoint *key;
};

#define TV_UST_EVENT(prov, ev, args, fields)                                     \
	struct tv_ust__payload_##prov##_##ev {                                   \
		TV_UST__EACH(TV_UST__MEMBER, tv_ust__payload_##prov##_##ev, fields) \
	};                                                                       \
	static const struct tv_ust_field tv_ust__fields_##prov##_##ev[] = {      \
		TV_UST__EACH(TV_UST__DESC, tv_ust__payload_##prov##_##ev, fields) \
		{ NULL, NULL, 0, 0, 0, 0, 0, NULL } };                          \
	static struct tv_ust_tracepoint tv_ust__tp_##prov##_##ev                  \
		__attribute__((aligned(8))) = {                                  \
		#prov, #ev, tv_ust__fields_##prov##_##ev,                        \
		sizeof(tv_ust__fields_##prov##_##ev) / sizeof(struct tv_ust_field) - 1, \
		sizeof(struct tv_ust__payload_##prov##_##ev), 0, 0, NULL };      \
	static struct tv_ust_tracepoint *tv_ust__tpp_##prov##_##ev               \
		__attribute__((used, section("tv_ust_tracepoints"), aligned(8))) = \
		&tv_ust__tp_##prov##_##ev;                                       \
	static void __attribute__((noinline, cold, unused))                     \
	tv_ust__emit_##prov##_##ev args                                          \
	{                                                                        \
		struct tv_ust_ctx tv_ust__ctx;                                   \
		struct tv_ust__payload_##prov##_##ev *tv_ust__p;                 \
		char *tv_ust__rec, *tv_ust__dyn;                                 \
		size_t tv_ust__len = sizeof(*tv_ust__p)                          \
			TV_UST__EACH(TV_UST__DYN, tv_ust__payload_##prov##_##ev, fields); \
		tv_ust__rec = (char *)tv_ust_reserve(&tv_ust__ctx, &tv_ust__tp_##prov##_##ev, \
						     tv_ust__len);               \
		if (!tv_ust__rec)                                                \
			return;                                                  \
		tv_ust__p = (struct tv_ust__payload_##prov##_##ev *)(tv_ust__rec + 16); \
		tv_ust__dyn = (char *)(tv_ust__p + 1);                           \
		(void)tv_ust__dyn;                                               \
		TV_UST__EACH(TV_UST__WRITE, tv_ust__payload_##prov##_##ev, fields) \
		tv_ust_commit(&tv_ust__ctx);                                     \
	}

/* GCC places a cold label's code out of line; clang has no label attribute. */
#if defined(__clang__)
#define TV_UST__COLD_LABEL
#else
#define TV_UST__COLD_LABEL __attribute__((cold))
#endif

/* Emit the event PROV:EV with the arguments of its TV_UST_ARGS. */
#define tv_ust_trace(prov, ev, ...)                                              \
	do {                                                                     \
		__label__ tv_ust__on, tv_ust__off;                               \
		TV_UST__BRANCH(&tv_ust__tp_##prov##_##ev, tv_ust__on);           \
		goto tv_ust__off;                                                \
	tv_ust__on: TV_UST__COLD_LABEL;                                          \
		tv_ust__emit_##prov##_##ev(__VA_ARGS__);                         \
	tv_ust__off:;                                                            \
	} while (0)

/*
 * Registration of this object's (executable's or shared library's) events.
 * The section bounds are hidden, so each object sees its own; they are weak
 * so an object without events links.  Every translation unit that includes
 * this header registers the same section: the library counts references.
 */
extern struct tv_ust_tracepoint *const __start_tv_ust_tracepoints[]
	__attribute__((weak, visibility("hidden")));
extern struct tv_ust_tracepoint *const __stop_tv_ust_tracepoints[]
	__attribute__((weak, visibility("hidden")));
extern const struct tv_ust_jump_entry __start_tv_ust_jump[]
	__attribute__((weak, visibility("hidden")));
extern const struct tv_ust_jump_entry __stop_tv_ust_jump[]
	__attribute__((weak, visibility("hidden")));

#ifndef TV_UST_NO_MODULE	/* defined by the library itself */
static void __attribute__((constructor, unused)) tv_ust__module_ctor(void)
{
	if ((const void *)__start_tv_ust_tracepoints != (const void *)__stop_tv_ust_tracepoints)
		tv_ust_module_register(__start_tv_ust_tracepoints, __stop_tv_ust_tracepoints,
				       __start_tv_ust_jump, __stop_tv_ust_jump);
}

static void __attribute__((destructor, unused)) tv_ust__module_dtor(void)
{
	if ((const void *)__start_tv_ust_tracepoints != (const void *)__stop_tv_ust_tracepoints)
		tv_ust_module_unregister(__start_tv_ust_tracepoints);
}
#endif

#ifdef __cplusplus
}
#endif

#endif
