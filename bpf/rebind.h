/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Re-binding a bucket to a new policy generation, its state converted to
 * the new limit. Part of sluice.bpf.c, included by it after resolve.h. */
#ifndef SLUICE_BPF_REBIND_H
#define SLUICE_BPF_REBIND_H

/* State of the TAT conversion loop (bpf_loop, so it is verified once). */
struct convert {
	struct sluice_bucket *b;
	struct verdict ov, nv;
	__u64 at;		/* when the new policy took effect, ns */
	int old_known;
};

static long convert_step(__u64 i, struct convert *cv)
{
	struct sluice_bucket *b = cv->b;
	__u64 tat, next;

	if (!b)
		return 1;
	tat = READ_ONCE(b->tat);
	next = limit_rebind(tat, cv->at, cv->old_known, cv->ov.action, &cv->ov.lim,
			    cv->nv.action, &cv->nv.lim);
	/* Every conversion moves the state, so a CAS based on the old one
	 * fails; one unit more debt (1/64 ns of a token bucket, one packet or
	 * byte of a window) is the safe side. */
	if (next == tat)
		next = tat == SLUICE_U64_MAX ? tat - 1 : tat + 1;
	return SLUICE_CAS(&b->tat, tat, next) == tat;
}

/* Whether policy idx of slot holds a policy. An entry no policy uses (a
 * slot never written, as an upgrade's fresh table's other slot, or an
 * index free in that generation) says nothing of what judged a bucket:
 * its zero action is not an allow. */
static __always_inline int policy_used(__u32 slot, __u32 idx)
{
	struct sluice_policy *p;
	__u32 key;

	if (idx >= SLUICE_MAX_POLICIES)
		return 0;
	key = (slot & 1) * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	return p && READ_ONCE(p->in_use);
}

/*
 * The limit that judged a bucket bound to policy old_idx of generation
 * old_gen, for its re-bind to policy idx of the generation gen_slot names
 * (whose limit changed since, or which is another rule): into *ov, with
 * *old_known, and into *changed the moment its state is converted as of. The same rule: the limit before its last change, if that one judged
 * old_gen. Another rule: the previous generation's policy, still in the
 * inactive slot, or a policy unchanged since old_gen in the active one;
 * either judged it until this generation. Neither: not known, as of the
 * later of both rules' last changes. Returns -1 when a commit overtook
 * the reads.
 */
static __always_inline int rebind_old(struct sluice_config *cfg, __u64 gen_slot, __u64 old_gen,
				      __u32 old_idx, __u32 idx, struct verdict *ov,
				      int *old_known, __u64 *changed)
{
	__u64 gen = SLUICE_GEN(gen_slot), prev_since, t;
	__u32 slot = SLUICE_GEN_SLOT(gen_slot);

	if (read_change(cfg, gen_slot, slot, idx, changed, &prev_since))
		return -1;
	if (idx == old_idx) {
		*old_known = prev_since <= old_gen && !read_prev(cfg, gen_slot, slot, idx, ov);
		return 0;
	}
	*old_known = old_gen + 1 == gen && policy_used(!slot, old_idx) &&
		     !read_policy(cfg, gen_slot, !slot, old_idx, ov, 1);
	if (!*old_known && !read_policy(cfg, gen_slot, slot, old_idx, ov, 0)) {
		*old_known = ov->since <= old_gen && policy_used(slot, old_idx);
		if (!read_change(cfg, gen_slot, slot, old_idx, &t, &prev_since) && t > *changed)
			*changed = t;
	}
	if (*old_known)
		*changed = READ_ONCE(cfg->active_since_ns[slot & 1]);
	return 0;
}

/*
 * Bind bucket b, last bound by word `bound`, to the generation of gen_slot:
 * one CAS of the bound word decides which CPU does it. The packet's rule is
 * resolved again; when it no longer belongs in this bucket (a home bucket
 * whose source now needs keyed buckets, or a keyed bucket of another rule),
 * the home bucket is marked so and the packet is rerouted. When the rule's
 * limit changed, the winner marks the word pending, converts TAT with CAS
 * (the source keeps its tokens, clamped to the new burst) and then publishes
 * the new word; packets that see the pending bit wait for it. The state is
 * converted as of the moment the rule's limit last changed, from the limit
 * before: commits that changed other rules meanwhile do not matter. A
 * bucket idle across two or more changes of its rule, whose old limit is
 * gone, starts spent at the last one (limit_rebind). A packet that
 * read the old word re-checks it after reading TAT, and every conversion
 * changes TAT, so no packet is judged by one policy against the other's
 * TAT. Only packets that passed that re-check before the pending bit was
 * set can make the conversion's CAS fail, once each, so
 * SLUICE_CONVERT_TRIES is enough. Global, so the verifier checks it once.
 * Returns 0 when the bucket is bound (by this CPU or another), 1 to
 * reroute, -1 if not.
 */
__noinline int rebind(struct sluice_config *cfg, struct sluice_bucket *b,
		      const struct pkt *p, __u64 gen_slot, __u64 bound)
{
	__u64 gen = SLUICE_GEN(gen_slot), old_gen = SLUICE_BOUND_GEN_FULL(bound, gen);
	__u32 slot = SLUICE_GEN_SLOT(gen_slot), idx, old_idx = SLUICE_BOUND_IDX(bound);
	struct convert cv = { .b = b };
	__u64 word, changed;
	__u32 lead;
	int direct;

	if (!cfg || !b || !p)
		return -1;
	idx = resolve(p, slot, &direct, &lead);
	if (read_policy(cfg, gen_slot, slot, idx, &cv.nv, 0))
		return -1;
	/* A slot of the source table keeps its slot bits (its claim) and
	 * its class (established). */
	word = SLUICE_BOUND(gen, idx) | (bound & SLUICE_SLOT_KEEP_MASK);
	if (p->kidx == SLUICE_KEY_HOME) {
		if (!served_at_home(direct, &cv.nv)) {
			__sync_val_compare_and_swap(&b->bound, bound, word);
			return 1;
		}
		word |= SLUICE_BOUND_DIRECT;
	} else if (served_at_home(direct, &cv.nv) || idx != p->kidx) {
		return 1;
	}

	/* The same rule with the same limit: TAT means the same; just rebind. */
	if ((idx == old_idx && cv.nv.since <= old_gen) || cv.nv.action != SLUICE_ACT_LIMIT) {
		__sync_val_compare_and_swap(&b->bound, bound, word);
		return 0;
	}
	if (rebind_old(cfg, gen_slot, old_gen, old_idx, idx, &cv.ov, &cv.old_known, &changed))
		return -1;

	if (__sync_val_compare_and_swap(&b->bound, bound, word | SLUICE_BOUND_PENDING) != bound)
		return 0;	/* another CPU rebinds it */
	/* As of that moment (written before its flip, stable while the slot
	 * is active), not of this packet; on the new policy's clock, so its
	 * first readings are not behind `at`. */
	cv.at = policy_clock(&cv.nv);
	if (cv.at > changed)
		cv.at = changed;
	bpf_loop(SLUICE_CONVERT_TRIES, convert_step, &cv, 0);
	WRITE_ONCE(b->bound, word);
	return 0;
}

#endif /* SLUICE_BPF_REBIND_H */
