// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's policy: the interface's request rules (limit set
 * CIDR --requests), read from the live policy, ordered longest prefix
 * first, and carried over to the source table when a commit changes them. */
#include <stdlib.h>
#include "check.h"

/* The bits of the 128-bit form a rule's buckets keep (the datapath's key_len). */
static __u32 rule_key_bits(const struct rule *r)
{
	if (r->per == SLUICE_PER_RULE)
		return r->cidr.prefixlen;
	if (r->per == SLUICE_PER_PREFIX)
		return (cidr_family(&r->cidr) == SLUICE_FAMILY_V4 ? SLUICE_V4_MAPPED_PREFIX : 0) +
		       r->per_len;
	return SLUICE_KEY_LEN_SOURCE;
}

/* Adds request rule r to out at its table index, kept longest prefix
 * first (the first rule covering a source decides); any other rule is
 * left out. */
void check_policy_add(struct check_policy *out, const struct rule *r)
{
	struct check_rule *c;
	unsigned int j;

	if (!rule_is_request(r) || r->action != SLUICE_ACT_LIMIT ||
	    r->index >= SLUICE_MAX_POLICIES)
		return;
	c = &out->rules[r->index];
	c->in_use = true;
	c->cidr = r->cidr;
	c->family = cidr_family(&r->cidr);
	c->key_len = rule_key_bits(r);
	rule_limit(r, &c->l);
	c->l.ban = 0;
	c->monitor = r->monitor;
	c->ban_ns = r->ban_ns;
	c->ban_after = r->ban_after;
	rule_cidr_str(r, c->name, sizeof(c->name));
	c->quota = limit_capacity(&c->l);
	if (r->algo == SLUICE_ALGO_TOKEN_BUCKET) {	/* empty to full: burst x period / rate */
		unsigned __int128 t = (unsigned __int128)r->burst * (r->period ? r->period : 1);

		c->window_s = (__u64)(t / r->rate + (t % r->rate ? 1 : 0));
	} else {
		c->window_s = ns_to_s_up(r->window_ns);
	}
	j = out->n++;
	for (; j && out->rules[out->order[j - 1]].cidr.prefixlen < r->cidr.prefixlen; j--)
		out->order[j] = out->order[j - 1];
	out->order[j] = r->index;
}

/* The request rules of the live policy into *out; 0, or the exit code
 * (policy_read said why). */
int check_policy_load(const struct sluice_maps *m, struct check_policy *out)
{
	struct policy *p = malloc(sizeof(*p));
	struct sluice_config cfg;
	int err;

	memset(out, 0, sizeof(*out));
	if (!p)
		return runtime_err("out of memory");
	live_config(m, &cfg);
	out->gen = SLUICE_GEN(cfg.gen_slot);
	err = policy_read(m, p);
	if (!err)
		for (unsigned int i = 0; i < p->n; i++)
			check_policy_add(out, &p->rules[i]);
	free(p);
	return err;
}

/* The most specific request rule covering src, or NULL. */
const struct check_rule *check_rule_for(const struct check_policy *p,
					const struct sluice_src_key *src, __u32 *idx)
{
	for (unsigned int i = 0; i < p->n; i++) {
		const struct check_rule *r = &p->rules[p->order[i]];

		if (cidr_has(&r->cidr, src->family, src->a)) {
			*idx = p->order[i];
			return r;
		}
	}
	return NULL;
}

static bool same_limit(const struct sluice_limit *a, const struct sluice_limit *b)
{
	return a->algo == b->algo && a->interval == b->interval && a->tolerance == b->tolerance &&
	       a->bits == b->bits && a->ban_windows == b->ban_windows;
}

/* The new policy's rules for the table: a deleted rule's entries go, a
 * changed limit carries its buckets over (limit_rebind, as the datapath
 * does), a rule whose buckets are keyed otherwise starts afresh. */
void check_policy_apply(struct check_server *s, struct check_policy *np, __u64 now)
{
	const struct check_policy *op = s->pol;

	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++) {
		const struct check_rule *o = &op->rules[idx], *n = &np->rules[idx];

		if (o->in_use && (!n->in_use || memcmp(&o->cidr, &n->cidr, sizeof(o->cidr)) != 0)) {
			__atomic_store_n(&s->counts[idx].pass, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->counts[idx].limited, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->counts[idx].bans, 0, __ATOMIC_RELAXED);
		}
	}
	for (__u32 i = table_lru_first(&s->t), next; i != NIL; i = next) {
		const struct check_key *k = table_key(&s->t, i);
		struct check_entry *e = check_entry_at(s, i);
		__u32 idx = k->src.policy;
		const struct check_rule *o = &op->rules[idx], *n = &np->rules[idx];

		next = table_lru_next(&s->t, i);
		if (!n->in_use || memcmp(&o->cidr, &n->cidr, sizeof(o->cidr)) != 0 ||
		    o->key_len != n->key_len) {
			check_entry_remove(s, i);
			continue;
		}
		if (k->kind != KIND_BUCKET || same_limit(&o->l, &n->l))
			continue;
		e->state = limit_rebind(e->state, now, 1, SLUICE_ACT_LIMIT, &o->l,
					SLUICE_ACT_LIMIT, &n->l);
		e->idle_at = check_idle_time(&n->l, e->state, now);
	}
	s->no_idle_until = 0;
	for (__u32 p = table_lru_first(&s->prefixes); p != NIL; p = table_lru_next(&s->prefixes, p))
		((struct prefix_entry *)table_val(&s->prefixes, p))->no_idle_until = 0;
	s->pol = np;
}
