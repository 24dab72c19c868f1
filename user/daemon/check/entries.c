// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's source table, a table.h table: a new key takes a
 * free entry or the least recently used idle one (when none is idle, none
 * will be before the earliest idle_at seen, and no walk is made until
 * then). Called with the server's lock held. */
#include <stdlib.h>
#include <sys/random.h>
#include "check.h"

struct idle_walk {
	__u64 now;
	__u64 soonest;			/* the earliest idle_at of those walked */
};

static bool entry_idle(const void *val, void *ctx)
{
	const struct check_entry *e = val;
	struct idle_walk *w = ctx;

	if (e->idle_at <= w->now)
		return true;
	if (e->idle_at < w->soonest)
		w->soonest = e->idle_at;
	return false;
}

/* The entry of k, made (empty) if there was none; NIL when the table is full. */
__u32 check_entry_get(struct check_server *s, const struct check_key *k, __u64 now)
{
	struct idle_walk w = { .now = now, .soonest = SLUICE_U64_MAX };
	__u32 i = table_lookup(&s->t, k);

	if (i != NIL)
		return i;
	if (table_full(&s->t) && now < s->no_idle_until)
		return NIL;
	i = table_insert(&s->t, k, entry_idle, &w);
	if (i == NIL)
		s->no_idle_until = w.soonest;
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
	if (getrandom(&s->seed, sizeof(s->seed), 0) != sizeof(s->seed))
		s->seed = mono_now_ns();
	s->repeats = calloc(REPEAT_SLOTS, sizeof(*s->repeats));
	if (table_init(&s->t, cap, sizeof(struct check_key), sizeof(struct check_entry),
		       s->seed) || !s->repeats)
		return runtime_err("out of memory for %u sources: lower --max-sources", cap);
	return 0;
}
