// SPDX-License-Identifier: LGPL-2.1
/* Exit -> entry pairing per key (lib/util/exit_tracker.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exit_tracker.h"

static size_t slot_index(uint64_t key, size_t cap)
{
	return (size_t)(key % cap);
}

static int grow(struct tv_exit_tracker *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct tv_exit_slot *s = calloc(cap, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slots[i].key)
			continue;
		for (j = slot_index(t->slots[i].key, cap); s[j].key; j = (j + 1) % cap)
			;
		s[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = s;
	t->cap = cap;
	return 0;
}

struct tv_exit_slot *tv_exit_tracker_find(const struct tv_exit_tracker *t, uint64_t key)
{
	if (!t->cap)
		return NULL;
	key++;
	for (size_t j = slot_index(key, t->cap); t->slots[j].key; j = (j + 1) % t->cap)
		if (t->slots[j].key == key)
			return &t->slots[j];
	return NULL;
}

struct tv_exit_slot *tv_exit_tracker_slot(struct tv_exit_tracker *t, uint64_t key)
{
	struct tv_exit_slot *s = tv_exit_tracker_find(t, key);
	size_t j;

	if (s)
		return s;
	if ((t->nr + 1) * 2 > t->cap && grow(t))
		return NULL;
	key++;
	for (j = slot_index(key, t->cap); t->slots[j].key; j = (j + 1) % t->cap)
		;
	s = &t->slots[j];
	memset(s, 0, sizeof(*s));
	s->key = key;
	s->label = -1;
	t->nr++;
	return s;
}

struct tv_exit_slot *tv_exit_tracker_exit(struct tv_exit_tracker *t, uint64_t key, uint64_t ts)
{
	struct tv_exit_slot *s = tv_exit_tracker_slot(t, key);

	if (!s)
		return NULL;
	if (s->open)
		t->unmatched++;
	s->open = true;
	s->exit_ts = ts;
	return s;
}

int tv_exit_tracker_close(struct tv_exit_tracker *t, struct tv_exit_slot *s, uint64_t ts,
			  uint64_t *dur)
{
	if (!s || !s->open)
		return 0;
	s->open = false;
	if (ts < s->exit_ts) {
		t->backwards++;
		return 0;
	}
	*dur = ts - s->exit_ts;
	t->paired++;
	return 1;
}

void tv_exit_tracker_drop(struct tv_exit_tracker *t, struct tv_exit_slot *s)
{
	if (!s || !s->open)
		return;
	s->open = false;
	t->unmatched++;
}

uint64_t tv_exit_tracker_open(const struct tv_exit_tracker *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].key && t->slots[i].open)
			n++;
	return n;
}

void tv_exit_tracker_free(struct tv_exit_tracker *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
