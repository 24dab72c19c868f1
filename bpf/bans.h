/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The two ban lookups, made before any rule: a banned prefix (ban add,
 * ban load: the ban_trie) and a source the check server banned (a request
 * rule's escalation: the bans table). Part of sluice.bpf.c, included by it
 * after resolve.h (struct pkt). */
#ifndef SLUICE_BPF_BANS_H
#define SLUICE_BPF_BANS_H

/* Whether p's source lies in a banned prefix (ban add, ban load): then
 * its drop is counted to the entry and to its list (it belongs to no
 * rule). The longest covering entry answers; one that has expired (and
 * waits for a sweep) hides nothing: the lookup is done again below its
 * prefix length, which finds the next shorter covering entry, until a live
 * one or none. Each round is a shorter prefix, so SLUICE_BAN_DEPTH rounds
 * cover /128 to /0. Costs one array-of-maps lookup while no prefix is
 * banned (the slot is empty then). */
static __always_inline int prefix_banned(const struct pkt *p)
{
	struct sluice_ban_key k;
	struct sluice_pfx_ban *b = NULL;
	struct sluice_counter *c;
	__u32 zero = 0, list, plen, i;
	__u64 until, now = 0;
	void *trie;

	trie = bpf_map_lookup_elem(&ban_trie, &zero);
	if (!trie)
		return 0;
	sluice_ban_key_make(&k, p->src.family, p->src.a, SLUICE_KEY_LEN_SOURCE);
	for (i = 0; i < SLUICE_BAN_DEPTH; i++) {
		b = bpf_map_lookup_elem(trie, &k);
		if (!b)
			return 0;
		until = READ_ONCE(b->until_ns);
		if (!until)
			break;
		if (!now)
			now = bpf_ktime_get_ns();
		if (now < until)
			break;
		/* Expired: the covering entries shorter than it. */
		plen = READ_ONCE(b->prefixlen);
		if (plen > k.prefixlen)
			plen = k.prefixlen;
		if (plen <= SLUICE_BAN_KEY_FAMILY_BITS)
			return 0;
		k.prefixlen = plen - 1;
		b = NULL;
	}
	if (!b)
		return 0;
	SLUICE_VERDICT_HOOK(&p->src, SLUICE_R_BANNED);
	__sync_fetch_and_add(&b->dropped, 1);
	list = READ_ONCE(b->list);
	c = bpf_map_lookup_elem(&ban_drops, &list);
	if (c) {
		c->packets++;
		c->bytes += p->bytes;
	}
	return 1;
}

/* Whether p's source is banned by the check server (a request rule's
 * escalation): then *idx is the rule that banned it. Looked up only while
 * bans exist. */
static __always_inline int source_banned(const struct pkt *p, __u32 *idx)
{
	struct sluice_ban_state *st;
	struct sluice_ban *ban;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&ban_state, &zero);
	if (!st || !(READ_ONCE(st->bans) & SLUICE_BANS_LIVE))
		return 0;
	ban = bpf_map_lookup_elem(&bans, &p->src);
	if (!ban || bpf_ktime_get_ns() >= READ_ONCE(ban->until_ns))
		return 0;
	*idx = READ_ONCE(ban->policy);
	if (*idx >= SLUICE_MAX_POLICIES)
		*idx = SLUICE_POLICY_DEFAULT;
	return 1;
}

#endif /* SLUICE_BPF_BANS_H */
