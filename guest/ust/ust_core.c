// SPDX-License-Identifier: LGPL-2.1
/*
 * The buffers and the fast path: reserve (rseq per-CPU, or compare-and-swap
 * on per-thread slots), write in place, commit (lib/ust/ust_abi.h's protocol).
 *
 * Why a reservation is correct and in time order within a buffer:
 * the writer reads @reserve, then the clock, then stores reserve+size only
 * if @reserve still holds what it read (rseq: a compare and store that the
 * kernel restarts if the thread is preempted, migrated or signalled in
 * between; slots: a compare-and-swap).  So no record was reserved in that
 * buffer between the writer's read and its store: every record before it
 * was reserved, hence timed, before the read, and every record after it
 * reads @reserve, hence the clock, after the store.  A signal handler that
 * interrupts a writer and emits moves @reserve, so the interrupted writer's
 * store fails (or is aborted by the kernel inside the critical section) and
 * it starts again with a new time stamp: both records are kept, in order.
 * The time stamp is read between the load and the store that the rseq
 * critical section validates, which is what "inside" has to mean for a
 * clock read that is a vDSO call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>
#include <urcu-bp.h>

#include "ust_internal.h"

struct ust_state *tv_ust_state;

/*
 * Records are a multiple of 16 bytes (lib/ust/ust_abi.h allows any multiple of
 * 8): then every position in a sub-buffer leaves room for a whole padding
 * header, which an 8-byte tail would not.
 */
#define UST_RECORD_UNIT 16

/* This thread's id, cached (initial-exec: no lock on first access). */
static __thread int ust_tid __attribute__((tls_model("initial-exec")));

static int ust_gettid(void)
{
	int t = ust_tid;

	if (__builtin_expect(t == 0, 0)) {
		t = (int)syscall(SYS_gettid);
		ust_tid = t;
	}
	return t;
}

/*
 * Reservations of this thread not yet committed: more than zero when a
 * signal handler emits while the code it interrupted is between reserve
 * and commit.  Such a nested writer must not wait for room (blocking
 * mode): the record it interrupted may be the one the consumer is waiting
 * for, and it cannot be committed before the handler returns.  So in
 * blocking mode the last sub-buffer of every buffer is kept for nested
 * writers: the others wait while less than that is free (ust_room()), and
 * a nested writer is dropped (and counted) only when a whole sub-buffer of
 * nested events is not enough.
 */
static __thread int ust_pending __attribute__((tls_model("initial-exec")));

/*
 * fork(): the registry's mutex is taken around it, so the child does not
 * inherit it held by a thread that does not exist there; the child's cached
 * id is its parent thread's, and the buffers are the parent's: the child
 * does not trace into them (tv_ust_start() in the child makes its own).
 */
static void ust_atfork_prepare(void)
{
	pthread_mutex_lock(&ust_lock);
}

static void ust_atfork_parent(void)
{
	pthread_mutex_unlock(&ust_lock);
}

static void ust_atfork_child(void)
{
	pthread_mutex_unlock(&ust_lock);
	ust_tid = 0;
	ust_pending = 0;
	rcu_assign_pointer(tv_ust_state, NULL);
}

static inline uint64_t ust_clock(int clock)
{
	if (clock == TV_UST_CLOCK_X86_TSC) {
#if defined(__x86_64__)
		uint32_t lo, hi;

		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return (uint64_t)hi << 32 | lo;
#endif
	}
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/*
 * The rseq critical section: if this thread still runs on @cpu and *@v
 * still holds @expect, store @mark at *@slot (the record's header word:
 * TV_UST_ID_UNCOMMITTED) and then @newv at *@v, the commit of the
 * sequence.  0: stored; 1: *@v had changed; -1: aborted (not on @cpu, or
 * preempted/migrated/signalled inside).  An abort between the two stores
 * leaves @mark beyond @reserve, where nothing reads it and the next
 * writer of that place overwrites it.  The descriptor (start, post-commit
 * offset, abort address) goes in __rseq_cs; the abort handler is out of
 * line, after the signature the kernel checks.
 */
static inline __attribute__((always_inline)) int
ust_rseq_reserve(struct rseq *rs, uint64_t *v, uint64_t expect, uint64_t newv, uint32_t cpu,
		 uint64_t *slot, uint64_t mark)
{
	__asm__ goto(".pushsection __rseq_cs, \"aw\"\n\t"
		     ".balign 32\n\t"
		     "3:\n\t"
		     ".long 0x0, 0x0\n\t"
		     ".quad 1f, (2f - 1f), 4f\n\t"
		     ".popsection\n\t"
		     ".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"
		     ".quad 3b\n\t"
		     ".popsection\n\t"
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq %%rax, 8(%[rs])\n\t"
		     "1:\n\t"
		     "cmpl %[cpu], 4(%[rs])\n\t"
		     "jnz %l[abort]\n\t"
		     "cmpq %[expect], %[v]\n\t"
		     "jnz %l[changed]\n\t"
		     "movq %[mark], (%[slot])\n\t"
		     "movq %[newv], %[v]\n\t"
		     "2:\n\t"
		     ".pushsection __rseq_failure, \"ax\"\n\t"
		     ".byte 0x0f, 0xb9, 0x3d\n\t"
		     ".long 0x53053053\n\t"	/* RSEQ_SIG, as glibc registered it */
		     "4:\n\t"
		     "jmp %l[abort]\n\t"
		     ".popsection"
		     : /* no outputs: asm goto */
		     : [rs] "r"(rs), [cpu] "r"(cpu), [v] "m"(*v), [expect] "r"(expect),
		       [newv] "r"(newv), [slot] "r"(slot), [mark] "r"(mark)
		     : "memory", "cc", "rax"
		     : abort, changed);
	return 0;
abort:
	return -1;
changed:
	return 1;
}
#define UST_HAVE_RSEQ 1
#else
#define UST_HAVE_RSEQ 0
#endif

static inline struct rseq *ust_rseq_area(void)
{
	return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

/* Whether rseq is registered for this process (glibc 2.35+ does it). */
static bool ust_rseq_usable(void)
{
	if (!UST_HAVE_RSEQ || __rseq_size < 20)
		return false;
	return (int32_t)__atomic_load_n(&ust_rseq_area()->cpu_id, __ATOMIC_RELAXED) >= 0;
}

static void ust_count_lost(struct tv_ust_buf_ctl *b)
{
	__atomic_fetch_add(&b->lost, 1, __ATOMIC_RELAXED);
}

/* Bytes a writer may fill beyond @consumed (see ust_pending). */
static inline uint64_t ust_room(const struct ust_state *st)
{
	if (st->mode == TV_UST_MODE_BLOCKING && !ust_pending)
		return st->buf_size - st->subbuf_size;
	return st->buf_size;
}

/*
 * The buffer is full for a record ending at @end: discard, or (blocking)
 * wait for the consumer at most block_timeout_ms.  Return: true to try
 * again, false when the event is dropped (and counted).
 */
static bool ust_full(struct ust_state *st, uint32_t i, struct tv_ust_buf_ctl *b, uint64_t old,
		     uint64_t end)
{
	/* acquire: as in tv_ust_reserve (the zeroed sub-buffers before the position) */
	uint64_t consumed = __atomic_load_n(&b->consumed, __ATOMIC_ACQUIRE);
	struct timespec nap = { 0, 20000 }, t0, t;

	if (st->mode != TV_UST_MODE_BLOCKING || ust_pending > 0 ||
	    __atomic_load_n(&st->stalled[i], __ATOMIC_RELAXED) == consumed) {
		ust_count_lost(b);
		return false;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);	/* async-signal-safe, as nanosleep */
	for (;;) {
		uint64_t c = __atomic_load_n(&b->consumed, __ATOMIC_ACQUIRE);	/* as above */

		/* room now, or @old is stale (another writer moved on): try again */
		if ((int64_t)(end - c) <= (int64_t)ust_room(st) ||
		    __atomic_load_n(&b->reserve, __ATOMIC_RELAXED) != old)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    st->block_timeout_ms) {
			/* no progress for that long: stop waiting until there is */
			__atomic_store_n(&st->stalled[i], c, __ATOMIC_RELAXED);
			ust_count_lost(b);
			return false;
		}
		nanosleep(&nap, NULL);	/* async-signal-safe */
	}
}

/*
 * Padding records from @pos to the end of its sub-buffer, committed.
 * Records are multiples of 16 bytes (UST_RECORD_UNIT), so a tail always
 * holds whole headers; pieces of at most 0xfff0 (<= TV_UST_PADDING_MAX).
 */
static void ust_pad(struct ust_state *st, struct tv_ust_buf_ctl *b, uint64_t pos, uint64_t len,
		    uint64_t ts, int tid)
{
	char *data = ust_buf_data(st, b);
	uint32_t index = (uint32_t)(pos / st->subbuf_size) & (st->nr_subbufs - 1);
	uint64_t left = len;

	while (left) {
		uint64_t n = left > 0xfff0 ? 0xfff0 : left;
		char *rec = data + (pos & (st->buf_size - 1));

		*(uint64_t *)rec = ts;
		/* release: the time stamp before the header word, as for a record */
		__atomic_store_n((uint64_t *)(rec + 8),
				 TV_UST_ID_PADDING | n << 16 | (uint64_t)(uint32_t)tid << 32,
				 __ATOMIC_RELEASE);
		pos += n;
		left -= n;
	}
	/* release: the padding headers above before the count the consumer trusts */
	__atomic_fetch_add(&b->commit[index], len, __ATOMIC_RELEASE);
}

void *tv_ust_reserve(struct tv_ust_ctx *ctx, const struct tv_ust_tracepoint *tp, size_t payload)
{
	struct ust_state *st = rcu_dereference(tv_ust_state);
	uint64_t size = (16 + payload + UST_RECORD_UNIT - 1) & ~(uint64_t)(UST_RECORD_UNIT - 1);
	struct tv_ust_buf_ctl *b;
	uint64_t old, start, end, ts, pad, mark;
	char *data;
	uint32_t i;
	int tid;

	if (__builtin_expect(!st, 0))
		return NULL;
	tid = ust_gettid();
	for (;;) {
		struct rseq *rs = NULL;

		if (st->per_thread) {
			i = (uint32_t)tid % st->nr_bufs;
		} else {
			rs = ust_rseq_area();
			i = __atomic_load_n(&rs->cpu_id_start, __ATOMIC_RELAXED);
			/*
			 * A thread without rseq (made by a raw clone(), or whose
			 * registration failed) has cpu_id < 0: the critical section
			 * would abort forever.  Its events are dropped and counted.
			 */
			if (__builtin_expect(i >= st->nr_bufs ||
						     (int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED) < 0, 0)) {
				ust_count_lost(ust_buf(st, 0));
				return NULL;
			}
		}
		b = ust_buf(st, i);
		if (__builtin_expect(size > st->max_record, 0)) {
			ust_count_lost(b);
			return NULL;
		}
		old = __atomic_load_n(&b->reserve, __ATOMIC_RELAXED);
		ts = ust_clock(st->clock);
		pad = 0;
		if ((old & (st->subbuf_size - 1)) + size > st->subbuf_size)
			pad = st->subbuf_size - (old & (st->subbuf_size - 1));
		start = old + pad;
		end = start + size;
		/*
		 * acquire: the consumer zeroed what it released before @consumed
		 * says so.  Signed: with a stale @old (another writer reserved
		 * since), @consumed may already be beyond @end; the store below
		 * then fails and the writer tries again.
		 */
		if (st->mode != TV_UST_MODE_OVERWRITE &&
		    (int64_t)(end - __atomic_load_n(&b->consumed, __ATOMIC_ACQUIRE)) >
			    (int64_t)ust_room(st)) {
			if (!ust_full(st, i, b, old, end))
				return NULL;
			continue;
		}
		data = ust_buf_data(st, b);
		mark = TV_UST_ID_UNCOMMITTED | size << 16 | (uint64_t)(uint32_t)tid << 32;
#if UST_HAVE_RSEQ
		if (!st->per_thread) {
			if (ust_rseq_reserve(rs, &b->reserve, old, end, i,
					     (uint64_t *)(data + (start & (st->buf_size - 1)) + 8), mark) == 0)
				break;
			continue;
		}
#endif
		if (__atomic_compare_exchange_n(&b->reserve, &old, end, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			/* a crash before this store leaves a zero word: recovery stops there */
			__atomic_store_n((uint64_t *)(data + (start & (st->buf_size - 1)) + 8), mark,
					 __ATOMIC_RELAXED);
			break;
		}
	}
	ust_pending++;	/* a handler interrupting from here on must not wait */
	__asm__ __volatile__("" ::: "memory");	/* compiler: count before the writes it covers */
	if (pad)
		ust_pad(st, b, old, pad, ts, tid);
	ctx->buf = b;
	ctx->rec = data + (start & (st->buf_size - 1));
	ctx->size = (uint32_t)size;
	ctx->index = (uint32_t)(start / st->subbuf_size) & (st->nr_subbufs - 1);
	ctx->word = tp->id | size << 16 | (uint64_t)(uint32_t)tid << 32;
	*(uint64_t *)ctx->rec = ts;
	return ctx->rec;
}

void tv_ust_commit(struct tv_ust_ctx *ctx)
{
	struct tv_ust_buf_ctl *b = ctx->buf;

	/* release: the time stamp and payload before the header word (crash recovery) */
	__atomic_store_n((uint64_t *)(ctx->rec + 8), ctx->word, __ATOMIC_RELEASE);
	/* release: the whole record before the count that completes its sub-buffer */
	__atomic_fetch_add(&b->commit[ctx->index], ctx->size, __ATOMIC_RELEASE);
	__asm__ __volatile__("" ::: "memory");	/* compiler: the commit before the count drops */
	ust_pending--;
}

/* ----------------------------------------------------------------- setup */

static int ust_env_u32(const char *name, uint32_t *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 0);
	if (errno || *end || n > UINT32_MAX) {
		ust_log("Bad value in the environment: %s=\"%s\"", name, v);
		return -EINVAL;
	}
	*out = (uint32_t)n;
	return 0;
}

/* The defaults: the environment (lib/ust/ust_abi.h's names), then the ABI's. */
int ust_defaults(struct tv_ust_config *cfg)
{
	const char *v;
	int ret = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->clock = TV_UST_CLOCK_MONO;
	cfg->mode = TV_UST_MODE_DISCARD;
	v = getenv(TV_UST_CLOCK_ENV);
	if (v && !strcmp(v, "x86-tsc"))
		cfg->clock = TV_UST_CLOCK_X86_TSC;
	else if (v && *v && strcmp(v, "mono")) {
		ust_log("Bad clock in the environment: %s=\"%s\" (mono or x86-tsc)", TV_UST_CLOCK_ENV, v);
		ret = -EINVAL;
	}
	v = getenv(TV_UST_MODE_ENV);
	if (v && !strcmp(v, "blocking"))
		cfg->mode = TV_UST_MODE_BLOCKING;
	else if (v && !strcmp(v, "overwrite"))
		cfg->mode = TV_UST_MODE_OVERWRITE;
	else if (v && *v && strcmp(v, "discard")) {
		ust_log("Bad mode in the environment: %s=\"%s\" (discard, blocking or overwrite)",
			TV_UST_MODE_ENV, v);
		ret = -EINVAL;
	}
	cfg->subbuf_size = TV_UST_SUBBUF_DEFAULT;
	cfg->nr_subbufs = TV_UST_NSUBBUF_DEFAULT;
	if (ust_env_u32(TV_UST_SUBBUF_ENV, &cfg->subbuf_size) ||
	    ust_env_u32(TV_UST_NSUBBUF_ENV, &cfg->nr_subbufs))
		ret = -EINVAL;
	v = getenv("TRACEVISOR_UST_PER_THREAD");
	cfg->per_thread = v && !strcmp(v, "1");
	cfg->block_timeout_ms = 1000;
	return ret;
}

static bool ust_pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

static uint64_t ust_round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

/* Create the buffers (under ust_lock, once). */
int ust_start_locked(const struct tv_ust_config *user)
{
	struct tv_ust_config cfg;
	struct tv_ust_shm_header *h;
	struct ust_state *st;
	uint64_t meta_cap = 1 << 20, data_off, stride, size;
	uint32_t nr;
	int fd, ret;

	if (tv_ust_state)
		return 0;
	ust_defaults(&cfg);	/* a bad environment value keeps the ABI's default */
	if (user) {
		if (user->clock >= 0)
			cfg.clock = user->clock;
		if (user->mode >= 0)
			cfg.mode = user->mode;
		if (user->subbuf_size)
			cfg.subbuf_size = user->subbuf_size;
		if (user->nr_subbufs)
			cfg.nr_subbufs = user->nr_subbufs;
		if (user->per_thread)
			cfg.per_thread = 1;
		if (user->block_timeout_ms > 0)
			cfg.block_timeout_ms = user->block_timeout_ms;
	}
	if (!ust_pow2(cfg.subbuf_size) || cfg.subbuf_size < 4096 || cfg.subbuf_size > (1u << 20) ||
	    !ust_pow2(cfg.nr_subbufs) || cfg.nr_subbufs < 2 || cfg.nr_subbufs > 4096 ||
	    cfg.clock < 0 || cfg.clock > TV_UST_CLOCK_X86_TSC || cfg.mode < 0 ||
	    cfg.mode > TV_UST_MODE_OVERWRITE) {
		ust_log("Bad buffer settings: subbuf_size=%u nr_subbufs=%u clock=%d mode=%d",
			cfg.subbuf_size, cfg.nr_subbufs, cfg.clock, cfg.mode);
		return -EINVAL;
	}
	if (!cfg.per_thread && !ust_rseq_usable())
		cfg.per_thread = 1;	/* no rseq here: per-thread slots */
	nr = cfg.per_thread ? 16 : (uint32_t)get_nprocs_conf();
	data_off = ust_round_up(sizeof(struct tv_ust_buf_ctl) + 8ull * cfg.nr_subbufs, 4096);
	stride = data_off + (uint64_t)cfg.nr_subbufs * cfg.subbuf_size;
	size = 4096 + meta_cap + nr * stride;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->stalled = malloc(nr * sizeof(*st->stalled));
	/* sealable: a consumer seals it against shrinking (lib/ust/ust_abi.h) */
	fd = memfd_create("tracevisor-ust", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (!st->stalled || fd < 0) {
		ret = fd < 0 ? -errno : -ENOMEM;
		ust_log("Cannot create the trace buffers: errno=%d (%s)", -ret, strerror(-ret));
		goto fail;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		ust_log("Cannot size the trace buffers: size=%llu, errno=%d (%s)",
			(unsigned long long)size, -ret, strerror(-ret));
		goto fail;
	}
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
	st->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (st->base == MAP_FAILED) {
		ret = -errno;
		ust_log("Cannot map the trace buffers: errno=%d (%s)", -ret, strerror(-ret));
		goto fail;
	}
	st->memfd = fd;
	h = st->hdr = (struct tv_ust_shm_header *)st->base;
	h->magic = TV_UST_MAGIC;
	h->version = TV_UST_VERSION;
	h->header_size = sizeof(*h);
	h->nr_bufs = nr;
	h->subbuf_size = cfg.subbuf_size;
	h->nr_subbufs = cfg.nr_subbufs;
	h->mode = (uint32_t)cfg.mode;
	h->clock = (uint32_t)cfg.clock;
	h->pid = getpid();
	h->per_thread = cfg.per_thread;
	h->meta_offset = 4096;
	h->meta_capacity = meta_cap;
	h->bufs_offset = 4096 + meta_cap;
	h->buf_stride = stride;
	h->data_offset = data_off;
	h->shm_size = size;
	prctl(PR_GET_NAME, h->comm, 0, 0, 0);
	st->nr_bufs = nr;
	st->subbuf_size = cfg.subbuf_size;
	st->nr_subbufs = cfg.nr_subbufs;
	st->buf_size = (uint64_t)cfg.nr_subbufs * cfg.subbuf_size;
	st->max_record = cfg.subbuf_size < 0xfff0 ? cfg.subbuf_size : 0xfff0;
	st->mode = cfg.mode;
	st->clock = cfg.clock;
	st->per_thread = cfg.per_thread;
	st->block_timeout_ms = cfg.block_timeout_ms;
	for (uint32_t i = 0; i < nr; i++) {
		st->stalled[i] = UINT64_MAX;
		ust_buf(st, i)->cpu = cfg.per_thread ? 0 : i;
	}
	ret = ust_meta_append_all(st);
	if (ret < 0)
		goto fail;
	/* publish: every field above before the pointer the fast path loads */
	rcu_assign_pointer(tv_ust_state, st);
	return 0;
fail:
	if (st->base && st->base != MAP_FAILED)
		munmap(st->base, size);
	if (fd >= 0)
		close(fd);
	free(st->stalled);
	free(st);
	return ret;
}

int tv_ust_start(const struct tv_ust_config *cfg)
{
	int ret;

	ust_registry_init();
	pthread_mutex_lock(&ust_lock);
	ret = ust_start_locked(cfg);
	pthread_mutex_unlock(&ust_lock);
	return ret;
}

int tv_ust_memfd(void)
{
	struct ust_state *st = rcu_dereference(tv_ust_state);

	return st ? st->memfd : -ENOENT;
}

/*
 * Everything reserved in buffer @b is committed: each sub-buffer from the
 * oldest one still held to the current one has its count at the bytes
 * reserved in it (commit[index] of lap L counts L full sub-buffers before).
 */
static bool ust_buf_quiet(const struct ust_state *st, struct tv_ust_buf_ctl *b)
{
	/* acquire (all three): a count read after the position it is compared with */
	uint64_t r = __atomic_load_n(&b->reserve, __ATOMIC_ACQUIRE);
	uint64_t c = __atomic_load_n(&b->consumed, __ATOMIC_ACQUIRE);
	uint64_t last = r ? (r - 1) / st->subbuf_size : 0, first = c / st->subbuf_size;

	if (!r)
		return true;
	if (st->mode == TV_UST_MODE_OVERWRITE || last - first >= st->nr_subbufs)
		first = last + 1 >= st->nr_subbufs ? last + 1 - st->nr_subbufs : 0;
	for (uint64_t sub = first; sub <= last; sub++) {
		uint64_t end = (sub + 1) * st->subbuf_size < r ? (sub + 1) * st->subbuf_size : r;
		uint64_t want = (sub / st->nr_subbufs) * st->subbuf_size + (end - sub * st->subbuf_size);
		uint32_t index = (uint32_t)sub & (st->nr_subbufs - 1);

		if (__atomic_load_n(&b->commit[index], __ATOMIC_ACQUIRE) != want)
			return false;
	}
	return true;
}

int tv_ust_flush(int timeout_ms)
{
	struct ust_state *st = rcu_dereference(tv_ust_state);
	struct timespec nap = { 0, 100000 };

	if (!st)
		return -ENOENT;
	for (long waited = 0;; waited += 100) {
		uint32_t quiet = 0;

		for (uint32_t i = 0; i < st->nr_bufs; i++)
			quiet += ust_buf_quiet(st, ust_buf(st, i));
		if (quiet == st->nr_bufs)
			return 0;
		if (waited >= (long)timeout_ms * 1000)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
	}
}

/* Registered before any module's constructor can emit (library constructor). */
__attribute__((constructor(101))) static void ust_core_init(void)
{
	syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	pthread_atfork(ust_atfork_prepare, ust_atfork_parent, ust_atfork_child);
	ust_registry_init();
}
