// SPDX-License-Identifier: LGPL-2.1
/*
 * The registry: modules (executables and shared objects, each a section of
 * tracepoint descriptors and one of static-branch sites), events (one per
 * "PROVIDER:EVENT", with a process-wide id and its format text), the
 * enable/disable rules, and the code patching that turns call sites on
 * and off.
 *
 * Concurrency: every update holds ust_lock (a mutex: registration runs in
 * constructors and destructors, enable/disable in the caller's or the
 * listener's thread, never in a signal handler).  Readers that do not
 * update (tv_ust_event_enabled(), the listener's LIST) walk the RCU lists
 * under rcu_read_lock() (liburcu-bp: no thread registration needed) and
 * never block an update; a module is unlinked with cds_list_del_rcu() and
 * freed after synchronize_rcu().  Events are never freed (ids are never
 * reused in a process: lib/ust/ust_abi.h), so a reader may keep one.
 * The fast path reads none of this: its state is the patched code itself
 * and the tracepoint's id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <urcu-bp.h>
#include <urcu/rculist.h>

#include "ust_internal.h"

pthread_mutex_t ust_lock = PTHREAD_MUTEX_INITIALIZER;

struct ust_event {
	struct cds_list_head node;	/* ust_events, RCU */
	char *name;			/* "PROVIDER:EVENT" */
	uint16_t id;
	int enabled;			/* atomic: read lock-free */
	bool in_meta;			/* its format is in the buffers' metadata */
	bool usable;			/* format built and id assigned */
	char *format;			/* the metadata entry */
	size_t format_len;
};

struct ust_module {
	struct cds_list_head node;	/* ust_modules, RCU */
	struct tv_ust_tracepoint *const *start, *const *stop;
	const struct tv_ust_jump_entry *jstart, *jstop;
	int refs;
	bool repatch;			/* a site patched: stored again (ust_repatch_all) */
};

struct ust_rule {
	char *glob;
	bool on;
};

static CDS_LIST_HEAD(ust_events);
static CDS_LIST_HEAD(ust_modules);
static struct ust_rule *ust_rules;	/* under ust_lock; the last match wins */
static size_t ust_nr_rules;
static unsigned int ust_next_id = TV_UST_ID_FIRST;
static long ust_page;

/* ------------------------------------------------------------ the format */

static const char *ust_int_type(const struct tv_ust_field *f)
{
	static const char *const names[2][4] = { { "u8", "u16", "u32", "u64" },
						 { "s8", "s16", "s32", "s64" } };
	int i = f->size == 1 ? 0 : f->size == 2 ? 1 : f->size == 4 ? 2 : 3;

	return names[f->is_signed ? 1 : 0][i];
}

static void ust_format_print_arg(FILE *out, const struct tv_ust_field *f)
{
	switch (f->kind) {
	case TV_UST_FIELD_STRING:
		fprintf(out, ", __get_str(%s)", f->name);
		break;
	case TV_UST_FIELD_BYTES:
		fprintf(out, ", __print_hex(__get_dynamic_array(%s), __get_dynamic_array_len(%s))",
			f->name, f->name);
		break;
	case TV_UST_FIELD_ENUM:
		fprintf(out, ", __print_symbolic(REC->%s", f->name);
		for (unsigned int i = 0; i < f->nr_labels; i++)
			fprintf(out, ", { %lld, \"%s\" }", (long long)f->labels[i].value,
				f->labels[i].label);
		fputc(')', out);
		break;
	default:
		fprintf(out, ", REC->%s", f->name);
	}
}

/* The metadata entry of @tp with id @id (lib/ust/ust_abi.h): malloc'ed text. */
static char *ust_format_build(const struct tv_ust_tracepoint *tp, unsigned int id, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);

	if (!out)
		return NULL;
	fprintf(out, "%s%u %s:%s\nname: %s\nID: %u\nformat:\n", TV_UST_META_EVENT, id, tp->provider,
		tp->name, tp->name, id);
	fputs("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	      "\tfield:unsigned short common_size;\toffset:2;\tsize:2;\tsigned:0;\n"
	      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
	      out);
	for (uint32_t i = 0; i < tp->nr_fields; i++) {
		const struct tv_ust_field *f = &tp->fields[i];
		unsigned int off = 8u + f->offset;

		if (f->kind == TV_UST_FIELD_STRING || f->kind == TV_UST_FIELD_BYTES)
			fprintf(out, "\tfield:__data_loc %s[] %s;\toffset:%u;\tsize:4;\tsigned:%d;\n",
				f->kind == TV_UST_FIELD_STRING ? "char" : "unsigned char", f->name, off,
				f->kind == TV_UST_FIELD_STRING);
		else
			fprintf(out, "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n",
				ust_int_type(f), f->name, off, f->size, f->is_signed);
	}
	fputs("\nprint fmt: \"", out);
	for (uint32_t i = 0; i < tp->nr_fields; i++) {
		const struct tv_ust_field *f = &tp->fields[i];
		const char *conv = f->kind != TV_UST_FIELD_INTEGER ? "%s"
				 : f->size == 8 ? (f->is_signed ? "%lld" : "%llu")
				 /* libtraceevent does not sign-extend short fields: say the size */
				 : f->size == 1 ? (f->is_signed ? "%hhd" : "%u")
				 : f->size == 2 ? (f->is_signed ? "%hd" : "%u")
				 : (f->is_signed ? "%d" : "%u");

		fprintf(out, "%s%s=%s", i ? " " : "", f->name, conv);
	}
	fputc('"', out);
	for (uint32_t i = 0; i < tp->nr_fields; i++)
		ust_format_print_arg(out, &tp->fields[i]);
	fputs("\n" TV_UST_META_END, out);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}

/* Append @ev's format to the buffers' metadata (under ust_lock). */
static int ust_meta_append(struct ust_state *st, struct ust_event *ev)
{
	struct tv_ust_shm_header *h = st->hdr;

	if (ev->in_meta || !ev->usable)
		return 0;
	if (h->meta_len + ev->format_len > h->meta_capacity) {
		ust_log("Metadata area full: event=\"%s\", capacity=%llu", ev->name,
			(unsigned long long)h->meta_capacity);
		return -ENOSPC;
	}
	memcpy(st->base + h->meta_offset + h->meta_len, ev->format, ev->format_len);
	/* release: the text before the length that makes a consumer read it */
	__atomic_store_n(&h->meta_len, h->meta_len + ev->format_len, __ATOMIC_RELEASE);
	ev->in_meta = true;
	return 0;
}

int ust_meta_append_all(struct ust_state *st)
{
	struct ust_event *ev;

	cds_list_for_each_entry(ev, &ust_events, node)
		ust_meta_append(st, ev);	/* a full area leaves that event off, logged */
	return 0;
}

/* ------------------------------------------------------------- patching */

/*
 * Set the 5 bytes at @site to a jmp to @target (on) or a nop (off).  The
 * site does not cross an 8-byte boundary (.balign 8 before it), so the
 * aligned 8-byte word holding it is replaced by one atomic store: a CPU
 * fetching it sees the whole old or the whole new instruction, both valid
 * at that address with the same length.  The page is made writable for the
 * store (and stays executable, so threads running on it do not fault).
 * The caller then runs membarrier(SYNC_CORE), which makes every thread of
 * the process execute a core-serialising instruction before it returns to
 * user space: the cross-modifying-code rule of the Intel SDM (8.1.3).
 * @again: store the word even if it already holds the instruction (see
 * ust_repatch_all: the second store of a patch).  Return: 1 stored, 0 the
 * site already held it, -errno.
 */
static int ust_patch_site(uintptr_t site, uintptr_t target, bool on, bool again)
{
	uintptr_t word = site & ~(uintptr_t)7, page = word & ~(uintptr_t)(ust_page - 1);
	unsigned int shift = (unsigned int)(site - word) * 8;
	uint8_t insn[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	uint64_t old, new, mask = 0xffffffffffull << shift;
	int32_t rel = (int32_t)(target - (site + 5));

	if (site - word > 3)
		return -EINVAL;	/* not the layout TV_UST__BRANCH emits */
	if (on) {
		insn[0] = 0xe9;
		memcpy(insn + 1, &rel, 4);
	}
	old = __atomic_load_n((uint64_t *)word, __ATOMIC_RELAXED);
	new = 0;
	memcpy(&new, insn, 5);
	new = (old & ~mask) | (new << shift);
	if (new == old && !again)
		return 0;
	if (mprotect((void *)page, (size_t)ust_page, PROT_READ | PROT_WRITE | PROT_EXEC) < 0) {
		int err = errno;

		ust_log("Cannot patch a tracepoint site: address=%#lx, errno=%d (%s)",
			(unsigned long)site, err, strerror(err));
		return -EPERM;
	}
	__atomic_store_n((uint64_t *)word, new, __ATOMIC_RELAXED);
	mprotect((void *)page, (size_t)ust_page, PROT_READ | PROT_EXEC);
	return 1;
}

/*
 * Bring @m's descriptors and sites to their events' state.  *@patched
 * counts the code sites rewritten.  Return: flags and sites changed or -errno.
 */
static int ust_module_sync(struct ust_module *m, int *patched)
{
	int changed = 0, err = 0;

	for (struct tv_ust_tracepoint *const *p = m->start; p < m->stop; p++) {
		struct ust_event *ev = (*p)->priv;
		int on = ev && ev->enabled && ev->in_meta;

		/*
		 * A flag that changes counts as a change too: the membarrier that
		 * follows (ust_sync_core) is what makes the load-and-branch sites
		 * see it, and the emitters' own stores seen, by the time enable or
		 * disable returns — without it the flag sat in this CPU's store
		 * buffer a little while (test_ust_branch saw 10 events late once).
		 */
		if (__atomic_load_n(&(*p)->enabled, __ATOMIC_RELAXED) != on) {
			__atomic_store_n(&(*p)->enabled, on, __ATOMIC_RELAXED);
			changed++;
		}
	}
#if TV_UST_STATIC_BRANCH
	for (const struct tv_ust_jump_entry *j = m->jstart; j && j < m->jstop; j++) {
		int ret = ust_patch_site(j->site, j->target, j->key->enabled, false);

		if (ret < 0)
			err = ret;
		else
			changed += ret;
		*patched += ret > 0;
		m->repatch |= ret > 0;
	}
#endif
	return err ? err : changed;
}

static void ust_sync_core(int changed)
{
	/*
	 * every thread serialises before it runs user code again (see
	 * ust_patch_site), which also orders the flags' stores above before
	 * every thread's next load of them: a full barrier on each CPU
	 */
	if (changed > 0 &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) < 0) {
		int err = errno;

		/* x86 still picks up the store (snooped); only the moment is unbounded */
		ust_log("membarrier(SYNC_CORE) failed after patching: errno=%d (%s)", err, strerror(err));
	}
}

/*
 * The second store of a patch, once every thread serialised after the first
 * (ust_sync_core), followed by one more ust_sync_core.  Why: QEMU's
 * multi-threaded TCG invalidates a page's translations when a store to it
 * begins and writes the bytes after; another vCPU that runs that code and
 * retranslates it in between reads the old bytes, and that stale
 * translation stays until the page is written again: its thread went on
 * with the old instruction for good (the lab's 2-vCPU TCG guest:
 * test_ust_registry saw an enabled event never recorded, or a disabled
 * one go on, in 5 of 30 runs; never on real x86, where the serialising
 * membarrier is enough).  By the second store the bytes in memory are the
 * new ones and no translation of the old ones is under way (each vCPU has
 * taken the membarrier's interrupt, which it does between translations),
 * so any translation after it, stale or not, reads the new bytes.  Every
 * site of a module where one was patched is stored again with what it holds
 * (the same bytes: a no-op for a real CPU, which already runs the new code).
 */
static void ust_repatch_all(void)
{
#if TV_UST_STATIC_BRANCH
	struct ust_module *m;

	cds_list_for_each_entry(m, &ust_modules, node) {
		if (!m->repatch)
			continue;
		m->repatch = false;
		for (const struct tv_ust_jump_entry *j = m->jstart; j && j < m->jstop; j++)
			ust_patch_site(j->site, j->target, j->key->enabled, true);
	}
#endif
}

/* After ust_module_sync(): every thread serialised; the second store where code was patched. */
static void ust_sync_patched(int changed, int patched)
{
	ust_sync_core(changed);
	if (patched > 0) {
		ust_repatch_all();
		ust_sync_core(1);
	}
}

/* --------------------------------------------------------------- events */

static bool ust_rules_say(const char *name)
{
	bool on = false;

	for (size_t i = 0; i < ust_nr_rules; i++)
		if (!fnmatch(ust_rules[i].glob, name, 0))
			on = ust_rules[i].on;
	return on;
}

static struct ust_event *ust_event_find(const char *name)
{
	struct ust_event *ev;

	cds_list_for_each_entry(ev, &ust_events, node)
		if (!strcmp(ev->name, name))
			return ev;
	return NULL;
}

/* The event of @tp, created (id, format, state) if new; NULL when unusable. */
static struct ust_event *ust_event_get(struct tv_ust_tracepoint *tp)
{
	struct ust_event *ev;
	char *name;
	size_t len;

	if (asprintf(&name, "%s:%s", tp->provider, tp->name) < 0)
		return NULL;
	ev = ust_event_find(name);
	if (ev) {
		char *fmt = ust_format_build(tp, ev->id, &len);
		bool same = fmt && len == ev->format_len && !memcmp(fmt, ev->format, len);

		free(fmt);
		free(name);
		if (!same) {
			ust_log("Event declared twice with different fields: event=\"%s\"", ev->name);
			return NULL;
		}
		return ev;
	}
	if (ust_next_id > UINT16_MAX) {
		ust_log("Too many events in the process: event=\"%s\", limit=%u", name, UINT16_MAX);
		free(name);
		return NULL;
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		free(name);
		return NULL;
	}
	ev->name = name;
	ev->id = (uint16_t)ust_next_id;
	ev->format = ust_format_build(tp, ev->id, &ev->format_len);
	if (!ev->format) {
		free(name);
		free(ev);
		return NULL;
	}
	ust_next_id++;
	ev->usable = true;
	ev->enabled = ust_rules_say(name);
	if (tv_ust_state)
		ust_meta_append(tv_ust_state, ev);
	cds_list_add_tail_rcu(&ev->node, &ust_events);
	return ev;
}

/* ------------------------------------------------------------- modules */

static void ust_env_start(void);

int tv_ust_module_register(struct tv_ust_tracepoint *const *start, struct tv_ust_tracepoint *const *stop,
			   const void *jump_start, const void *jump_stop)
{
	struct ust_module *m;
	int ret, patched = 0;

	ust_registry_init();
	pthread_mutex_lock(&ust_lock);
	cds_list_for_each_entry(m, &ust_modules, node) {
		if (m->start == start) {
			m->refs++;
			pthread_mutex_unlock(&ust_lock);
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&ust_lock);
		return -ENOMEM;
	}
	m->start = start;
	m->stop = stop;
	m->jstart = jump_start;
	m->jstop = jump_stop;
	m->refs = 1;
	for (struct tv_ust_tracepoint *const *p = start; p < stop; p++) {
		struct ust_event *ev = ust_event_get(*p);

		(*p)->priv = ev;
		(*p)->id = ev ? ev->id : TV_UST_ID_PADDING;
	}
	ret = ust_module_sync(m, &patched);
	cds_list_add_tail_rcu(&m->node, &ust_modules);
	ust_sync_patched(ret, patched);
	pthread_mutex_unlock(&ust_lock);
	return ret < 0 ? ret : 0;
}

void tv_ust_module_unregister(struct tv_ust_tracepoint *const *start)
{
	struct ust_module *m, *found = NULL;

	pthread_mutex_lock(&ust_lock);
	cds_list_for_each_entry(m, &ust_modules, node) {
		if (m->start == start && --m->refs == 0) {
			cds_list_del_rcu(&m->node);
			found = m;
			break;
		}
	}
	pthread_mutex_unlock(&ust_lock);
	if (found) {
		synchronize_rcu();	/* no LIST reader still walks it */
		free(found);
	}
}

/* --------------------------------------------------------- enable/disable */

static int ust_rule_add(const char *glob, bool on)
{
	struct ust_rule *r;
	size_t i, j;

	/* an older rule with the same glob is superseded: drop it */
	for (i = j = 0; i < ust_nr_rules; i++) {
		if (!strcmp(ust_rules[i].glob, glob))
			free(ust_rules[i].glob);
		else
			ust_rules[j++] = ust_rules[i];
	}
	ust_nr_rules = j;
	r = realloc(ust_rules, (ust_nr_rules + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	ust_rules = r;
	r[ust_nr_rules].glob = strdup(glob);
	if (!r[ust_nr_rules].glob)
		return -ENOMEM;
	r[ust_nr_rules++].on = on;
	return 0;
}

/* Apply a rule and every event's resulting state (under ust_lock). */
static int ust_set_locked(const char *glob, bool on)
{
	struct ust_event *ev;
	struct ust_module *m;
	int matched = 0, changed = 0, patched = 0, err = 0, ret;

	ret = ust_rule_add(glob, on);
	if (ret < 0)
		return ret;
	cds_list_for_each_entry(ev, &ust_events, node) {
		if (!fnmatch(glob, ev->name, 0))
			matched++;
		__atomic_store_n(&ev->enabled, ust_rules_say(ev->name), __ATOMIC_RELAXED);
	}
	cds_list_for_each_entry(m, &ust_modules, node) {
		ret = ust_module_sync(m, &patched);
		if (ret < 0)
			err = ret;
		else
			changed += ret;
	}
	ust_sync_patched(changed ? changed : err ? 1 : 0, patched);
	return err ? err : matched;
}

static int ust_set(const char *glob, bool on)
{
	int ret;

	if (!glob || !*glob)
		return -EINVAL;
	ust_registry_init();
	pthread_mutex_lock(&ust_lock);
	ret = on ? ust_start_locked(NULL) : 0;
	if (ret >= 0)
		ret = ust_set_locked(glob, on);
	pthread_mutex_unlock(&ust_lock);
	return ret;
}

int tv_ust_enable(const char *glob)
{
	return ust_set(glob, true);
}

int tv_ust_disable(const char *glob)
{
	return ust_set(glob, false);
}

/* The consumer went away: nothing stays enabled, no rule stays. */
void ust_disable_all(void)
{
	pthread_mutex_lock(&ust_lock);
	for (size_t i = 0; i < ust_nr_rules; i++)
		free(ust_rules[i].glob);
	ust_nr_rules = 0;
	ust_set_locked("*", false);
	pthread_mutex_unlock(&ust_lock);
}

int tv_ust_event_enabled(const char *name)
{
	struct ust_event *ev;
	int ret = -ENOENT;

	rcu_read_lock();
	cds_list_for_each_entry_rcu(ev, &ust_events, node) {
		if (!strcmp(ev->name, name)) {
			ret = __atomic_load_n(&ev->enabled, __ATOMIC_RELAXED) ? 1 : 0;
			break;
		}
	}
	rcu_read_unlock();
	return ret;
}

int ust_registry_count(void)
{
	struct ust_event *ev;
	int n = 0;

	rcu_read_lock();
	cds_list_for_each_entry_rcu(ev, &ust_events, node)
		n++;
	rcu_read_unlock();
	return n;
}

/* ------------------------------------------------------------------ init */

/* TRACEVISOR_UST=GLOB: buffers and events on before main(). */
static void ust_env_start(void)
{
	const char *glob = getenv(TV_UST_TRACE_ENV);
	int ret;

	if (!glob || !*glob)
		return;
	pthread_mutex_lock(&ust_lock);
	ret = ust_start_locked(NULL);
	if (ret >= 0)
		ret = ust_set_locked(glob, true);
	pthread_mutex_unlock(&ust_lock);
	if (ret < 0)
		ust_log("Cannot start tracing from the environment: %s=\"%s\", errno=%d (%s)",
			TV_UST_TRACE_ENV, glob, -ret, strerror(-ret));
}

static pthread_once_t ust_once = PTHREAD_ONCE_INIT;
static pthread_t ust_init_thread;

static void ust_init_once(void)
{
	ust_init_thread = pthread_self();
	ust_page = sysconf(_SC_PAGESIZE);
	ust_env_start();
	ust_listener_start();
}

void ust_registry_init(void)
{
	pthread_once(&ust_once, ust_init_once);
	/* ust_init_thread is written before pthread_once returns to anyone. */
	if (pthread_equal(pthread_self(), ust_init_thread))
		ust_listener_wait_registered();
}
