/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A fixed-capacity hash table with LRU eviction, keyed by bytes: the
 * entries are allocated once, chained by hash_bytes() of their key, and
 * kept in least-recently-used order; a new key takes a free entry or
 * evicts the least recently used one the caller allows. Entries are
 * named by their index, stable while the entry lives. Not locked: the
 * caller serialises. */
#ifndef SLUICE_LRU_H
#define SLUICE_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define TABLE_NIL	0xffffffffU

struct table_link {
	__u32 hnext;		/* hash chain */
	__u32 prev, next;	/* LRU list, or the free list (next) */
};

struct table {
	size_t key_size, val_size;
	__u64 seed;		/* keys the hash */
	__u32 cap, used, free_head;
	__u32 hmask;		/* heads: a power of two at least cap */
	__u32 lru_head, lru_tail;	/* most and least recently used */
	__u32 *heads;
	struct table_link *links;
	unsigned char *keys, *vals;	/* cap of each */
};

/* Whether the entry holding val may be evicted for a new key. */
typedef bool (*table_evictable_fn)(const void *val, void *ctx);

/* A table of cap entries (1 .. 2^31) of key_size-byte keys and
 * val_size-byte values, hashed with seed; 0, or -ENOMEM. */
int table_init(struct table *t, __u32 cap, size_t key_size, size_t val_size, __u64 seed);
void table_free(struct table *t);

static inline void *table_key(const struct table *t, __u32 i)
{
	return t->keys + (size_t)i * t->key_size;
}

static inline void *table_val(const struct table *t, __u32 i)
{
	return t->vals + (size_t)i * t->val_size;
}

static inline bool table_full(const struct table *t)
{
	return t->free_head == TABLE_NIL;
}

/* The entry of key, or TABLE_NIL; its place in the LRU order unchanged. */
__u32 table_find(const struct table *t, const void *key);
/* Makes entry i the most recently used. */
void table_touch(struct table *t, __u32 i);
/* table_find, then table_touch of what it found. */
__u32 table_lookup(struct table *t, const void *key);
/* A new entry for key (which must not be in t), its value zeroed and
 * most recently used: a free entry, or else the least recently used one
 * that evictable allows (asked from the LRU end on, until one is; NULL
 * allows any). TABLE_NIL when the table is full and none may go. */
__u32 table_insert(struct table *t, const void *key, table_evictable_fn evictable, void *ctx);
/* Takes entry i out of the table. */
void table_remove(struct table *t, __u32 i);

/* The entries from the most recently used on: table_lru_next(t, i) is
 * the one used before i, TABLE_NIL after the last. Read the next before
 * removing i. */
static inline __u32 table_lru_first(const struct table *t)
{
	return t->lru_head;
}

static inline __u32 table_lru_next(const struct table *t, __u32 i)
{
	return t->links[i].next;
}

/* The same from the least recently used on: table_lru_prev(t, i) is the
 * one used after i, TABLE_NIL after the most recent. */
static inline __u32 table_lru_last(const struct table *t)
{
	return t->lru_tail;
}

static inline __u32 table_lru_prev(const struct table *t, __u32 i)
{
	return t->links[i].prev;
}

#endif /* SLUICE_LRU_H */
