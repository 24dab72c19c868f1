// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's source table, an lru.h table: a new key takes a
 * free entry or the least recently used idle one (when none is idle, none
 * will be before the earliest idle_at seen, and no walk is made until
 * then). An idle entry holds what a new one would (a full bucket, a
 * window whose counts have all expired, no streak), so evicting it changes
 * no answer. Each entry counts against its prefix (PREFIX_BITS_*), which
 * may hold at most prefix_share of them: a prefix at its share takes the
 * room of its own idle entries only. A new source whose bucket finds no
 * room is refused, counted by reason and said in the log (an address's
 * streak that finds none is only not kept: it is not banned). Called with
 * the server's lock held. */
#include <stdlib.h>
#include <sys/random.h>
#include "check.h"

/* A refusal is said at most this often (per reason). */
#define REFUSAL_SAY_NS	(60ULL * SLUICE_NS_PER_SEC)

struct idle_walk {
	__u64 now;
	__u64 soonest;			/* the earliest idle_at of those walked */
	__u32 prefix;			/* of the entry chosen */
};

static bool entry_idle(const void *val, void *ctx)
{
	const struct check_entry *e = val;
	struct idle_walk *w = ctx;

	if (e->idle_at <= w->now) {
		w->prefix = e->prefix;
		return true;
	}
	if (e->idle_at < w->soonest)
		w->soonest = e->idle_at;
	return false;
}

static struct prefix_entry *prefix_at(const struct check_server *s, __u32 p)
{
	return table_val(&s->prefixes, p);
}

/* The prefix src counts against, as a key of s->prefixes. */
static void prefix_key(const struct sluice_src_key *src, struct sluice_src_key *out)
{
	source_key_mask(src, src->family == SLUICE_FAMILY_V4 ? PREFIX_BITS_V4 : PREFIX_BITS_V6, 0,
			out);
}

/* One entry fewer for prefix p; a prefix with none is forgotten. */
static void prefix_drop(struct check_server *s, __u32 p)
{
	if (--prefix_at(s, p)->n == 0)
		table_remove(&s->prefixes, p);
}

/* One new source refused for reason r (pk its prefix), counted, and said
 * now and then. */
static void refusal_said(struct check_server *s, enum refusal r,
			 const struct sluice_src_key *pk, __u64 now)
{
	char who[SLUICE_CIDR_STR_MAX];

	count(&s->refused[r]);
	s->unsaid[r]++;
	if (s->said_ns[r] && now - s->said_ns[r] < REFUSAL_SAY_NS)
		return;
	if (r == REFUSE_FULL) {
		log_event(LOG_WARNING, "check-server: %s: the source table is full (%u sources, "
			  "none idle): new clients are answered %s until one is (%llu refused "
			  "since last said); --max-sources N tracks more", s->m.iface, s->t.cap,
			  "429 (403 with ?status=403)", (unsigned long long)s->unsaid[r]);
	} else {
		format_source(pk, who, sizeof(who));
		log_event(LOG_WARNING, "check-server: %s: the addresses of %s hold their share "
			  "of the source table (%u of %u entries, none idle): its new addresses "
			  "are answered %s until one is, other clients are still served (%llu "
			  "refused since last said)", s->m.iface, who, s->prefix_share, s->t.cap,
			  "429 (403 with ?status=403)", (unsigned long long)s->unsaid[r]);
	}
	s->said_ns[r] = now;
	s->unsaid[r] = 0;
}

/* Frees an idle entry of prefix p (at its share) for a new one of p; false
 * when none is idle (and none will be before the prefix's no_idle_until). */
static bool prefix_claim_idle(struct check_server *s, __u32 p, __u64 now)
{
	struct prefix_entry *pe = prefix_at(s, p);
	__u64 soonest = SLUICE_U64_MAX;

	if (now < pe->no_idle_until)
		return false;
	for (__u32 i = table_lru_last(&s->t); i != NIL; i = table_lru_prev(&s->t, i)) {
		const struct check_entry *e = check_entry_at(s, i);

		if (e->prefix != p)
			continue;
		if (e->idle_at <= now) {
			check_entry_remove(s, i);	/* p keeps entries: n >= share >= 1 */
			return true;
		}
		if (e->idle_at < soonest)
			soonest = e->idle_at;
	}
	pe->no_idle_until = soonest;
	return false;
}

/* A new entry for k (not in the table), counted against its prefix pk;
 * NIL when there is no room for it, after saying why. */
static __u32 entry_new(struct check_server *s, const struct check_key *k,
		       const struct sluice_src_key *pk, __u64 now)
{
	struct idle_walk w = { .now = now, .soonest = SLUICE_U64_MAX, .prefix = NIL };
	__u32 i = NIL, p = table_find(&s->prefixes, pk);
	bool was_full = table_full(&s->t);

	if (p != NIL && prefix_at(s, p)->n >= s->prefix_share) {
		if (!prefix_claim_idle(s, p, now)) {
			if (k->kind == KIND_BUCKET)
				refusal_said(s, REFUSE_PREFIX, pk, now);
			return NIL;
		}
		was_full = false;	/* the claimed entry's room */
	}
	if (!was_full || now >= s->no_idle_until) {
		i = table_insert(&s->t, k, entry_idle, &w);
		if (i == NIL)
			s->no_idle_until = w.soonest;
	}
	if (i == NIL) {
		if (k->kind == KIND_BUCKET)
			refusal_said(s, REFUSE_FULL, pk, now);
		return NIL;
	}
	if (was_full)		/* an idle entry was evicted for it */
		prefix_drop(s, w.prefix);
	p = table_find(&s->prefixes, pk);
	if (p == NIL)		/* never full: a prefix has at least one entry */
		p = table_insert(&s->prefixes, pk, NULL, NULL);
	prefix_at(s, p)->n++;
	check_entry_at(s, i)->prefix = p;
	return i;
}

/* The entry of k, made (empty) if there was none; NIL when there is no room. */
__u32 check_entry_get(struct check_server *s, const struct check_key *k, __u64 now)
{
	struct sluice_src_key pk;
	__u32 i = table_lookup(&s->t, k);

	if (i != NIL)
		return i;
	prefix_key(&k->src, &pk);
	return entry_new(s, k, &pk, now);
}

/* Takes entry i out of the table, and out of its prefix's count. */
void check_entry_remove(struct check_server *s, __u32 i)
{
	prefix_drop(s, check_entry_at(s, i)->prefix);
	table_remove(&s->t, i);
}

/* Entry e holds nothing worth keeping from now on: it may be claimed. */
void check_entry_idle_now(struct check_server *s, struct check_entry *e, __u64 now)
{
	e->idle_at = now;
	s->no_idle_until = 0;
	prefix_at(s, e->prefix)->no_idle_until = 0;
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
	s->prefix_share = cap / PREFIX_SHARE_DIV;
	if (s->prefix_share < PREFIX_SHARE_MIN)
		s->prefix_share = PREFIX_SHARE_MIN;
	s->repeats = calloc(REPEAT_SLOTS, sizeof(*s->repeats));
	if (table_init(&s->t, cap, sizeof(struct check_key), sizeof(struct check_entry),
		       s->seed) || !s->repeats ||
	    table_init(&s->prefixes, cap, sizeof(struct sluice_src_key),
		       sizeof(struct prefix_entry), s->seed))
		return runtime_err("out of memory for %u sources: lower --max-sources", cap);
	return 0;
}

void check_table_free(struct check_server *s)
{
	table_free(&s->t);
	table_free(&s->prefixes);
	free(s->repeats);
	s->repeats = NULL;
}
