/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The source table in the datapath: finding a source's slot (no helper
 * call and no lock), and claiming one for a new source (include/sluice/
 * srctab.h has the arithmetic, doc/design.md the protocol). Part of
 * sluice.bpf.c, included by it after rebind.h: a claim re-binds a stale
 * slot before it judges whether the slot is idle.
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

/*
 * Whether live slot s, whose ctl is c, is idle: its source would be judged
 * from now on exactly as a fresh one (limit_idle). Its state is read into
 * *t, after c and before c is read again. A slot bound to allow or deny is
 * idle: its state is not read until its rule limits again, and a rule that
 * starts to limit starts it empty. A slot bound to an older generation is
 * judged by the state its next packet's re-bind would give it (rebind),
 * computed here without writing: unchanged when its rule's limit has not
 * changed since, else converted as of the change. A slot whose address a
 * later commit gave to another rule is judged by the rule it is bound to.
 * Global, so the verifier checks it once for the eight candidates.
 */
__noinline int slot_idle(struct sluice_config *cfg, struct sluice_bucket *s, __u64 c, __u64 *t)
{
	__u64 gen_slot, gen, old_gen, changed, prev_since, st, now;
	struct verdict nv, ov = {};
	__u32 slot, idx;
	int old_known;

	if (!cfg || !s || !t || (c & SLUICE_BOUND_PENDING))
		return 0;
	gen_slot = READ_ONCE(cfg->gen_slot);
	gen = SLUICE_GEN(gen_slot);
	slot = SLUICE_GEN_SLOT(gen_slot);
	idx = SLUICE_BOUND_IDX(c);
	if (read_policy(cfg, gen_slot, slot, idx, &nv, 0))
		return 0;
	st = READ_ONCE(s->tat);
	barrier();
	if (READ_ONCE(s->bound) != c)
		return 0;
	*t = st;
	if (nv.action != SLUICE_ACT_LIMIT)
		return 1;
	now = policy_clock(&nv);
	old_gen = SLUICE_BOUND_GEN_FULL(c, gen);
	if (old_gen != gen && nv.since > old_gen) {
		if (read_change(cfg, gen_slot, slot, idx, &changed, &prev_since))
			return 0;
		old_known = prev_since <= old_gen && !read_prev(cfg, gen_slot, slot, idx, &ov);
		st = limit_rebind(st, changed < now ? changed : now, old_known, ov.action,
				  &ov.lim, nv.action, &nv.lim);
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
	__u64 c = READ_ONCE(s->ctl), t = 0, claim;

#ifdef SLUICE_TABLE_OFF
	return 0;	/* tests/bpf: a table that never gives a slot */
#endif
	if ((c & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_LIVE) {
		if (!reclaim || !slot_idle(cfg, (struct sluice_bucket *)s, c, &t))
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
	/* srctab_fresh_state: 0 over a used word, fresh over 0 */
	if (__sync_val_compare_and_swap(&s->tat, t, t ? 0 : fresh) != t) {
		WRITE_ONCE(s->ctl, c);	/* its source was admitted meanwhile */
		return 0;
	}
	return claim;
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
	struct verdict v;
	struct lock_wait lw = {};
	struct pend_wait pw = {};
	__u64 *lk, claim = 0, gen_slot, fresh;
	__u32 si, at = 0, k, first;
	int reclaimed = 0, r = SRC_FULL;

	if (!cfg || !key || !id || src_locate(cfg, key, &w))
		return SRC_BUSY;
	gen_slot = READ_ONCE(cfg->gen_slot);
	if (read_policy(cfg, gen_slot, SLUICE_GEN_SLOT(gen_slot), SLUICE_BOUND_IDX(bound), &v, 0))
		return SRC_BUSY;
	si = srctab_stripe(w.h);
	lk = bpf_map_lookup_elem(&src_locks, &si);
	if (!lk)
		return SRC_BUSY;
	/* Held for the few hundred ns of a claim; the bound is for a holder
	 * that stalls (BPF_PROG_TEST_RUN can be preempted; XDP cannot). */
	lw.lk = lk;
	if (!SRC_TRYLOCK(lk)) {
		bpf_loop(SLUICE_SRC_LOCK_SPINS, lock_step, &lw, 0);
		if (!lw.got)
			return SRC_BUSY;
	}
	/* The source's own slot may be mid-reclaim: wait for the reclaim to
	 * give it back or take it, then look again. */
	pw.w = &w;
	bpf_loop(SLUICE_SRC_LOCK_SPINS, pend_step, &pw, 0);
	if (pw.pending) {
		r = SRC_BUSY;
		goto out;
	}
	if (src_find(&w, &at, id)) {
		r = (int)at;
		goto out;
	}
	/* Empty slots first (a reclaim forgets a source's counts), in the
	 * emptier bucket first: balanced, two choices fill the table evenly. */
	first = src_emptier(&w);
	fresh = slot_fresh(v.lim.algo, v.lim.interval, v.lim.bits);
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
