/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Policy lookup: the rule that decides a packet (the LPM trie and its
 * candidates' L4 matches), and consistent copies of a policy out of the
 * double-buffered table. Part of sluice.bpf.c, included by it after maps.h. */
#ifndef SLUICE_BPF_RESOLVE_H
#define SLUICE_BPF_RESOLVE_H

/* What a policy says, copied out of the table. */
struct verdict {
	struct sluice_limit lim;
	__u64 since;
	__u32 action;
	__u8 unit;
	__u8 key_len;
	__u8 flags;
};

/* A packet as rules see it: its source's home key and its L4 facts; kidx
 * says which bucket it is judged in (SLUICE_KEY_HOME or a keyed one's
 * policy index). */
struct pkt {
	struct sluice_src_key src;
	struct l4 l4;
	__u32 kidx;
	__u64 bytes;
	__u64 id;		/* the slot bits of its bucket, when that is a slot of
				 * the source table (judge_bucket) */
};

static __always_inline int match_holds(const struct sluice_match *m, const struct l4 *l4)
{
	__u8 f = m->flags;

	if ((f & SLUICE_MATCH_PROTO) && m->proto != l4->proto)
		return 0;
	if ((f & SLUICE_MATCH_PORT) &&
	    (!(l4->flags & L4_PORTS) || l4->dport < m->dport_lo || l4->dport > m->dport_hi))
		return 0;
	if ((f & SLUICE_MATCH_SYN) && !(l4->flags & L4_SYN))
		return 0;
	return 1;
}

/* p's candidates in slot: its source's entry of the LPM trie, or NULL. */
static __always_inline struct sluice_lpm_val *candidates(const struct pkt *p, __u32 slot)
{
	struct sluice_lpm_key key = {
		.prefixlen = SLUICE_LPM_FULL_PREFIX,
		.slot = (__u8)slot,
	};

	key.family = p->src.family;
	__builtin_memcpy(key.addr, p->src.a, sizeof(key.addr));
	return bpf_map_lookup_elem(&policy_lpm, &key);
}

/* resolve_rule's answer, one scalar: the rule's index, the first
 * candidate's (lead) and whether the rule is direct. */
#define RESOLVE_IDX_MASK	0xffffULL
#define RESOLVE_LEAD_SHIFT	16
#define RESOLVE_DIRECT		(1ULL << 32)

/*
 * The rule that decides p in slot, as resolve tells it, packed into one
 * scalar. Global: the verifier walks the candidates' matches once, not
 * once for every way the program goes on from each of them (every rule
 * index a constant of its own), which was a third of what it processed.
 */
__noinline __u64 resolve_rule(const struct pkt *p, __u32 slot)
{
	struct sluice_lpm_val *hit;
	__u64 lead = SLUICE_POLICY_DEFAULT, idx = SLUICE_POLICY_DEFAULT;
	__u32 i, n;

	if (!p)
		return RESOLVE_DIRECT | SLUICE_POLICY_DEFAULT;
	hit = candidates(p, slot);
	if (!hit)
		return RESOLVE_DIRECT | SLUICE_POLICY_DEFAULT;
	n = hit->n;
	for (i = 0; i < SLUICE_MATCH_MAX && i < n; i++) {
		if (!match_holds(&hit->m[i], &p->l4))
			continue;
		idx = hit->m[i].policy;
		break;
	}
	if (idx >= SLUICE_MAX_POLICIES)
		idx = SLUICE_POLICY_DEFAULT;
	if (!n || !hit->m[0].flags)
		return RESOLVE_DIRECT | idx;
	lead = hit->m[0].policy;
	if (lead >= SLUICE_MAX_POLICIES)
		lead = SLUICE_POLICY_DEFAULT;
	return lead << RESOLVE_LEAD_SHIFT | idx;
}

/*
 * The index of the rule that decides p in slot, or the default. *direct is
 * set when that does not depend on the packet's L4 facts (the source's
 * candidates start with a rule without a match), so every packet of the
 * source goes to the same rule; otherwise *lead is the first candidate,
 * the most specific rule that matches on L4 (an l4_unreadable drop is
 * counted on it). A later fragment whose first was not seen (an orphan:
 * L4_LATER_FRAG left set by frag_facts) has no port and no SYN to match,
 * nor an IPv6 protocol; whether that matters, orphan_rule tells.
 * SLUICE_MAX_POLICIES is a power of two: the mask tells the verifier what
 * resolve_rule guarantees.
 */
_Static_assert((SLUICE_MAX_POLICIES & (SLUICE_MAX_POLICIES - 1)) == 0 &&
	       SLUICE_MAX_POLICIES <= RESOLVE_IDX_MASK + 1, "a rule index fits the mask");
static __always_inline __u32 resolve(const struct pkt *p, __u32 slot, int *direct, __u32 *lead)
{
	__u64 r = resolve_rule(p, slot);

	*direct = !!(r & RESOLVE_DIRECT);
	if (!*direct)
		*lead = (__u32)(r >> RESOLVE_LEAD_SHIFT) & (SLUICE_MAX_POLICIES - 1);
	return (__u32)r & (SLUICE_MAX_POLICIES - 1);
}

/*
 * Whether a later fragment whose first was not seen (an orphan: no port,
 * no SYN, and for IPv6 no protocol) is matched by m: 1 if it is, 0 if it
 * cannot be, -1 if that cannot be told.
 */
static __always_inline int orphan_holds(const struct sluice_match *m, const struct pkt *p)
{
	if (!m->flags)
		return 1;
	if (!(m->flags & SLUICE_MATCH_PROTO) || p->src.family != SLUICE_FAMILY_V4)
		return -1;
	if (m->proto != p->l4.proto)
		return 0;
	return (m->flags & (SLUICE_MATCH_PORT | SLUICE_MATCH_SYN)) ? -1 : 1;
}

/*
 * The rule that decides orphan p in slot, when no candidate before it
 * might hold: then resolve gives the same. Else ORPHAN_UNSURE with the
 * first candidate that might, where its frag_orphan drop is counted. So an
 * orphan is judged as any packet where what it lacks does not matter: an
 * IPv4 TCP one under a --proto udp rule goes on to the rules after it.
 * Global: the path of other packets is unchanged.
 */
#define ORPHAN_UNSURE	0x80000000U
__noinline __u32 orphan_rule(const struct pkt *p, __u32 slot)
{
	struct sluice_lpm_val *hit;
	__u32 i, n, idx;
	int h;

	if (!p)
		return SLUICE_POLICY_DEFAULT | ORPHAN_UNSURE;
	hit = candidates(p, slot);
	if (!hit)
		return SLUICE_POLICY_DEFAULT;
	n = hit->n;
	for (i = 0; i < SLUICE_MATCH_MAX && i < n; i++) {
		h = orphan_holds(&hit->m[i], p);
		if (!h)
			continue;
		idx = hit->m[i].policy < SLUICE_MAX_POLICIES ? hit->m[i].policy
							     : SLUICE_POLICY_DEFAULT;
		return h > 0 ? idx : idx | ORPHAN_UNSURE;
	}
	return SLUICE_POLICY_DEFAULT;
}

/* Policy idx of slot in the table, or NULL. */
static __always_inline struct sluice_policy *policy_at(__u32 slot, __u32 idx)
{
	__u32 key;

	if (idx >= SLUICE_MAX_POLICIES)
		return NULL;
	key = slot * SLUICE_MAX_POLICIES + idx;
	return bpf_map_lookup_elem(&policy_table, &key);
}

/* 0 when no second flip has begun since gen_slot was read: the slot it
 * names was not rewritten meanwhile; else -1. */
static __always_inline int same_generation(struct sluice_config *cfg, __u64 gen_slot)
{
	return SLUICE_GEN(READ_ONCE(cfg->gen_slot)) == SLUICE_GEN(gen_slot) ? 0 : -1;
}

/*
 * Copy policy idx of the slot that gen_slot names, then check that the slot
 * was not rewritten meanwhile: a commit writes only the inactive slot, so it
 * is enough that no second flip has begun. With want_idle, the config must
 * also show no commit writing (for reads of the inactive slot). Returns 0 on
 * a consistent copy.
 */
static __always_inline int read_policy(struct sluice_config *cfg, __u64 gen_slot, __u32 slot,
				       __u32 idx, struct verdict *v, int want_idle)
{
	struct sluice_policy *p;

	if (want_idle && (gen_slot & SLUICE_GEN_WRITING))
		return -1;
	p = policy_at(slot, idx);
	if (!p)
		return -1;
	v->lim.interval = READ_ONCE(p->interval);
	v->lim.tolerance = READ_ONCE(p->tolerance);
	v->lim.ban = READ_ONCE(p->ban);
	v->lim.ban_windows = READ_ONCE(p->ban_windows);
	v->lim.algo = READ_ONCE(p->algo);
	v->lim.bits = READ_ONCE(p->bits);
	v->since = READ_ONCE(p->since);
	v->action = READ_ONCE(p->action);
	v->unit = READ_ONCE(p->unit);
	v->key_len = READ_ONCE(p->key_len);
	v->flags = READ_ONCE(p->flags);
	barrier();
	if (want_idle)
		return READ_ONCE(cfg->gen_slot) == gen_slot ? 0 : -1;
	return same_generation(cfg, gen_slot);
}

/*
 * The history of policy idx in the slot that gen_slot names (struct
 * sluice_policy): when its limit last changed (*at, CLOCK_MONOTONIC ns:
 * the moment generation `since` became active) and the first generation
 * its previous limit judged (*prev_since). Checked as read_policy does;
 * returns 0 on a consistent copy.
 */
static __always_inline int read_change(struct sluice_config *cfg, __u64 gen_slot, __u32 slot,
				       __u32 idx, __u64 *at, __u64 *prev_since)
{
	struct sluice_policy *p = policy_at(slot, idx);

	if (!p)
		return -1;
	*at = READ_ONCE(p->since) == SLUICE_GEN(gen_slot) ? READ_ONCE(cfg->active_since_ns[slot & 1])
							  : READ_ONCE(p->since_ns);
	*prev_since = READ_ONCE(p->prev_since);
	barrier();
	return same_generation(cfg, gen_slot);
}

/* The limit policy idx had before its last change, into v's limit and
 * action; checked as read_policy does. */
static __always_inline int read_prev(struct sluice_config *cfg, __u64 gen_slot, __u32 slot,
				     __u32 idx, struct verdict *v)
{
	struct sluice_policy *p = policy_at(slot, idx);

	if (!p)
		return -1;
	v->lim.interval = READ_ONCE(p->prev_interval);
	v->lim.tolerance = READ_ONCE(p->prev_tolerance);
	v->lim.ban = READ_ONCE(p->prev_ban);
	v->lim.ban_windows = READ_ONCE(p->prev_ban_windows);
	v->lim.algo = READ_ONCE(p->prev_algo);
	v->lim.bits = READ_ONCE(p->prev_bits);
	v->action = READ_ONCE(p->prev_action);
	barrier();
	return same_generation(cfg, gen_slot);
}

/* The clock policy v is judged by (SLUICE_POLICY_COARSE_CLOCK). */
static __always_inline __u64 policy_clock(const struct verdict *v)
{
	return (v->flags & SLUICE_POLICY_COARSE_CLOCK) ? SLUICE_COARSE_CLOCK_NS()
						       : SLUICE_CLOCK_NS();
}

/* Whether a source decided by a rule with verdict v and candidates that
 * do not depend on L4 (direct) is served by its home bucket. */
static __always_inline int served_at_home(int direct, const struct verdict *v)
{
	return direct && v->key_len >= SLUICE_KEY_LEN_SOURCE;
}

#endif /* SLUICE_BPF_RESOLVE_H */
