// SPDX-License-Identifier: GPL-2.0
/*
 * libtracevisor-ust's buffers, read by the in-test consumer (ust_consumer.h):
 * - blocking mode, per-CPU (rseq) and per-thread slots: worker threads and
 *   signal handlers interrupting them emit at once; every (thread, seq) is
 *   there exactly once and in order per thread, nothing lost;
 * - discard mode with small buffers: recorded + lost == emitted, exactly;
 * - overwrite mode: the complete sub-buffers kept are the last ones, gap-free;
 * - records of every size (strings, byte arrays, padding), blocking, exact;
 * - a reservation never committed is skipped by recovery, what follows kept;
 * - with glibc's rseq registration off, per-thread slots by themselves.
 * Each case runs in a child process: a process has one set of buffers.
 */
#include "ust_test_common.h"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <tracevisor/ust.h>

TV_UST_EVENT(t, ev,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))

TV_UST_EVENT(t, sig,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))

TV_UST_EVENT(t, var,
	TV_UST_ARGS(int thread, uint64_t seq, const char *text, const void *raw, size_t rawlen),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq),
		      tv_ust_field_string(text, text),
		      tv_ust_field_bytes(raw, raw, rawlen)))

#define THREADS 4

static uint64_t n_per_thread;
static pthread_t workers[THREADS];
static uint64_t sig_count[THREADS];
static volatile int workers_done, consumer_stop;
static __thread int my_index = -1;
static __thread uint64_t my_sigs;
static __thread volatile sig_atomic_t in_emit;	/* the worker is inside tv_ust_trace() */
static uint64_t nested;	/* handler events emitted while their thread was inside one */

static void on_usr1(int sig)
{
	(void)sig;
	if (my_index < 0)
		return;
	if (in_emit)
		__atomic_fetch_add(&nested, 1, __ATOMIC_RELAXED);
	tv_ust_trace(t, sig, my_index, my_sigs++);
}

static void *worker(void *arg)
{
	sigset_t usr1;

	my_index = (int)(intptr_t)arg;
	for (uint64_t i = 0; i < n_per_thread; i++) {
		in_emit = 1;
		tv_ust_trace(t, ev, my_index, i);
		in_emit = 0;
	}
	/* no handler runs after the count is taken */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	sig_count[my_index] = my_sigs;
	return NULL;
}

static void *signaller(void *arg)
{
	struct timespec nap = { 0, 10000 };
	unsigned int k = 0;

	(void)arg;
	while (!workers_done) {
		pthread_kill(workers[k++ % THREADS], SIGUSR1);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

struct consumer {
	struct ustc c;
	struct ust_test_log log;
	useconds_t period;
};

static void *consumer_run(void *arg)
{
	struct consumer *co = arg;

	while (!consumer_stop) {
		if (!ustc_poll(&co->c, ust_test_collect, &co->log))
			usleep(co->period);
	}
	return NULL;
}

/* Threads and signal handlers at once, with a consumer reading meanwhile. */
static int expect_slots = -1;	/* what the header must say; -1: what was asked */

static int exact_run(int per_thread, int mode, uint32_t subbuf, uint32_t nr_subbufs, uint64_t n,
		     useconds_t period, uint64_t *lost_out, struct consumer *co)
{
	int want_slots = expect_slots >= 0 ? expect_slots : per_thread;

	struct tv_ust_config cfg = { TV_UST_CLOCK_MONO, mode, subbuf, nr_subbufs, per_thread, 10000 };
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	pthread_t cons, sigt;

	n_per_thread = n;
	sigaction(SIGUSR1, &sa, NULL);
	TV_CHECK(tv_ust_start(&cfg) == 0, "tv_ust_start");
	TV_CHECK(tv_ust_enable("t:[es]*") == 2, "enable t:[es]* matches t:ev and t:sig");
	TV_CHECK(ustc_map(&co->c, tv_ust_memfd()) == 0, "map the memfd");
	TV_CHECK(co->c.h->per_thread == (uint32_t)want_slots, "per_thread=%u wanted %d",
		 co->c.h->per_thread, want_slots);
	co->period = period;
	pthread_create(&cons, NULL, consumer_run, co);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&workers[i], NULL, worker, (void *)(intptr_t)i);
	pthread_create(&sigt, NULL, signaller, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(workers[i], NULL);
	workers_done = 1;
	pthread_join(sigt, NULL);
	TV_CHECK(tv_ust_flush(1000) == 0, "flush");
	consumer_stop = 1;
	pthread_join(cons, NULL);
	ustc_recover(&co->c, ust_test_collect, &co->log);	/* the incomplete sub-buffers */
	*lost_out = ustc_lost(&co->c);
	TV_CHECK(co->c.bad == 0, "%d malformed records", co->c.bad);
	TV_CHECK(co->c.uncommitted == 0, "%llu uncommitted records after a flush",
		 (unsigned long long)co->c.uncommitted);
	return 0;
}

/*
 * Blocking: nothing lost, from the threads or from the signal handlers
 * that interrupt them (also in the middle of an emit: ust_core.c keeps the
 * last sub-buffer for such nested writers); every (thread, seq) once and
 * in order per thread, for both events.
 */
static int check_exact(int per_thread)
{
	struct consumer co = { 0 };
	uint64_t count[THREADS], lost, sigs = 0;
	uint64_t first[THREADS] = { 0 };
	const uint64_t n = 200000;

	exact_run(per_thread, TV_UST_MODE_BLOCKING, 16384, 4, n, 50, &lost, &co);
	TV_CHECK(lost == 0, "blocking mode lost %llu", (unsigned long long)lost);
	TV_CHECK(ust_test_check_order(&co.log, tv_ust__tp_t_ev.id, THREADS, first, count, false) == 0,
		 "t:ev out of order");
	for (int i = 0; i < THREADS; i++)
		TV_CHECK(count[i] == n, "thread %d: %llu of %llu events", i,
			 (unsigned long long)count[i], (unsigned long long)n);
	TV_CHECK(ust_test_check_order(&co.log, tv_ust__tp_t_sig.id, THREADS, first, count, false) == 0,
		 "t:sig out of order");
	for (int i = 0; i < THREADS; i++) {
		TV_CHECK(count[i] == sig_count[i], "thread %d: %llu of %llu signal events", i,
			 (unsigned long long)count[i], (unsigned long long)sig_count[i]);
		sigs += sig_count[i];
	}
	TV_CHECK(sigs > 100 && nested > 10,
		 "only %llu signal events, %llu of them inside an emit: the handler case is not exercised",
		 (unsigned long long)sigs, (unsigned long long)nested);
	printf("blocking (%s): %llu thread events and %llu from signal handlers (%llu interrupting an "
	       "emit), each once and in order per thread, %llu lost\n",
	       co.c.h->per_thread ? "per-thread slots" : "rseq per-CPU", (unsigned long long)(n * THREADS),
	       (unsigned long long)sigs, (unsigned long long)nested, (unsigned long long)lost);
	return tv_test_failed;
}

static int check_exact_rseq(void)
{
	return check_exact(0);
}

static int check_exact_slots(void)
{
	return check_exact(1);
}

/* Discard: 8 KiB per CPU and a slow consumer; every event recorded or counted. */
static int check_discard(void)
{
	struct consumer co = { 0 };
	uint64_t lost, count[THREADS], sigs = 0, n = 100000;

	exact_run(0, TV_UST_MODE_DISCARD, 4096, 2, n, 2000, &lost, &co);
	for (int i = 0; i < THREADS; i++)
		sigs += sig_count[i];
	TV_CHECK(co.c.records + lost == n * THREADS + sigs,
		 "recorded %llu + lost %llu != emitted %llu", (unsigned long long)co.c.records,
		 (unsigned long long)lost, (unsigned long long)(n * THREADS + sigs));
	TV_CHECK(lost > 0, "nothing lost: discard not exercised");
	TV_CHECK(co.c.records > 0, "nothing recorded");
	/* what was kept is still in order per thread (gaps are the losses) */
	TV_CHECK(ust_test_check_order(&co.log, tv_ust__tp_t_ev.id, THREADS, NULL, count, true) == 0,
		 "discard: t:ev repeated or out of order");
	printf("discard: emitted %llu, recorded %llu + lost %llu\n",
	       (unsigned long long)(n * THREADS + sigs), (unsigned long long)co.c.records,
	       (unsigned long long)lost);
	return tv_test_failed;
}

/* Overwrite: one thread on CPU 0, no consumer; the kept sub-buffers end with the last event. */
static int check_overwrite(void)
{
	struct tv_ust_config cfg = { TV_UST_CLOCK_MONO, TV_UST_MODE_OVERWRITE, 4096, 4, 0, 0 };
	struct ust_test_log log = { 0 };
	struct ustc c;
	cpu_set_t one;
	const uint64_t n = 100000;
	uint64_t r, sb, last, prev = 0;
	struct tv_ust_buf_ctl *b;
	int bad = 0;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	TV_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0, "pin to CPU 0");
	TV_CHECK(tv_ust_start(&cfg) == 0, "start");
	TV_CHECK(tv_ust_enable("t:ev") == 1, "enable t:ev");
	for (uint64_t i = 0; i < n; i++)
		tv_ust_trace(t, ev, 0, i);
	TV_CHECK(tv_ust_flush(1000) == 0, "flush");
	TV_CHECK(ustc_map(&c, tv_ust_memfd()) == 0, "map");
	b = ustc_buf(&c, 0);
	r = b->reserve;
	sb = c.h->subbuf_size;
	last = (r - 1) / sb;
	/* oldest kept to newest: the nr_subbufs sub-buffers ending at reserve */
	for (uint64_t sub = last + 1 - c.h->nr_subbufs; sub <= last; sub++) {
		uint32_t index = (uint32_t)(sub % c.h->nr_subbufs);
		uint64_t lim = sub == last ? r - sub * sb : sb;

		ustc_walk(&c, 0, (char *)b + c.h->data_offset + index * sb, (uint32_t)lim, sub == last,
			  ust_test_collect, &log);
	}
	for (size_t i = 0; i < log.n; i++) {
		if (i && log.recs[i].seq != prev + 1 && bad++ < 3)
			fprintf(stderr, "overwrite: seq %llu after %llu\n",
				(unsigned long long)log.recs[i].seq, (unsigned long long)prev);
		prev = log.recs[i].seq;
	}
	TV_CHECK(bad == 0, "overwrite kept a non-contiguous window");
	TV_CHECK(log.n > 0 && prev == n - 1, "the last event (%llu) is not the newest kept (%llu)",
		 (unsigned long long)(n - 1), (unsigned long long)prev);
	TV_CHECK(b->lost == 0, "overwrite counted losses");
	printf("overwrite: the newest %zu of %llu events kept, contiguous, ending at the last\n", log.n,
	       (unsigned long long)n);
	return tv_test_failed;
}

/* Variable sizes: strings and byte arrays of every length, records padded at sub-buffer ends. */
static char pattern[1024];

static int var_done;

static void *var_worker(void *arg)
{
	int thread = (int)(intptr_t)arg;

	for (uint64_t i = 0; i < n_per_thread; i++)
		tv_ust_trace(t, var, thread, i, pattern + (i % 500), pattern, (size_t)(i % 700));
	__atomic_fetch_add(&var_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct var_check {
	struct ust_test_log log;
	uint64_t bad;
};

/* each record's dynamic fields must be what its seq says */
static void var_collect(void *ctx, uint32_t buf, uint64_t ts, uint16_t id, int32_t tid,
			const char *event, uint16_t size)
{
	struct var_check *vc = ctx;
	uint64_t seq;
	uint32_t loc_s, loc_r;

	ust_test_collect(&vc->log, buf, ts, id, tid, event, size);
	if (id != tv_ust__tp_t_var.id)
		return;
	memcpy(&seq, event + 16, 8);
	memcpy(&loc_s, event + 24, 4);
	memcpy(&loc_r, event + 28, 4);
	if ((loc_s >> 16) != 1000 - seq % 500 ||
	    (loc_s & 0xffff) + (loc_s >> 16) > (uint32_t)size - 8 ||
	    strcmp(event + (loc_s & 0xffff), pattern + seq % 500) ||
	    (loc_r >> 16) != seq % 700 || (loc_r & 0xffff) + (loc_r >> 16) > (uint32_t)size - 8 ||
	    memcmp(event + (loc_r & 0xffff), pattern, seq % 700))
		vc->bad++;
}

static int check_variable(void)
{
	struct tv_ust_config cfg = { TV_UST_CLOCK_MONO, TV_UST_MODE_BLOCKING, 8192, 4, 0, 10000 };
	struct var_check vc = { 0 };
	uint64_t count[2], first[2] = { 0, 0 };
	pthread_t th[2];
	struct ustc c;
	const uint64_t n = 50000;

	for (int i = 0; i < 999; i++)
		pattern[i] = (char)('a' + i % 26);
	n_per_thread = n;
	TV_CHECK(tv_ust_start(&cfg) == 0, "start");
	TV_CHECK(tv_ust_enable("t:var") == 1, "enable t:var");
	TV_CHECK(ustc_map(&c, tv_ust_memfd()) == 0, "map");
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, var_worker, (void *)(intptr_t)i);
	while (__atomic_load_n(&var_done, __ATOMIC_ACQUIRE) < 2)
		if (!ustc_poll(&c, var_collect, &vc))
			usleep(50);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TV_CHECK(tv_ust_flush(1000) == 0, "flush");
	ustc_recover(&c, var_collect, &vc);
	TV_CHECK(c.bad == 0 && vc.bad == 0 && ustc_lost(&c) == 0, "bad records %d, bad fields %llu, lost %llu",
		 c.bad, (unsigned long long)vc.bad, (unsigned long long)ustc_lost(&c));
	TV_CHECK(ust_test_check_order(&vc.log, tv_ust__tp_t_var.id, 2, first, count, false) == 0 &&
			 count[0] == n && count[1] == n, "t:var: %llu and %llu of %llu",
		 (unsigned long long)count[0], (unsigned long long)count[1], (unsigned long long)n);
	printf("variable sizes: %llu events of 544..1744 bytes, padded at 8 KiB sub-buffer ends, all once, "
	       "in order, fields intact\n", (unsigned long long)(2 * n));
	return tv_test_failed;
}

/*
 * A writer that dies between reserve and commit (simulated: a reservation
 * never committed, on CPU 0) leaves a TV_UST_ID_UNCOMMITTED header with its
 * size: recovery skips it and keeps the 10 events committed after it in
 * the same sub-buffer.
 */
static int check_uncommitted(void)
{
	struct tv_ust_config cfg = { TV_UST_CLOCK_MONO, TV_UST_MODE_DISCARD, 4096, 2, 0, 0 };
	struct ust_test_log log = { 0 };
	struct tv_ust_ctx ctx;
	uint64_t first[1] = { 0 }, count[1];
	cpu_set_t one;
	struct ustc c;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	TV_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0, "pin to CPU 0");
	TV_CHECK(tv_ust_start(&cfg) == 0 && tv_ust_enable("t:ev") == 1, "start");
	tv_ust_trace(t, ev, 0, 0);
	TV_CHECK(tv_ust_reserve(&ctx, &tv_ust__tp_t_ev, 16) != NULL, "reserve");	/* never committed */
	for (uint64_t i = 1; i <= 10; i++)
		tv_ust_trace(t, ev, 0, i);
	TV_CHECK(ustc_map(&c, tv_ust_memfd()) == 0, "map");
	ustc_recover(&c, ust_test_collect, &log);
	TV_CHECK(c.uncommitted == 1 && c.bad == 0, "uncommitted %llu, bad %d",
		 (unsigned long long)c.uncommitted, c.bad);
	TV_CHECK(ust_test_check_order(&log, tv_ust__tp_t_ev.id, 1, first, count, false) == 0 &&
			 count[0] == 11, "%llu of the 11 committed events recovered", (unsigned long long)count[0]);
	printf("uncommitted reservation: skipped by its size, the 11 committed events around it recovered\n");
	return tv_test_failed;
}

/* Run again with glibc's rseq registration off: the tracer must fall back to slots by itself. */
static int check_no_rseq(void)
{
	char *args[] = { "/proc/self/exe", "no-rseq", NULL };

	setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
	execv(args[0], args);
	return 1;
}

int main(int argc, char **argv)
{
	ust_test_private(argv);
	if (argc == 2 && !strcmp(argv[1], "no-rseq")) {
		expect_slots = 1;
		ust_test_fork("no rseq registered (glibc.pthread.rseq=0): slots by themselves, blocking",
			      check_exact_rseq);
		return tv_test_done("test_ust_buffers no-rseq");
	}
	ust_test_fork("exact, rseq per-CPU, blocking", check_exact_rseq);
	ust_test_fork("exact, per-thread slots, blocking", check_exact_slots);
	ust_test_fork("discard, exact loss count", check_discard);
	ust_test_fork("overwrite", check_overwrite);
	ust_test_fork("variable sizes, blocking", check_variable);
	ust_test_fork("uncommitted reservation in recovery", check_uncommitted);
	ust_test_fork("without rseq", check_no_rseq);
	return tv_test_done("test_ust_buffers");
}
