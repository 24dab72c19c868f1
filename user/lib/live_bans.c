// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The live bans of rules, read for ban list, ban del and query: a --ban
 * rule's ban is kept in a bucket's state word (a token bucket's TAT more
 * than its tolerance ahead of now, a window's count past the window: see
 * sluice/algo.h), so the source table is walked and each bucket judged by
 * the live policy; a request rule's ban (the check server's escalation)
 * is an entry of the ban table (bantab_escalated.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sluice/algo.h"
#include "bantab.h"
#include "clock.h"
#include "live.h"
#include "output.h"
#include "rule.h"
#include "srctab.h"

/* The live entries of the ban table, appended to a growing array. */
struct escalated {
	const struct policy *p;
	struct rule_ban **bans;
	size_t *nb, *cap;
	__u64 now;
};

static int add_escalated(const struct sluice_src_key *key, const struct sluice_ban *v, void *ctx)
{
	struct escalated *e = ctx;
	struct rule_ban *grown, *b;

	if (v->until_ns <= e->now)
		return 0;
	if (*e->nb == *e->cap) {
		grown = realloc(*e->bans, (*e->cap * 2 + 16) * sizeof(**e->bans));
		if (!grown)
			return -ENOMEM;
		*e->bans = grown;
		*e->cap = *e->cap * 2 + 16;
	}
	b = &(*e->bans)[(*e->nb)++];
	memset(b, 0, sizeof(*b));
	b->row.key = *key;
	b->rule = rule_by_index(e->p, v->policy);
	b->left_ns = v->until_ns - e->now;
	b->escalated = true;
	return 0;
}

static int read_escalated(const struct sluice_maps *m, const struct policy *p,
			  struct rule_ban **bans, size_t *nb, size_t *cap)
{
	struct escalated e = { .p = p, .bans = bans, .nb = nb, .cap = cap, .now = mono_now_ns() };
	int err = ban_walk(m->bans, add_escalated, &e);

	if (err)
		return runtime_err("cannot read the ban table: %s", strerror(-err));
	return 0;
}

/* The live limit of a bucket's rule; false when it does not limit. A
 * bucket's rule is its bound index; the active slot's entry says how to
 * read its state. */
static bool bucket_limit(const struct sluice_maps *m, __u32 slot, const struct sluice_bucket *b,
			 struct sluice_limit *l)
{
	struct sluice_policy sp;

	if (policy_entry(m, slot, SLUICE_BOUND_IDX(b->bound), &sp) || !sp.in_use ||
	    sp.action != SLUICE_ACT_LIMIT)
		return false;
	limit_of(&sp, l);
	return true;
}

int rule_bans_read(const struct sluice_maps *m, const struct policy *p, struct rule_ban **out,
		   size_t *n)
{
	struct bucket_row *rows;
	struct sluice_config cfg;
	size_t nrows, nb = 0, cap;
	struct rule_ban *bans;
	__u64 now;
	int err;

	err = read_buckets(m, &rows, &nrows);
	if (err)
		return err;
	bans = calloc(nrows ? nrows : 1, sizeof(*bans));
	if (!bans) {
		free(rows);
		return runtime_err("out of memory");
	}
	live_config(m, &cfg);
	now = mono_now_ns();
	for (size_t i = 0; i < nrows; i++) {
		const struct sluice_bucket *b = &rows[i].b;
		struct sluice_limit l;
		__u64 left;

		if (!bucket_limit(m, SLUICE_GEN_SLOT(cfg.gen_slot), b, &l))
			continue;
		left = limit_ban_left(&l, b->tat, now);
		if (!left)
			continue;
		bans[nb].row = rows[i];
		bans[nb].rule = rule_by_index(p, SLUICE_BOUND_IDX(b->bound));
		bans[nb].lim = l;
		bans[nb].left_ns = left;
		nb++;
	}
	free(rows);
	cap = nrows ? nrows : 1;
	err = read_escalated(m, p, &bans, &nb, &cap);
	if (err) {
		free(bans);
		return err;
	}
	*out = bans;
	*n = nb;
	return 0;
}

int rule_ban_cmp(const void *a, const void *b)
{
	const struct rule_ban *x = a, *y = b;

	if (x->left_ns != y->left_ns)
		return x->left_ns < y->left_ns ? 1 : -1;
	return memcmp(&x->row.key, &y->row.key, sizeof(x->row.key));
}

bool rule_ban_covers(const struct sluice_src_key *k, const struct sluice_src_key *want, bool prefix)
{
	struct sluice_src_key masked;

	if (k->family != want->family)
		return false;
	if (prefix)
		return k->policy != SLUICE_KEY_HOME && k->key_len == want->key_len &&
		       !memcmp(k->a, want->a, sizeof(k->a));
	if (k->policy == SLUICE_KEY_HOME)
		return !memcmp(k->a, want->a, sizeof(k->a));
	source_key_mask(want, k->key_len, k->policy, &masked);
	return !memcmp(k->a, masked.a, sizeof(k->a));
}

int source_bans(const struct sluice_maps *m, const struct policy *p,
		const struct sluice_src_key *addr, struct source_ban **out, size_t *n)
{
	struct rule_ban *bans = NULL;
	size_t nb = 0, k = 0;
	int err = rule_bans_read(m, p, &bans, &nb);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	if (nb)
		qsort(bans, nb, sizeof(*bans), rule_ban_cmp);
	*out = calloc(nb ? nb : 1, sizeof(**out));
	if (!*out) {
		free(bans);
		return runtime_err("out of memory");
	}
	for (size_t i = 0; i < nb; i++) {
		if (!rule_ban_covers(&bans[i].row.key, addr, false))
			continue;
		(*out)[k].key = bans[i].row.key;
		(*out)[k].rule = bans[i].rule;
		(*out)[k].left_ns = bans[i].left_ns;
		(*out)[k].escalated = bans[i].escalated;
		k++;
	}
	*n = k;
	free(bans);
	return 0;
}
