// SPDX-License-Identifier: GPL-2.0
/*
 * libtracevisor-ust's registry while tracing (blocking mode, a consumer
 * reading meanwhile, a thread emitting all along):
 * - an instrumented library dlopen'ed after its events were enabled by a
 *   glob records them, dlclose'd and dlopen'ed again keeps the same id and
 *   one metadata entry, and enabling/disabling after dlclose touches no
 *   unmapped code;
 * - globs enabled and disabled at run time take effect exactly: the
 *   emitter's events are recorded from a sequence number between the ones
 *   seen just before and just after tv_ust_enable() returned (plus the
 *   iteration in progress, whose sites may be passed either side), to one
 *   between those around tv_ust_disable(), with nothing missing between.
 */
#include "ust_test_common.h"

#ifndef UST_TEST_NAME
#define UST_TEST_NAME "test_ust_registry"
#endif

#include <dlfcn.h>
#include <limits.h>
#include <time.h>
#include <tracevisor/ust.h>

TV_UST_EVENT(g, a,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))
TV_UST_EVENT(g, b,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))
TV_UST_EVENT(h, c,
	TV_UST_ARGS(int thread, uint64_t seq),
	TV_UST_FIELDS(tv_ust_field_integer(int, thread, thread),
		      tv_ust_field_integer(uint64_t, seq, seq)))

static volatile int stop, consumer_stop;
static uint64_t progress;	/* the emitter's next seq (atomic) */

static void *emitter(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; !stop; i++) {
		tv_ust_trace(g, a, 0, i);
		tv_ust_trace(g, b, 0, i);
		tv_ust_trace(h, c, 0, i);
		__atomic_store_n(&progress, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

struct consumer {
	struct ustc c;
	struct ust_test_log log;
};

static void *consumer_run(void *arg)
{
	struct consumer *co = arg;

	while (!consumer_stop)
		if (!ustc_poll(&co->c, ust_test_collect, &co->log))
			usleep(100);
	return NULL;
}

static void pause_ms(int ms)
{
	struct timespec t = { 0, ms * 1000000L };

	nanosleep(&t, NULL);
}

/* [first, last] of event @id's seqs and whether they are contiguous */
static int span(struct ust_test_log *log, uint16_t id, uint64_t *first, uint64_t *last, uint64_t *n)
{
	uint64_t cnt[1];
	int bad = ust_test_check_order(log, id, 1, NULL, cnt, false);

	*n = cnt[0];
	*first = UINT64_MAX;
	*last = 0;
	for (size_t i = 0; i < log->n; i++) {
		if (log->recs[i].id != id)
			continue;
		if (log->recs[i].seq < *first)
			*first = log->recs[i].seq;
		if (log->recs[i].seq > *last)
			*last = log->recs[i].seq;
	}
	return bad;
}

/* a glob's window: [before, after] of progress around the call */
struct window {
	uint64_t before, after;
};

static struct window call(int (*fn)(const char *), const char *glob, int want)
{
	struct window w;
	int ret;

	w.before = __atomic_load_n(&progress, __ATOMIC_ACQUIRE);
	ret = fn(glob);
	w.after = __atomic_load_n(&progress, __ATOMIC_ACQUIRE);
	TV_CHECK(ret == want, "%s(\"%s\") = %d, wanted %d", fn == tv_ust_enable ? "enable" : "disable",
		 glob, ret, want);
	pause_ms(30);
	return w;
}

static char *plugin_path(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);

	if (n < 0)
		return NULL;
	path[n] = '\0';
	strcpy(strrchr(path, '/') + 1, "libust_plugin.so");
	return path;
}

static void plugin_round(const char *path, int thread, uint64_t n)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	void (*emit)(int, uint64_t);

	TV_CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
	if (!h)
		return;
	TV_CHECK(tv_ust_event_enabled("plug:ev") == 1, "plug:ev enabled by the earlier glob");
	emit = (void (*)(int, uint64_t))dlsym(h, "plugin_emit");
	TV_CHECK(emit != NULL, "plugin_emit");
	if (emit)
		emit(thread, n);
	TV_CHECK(dlclose(h) == 0, "dlclose");
}

static unsigned int meta_count(struct ustc *c, const char *name)
{
	const char *meta = c->base + c->h->meta_offset;
	char needle[64];
	unsigned int n = 0;

	snprintf(needle, sizeof(needle), " %s\n", name);
	for (const char *p = meta; (p = memmem(p, c->h->meta_len - (size_t)(p - meta), needle,
					    strlen(needle))); p++)
		n++;
	return n;
}

int main(int argc, char **argv)
{
	struct tv_ust_config cfg = { TV_UST_CLOCK_MONO, TV_UST_MODE_BLOCKING, 65536, 8, 0, 5000 };
	struct consumer co = { 0 };
	struct window en_g, en_h, dis_a, dis_g;
	uint64_t first, last, n, cnt[2];
	pthread_t em, cons;
	uint16_t plug_id = 0;
	int plug_bad = 0;
	char *path = plugin_path();

	(void)argc;
	ust_test_private(argv);
	TV_CHECK(tv_ust_start(&cfg) == 0, "start");
	TV_CHECK(ustc_map(&co.c, tv_ust_memfd()) == 0, "map");
	pthread_create(&cons, NULL, consumer_run, &co);
	pthread_create(&em, NULL, emitter, NULL);
	pause_ms(20);
	TV_CHECK(co.log.n == 0, "%zu records before anything was enabled", co.log.n);

	TV_CHECK(tv_ust_enable("plug:*") == 0, "plug:* matches nothing yet");
	en_g = call(tv_ust_enable, "g:*", 2);
	en_h = call(tv_ust_enable, "h:?", 1);
	plugin_round(path, 0, 1000);
	TV_CHECK(tv_ust_event_enabled("plug:ev") == 1, "the event outlives its library");
	TV_CHECK(tv_ust_disable("plug:*") == 1 && tv_ust_enable("plug:*") == 1,
		 "disable/enable after dlclose");
	plugin_round(path, 1, 500);
	dis_a = call(tv_ust_disable, "g:a", 1);
	dis_g = call(tv_ust_disable, "*", 4);
	stop = 1;
	pthread_join(em, NULL);
	TV_CHECK(tv_ust_flush(1000) == 0, "flush");
	consumer_stop = 1;
	pthread_join(cons, NULL);
	ustc_recover(&co.c, ust_test_collect, &co.log);
	TV_CHECK(ustc_lost(&co.c) == 0 && co.c.bad == 0, "lost %llu, bad %d",
		 (unsigned long long)ustc_lost(&co.c), co.c.bad);

	TV_CHECK(span(&co.log, tv_ust__tp_g_a.id, &first, &last, &n) == 0, "g:a contiguous");
	TV_CHECK(first >= en_g.before && first <= en_g.after + 1, "g:a starts at %llu, enable window [%llu, %llu]",
		 (unsigned long long)first, (unsigned long long)en_g.before, (unsigned long long)en_g.after);
	TV_CHECK(last + 1 >= dis_a.before && last + 1 <= dis_a.after + 1,
		 "g:a ends at %llu, disable window [%llu, %llu]", (unsigned long long)last,
		 (unsigned long long)dis_a.before, (unsigned long long)dis_a.after);
	printf("g:a: seqs %llu..%llu (%llu events), enabled in [%llu, %llu], disabled in [%llu, %llu]\n",
	       (unsigned long long)first, (unsigned long long)last, (unsigned long long)n,
	       (unsigned long long)en_g.before, (unsigned long long)en_g.after,
	       (unsigned long long)dis_a.before, (unsigned long long)dis_a.after);
	TV_CHECK(span(&co.log, tv_ust__tp_g_b.id, &first, &last, &n) == 0, "g:b contiguous");
	TV_CHECK(first >= en_g.before && first <= en_g.after + 1 && last + 1 >= dis_g.before &&
			 last + 1 <= dis_g.after + 1, "g:b %llu..%llu", (unsigned long long)first,
		 (unsigned long long)last);
	TV_CHECK(span(&co.log, tv_ust__tp_h_c.id, &first, &last, &n) == 0, "h:c contiguous");
	TV_CHECK(first >= en_h.before && first <= en_h.after + 1 && last + 1 >= dis_g.before &&
			 last + 1 <= dis_g.after + 1, "h:c %llu..%llu", (unsigned long long)first,
		 (unsigned long long)last);

	/* the plugin's two lives: one id, thread 0 seqs 0..999, thread 1 seqs 0..499 */
	for (size_t i = 0; i < co.log.n; i++) {
		uint16_t id = co.log.recs[i].id;

		if (id == tv_ust__tp_g_a.id || id == tv_ust__tp_g_b.id || id == tv_ust__tp_h_c.id)
			continue;
		if (!plug_id)
			plug_id = id;
		plug_bad += id != plug_id;
	}
	TV_CHECK(plug_id && !plug_bad, "plug:ev has one id (%u), %d records with another", plug_id,
		 plug_bad);
	TV_CHECK(ust_test_check_order(&co.log, plug_id, 2, (uint64_t[]){ 0, 0 }, cnt, false) == 0,
		 "plug:ev in order");
	TV_CHECK(cnt[0] == 1000 && cnt[1] == 500, "plug:ev %llu + %llu events, wanted 1000 + 500",
		 (unsigned long long)cnt[0], (unsigned long long)cnt[1]);
	TV_CHECK(meta_count(&co.c, "plug:ev") == 1, "plug:ev in the metadata %u times",
		 meta_count(&co.c, "plug:ev"));
	printf("plug:ev across dlopen/dlclose/dlopen: %llu + %llu events, one id %u, one metadata entry\n",
	       (unsigned long long)cnt[0], (unsigned long long)cnt[1], plug_id);
	return tv_test_done(UST_TEST_NAME);
}
