// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's source table: buckets and streaks by key, a hash
 * chain each, kept in LRU order; a new key takes a free entry or the least
 * recently used idle one. Called with the server's lock held. */
#include <stdlib.h>
#include <sys/random.h>
#include "check.h"
#include "hash.h"

static __u32 key_hash(const struct check_server *s, const struct check_key *k)
{
	return (__u32)hash_bytes(s->seed, k, sizeof(*k)) & s->hmask;
}

static void lru_unlink(struct check_server *s, __u32 i)
{
	struct check_entry *e = &s->e[i];

	if (e->prev != NIL)
		s->e[e->prev].next = e->next;
	else
		s->lru_head = e->next;
	if (e->next != NIL)
		s->e[e->next].prev = e->prev;
	else
		s->lru_tail = e->prev;
}

static void lru_push(struct check_server *s, __u32 i)
{
	struct check_entry *e = &s->e[i];

	e->prev = NIL;
	e->next = s->lru_head;
	if (s->lru_head != NIL)
		s->e[s->lru_head].prev = i;
	else
		s->lru_tail = i;
	s->lru_head = i;
}

__u32 check_entry_find(const struct check_server *s, const struct check_key *k)
{
	for (__u32 i = s->heads[key_hash(s, k)]; i != NIL; i = s->e[i].hnext)
		if (!memcmp(&s->e[i].key, k, sizeof(*k)))
			return i;
	return NIL;
}

/* Takes entry i out of the table, onto the free list. */
void check_entry_release(struct check_server *s, __u32 i)
{
	__u32 *pp = &s->heads[key_hash(s, &s->e[i].key)];

	while (*pp != i)
		pp = &s->e[*pp].hnext;
	*pp = s->e[i].hnext;
	lru_unlink(s, i);
	s->e[i].next = s->free_head;
	s->free_head = i;
	s->used--;
}

/* An entry for a new key: a free one, or the least recently used idle one
 * (walked from the LRU end; when none is idle, none will be before the
 * earliest idle_at seen, and no walk is made until then). NIL when the
 * table is full of live entries. */
static __u32 claim(struct check_server *s, const struct check_key *k, __u64 now)
{
	__u64 soonest = SLUICE_U64_MAX;
	__u32 i = NIL, h;

	if (s->free_head == NIL) {
		if (now < s->no_idle_until)
			return NIL;
		for (__u32 j = s->lru_tail; j != NIL; j = s->e[j].prev) {
			if (s->e[j].idle_at <= now) {
				i = j;
				break;
			}
			if (s->e[j].idle_at < soonest)
				soonest = s->e[j].idle_at;
		}
		if (i == NIL) {
			s->no_idle_until = soonest;
			return NIL;
		}
		check_entry_release(s, i);
	}
	i = s->free_head;
	s->free_head = s->e[i].next;
	s->used++;
	memset(&s->e[i], 0, sizeof(s->e[i]));
	s->e[i].key = *k;
	h = key_hash(s, k);
	s->e[i].hnext = s->heads[h];
	s->heads[h] = i;
	lru_push(s, i);
	return i;
}

/* The entry of k, made (empty) if there was none; NIL when the table is full. */
__u32 check_entry_get(struct check_server *s, const struct check_key *k, __u64 now)
{
	__u32 i = check_entry_find(s, k);

	if (i == NIL)
		return claim(s, k, now);
	lru_unlink(s, i);
	lru_push(s, i);
	return i;
}

/* When a bucket in state st holds nothing worth keeping: it is full again. */
__u64 check_idle_time(const struct sluice_limit *l, __u64 st, __u64 now)
{
	__u64 wait = limit_wait(l, st, now, limit_capacity(l));

	return wait > SLUICE_U64_MAX - now ? SLUICE_U64_MAX : now + wait;
}

int check_table_init(struct check_server *s, __u32 cap)
{
	__u32 buckets = 1;

	while (buckets < cap && buckets < (1U << 31))
		buckets <<= 1;
	s->cap = cap;
	s->hmask = buckets - 1;
	s->e = calloc(cap, sizeof(*s->e));
	s->heads = malloc((size_t)buckets * sizeof(*s->heads));
	s->repeats = calloc(REPEAT_SLOTS, sizeof(*s->repeats));
	if (!s->e || !s->heads || !s->repeats)
		return runtime_err("out of memory for %u sources: lower --max-sources", cap);
	memset(s->heads, 0xff, (size_t)buckets * sizeof(*s->heads));
	for (__u32 i = 0; i < cap; i++)
		s->e[i].next = i + 1 < cap ? i + 1 : NIL;
	s->free_head = 0;
	s->lru_head = s->lru_tail = NIL;
	if (getrandom(&s->seed, sizeof(s->seed), 0) != sizeof(s->seed))
		s->seed = mono_now_ns();
	return 0;
}
