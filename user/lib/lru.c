// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The fixed-capacity LRU hash table of lru.h: arrays of links, keys and
 * values, one hash chain per head, one LRU list and one free list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lru.h"
#include "hash.h"

static __u32 key_hash(const struct table *t, const void *key)
{
	return (__u32)hash_bytes(t->seed, key, t->key_size) & t->hmask;
}

static void lru_unlink(struct table *t, __u32 i)
{
	struct table_link *l = &t->links[i];

	if (l->prev != TABLE_NIL)
		t->links[l->prev].next = l->next;
	else
		t->lru_head = l->next;
	if (l->next != TABLE_NIL)
		t->links[l->next].prev = l->prev;
	else
		t->lru_tail = l->prev;
}

static void lru_push(struct table *t, __u32 i)
{
	struct table_link *l = &t->links[i];

	l->prev = TABLE_NIL;
	l->next = t->lru_head;
	if (t->lru_head != TABLE_NIL)
		t->links[t->lru_head].prev = i;
	else
		t->lru_tail = i;
	t->lru_head = i;
}

int table_init(struct table *t, __u32 cap, size_t key_size, size_t val_size, __u64 seed)
{
	__u32 buckets = 1;

	memset(t, 0, sizeof(*t));
	while (buckets < cap && buckets < (1U << 31))
		buckets <<= 1;
	t->key_size = key_size;
	t->val_size = val_size;
	t->seed = seed;
	t->cap = cap;
	t->hmask = buckets - 1;
	t->heads = malloc((size_t)buckets * sizeof(*t->heads));
	t->links = calloc(cap, sizeof(*t->links));
	t->keys = calloc(cap, key_size);
	t->vals = calloc(cap, val_size);
	if (!t->heads || !t->links || !t->keys || !t->vals) {
		table_free(t);
		return -ENOMEM;
	}
	memset(t->heads, 0xff, (size_t)buckets * sizeof(*t->heads));
	for (__u32 i = 0; i < cap; i++)
		t->links[i].next = i + 1 < cap ? i + 1 : TABLE_NIL;
	t->free_head = 0;
	t->lru_head = t->lru_tail = TABLE_NIL;
	return 0;
}

void table_free(struct table *t)
{
	free(t->heads);
	free(t->links);
	free(t->keys);
	free(t->vals);
	t->heads = NULL;
	t->links = NULL;
	t->keys = t->vals = NULL;
}

__u32 table_find(const struct table *t, const void *key)
{
	for (__u32 i = t->heads[key_hash(t, key)]; i != TABLE_NIL; i = t->links[i].hnext)
		if (!memcmp(table_key(t, i), key, t->key_size))
			return i;
	return TABLE_NIL;
}

void table_touch(struct table *t, __u32 i)
{
	lru_unlink(t, i);
	lru_push(t, i);
}

__u32 table_lookup(struct table *t, const void *key)
{
	__u32 i = table_find(t, key);

	if (i != TABLE_NIL)
		table_touch(t, i);
	return i;
}

void table_remove(struct table *t, __u32 i)
{
	__u32 *pp = &t->heads[key_hash(t, table_key(t, i))];

	while (*pp != i)
		pp = &t->links[*pp].hnext;
	*pp = t->links[i].hnext;
	lru_unlink(t, i);
	t->links[i].next = t->free_head;
	t->free_head = i;
	t->used--;
}

__u32 table_insert(struct table *t, const void *key, table_evictable_fn evictable, void *ctx)
{
	__u32 i = TABLE_NIL, h;

	if (t->free_head == TABLE_NIL) {
		for (__u32 j = t->lru_tail; j != TABLE_NIL; j = t->links[j].prev) {
			if (!evictable || evictable(table_val(t, j), ctx)) {
				i = j;
				break;
			}
		}
		if (i == TABLE_NIL)
			return TABLE_NIL;
		table_remove(t, i);
	}
	i = t->free_head;
	t->free_head = t->links[i].next;
	t->used++;
	memset(&t->links[i], 0, sizeof(t->links[i]));
	memcpy(table_key(t, i), key, t->key_size);
	memset(table_val(t, i), 0, t->val_size);
	h = key_hash(t, key);
	t->links[i].hnext = t->heads[h];
	t->heads[h] = i;
	lru_push(t, i);
	return i;
}
