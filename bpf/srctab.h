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


/* Where a bucket (a source's home one, or a keyed one) may live: its
 * hash and its two buckets. */
struct src_place {
	__u64 h;
	__u64 a0, a1;		/* the slot's address, as two words */
	__u64 id;		/* whose a live slot is (srctab_key) */
	__u32 b[2];
};

/* Slot indexes are below 2^31 (srctab_buckets of SLUICE_MAX_SOURCES_MAX
 * is far less). */
#define SLUICE_SRC_AT_MAX	0x7fffffffU

/* What src_claim did, when it gave no slot. */
#define SRC_FULL	(-1)	/* every candidate holds an established source */
#define SRC_BUSY	(-2)	/* its stripe stayed locked, or no table */

/* The place of key (a home key, or a keyed one); 0, or -1 when the table
 * is not set up. The seed is
 * root's alone (struct sluice_src_seed): a lookup with a constant key in a
 * one-entry array, which the verifier inlines. */
static __always_inline int src_locate(struct sluice_config *cfg, const struct sluice_src_key *k,
				      struct src_place *w)
{
	__u32 n = READ_ONCE(cfg->src_buckets), zero = 0;
	struct sluice_src_seed *seed = bpf_map_lookup_elem(&src_seed, &zero);
	__u64 tag;

	if (n < 2 || !seed)
		return -1;
	srctab_key(k, &w->a0, &w->a1, &tag, &w->id);
	w->h = srctab_hash(w->a0, w->a1, tag, READ_ONCE(seed->seed));
	srctab_pick(w->h, n, &w->b[0], &w->b[1]);
	return 0;
}

/* The address words of slot s. */
#define SLOT_A0(s) (*(__u64 *)&(s)->a[0])
#define SLOT_A1(s) (*(__u64 *)&(s)->a[8])

/*
 * How slots are published and read, on every CPU the package builds for
 * (arm64 orders neither loads nor stores as x86 does):
 * - A writer changes ctl only by atomic operations with BPF_FETCH (CAS,
 *   xchg), which the kernel runs fully ordered (a barrier before and
 *   after): the claim's CAS of ctl comes before its writes of the state,
 *   the counts and the address, and the xchg that publishes the live ctl
 *   comes after them (a release).
 * - A reader reads ctl, then the words it guards through an address that
 *   depends on the ctl it read (after()), then ctl again through an
 *   address that depends on those words. Every CPU orders a load after
 *   the loads its address depends on (Linux's memory model relies on it:
 *   READ_ONCE and rcu_dereference), so the three loads happen in that
 *   order: a load-acquire at the price of two ALU instructions. BPF's
 *   own load-acquire needs LLVM 21; the build uses clang 14.
 * - Two equal reads of ctl around the words therefore mean the words are
 *   the ones that claim published (the version changes at every claim).
 * - A state word is changed only by CAS, and every claim writes a state
 *   no earlier claim of the slot wrote (srctab_fresh_claim), so a CAS that
 *   read the state of a source that has since lost the slot fails.
 */
static __always_inline __u64 dep0(__u64 x)
{
	asm volatile("%0 &= 0" : "+r"(x));	/* 0, but not to the compiler */
	return x;
}
#define after(p, x) ((typeof(p))((char *)(p) + dep0(x)))

/*
 * The live slot of w's bucket, or NULL; *at is its index (bucket *
 * SLUICE_SLOTS_PER_BUCKET + slot) and *id the slot bits of its ctl. A slot
 * is w's when two reads of its ctl, before and after its address is read
 * (ordered as above), show the same claim of a live slot with w's
 * identity (family, home or keyed, and a keyed bucket's policy,
 * srctab_id_mask).
 */
static __always_inline struct sluice_slot *src_find(const struct src_place *w, __u32 *at,
						    __u64 *id)
{
	struct sluice_slot_bucket *sb;
	struct sluice_slot *s, *d;
	__u64 c, a0, a1, mask = srctab_id_mask(w->id);
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
			if ((c & mask) != (SLUICE_SLOT_LIVE | w->id))
				continue;
			d = after(s, c);
			a1 = READ_ONCE(SLOT_A1(d));
			a0 = READ_ONCE(SLOT_A0(d));
			if (a1 != w->a1 || a0 != w->a0)
				continue;
			d = after(s, a0 ^ a1);
			if ((READ_ONCE(d->ctl) ^ c) & SLUICE_SLOT_ID_MASK)
				continue;
			*at = w->b[j] * SLUICE_SLOTS_PER_BUCKET + i;
			*id = c & SLUICE_SLOT_ID_MASK;
			return s;
		}
	}
	return NULL;
}

/* The live slot of key (a home key, or a keyed one): its index, with *id
 * its slot bits; -1 when it has none, -2 when the table is not set up. Global,
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
/* With them, from src_claim: the slot's source is established, so idle
 * means idle for the table's idle time (cfg->src_idle_ns); and the
 * slot's place among the candidates (0-7). */
#define SLOT_RULE_ESTABLISHED	0x20000U
#define SLOT_RULE_K_SHIFT	18
#define SLOT_RULE_K_MASK	7U

/* slot_rule, or SLOT_RULE_L4 when that rule keys its buckets by less than
 * the whole source (--per): either way the slot does not serve the
 * source's packets; with SLOT_RULE_PREV_USED. A keyed slot serves its own
 * rule only, its bound index, whatever its address resolves to (it is not
 * a source's address). Global, for slot_idle's stack, as slot_rule. */
__noinline __u32 slot_home_rule(const struct sluice_slot *s, __u64 c, __u32 slot)
{
	struct sluice_policy *p;
	__u32 idx, key;
	__u32 used = policy_used(!slot, SLUICE_BOUND_IDX(c)) ? SLOT_RULE_PREV_USED : 0;

	if (c & SLUICE_SLOT_KEYED)
		return SLUICE_BOUND_IDX(c) | used;
	idx = slot_rule(s, c, slot);
	if (idx >= SLUICE_MAX_POLICIES)
		return SLOT_RULE_L4 | used;
	key = (slot & 1) * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	return (p && READ_ONCE(p->key_len) >= SLUICE_KEY_LEN_SOURCE ? idx : SLOT_RULE_L4) | used;
}

/*
 * Whether live slot s, whose ctl is c, is idle: its source would be judged
 * from now on exactly as a fresh one (limit_idle); for an established
 * source (SLOT_RULE_ESTABLISHED in rule), it would have been already the
 * table's idle time ago, so it has sent nothing admitted since. 1 when
 * idle, 0 when not (in debt, or established and idle for less), -1 when
 * it cannot tell (a commit, a re-bind or a claim under the reads). Its
 * state is read into *t, after c and before c is read again (ordered as
 * src_find reads), unless -1. A slot bound to allow or deny is
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
 * carry_home), which judges it; so is a keyed slot judged, always (a
 * rule deleted since leaves it idle: no packet comes back to it). Inline
 * in slot_rank.
 */
static __always_inline int slot_idle(struct sluice_config *cfg, struct sluice_slot *s, __u64 c,
				     __u64 *t, __u64 rule)
{
	__u64 gen_slot, gen, old_gen, changed, prev_since, st, now, ago;
	struct verdict nv, ov = {};
	__u32 slot, old_idx, idx = SLOT_RULE_IDX(rule);
	int old_known;

	if (!cfg || !s || !t || (c & SLUICE_BOUND_PENDING))
		return -1;
	gen_slot = READ_ONCE(cfg->gen_slot);
	if ((__u32)gen_slot != (__u32)(rule >> 32))
		return -1;	/* a commit since slot_home_rule */
	gen = SLUICE_GEN(gen_slot);
	slot = SLUICE_GEN_SLOT(gen_slot);
	old_idx = SLUICE_BOUND_IDX(c);
	old_gen = SLUICE_BOUND_GEN_FULL(c, gen);
	if (old_gen == gen || idx >= SLUICE_MAX_POLICIES)
		idx = old_idx;
	if (read_policy(cfg, gen_slot, slot, idx, &nv, 0))
		return -1;
	st = READ_ONCE(after(s, c)->tat);
	if (READ_ONCE(after(s, st)->ctl) != c)
		return -1;
	*t = st;
	if (nv.action != SLUICE_ACT_LIMIT)
		return 1;
	now = policy_clock(&nv);
	if (old_gen != gen && (idx != old_idx || nv.since > old_gen)) {
		if (idx == old_idx) {
			if (read_change(cfg, gen_slot, slot, idx, &changed, &prev_since))
				return -1;
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
	ago = 0;
	if (rule & SLOT_RULE_ESTABLISHED) {
		ago = READ_ONCE(cfg->src_idle_ns);
		if (!ago)
			ago = SLUICE_EST_IDLE_NS_DEFAULT;
	}
	return now >= ago && limit_idle(&nv.lim, st, now - ago);
}

/* srctab_fresh_claim for a limit of algo, window and bits, now on the
 * clocks that rules are judged by. Global, so the verifier checks it
 * once: inline, src_claim's frame would outgrow the 512 bytes of stack
 * that BPF gives a chain of calls. */
__noinline __u64 slot_fresh(__u32 algo, __u64 window, __u32 bits)
{
	struct sluice_limit l = { .interval = window, .algo = (__u8)algo, .bits = (__u8)bits };
	__u64 coarse = SLUICE_COARSE_CLOCK_NS();

	return srctab_fresh_claim(&l, SLUICE_CLOCK_NS(), coarse);
}

/*
 * Take slot s, whose ctl was c and state t when src_claim chose it, for a
 * new bucket. One CAS of ctl takes the slot from whatever else reads or
 * claims it (and fails if anything in ctl moved since: a re-bind, the
 * source becoming established, another claim); then one CAS of the state,
 * from t to a fresh one (srctab_fresh_state of fresh, the claim's
 * srctab_fresh_claim, or of carry, a keyed bucket's state carried from its
 * source's home slot), decides between the claim and an admission of the
 * old source that read ctl before it changed: exactly one of them wins,
 * and when the admission does, the slot is given back untouched. Returns
 * the claimed ctl (state claiming), or 0.
 */
static __always_inline __u64 slot_take(struct sluice_slot *s, __u64 c, __u64 t, __u64 fresh,
				       __u64 carry)
{
	__u64 claim;

	if (SLUICE_TABLE_OFF) {
		/* carry stays used, or clang drops it from src_claim's
		 * callers but not its prototype. */
		asm volatile("" : : "r"(carry));
		return 0;
	}
	claim = SLUICE_SLOT_CLAIMING | ((c + SLUICE_SLOT_VER_ONE) & SLUICE_SLOT_VER_MASK);
	if (__sync_val_compare_and_swap(&s->ctl, c, claim) != c)
		return 0;
	if (__sync_val_compare_and_swap(&s->tat, t, srctab_fresh_state(fresh, carry, t)) != t) {
		__sync_lock_test_and_set(&s->ctl, c);	/* its source was admitted meanwhile */
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

/* Which of w's two buckets has more empty slots: 1 for the second.
 * Global, so the verifier checks it once, not on each path into the
 * claim. */
__noinline int src_emptier(const struct src_place *w)
{
	struct sluice_slot_bucket *b0, *b1;
	int i, e = 0;

	if (!w)
		return 0;
	b0 = bpf_map_lookup_elem(&src_table, &w->b[0]);
	b1 = bpf_map_lookup_elem(&src_table, &w->b[1]);

	if (!b0 || !b1)
		return 0;
#pragma unroll
	for (i = 0; i < (int)SLUICE_SLOTS_PER_BUCKET; i++) {
		e -= (READ_ONCE(b0->s[i].ctl) & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY;
		e += (READ_ONCE(b1->s[i].ctl) & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY;
	}
	return e > 0;
}

/*
 * One look, under the stripe lock, at every candidate slot of a source:
 * its live slot (found), or one that may still be or become its own
 * (pending): a slot being reclaimed that still has the source's address
 * (the reclaim either gives it back or writes another address), or one
 * whose ctl changed while its address, the source's, was read. One pass
 * answers both questions at once: a look for the live slot that skipped
 * a slot changing under it, and a wait for reclaims made before it, would
 * leave a gap in which a third CPU starts reclaiming the source's live
 * slot unseen by either, and the source ends up live in two slots. Under
 * the lock no other slot can become the source's, and a slot that is
 * neither when the pass reads it cannot become it later (it would have to
 * be the source's, live, to be reclaimed and given back), so a pass that
 * finds neither proves the source has no slot.
 */
struct pend_wait {
	const struct src_place *w;
	__u64 found;		/* ((__u64)at << 32 | slot bits) + 1, or 0 */
	int pending;
};

/* What slot s is to w's source, for pend_step: SLOT_OWN when it is its
 * live slot (its slot bits in *id), SLOT_MAYBE when it may still be or
 * become it, else 0. Global, so the verifier checks it once for the eight
 * slots. */
#define SLOT_OWN	1
#define SLOT_MAYBE	2
__noinline int slot_owner(const struct sluice_slot *s, const struct src_place *w, __u64 *id)
{
	const struct sluice_slot *d;
	__u64 c, c2, a0, a1;

	if (!s || !w || !id)
		return SLOT_MAYBE;
	c = READ_ONCE(s->ctl);
	if ((c & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY)
		return 0;
	d = after(s, c);
	a0 = READ_ONCE(SLOT_A0(d));
	a1 = READ_ONCE(SLOT_A1(d));
	d = after(s, a0 ^ a1);
	c2 = READ_ONCE(d->ctl);
	if (a0 != w->a0 || a1 != w->a1)
		return 0;
	if ((c & SLUICE_SLOT_STATE_MASK) != SLUICE_SLOT_LIVE || ((c ^ c2) & SLUICE_SLOT_ID_MASK))
		return SLOT_MAYBE;
	if ((c & srctab_id_mask(w->id)) != (SLUICE_SLOT_LIVE | w->id))
		return 0;	/* another family's, or another key's */
	*id = c & SLUICE_SLOT_ID_MASK;
	return SLOT_OWN;
}

static long pend_step(__u64 i, struct pend_wait *pw)
{
	const struct src_place *w = pw->w;
	struct sluice_slot_bucket *sb;
	__u64 id = 0;
	__u32 k, b;
	int o;

	pw->pending = 0;
	if (!w)
		return 1;
	for (k = 0; k < 2 * SLUICE_SLOTS_PER_BUCKET; k++) {
		b = w->b[k / SLUICE_SLOTS_PER_BUCKET];
		sb = bpf_map_lookup_elem(&src_table, &b);
		if (!sb)
			continue;
		o = slot_owner(&sb->s[k % SLUICE_SLOTS_PER_BUCKET], w, &id);
		if (o == SLOT_OWN) {
			pw->found = ((__u64)(b * SLUICE_SLOTS_PER_BUCKET +
					     k % SLUICE_SLOTS_PER_BUCKET) << 32 | id) + 1;
			return 1;
		}
		pw->pending |= o == SLOT_MAYBE;
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
 * Take stripe lock lk of w's source and look for the source's slot
 * (pend_step), waiting while one may still become its own: 0 with the lock
 * held and the source slotless, 1 with the lock held and *found its slot
 * (index in the high 32 bits, slot bits in the low), or SRC_BUSY without
 * the lock after SLUICE_SRC_LOCK_TRIES tries at either (counted: a holder
 * that long is stalled, and XDP must not spin on it). Global, so that its
 * loops' state is not on src_claim's stack (the chain of calls through
 * slot_idle has 512 bytes in all).
 */
__noinline int src_enter(__u64 *lk, const struct src_place *w, __u64 *found)
{
	struct lock_wait lw = { .lk = lk };
	struct pend_wait pw = { .w = w };

	if (!lk || !w || !found)
		return SRC_BUSY;
	if (!SRC_TRYLOCK(lk)) {
		bpf_loop(SLUICE_SRC_LOCK_TRIES, lock_step, &lw, 0);
		if (!lw.got) {
			count_event(SLUICE_EV_LOCK_GAVE_UP);
			return SRC_BUSY;
		}
	}
	bpf_loop(SLUICE_SRC_LOCK_TRIES, pend_step, &pw, 0);
	if (pw.found) {
		*found = pw.found - 1;
		return 1;
	}
	if (pw.pending) {
		__sync_lock_test_and_set(lk, 0);
		count_event(SLUICE_EV_LOCK_GAVE_UP);
		return SRC_BUSY;
	}
	return 0;
}

/* The rule slot_rank hands slot_idle for slot s (ctl c) under gen_slot
 * gs: slot_home_rule's trie walk only for a live slot bound to an older
 * generation. slot_idle judges a slot bound to the live generation by its
 * bound rule and reads nothing else of this answer, and an empty slot
 * needs none: a flood of new sources into a full table of its own,
 * current, sources walks no trie. */
static __always_inline __u32 rank_rule(const struct sluice_slot *s, __u64 c, __u64 gs)
{
	if ((c & SLUICE_SLOT_STATE_MASK) != SLUICE_SLOT_LIVE ||
	    SLUICE_BOUND_GEN_IS(c, SLUICE_GEN(gs)))
		return SLUICE_BOUND_IDX(c);
	return slot_home_rule(s, c, SLUICE_GEN_SLOT(gs));
}

/* The rank of a candidate slot for a new source (lower is taken first):
 * empty, then idle (a probation source's, or an established source's idle
 * for the table's idle time: taking it changes no decision), then a
 * probation source in debt, least debt first (the smallest state word: a
 * token bucket's debt that ends first). An established source not idle
 * that long is never a candidate. */
#define RANK_EMPTY	0ULL
#define RANK_IDLE	1ULL
#define RANK_DEBT_MIN	2ULL
#define RANK_NONE	SLUICE_U64_MAX	/* above any shifted rank */

/* Established, as eviction sees it (SLUICE_EVICT_IGNORES_ESTABLISHED:
 * bpf/seams.h). */
#define SLOT_EST(c) (SLUICE_EVICT_IGNORES_ESTABLISHED ? 0 : ((c)&SLUICE_SLOT_ESTABLISHED))

/* The best candidate so far of a claim (src_claim): its rank (shifted,
 * with its place among the candidates, 0-7, in the low bits), ctl and
 * state. Small: it is on src_claim's stack, in the chain of calls that
 * ends in slot_rank. */
#define RANK_K_BITS	3
#define RANK_MAX	(SLUICE_U64_MAX >> RANK_K_BITS)
struct src_pick {
	__u64 rank, c, t;
};

/*
 * Rank slot s, whose ctl is c, for a new source: its state read after c,
 * and the slot kept in *best when it ranks before it (rule: as slot_idle
 * takes it, with SLOT_RULE_ESTABLISHED when c says so and the slot's place
 * at SLOT_RULE_K_SHIFT). Returns 1 when it became the best. Global, so
 * the verifier checks it once for the eight candidates.
 */
__noinline int slot_rank(struct sluice_config *cfg, struct sluice_slot *s, __u64 c,
			 struct src_pick *best, __u64 rule)
{
	__u64 rank, t = 0;
	int e;

	if (!cfg || !s || !best)
		return 0;
	if ((c & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY) {
		t = READ_ONCE(after(s, c)->tat);
		rank = RANK_EMPTY;
	} else if ((c & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_LIVE) {
		e = slot_idle(cfg, s, c, &t, rule);
		if (e < 0 || (!e && SLOT_EST(c)))
			return 0;
		rank = e ? RANK_IDLE : t < RANK_DEBT_MIN ? RANK_DEBT_MIN : t > RANK_MAX ? RANK_MAX : t;
	} else {
		return 0;	/* another CPU claims it */
	}
	rank = rank << RANK_K_BITS | ((rule >> SLOT_RULE_K_SHIFT) & SLOT_RULE_K_MASK);
	if (rank >= best->rank)
		return 0;
	best->rank = rank;
	best->c = c;
	best->t = t;
	return 1;
}

/* The index of candidate k (0-7) of w, the emptier bucket's (first)
 * slots first. */
static __always_inline __u32 cand_at(const struct src_place *w, __u32 k, __u32 first)
{
	return (((k / SLUICE_SLOTS_PER_BUCKET) ^ first) ? w->b[1] : w->b[0]) *
	       SLUICE_SLOTS_PER_BUCKET + k % SLUICE_SLOTS_PER_BUCKET;
}

/* The events and occupancy counts of a claim, for a bucket of slot bits
 * id, of a slot whose ctl was old: an empty slot is held now; a reclaimed
 * one may have been an established source's, or keyed. */
static __always_inline void claim_count(__u64 old, __u64 id)
{
	count_event(SLUICE_EV_NEW_SOURCE_ADMITTED);
	if ((old & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_EMPTY) {
		src_stat_add(SLUICE_SRC_STAT_LIVE, 1);
		old = 0;	/* it held no bucket, keyed or not */
	} else {
		count_event(SLUICE_EV_SOURCE_RECLAIMED);
		if (old & SLUICE_SLOT_ESTABLISHED) {
			count_event(SLUICE_EV_ESTABLISHED_RECLAIMED);
			src_stat_add(SLUICE_SRC_STAT_ESTABLISHED, -1);
		}
	}
	if ((id ^ old) & SLUICE_SLOT_KEYED)
		src_stat_add(SLUICE_SRC_STAT_KEYED, (id & SLUICE_SLOT_KEYED) ? 1 : -1);
}

/*
 * A slot for a new bucket, key (a source's home key, or a keyed one),
 * bound by word bound (the new-source budget already passed), under the
 * stripe lock of its hash, so two CPUs never give one key two slots: found
 * again if another CPU claimed one meanwhile (src_enter), else the best
 * candidate of its two buckets by rank (empty ones in the emptier bucket
 * first: balanced, two choices fill the table evenly), claimed (slot_take)
 * with a fresh state or carry (srctab_fresh_state), zeroed and published
 * with its address and bound word. Returns the
 * slot's index with *id its slot bits, SRC_FULL when no candidate may be
 * taken (every one holds an established source not idle for the table's
 * idle time; the packet is dropped, and counted), or SRC_BUSY. Global, so
 * the verifier checks it once.
 */
__noinline int src_claim(struct sluice_config *cfg, const struct sluice_src_key *key, __u64 bound,
			 __u64 carry, __u64 *id)
{
	struct sluice_slot_count *n;
	struct src_pick best;
	struct sluice_slot *s;
	struct src_place w;
	__u64 *lk, claim, fresh, c, gs;
	__u32 si, at, k, first;
	int r = SRC_FULL, e;

	/* Field by field: an initializer would be a constant in .rodata. */
	best.rank = RANK_NONE;
	best.c = 0;
	best.t = 0;
	if (!cfg || !key || !id || src_locate(cfg, key, &w))
		return SRC_BUSY;
	si = srctab_stripe(w.h);
	lk = bpf_map_lookup_elem(&src_locks, &si);
	if (!lk)
		return SRC_BUSY;
	e = src_enter(lk, &w, &best.c);
	if (e < 0)
		return SRC_BUSY;
	if (e) {
		*id = best.c & SLUICE_SLOT_ID_MASK;
		r = (int)((best.c >> 32) & SLUICE_SRC_AT_MAX);
		goto out;
	}
	first = src_emptier(&w) > 0;
	for (k = 0; k < 2 * SLUICE_SLOTS_PER_BUCKET; k++) {
		s = src_slot(cand_at(&w, k, first));
		if (!s)
			continue;
		c = READ_ONCE(s->ctl);
		gs = READ_ONCE(cfg->gen_slot);
		slot_rank(cfg, s, c, &best,
			  gs << 32 | rank_rule(s, c, gs) |
			  (SLOT_EST(c) ? SLOT_RULE_ESTABLISHED : 0) | k << SLOT_RULE_K_SHIFT);
		/* An empty slot ranks first, and ties go to the earlier one. */
		if (best.rank < (RANK_IDLE << RANK_K_BITS))
			break;
	}
	/* Looked up again: fewer values live across the loop's calls, so
	 * fewer on this frame (the chain through slot_rank is at 512). */
	si = srctab_stripe(w.h);
	lk = bpf_map_lookup_elem(&src_locks, &si);
	if (!lk)
		return SRC_BUSY;	/* cannot happen: it was found above */
	if (best.rank == RANK_NONE)
		goto out;
	if (policy_fresh(cfg, SLUICE_BOUND_IDX(bound), &fresh)) {
		r = SRC_BUSY;
		goto out;
	}
	at = cand_at(&w, (__u32)best.rank & SLOT_RULE_K_MASK, first);
	s = src_slot(at);
	claim = s ? slot_take(s, best.c, best.t, fresh, carry) : 0;
	if (!claim || !s) {
		r = SRC_BUSY;	/* it changed since it was ranked */
		goto out;
	}
	n = src_count(at);
	if (n) {
		WRITE_ONCE(n->passed, 0);
		WRITE_ONCE(n->dropped, 0);
		WRITE_ONCE(n->would_drop, 0);
	}
	WRITE_ONCE(SLOT_A0(s), w.a0);
	WRITE_ONCE(SLOT_A1(s), w.a1);
	*id = SLUICE_SLOT_LIVE | (w.id & SLUICE_SLOT_ID_MASK) | (claim & SLUICE_SLOT_VER_MASK);
	/* Published by an xchg, fully ordered: after the address and counts. */
	__sync_lock_test_and_set(&s->ctl, (bound & ~SLUICE_SLOT_KEEP_MASK) | *id);
	claim_count(best.c, w.id);
	r = (int)(at & SLUICE_SRC_AT_MAX);
out:
	__sync_lock_test_and_set(lk, 0);
	if (r == SRC_FULL)
		count_event(SLUICE_EV_SOURCE_REFUSED);
	return r;
}

#endif /* SLUICE_BPF_SRCTAB_H */
