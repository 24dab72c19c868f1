/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Spending the leases of cluster-wide rules (--cluster). Part of
 * sluice.bpf.c, included by it after bucket.h. */
#ifndef SLUICE_BPF_LEASE_H
#define SLUICE_BPF_LEASE_H

/*
 * A packet its rule idx rejected as rate limited (p's bucket, whose
 * dropped count is dropped): when the rule is leased (--cluster, agent
 * up), admitted on the bucket's lease while one is live (not expired) for
 * this rule and has credit left (taken by CAS, boundedly: each lost CAS is
 * another CPU's admission). A bucket with no live lease tells the agent at
 * every SLUICE_CLUSTER_NOTICE_EVERY-th drop, its first included; a full queue
 * only delays the notice to the next one. Global, so the verifier walks it
 * once; returns the packet's reason.
 */
__noinline int lease_take(struct sluice_config *cfg, const struct pkt *p, __u32 idx,
		       __u32 dropped)
{
	struct sluice_hot hot = { .policy = idx };
	struct sluice_policy *pol;
	struct sluice_lease *l;
	__u64 credit;
	__u32 key;
	int i;

	if (!cfg || !p || idx >= SLUICE_MAX_POLICIES)
		return SLUICE_R_RATE_LIMITED;
	key = SLUICE_GEN_SLOT(READ_ONCE(cfg->gen_slot)) * SLUICE_MAX_POLICIES + idx;
	pol = bpf_map_lookup_elem(&policy_table, &key);
	if (!pol || !(READ_ONCE(pol->flags) & SLUICE_POLICY_LEASED))
		return SLUICE_R_RATE_LIMITED;
	hot.key = p->src;
	if (p->kidx != SLUICE_KEY_HOME) {
		hot.key.key_len = READ_ONCE(pol->key_len);
		hot.key.policy = (__u16)idx;
		mask_addr(hot.key.a, hot.key.key_len);
	}
	l = bpf_map_lookup_elem(&leases, &hot.key);
	/* Expiry decides first: an expired lease is no lease, whatever its
	 * credit, so its drops tell the agent again (an agent that lost the
	 * bucket, e.g. after a failed sync, finds it anew). The coarse clock
	 * lags by up to a tick: a lease lives at most one tick past its
	 * expiry. */
	if (l && READ_ONCE(l->policy) == idx &&
	    bpf_ktime_get_coarse_ns() < READ_ONCE(l->expires_ns)) {
		for (i = 0; i < SLUICE_LEASE_TRIES; i++) {
			credit = READ_ONCE(l->credit);
			if (!credit)
				break;
			if (SLUICE_CAS(&l->credit, credit, credit - 1) == credit)
				return SLUICE_R_WITHIN_LIMIT;
		}
		/* Live and spent: the agent holds the bucket and sees its
		 * drops at the next sync; no notice. */
		return SLUICE_R_RATE_LIMITED;
	}
	/* A bucket whose drop count saturated tells at random, as often. */
	if (dropped % SLUICE_CLUSTER_NOTICE_EVERY == 0 ||
	    (dropped >= SLUICE_SRC_COUNT_MAX &&
	     bpf_get_prandom_u32() % SLUICE_CLUSTER_NOTICE_EVERY == 0))
		bpf_map_push_elem(&cluster_hot, &hot, 0);
	return SLUICE_R_RATE_LIMITED;
}

#endif /* SLUICE_BPF_LEASE_H */
