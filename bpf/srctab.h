/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The source table in the datapath: finding a source's slot (no helper
 * call and no lock), and claiming one for a new source (include/sluice/
 * srctab.h has the arithmetic, doc/design.md the protocol). Part of
 * sluice.bpf.c, included by it after rebind.h: a claim judges whether a
 * stale slot is idle by the state its re-bind would give it.
 */
#ifndef SLUICE_BPF_SRCTAB_H
#define SLUICE_BPF_SRCTAB_H

/* Taking a stripe lock (0 free, 1 held); tests/bpf swaps in one that
 * always succeeds, and the insert race test must see the duplicates. */
#ifndef SRC_TRYLOCK
#define SRC_TRYLOCK(lk) (__sync_val_compare_and_swap(lk, 0, 1) == 0)
#endif


/* Where a source may live: its hash and its two buckets. */
struct src_place {
	__u64 h;
	__u64 a0, a1;		/* the address, as two words */
	__u64 fam;		/* SLUICE_SLOT_V6 or 0 */
	__u32 b[2];
};

/* Slot indexes are below 2^31 (srctab_buckets of SLUICE_MAX_SOURCES_MAX
 * is far less). */
#define SLUICE_SRC_AT_MAX	0x7fffffffU

/* What src_claim did, when it gave no slot. */
#define SRC_FULL	(-1)	/* every candidate holds a live source in debt */
#define SRC_BUSY	(-2)	/* its stripe stayed locked, or no table */

/* The place of key; 0, or -1 when the table is not set up. */
static __always_inline int src_locate(struct sluice_config *cfg, const struct sluice_src_key *k,
				      struct src_place *w)
{
	__u32 n = READ_ONCE(cfg->src_buckets);

	if (n < 2)
		return -1;
	__builtin_memcpy(&w->a0, k->a, sizeof(w->a0));
	__builtin_memcpy(&w->a1, k->a + sizeof(w->a0), sizeof(w->a1));
	w->fam = k->family == SLUICE_FAMILY_V6 ? SLUICE_SLOT_V6 : 0;
	w->h = srctab_hash(w->a0, w->a1, k->family, READ_ONCE(cfg->src_seed));
	srctab_pick(w->h, n, &w->b[0], &w->b[1]);
	return 0;
}

/* The address words of slot s. */
#define SLOT_A0(s) (*(__u64 *)&(s)->a[0])
#define SLOT_A1(s) (*(__u64 *)&(s)->a[8])

/*
 * The live slot of w's source, or NULL; *at is its index (bucket *
 * SLUICE_SLOTS_PER_BUCKET + slot) and *id the slot bits of its ctl. A slot
 * is the source's when two reads of its ctl, before and after its address
 * is compared, show the same claim of a live slot of the source's family.
 */
static __always_inline struct sluice_slot *src_find(const struct src_place *w, __u32 *at,
						    __u64 *id)
{
	struct sluice_slot_bucket *sb;
	struct sluice_slot *s;
	__u64 c;
	int i, j;

#pragma unroll
	for (j = 0; j < 2; j++) {
		sb = bpf_map_lookup_elem(&src_table, &w->b[j]);
		if (!sb)
			continue;
#pragma unroll
		for (i = 0; i < (int)SLUICE_SLOTS_PER_BUCKET; i++) {
			s = &sb->s[i];
			c = READ_ONCE(s->ctl);
			if ((c & (SLUICE_SLOT_STATE_MASK | SLUICE_SLOT_V6)) !=
			    (SLUICE_SLOT_LIVE | w->fam) ||
			    READ_ONCE(SLOT_A1(s)) != w->a1 || READ_ONCE(SLOT_A0(s)) != w->a0)
				continue;
			barrier();
			if ((READ_ONCE(s->ctl) ^ c) & SLUICE_SLOT_ID_MASK)
				continue;
			*at = w->b[j] * SLUICE_SLOTS_PER_BUCKET + i;
			*id = c & SLUICE_SLOT_ID_MASK;
			return s;
		}
	}
	return NULL;
}

/* The slot of key's source when it has a live one: its index, with *id its
 * slot bits; -1 when it has none, -2 when the table is not set up. Global,
 * so that the slot is a pointer the verifier knows one way only (its
 * offset unknown): the rest of the packet's path is checked once, not once
 * for each of the eight slots it might be. */
__noinline int src_lookup(struct sluice_config *cfg, const struct sluice_src_key *k, __u64 *id)
{
	struct src_place w;
	__u32 at;

	if (!cfg || !k || !id || src_locate(cfg, k, &w))
		return -2;
	if (!src_find(&w, &at, id))
		return -1;
	return (int)(at & SLUICE_SRC_AT_MAX);
}

/* The slot at index at, or NULL. */
static __always_inline struct sluice_slot *src_slot(__u32 at)
{
	__u32 bi = at / SLUICE_SLOTS_PER_BUCKET;
	struct sluice_slot_bucket *sb = bpf_map_lookup_elem(&src_table, &bi);

	return sb ? &sb->s[at % SLUICE_SLOTS_PER_BUCKET] : NULL;
}

/* The passed and dropped of the slot at index at, or NULL. */
static __always_inline struct sluice_slot_count *src_count(__u32 at)
{
	__u32 bi = at / SLUICE_SLOTS_PER_BUCKET;
	struct sluice_slot_counts *sc = bpf_map_lookup_elem(&src_counts, &bi);

	return sc ? &sc->c[at % SLUICE_SLOTS_PER_BUCKET] : NULL;
}

/* No rule decides every packet of a source: its candidates start with a
 * rule with a match, so which one does depends on each packet's L4 facts. */
#define SLOT_RULE_L4	SLUICE_MAX_POLICIES

/* The rule that decides every packet of the source of live slot s (whose
 * ctl is c) in policy slot `slot`, as resolve finds it, or SLOT_RULE_L4.
 * Global, so that its trie key is not on slot_idle's stack (the chain of
 * calls it ends has 512 bytes in all). */
__noinline __u32 slot_rule(const struct sluice_slot *s, __u64 c, __u32 slot)
{
	struct sluice_lpm_key key = {
		.prefixlen = SLUICE_LPM_FULL_PREFIX,
		.slot = (__u8)slot,
		.family = (c & SLUICE_SLOT_V6) ? SLUICE_FAMILY_V6 : SLUICE_FAMILY_V4,
	};
	struct sluice_lpm_val *hit;
	__u32 idx;

	if (!s)
		return SLOT_RULE_L4;
	__builtin_memcpy(key.addr, s->a, sizeof(key.addr));
	hit = bpf_map_lookup_elem(&policy_lpm, &key);
	if (!hit || !READ_ONCE(hit->n))
		return SLUICE_POLICY_DEFAULT;
	if (READ_ONCE(hit->m[0].flags))
		return SLOT_RULE_L4;
	idx = READ_ONCE(hit->m[0].policy);
	return idx < SLUICE_MAX_POLICIES ? idx : SLUICE_POLICY_DEFAULT;
}

/* With the rule of slot_home_rule: the bound rule's entry in the other
 * policy slot (the previous generation) holds a policy (policy_used). */
#define SLOT_RULE_PREV_USED	0x10000U
#define SLOT_RULE_IDX(r)	((r) & 0xffffU)

/* slot_rule, or SLOT_RULE_L4 when that rule keys its buckets by less than
 * the whole source (--per): either way the slot does not serve the
 * source's packets; with SLOT_RULE_PREV_USED. Global, for slot_idle's
 * stack, as slot_rule. */
__noinline __u32 slot_home_rule(const struct sluice_slot *s, __u64 c, __u32 slot)
{
	struct sluice_policy *p;
	__u32 idx = slot_rule(s, c, slot), key;
	__u32 used = policy_used(!slot, SLUICE_BOUND_IDX(c)) ? SLOT_RULE_PREV_USED : 0;

	if (idx >= SLUICE_MAX_POLICIES)
		return SLOT_RULE_L4 | used;
	key = (slot & 1) * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	return (p && READ_ONCE(p->key_len) >= SLUICE_KEY_LEN_SOURCE ? idx : SLOT_RULE_L4) | used;
}

/*
 * Whether live slot s, whose ctl is c, is idle: its source would be judged
 * from now on exactly as a fresh one (limit_idle). Its state is read into
 * *t, after c and before c is read again. A slot bound to allow or deny is
 * idle: its state is not read until its rule limits again, and a rule that
 * starts to limit starts it empty. A slot bound to an older generation is
 * judged by the state its next packet's re-bind would give it (rebind),
 * computed here without writing: under the rule its address resolves to
 * now (rule: slot_home_rule's answer under the generation in its high 32
 * bits, which must still be live), its state converted from the bound rule's
 * as of the change, so a source in debt whose rule was deleted, or which
 * moved to a stricter rule, keeps its debt and its slot. When its packets
 * now go to keyed buckets (an L4 rule covers it, or --per), its state
 * serves the bound rule only (a keyed bucket of that rule starts from it,
 * carry_home), which judges it. Global, so the verifier checks it once
 * for the eight candidates.
 */
__noinline int slot_idle(struct sluice_config *cfg, struct sluice_slot *s, __u64 c, __u64 *t,
			 __u64 rule)
{
	__u64 gen_slot, gen, old_gen, changed, prev_since, st, now;
	struct verdict nv, ov = {};
	__u32 slot, old_idx, idx = SLOT_RULE_IDX(rule);
	int old_known;

	if (!cfg || !s || !t || (c & SLUICE_BOUND_PENDING))
		return 0;
	gen_slot = READ_ONCE(cfg->gen_slot);
	if ((__u32)gen_slot != (__u32)(rule >> 32))
		return 0;	/* a commit since slot_home_rule */
	gen = SLUICE_GEN(gen_slot);
	slot = SLUICE_GEN_SLOT(gen_slot);
	old_idx = SLUICE_BOUND_IDX(c);
	old_gen = SLUICE_BOUND_GEN_FULL(c, gen);
	if (old_gen == gen || idx >= SLUICE_MAX_POLICIES)
		idx = old_idx;
	if (read_policy(cfg, gen_slot, slot, idx, &nv, 0))
		return 0;
	st = READ_ONCE(s->tat);
	barrier();
	if (READ_ONCE(s->ctl) != c)
		return 0;
	*t = st;
	if (nv.action != SLUICE_ACT_LIMIT)
		return 1;
	now = policy_clock(&nv);
	if (old_gen != gen && (idx != old_idx || nv.since > old_gen)) {
		if (idx == old_idx) {
			if (read_change(cfg, gen_slot, slot, idx, &changed, &prev_since))
				return 0;
			old_known = prev_since <= old_gen &&
				    !read_prev(cfg, gen_slot, slot, idx, &ov);
		} else {
			/* Another rule: the previous generation's, still in
			 * the inactive slot, judged it until this one
			 * (rebind_old); an older one is taken as not known,
			 * and as of this generation's start, never before the
			 * change: never more than its re-bind will give it. */
			changed = READ_ONCE(cfg->active_since_ns[slot & 1]);
			old_known = old_gen + 1 == gen && (rule & SLOT_RULE_PREV_USED) &&
				    !read_policy(cfg, gen_slot, !slot, old_idx, &ov, 1);
		}
		st = limit_rebind(st, changed < now ? changed : now, old_known, ov.action, &ov.lim,
				  nv.action, &nv.lim);
	}
	return limit_idle(&nv.lim, st, now);
}

/* srctab_fresh_nonzero for a limit of algo, window and bits, now on the
 * precise clock that windows are judged by. Global, so the verifier checks
 * it once: inline, src_claim's frame would outgrow the 512 bytes of stack
 * that BPF gives a chain of calls. */
__noinline __u64 slot_fresh(__u32 algo, __u64 window, __u32 bits)
{
	struct sluice_limit l = { .interval = window, .algo = (__u8)algo, .bits = (__u8)bits };

	return srctab_fresh_nonzero(&l, SLUICE_CLOCK_NS());
}

/*
 * Take slot s for a new source: an empty one, or with reclaim an idle one
 * (slot_idle). One CAS of ctl takes the slot from whatever else reads or
 * claims it; then one CAS of the state, from the value judged idle to a
 * fresh one (fresh: the limit's srctab_fresh_nonzero, read before), decides
 * between the reclaim and an admission of the old source that read ctl
 * before it changed: exactly one of them wins, and when the admission
 * does, the slot is given back untouched. Returns the claimed ctl (state
 * claiming), or 0.
 */
static __always_inline __u64 slot_take(struct sluice_config *cfg, struct sluice_slot *s,
				       __u64 fresh, int reclaim, int *reclaimed)
{
	__u64 c = READ_ONCE(s->ctl), t = 0, claim, gs;

#ifdef SLUICE_TABLE_OFF
	return 0;	/* tests/bpf: a table that never gives a slot */
#endif
	if ((c & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_LIVE) {
		gs = READ_ONCE(cfg->gen_slot);
		if (!reclaim ||
		    !slot_idle(cfg, s, c, &t,
			       gs << 32 | slot_home_rule(s, c, SLUICE_GEN_SLOT(gs))))
			return 0;
		*reclaimed = 1;
	} else if ((c & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY) {
		t = READ_ONCE(s->tat);
		*reclaimed = 0;
	} else {
		return 0;	/* another CPU claims it */
	}
	claim = SLUICE_SLOT_CLAIMING | ((c + SLUICE_SLOT_VER_ONE) & SLUICE_SLOT_VER_MASK);
	if (__sync_val_compare_and_swap(&s->ctl, c, claim) != c)
		return 0;
	if (__sync_val_compare_and_swap(&s->tat, t, srctab_fresh_state(fresh, t)) != t) {
		WRITE_ONCE(s->ctl, c);	/* its source was admitted meanwhile */
		return 0;
	}
	return claim;
}

/* The fresh state of a slot for a new source of policy idx of the live
 * generation (slot_fresh), its three fields read as read_policy reads a
 * policy; -1 when a commit overtook the read. */
static __always_inline int policy_fresh(struct sluice_config *cfg, __u32 idx, __u64 *fresh)
{
	__u64 gen_slot = READ_ONCE(cfg->gen_slot);
	struct sluice_policy *p;
	__u64 window;
	__u32 key;
	__u8 algo, bits;

	if (idx >= SLUICE_MAX_POLICIES)
		return -1;
	key = SLUICE_GEN_SLOT(gen_slot) * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	if (!p)
		return -1;
	algo = READ_ONCE(p->algo);
	bits = READ_ONCE(p->bits);
	window = READ_ONCE(p->interval);
	barrier();
	if (SLUICE_GEN(READ_ONCE(cfg->gen_slot)) != SLUICE_GEN(gen_slot))
		return -1;
	*fresh = slot_fresh(algo, window, bits);
	return 0;
}

/* Which of w's two buckets has more empty slots: 1 for the second. */
static __always_inline __u32 src_emptier(const struct src_place *w)
{
	struct sluice_slot_bucket *b0 = bpf_map_lookup_elem(&src_table, &w->b[0]);
	struct sluice_slot_bucket *b1 = bpf_map_lookup_elem(&src_table, &w->b[1]);
	int i, e = 0;

	if (!b0 || !b1)
		return 0;
#pragma unroll
	for (i = 0; i < (int)SLUICE_SLOTS_PER_BUCKET; i++) {
		e -= (READ_ONCE(b0->s[i].ctl) & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY;
		e += (READ_ONCE(b1->s[i].ctl) & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY;
	}
	return e > 0;
}

/* A source's slot being reclaimed: a candidate claiming, still with the
 * source's address (ctl taken, state not yet). The reclaim either gives
 * the slot back or writes another address; until then the source must not
 * take a second slot (pend_step). */
struct pend_wait {
	const struct src_place *w;
	int pending;
};

static long pend_step(__u64 i, struct pend_wait *pw)
{
	const struct src_place *w = pw->w;
	struct sluice_slot_bucket *sb;
	struct sluice_slot *s;
	int j, k;

	pw->pending = 0;
	if (!w)
		return 1;
	for (j = 0; j < 2; j++) {
		sb = bpf_map_lookup_elem(&src_table, &w->b[j]);
		if (!sb)
			continue;
		for (k = 0; k < (int)SLUICE_SLOTS_PER_BUCKET; k++) {
			s = &sb->s[k];
			if ((READ_ONCE(s->ctl) & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_CLAIMING &&
			    READ_ONCE(SLOT_A1(s)) == w->a1 && READ_ONCE(SLOT_A0(s)) == w->a0)
				pw->pending = 1;
		}
	}
	return !pw->pending;
}

/* A stripe lock being waited for (lock_step). */
struct lock_wait {
	__u64 *lk;
	int got;
};

static long lock_step(__u64 i, struct lock_wait *lw)
{
	if (!lw->lk)
		return 1;
	lw->got = SRC_TRYLOCK(lw->lk);
	return lw->got;
}

/*
 * Take stripe lock lk of w's source, and see that no slot of the source is
 * being reclaimed: 0 with the lock held, or SRC_BUSY without it. Held for
 * the few hundred ns of a claim; the bound is for a holder that stalls
 * (BPF_PROG_TEST_RUN can be preempted; XDP cannot). The source's own slot
 * may be mid-reclaim: waits for the reclaim to give it back or take it.
 * Global, so its loops' state is not on src_claim's stack (the chain of
 * calls through slot_idle has 512 bytes in all).
 */
__noinline int src_enter(__u64 *lk, const struct src_place *w)
{
	struct lock_wait lw = { .lk = lk };
	struct pend_wait pw = { .w = w };

	if (!lk || !w)
		return SRC_BUSY;
	if (!SRC_TRYLOCK(lk)) {
		bpf_loop(SLUICE_SRC_LOCK_SPINS, lock_step, &lw, 0);
		if (!lw.got)
			return SRC_BUSY;
	}
	bpf_loop(SLUICE_SRC_LOCK_SPINS, pend_step, &pw, 0);
	if (pw.pending) {
		__sync_lock_test_and_set(lk, 0);
		return SRC_BUSY;
	}
	return 0;
}

/*
 * A slot for a new source, key, whose home bucket is bound by word bound
 * (the new-source budget already passed), under the stripe lock of its
 * hash, so two CPUs never give one source two slots: found again if
 * another CPU claimed one meanwhile, else an empty or idle slot of its two
 * buckets (empty ones first), claimed (slot_take), zeroed and published with its address and
 * bound word. Returns the slot's index with *id its slot bits, SRC_FULL
 * when every candidate holds a source in debt (the packet is dropped, and
 * counted), or SRC_BUSY. Global, so the verifier checks it once.
 */
__noinline int src_claim(struct sluice_config *cfg, const struct sluice_src_key *key, __u64 bound,
			 __u64 *id)
{
	struct sluice_slot_count *n;
	struct sluice_slot *s = NULL;
	struct src_place w;
	__u64 *lk, claim = 0, fresh;
	__u32 si, at = 0, k, first;
	int reclaimed = 0, r = SRC_FULL;

	if (!cfg || !key || !id || src_locate(cfg, key, &w) ||
	    policy_fresh(cfg, SLUICE_BOUND_IDX(bound), &fresh))
		return SRC_BUSY;
	si = srctab_stripe(w.h);
	lk = bpf_map_lookup_elem(&src_locks, &si);
	if (!lk || src_enter(lk, &w))
		return SRC_BUSY;
	if (src_find(&w, &at, id)) {
		r = (int)at;
		goto out;
	}
	/* Empty slots first (a reclaim forgets a source's counts), in the
	 * emptier bucket first: balanced, two choices fill the table evenly. */
	first = src_emptier(&w);
	for (k = 0; k < 4 * SLUICE_SLOTS_PER_BUCKET && !claim; k++) {
		at = (((k / SLUICE_SLOTS_PER_BUCKET & 1) ^ first) ? w.b[1] : w.b[0]) *
		     SLUICE_SLOTS_PER_BUCKET + k % SLUICE_SLOTS_PER_BUCKET;
		s = src_slot(at);
		if (s)
			claim = slot_take(cfg, s, fresh, k >= 2 * SLUICE_SLOTS_PER_BUCKET,
					  &reclaimed);
	}
	if (!claim || !s)
		goto out;
	n = src_count(at);
	if (n)
		WRITE_ONCE(*(__u64 *)n, 0);
	WRITE_ONCE(SLOT_A0(s), w.a0);
	WRITE_ONCE(SLOT_A1(s), w.a1);
	barrier();
	*id = SLUICE_SLOT_LIVE | w.fam | (claim & SLUICE_SLOT_VER_MASK);
	WRITE_ONCE(s->ctl, (bound & ~SLUICE_SLOT_ID_MASK) | *id);
	count_event(SLUICE_EV_NEW_SOURCE_ADMITTED);
	src_stat_add(SLUICE_SRC_STAT_LIVE, !reclaimed);	/* an empty slot is held now */
	if (reclaimed)
		count_event(SLUICE_EV_SOURCE_RECLAIMED);
	r = (int)(at & SLUICE_SRC_AT_MAX);
out:
	__sync_lock_test_and_set(lk, 0);
	if (r == SRC_FULL)
		count_event(SLUICE_EV_SOURCE_REFUSED);
	return r;
}

#endif /* SLUICE_BPF_SRCTAB_H */
