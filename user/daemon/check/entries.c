// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's source table, a table.h table: a new key takes a
 * free entry or the least recently used idle one (when none is idle, none
 * will be before the earliest idle_at seen, and no walk is made until
 * then). Called with the server's lock held. */
#include <stdlib.h>
#include <sys/random.h>
#include "check.h"

/* A full table meets every new client: said at most this often. */
#define FULL_SAY_NS	(60ULL * SLUICE_NS_PER_SEC)

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

/* One new source refused by the full table, said now and then. */
static void table_full_said(struct check_server *s, __u64 now)
{
	s->full_refused++;
	if (s->full_said_ns && now - s->full_said_ns < FULL_SAY_NS)
		return;
	log_event(LOG_WARNING, "check-server: %s: the source table is full (%u sources, none "
		  "idle): new clients are answered %s until one is (%llu refused since last "
		  "said); --max-sources N tracks more", s->m.iface, s->t.cap,
		  "429 (403 with ?status=403)", (unsigned long long)s->full_refused);
	s->full_said_ns = now;
	s->full_refused = 0;
}

/* The entry of k, made (empty) if there was none; NIL when the table is full. */
__u32 check_entry_get(struct check_server *s, const struct check_key *k, __u64 now)
{
	struct idle_walk w = { .now = now, .soonest = SLUICE_U64_MAX };
	__u32 i = table_lookup(&s->t, k);

	if (i != NIL)
		return i;
	if (!table_full(&s->t) || now >= s->no_idle_until) {
		i = table_insert(&s->t, k, entry_idle, &w);
		if (i == NIL)
			s->no_idle_until = w.soonest;
	}
	if (i == NIL)
		table_full_said(s, now);
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
