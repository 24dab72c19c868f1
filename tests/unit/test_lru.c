// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of the fixed-capacity LRU hash table (user/lib/lru.c):
 * insert and lookup, the LRU order that eviction follows, a full table
 * whose entries may not go, removal, and many keys against a plain
 * array as the reference. Prints "ok NAME" or "FAIL NAME: detail" per
 * case and exits 1 if any case failed.
 *
 * usage: test_lru [CASE]    only the cases whose name contains CASE */
#include <stdlib.h>
#include "lru.h"
#include "harness.h"

struct tkey {
	__u32 a, b;
};

struct tval {
	__u64 v;
	bool pinned;		/* may not be evicted */
};

static struct tkey key(__u32 n)
{
	return (struct tkey){ .a = n, .b = ~n };
}

/* Inserts n (not in t) with value v; the entry's index. */
static __u32 put(struct table *t, __u32 n, __u64 v)
{
	struct tkey k = key(n);
	__u32 i = table_insert(t, &k, NULL, NULL);

	if (i != TABLE_NIL)
		((struct tval *)table_val(t, i))->v = v;
	return i;
}

static __u32 find(const struct table *t, __u32 n)
{
	struct tkey k = key(n);

	return table_find(t, &k);
}

static bool not_pinned(const void *val, void *ctx)
{
	unsigned int *asked = ctx;

	(*asked)++;
	return !((const struct tval *)val)->pinned;
}

static void case_insert_lookup(void)
{
	struct table t;
	struct tkey k;
	__u32 i;

	CHECK(!table_init(&t, 8, sizeof(struct tkey), sizeof(struct tval), 42), "init");
	CHECK_EQ(find(&t, 1), TABLE_NIL, "an empty table finds nothing");
	for (__u32 n = 0; n < 8; n++)
		CHECK(put(&t, n, 100 + n) != TABLE_NIL, "insert %u", n);
	CHECK_EQ(t.used, 8, "entries in use");
	CHECK(table_full(&t), "eight of eight is full");
	for (__u32 n = 0; n < 8; n++) {
		i = find(&t, n);
		CHECK(i != TABLE_NIL, "key %u not found", n);
		CHECK_EQ(((struct tval *)table_val(&t, i))->v, 100 + n, "value of %u", n);
		CHECK(!memcmp(table_key(&t, i), &(struct tkey){ n, ~n }, sizeof(k)), "key of %u", n);
	}
	CHECK_EQ(find(&t, 8), TABLE_NIL, "a key never inserted");
	k = key(3);
	i = table_lookup(&t, &k);
	CHECK_EQ(i, find(&t, 3), "lookup finds what find finds");
	CHECK_EQ(table_lru_first(&t), i, "lookup makes the entry most recently used");
	table_remove(&t, i);
	CHECK_EQ(find(&t, 3), TABLE_NIL, "removed");
	CHECK_EQ(t.used, 7, "entries in use after a removal");
	CHECK(!table_full(&t), "a removal frees an entry");
	CHECK(put(&t, 3, 7) != TABLE_NIL, "insert again");
	CHECK_EQ(((struct tval *)table_val(&t, find(&t, 3)))->v, 7, "the new value");
	table_free(&t);
}

static void case_eviction_order(void)
{
	struct table t;
	struct tkey k;
	__u32 want[] = { 5, 4, 2, 0 }, n = 0;

	CHECK(!table_init(&t, 4, sizeof(struct tkey), sizeof(struct tval), 7), "init");
	for (__u32 j = 0; j < 4; j++)
		put(&t, j, j);
	/* Used order, oldest first: 0 1 2 3; looking 0 up and then 2 makes it 1 3 0 2. */
	k = key(0);
	table_lookup(&t, &k);
	k = key(2);
	table_lookup(&t, &k);
	/* find does not count as a use. */
	CHECK(find(&t, 1) != TABLE_NIL, "1 is there");
	CHECK(put(&t, 4, 4) != TABLE_NIL, "insert 4 into a full table");
	CHECK_EQ(find(&t, 1), TABLE_NIL, "the least recently used (1) went first");
	CHECK(put(&t, 5, 5) != TABLE_NIL, "insert 5");
	CHECK_EQ(find(&t, 3), TABLE_NIL, "then 3");
	CHECK(find(&t, 0) != TABLE_NIL && find(&t, 2) != TABLE_NIL, "0 and 2 were used since");
	/* The walk from the most recently used: 5 4 2 0. */
	for (__u32 i = table_lru_first(&t); i != TABLE_NIL; i = table_lru_next(&t, i), n++)
		CHECK_EQ(((struct tkey *)table_key(&t, i))->a, want[n], "LRU position %u", n);
	CHECK_EQ(n, 4, "entries walked");
	/* And back from the least recently used: 0 2 4 5. */
	for (__u32 i = table_lru_last(&t); i != TABLE_NIL; i = table_lru_prev(&t, i)) {
		n--;
		CHECK_EQ(((struct tkey *)table_key(&t, i))->a, want[n], "LRU position %u from the end", n);
	}
	CHECK_EQ(n, 0, "entries walked back");
	table_free(&t);
}

static void case_full_table(void)
{
	struct table t;
	struct tkey k = key(9);
	unsigned int asked = 0;
	__u32 i;

	CHECK(!table_init(&t, 3, sizeof(struct tkey), sizeof(struct tval), 1), "init");
	for (__u32 n = 0; n < 3; n++)
		((struct tval *)table_val(&t, put(&t, n, n)))->pinned = true;
	CHECK_EQ(table_insert(&t, &k, not_pinned, &asked), TABLE_NIL,
		 "a full table none of whose entries may go");
	CHECK_EQ(asked, 3, "every entry asked, from the LRU end");
	CHECK_EQ(t.used, 3, "nothing evicted");
	for (__u32 n = 0; n < 3; n++)
		CHECK(find(&t, n) != TABLE_NIL, "%u kept", n);
	((struct tval *)table_val(&t, find(&t, 1)))->pinned = false;
	asked = 0;
	i = table_insert(&t, &k, not_pinned, &asked);
	CHECK(i != TABLE_NIL, "the one that may go makes room");
	CHECK_EQ(asked, 2, "asked 0, then 1");
	CHECK_EQ(find(&t, 1), TABLE_NIL, "1 evicted");
	CHECK(find(&t, 0) != TABLE_NIL, "0, older but pinned, kept");
	CHECK_EQ(((struct tval *)table_val(&t, i))->v, 0, "a new entry's value is zeroed");
	CHECK(!((struct tval *)table_val(&t, i))->pinned, "a new entry's value is zeroed");
	table_free(&t);
}

/* Many keys through a small table, against a reference of which keys it
 * should hold (the cap most recently inserted or looked up). */
static void case_random_against_reference(void)
{
	enum { CAP = 64, KEYS = 256, STEPS = 20000 };
	static __u64 last_use[KEYS];
	struct table t;
	__u64 clock = 0;

	memset(last_use, 0, sizeof(last_use));
	CHECK(!table_init(&t, CAP, sizeof(struct tkey), sizeof(struct tval), 3), "init");
	for (unsigned int s = 0; s < STEPS; s++) {
		__u32 n = (__u32)rng_below(KEYS), held = 0;
		struct tkey k = key(n);
		__u32 i = table_lookup(&t, &k);

		CHECK_EQ(i != TABLE_NIL, last_use[n] != 0, "step %u: key %u held", s, n);
		if (i == TABLE_NIL) {
			i = table_insert(&t, &k, NULL, NULL);
			CHECK(i != TABLE_NIL, "step %u: insert", s);
			((struct tval *)table_val(&t, i))->v = n;
		}
		CHECK_EQ(((struct tval *)table_val(&t, i))->v, n, "step %u: value", s);
		last_use[n] = ++clock;
		/* The reference forgets all but the CAP most recent. */
		for (__u32 m = 0; m < KEYS; m++)
			held += last_use[m] != 0;
		while (held > CAP) {
			__u32 oldest = 0;

			for (__u32 m = 1; m < KEYS; m++)
				if (last_use[m] && (!last_use[oldest] || last_use[m] < last_use[oldest]))
					oldest = m;
			last_use[oldest] = 0;
			held--;
		}
		CHECK_EQ(t.used, held, "step %u: entries in use", s);
	}
	table_free(&t);
}

static const struct test_case cases[] = {
	{ "insert_lookup", case_insert_lookup },
	{ "eviction_order", case_eviction_order },
	{ "full_table", case_full_table },
	{ "random_against_reference", case_random_against_reference },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_lru", cases, ARRAY_LEN(cases), argc, argv);
}
