/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The admission decision: a packet judged in its bucket by the rule the
 * bucket is bound to, with CAS, retried boundedly. Part of sluice.bpf.c,
 * included by it after lease.h. */
#ifndef SLUICE_BPF_JUDGE_H
#define SLUICE_BPF_JUDGE_H

/* A packet rebind could not judge in the bucket it was given: the policy
 * changed under it so that another bucket is now the source's, or a commit
 * landed while it lost CAS after CAS (judge_step). Counted as no_bucket
 * (fail closed); only at the instant of a commit. */
#define JUDGE_REROUTE	SLUICE_R_MAX
/* A packet whose bucket is bound to an older generation: judge_bucket's
 * caller re-binds it (rebind) and judges it again. Called from the
 * program's own frame, rebind and its conversion loop fit the 512 bytes
 * of stack that BPF gives a chain of calls. */
#define JUDGE_REBIND	(SLUICE_R_MAX + 1)

/* One admission in progress: what judge_step needs between attempts. */
struct judge {
	struct sluice_config *cfg;
	struct sluice_bucket *b;
	const struct pkt *p;
	__u64 now;		/* ns, read at each step */
	__u64 id;		/* the slot bits of b's bound word, which must not
				 * change: a slot of the source table given to
				 * another source meanwhile is not this one's */
	__u32 idx;		/* the deciding policy */
	__u32 reason;
};

/* A packet the bucket's rule rejects: banned while the bucket's state says
 * so (algo.h); else rate limited, which starts a ban when the rule has one.
 * A --monitor rule changes nothing: its would-be ban is never written to
 * the state, so removing --monitor later enforces no ban of the dry run
 * (and `ban list`, which reads the state, shows none meanwhile). Returns 0
 * when the ban's CAS lost a race (judge again). */
static __always_inline int reject(struct judge *j, struct sluice_bucket *b, __u64 tat,
				  const struct verdict *v, int banned)
{
	if (v->flags & SLUICE_POLICY_MONITOR) {
		j->reason = SLUICE_R_MONITORED;
		return 1;
	}
	if (banned) {
		j->reason = SLUICE_R_BANNED;
	} else {
		if (v->lim.ban &&
		    SLUICE_CAS(&b->tat, tat, limit_ban_state(&v->lim, j->now)) != tat)
			return 0;
		j->reason = SLUICE_R_RATE_LIMITED;
	}
	return 1;
}

/* limit_judge, global: the verifier checks the algorithms' math once,
 * not again in each of judge_step's attempts (the inline ones and the
 * retry loop's). */
__noinline int judge_limit(const struct sluice_limit *l, __u64 st, __u64 now, __u64 n,
			   __u64 *next)
{
	if (!l || !next)
		return SLUICE_JUDGE_REJECTED;
	return limit_judge(l, st, now, n, next);
}

/* One attempt at an admission step with CAS, against the policy the bucket is
 * bound to in the active generation. Returns 1 with j->reason set when the
 * packet is decided, 0 when a lost race or a policy flip means the step
 * must start again. A bucket of an older generation ends the judging with
 * JUDGE_REBIND when can_rebind (the first attempts), and is rerouted
 * otherwise (the retry loop): that is a commit landing while this packet
 * lost CAS after CAS. */
static __always_inline int judge_step(struct judge *j, int can_rebind)
{
	struct sluice_bucket *b = j->b;
	__u64 gen_slot, bound, tat, next;
	struct verdict v;
	int spins, r;

	if (!b || !j->cfg || !j->p)
		return 1;
	gen_slot = READ_ONCE(j->cfg->gen_slot);
	bound = READ_ONCE(b->bound);
	if ((bound & SLUICE_SLOT_ID_MASK) != j->id) {
		j->reason = JUDGE_REROUTE;	/* reclaimed under it */
		return 1;
	}
	if (bound & SLUICE_BOUND_PENDING) {
		/* Another CPU converts TAT: wait for it, boundedly. */
		for (spins = 0; spins < SLUICE_PENDING_SPINS; spins++)
			if (!(READ_ONCE(b->bound) & SLUICE_BOUND_PENDING))
				return 0;
		return 1;	/* still pending: fail closed */
	}
	if (!SLUICE_BOUND_GEN_IS(bound, SLUICE_GEN(gen_slot))) {
		j->reason = can_rebind ? JUDGE_REBIND : JUDGE_REROUTE;
		return 1;
	}
	j->idx = SLUICE_BOUND_IDX(bound);
	if (read_policy(j->cfg, gen_slot, SLUICE_GEN_SLOT(gen_slot), j->idx, &v, 0))
		return 0;
	if (v.action == SLUICE_ACT_ALLOW) {
		j->reason = SLUICE_R_ALLOWED;
		return 1;
	}
	if (v.action != SLUICE_ACT_LIMIT) {
		j->reason = SLUICE_R_DENIED;
		return 1;
	}
	/* The state after the bound word, the bound word again after the
	 * state: ordered by address dependencies (srctab.h's after()). */
	tat = READ_ONCE(after(b, bound)->tat);
	if (READ_ONCE(after(b, tat)->bound) != bound)
		return 0;	/* rebound since: judge again */
	/* The clock after the state: any CPU that moved the state read the
	 * clock before it did, so the state never lies ahead of now by a
	 * stale clock (a token bucket's TAT past its tolerance, a window's
	 * tag past now's window: both would look like a ban). Read again at
	 * each attempt. */
	j->now = policy_clock(&v);
	next = 0;
	r = judge_limit(&v.lim, tat, j->now, v.unit == SLUICE_UNIT_BYTES ? j->p->bytes : 1,
			&next);
	if (r != SLUICE_JUDGE_ADMITTED)
		return reject(j, b, tat, &v, r == SLUICE_JUDGE_BANNED);
	if (SLUICE_CAS(&b->tat, tat, next) != tat)
		return 0;	/* another CPU moved TAT first */
	j->reason = SLUICE_R_WITHIN_LIMIT;
	return 1;
}

/*
 * After an admission in slot b (slot bits id, counts n, this packet
 * counted): mark the slot established if its source was on probation and
 * its admissions so far prove it came back (limit_returned, by the rule
 * that judged it: the passed count read before the state, so the state
 * holds at least those admissions). From then on only its own long
 * idleness frees its slot (src_claim). One CAS, from a word that is still
 * the claim's, not established and not pending (a re-bind's pending word
 * is its owner's to write); a lost race waits for the source's next
 * admission. Counted. Global, so the verifier checks it once; an
 * established source pays one read of its ctl.
 */
__noinline int slot_establish(struct sluice_config *cfg, struct sluice_bucket *b,
			      const struct sluice_slot_count *n, __u64 id)
{
	__u64 c, gen_slot, st;
	struct verdict v;
	__u32 k;

	if (!cfg || !b || !n)
		return 0;
	c = READ_ONCE(b->bound);
	if ((c & SLUICE_SLOT_ID_MASK) != id ||
	    (c & (SLUICE_SLOT_ESTABLISHED | SLUICE_BOUND_PENDING)))
		return 0;
	/* One admission never proves a return (limit_returned): a new
	 * source's first packet reads no policy here. */
	k = READ_ONCE(n->passed);
	if (k < 2)
		return 0;
	gen_slot = READ_ONCE(cfg->gen_slot);
	if (!SLUICE_BOUND_GEN_IS(c, SLUICE_GEN(gen_slot)) ||
	    read_policy(cfg, gen_slot, SLUICE_GEN_SLOT(gen_slot), SLUICE_BOUND_IDX(c), &v, 0) ||
	    v.action != SLUICE_ACT_LIMIT)
		return 0;
	st = READ_ONCE(after(b, k)->tat);
	if (!limit_returned(&v.lim, st, policy_clock(&v), k))
		return 0;
	if (__sync_val_compare_and_swap(&b->bound, c, c | SLUICE_SLOT_ESTABLISHED) != c)
		return 0;
	count_event(SLUICE_EV_SOURCE_ESTABLISHED);
	src_stat_add(SLUICE_SRC_STAT_ESTABLISHED, 1);
	return 1;
}

/* Tries of count_slot's CAS while other CPUs count the same slot. */
#define COUNT_SLOT_TRIES	4

/*
 * One more packet on count *cnt of bucket b, a slot of the source table
 * whose slot bits were id when the packet was judged (0: not a slot), as
 * count_source but only while the slot is still the source's. A claim
 * that took the slot since zeroed its counts for the next source, whose
 * passed count must not begin with this packet: slot_establish reads it
 * as that source's admissions, and a one-packet source must never pass
 * for one that came back. So the count is read, then the slot's ctl
 * (through an address that depends on the count), then the count is
 * moved by CAS from what was read: a claim's zeroing in between makes the
 * CAS fail, and a count that went down means the slot changed hands.
 */
static __always_inline void count_slot(const struct sluice_bucket *b, __u32 *cnt, __u64 id)
{
	__u32 v, got;
	int i;

	if (!id) {
		count_source(cnt);
		return;
	}
	v = READ_ONCE(*cnt);
	for (i = 0; i < COUNT_SLOT_TRIES; i++) {
		if (v >= SLUICE_SRC_COUNT_MAX ||
		    (READ_ONCE(after(b, v)->bound) & SLUICE_SLOT_ID_MASK) != id)
			return;
		got = __sync_val_compare_and_swap(cnt, v, v + 1);
		if (got == v || got < v)
			return;	/* counted, or zeroed by a claim */
		v = got;
	}
	/* Other CPUs counted this slot each time, so it is still the
	 * source's (a claim's zeroing would have shown): counted all the
	 * same, so that no packet of a busy source goes uncounted. */
	if (v < SLUICE_SRC_COUNT_MAX)
		__sync_fetch_and_add(cnt, 1);
}

static long judge_retry(__u64 i, struct judge *j)
{
	return judge_step(j, 0);
}

/*
 * Admit or reject packet p in bucket b (a slot of the source table while
 * its slot bits are p->id, 0 for a keyed bucket), and count it on the
 * bucket's passed or dropped (n). A failed CAS means another CPU admitted
 * a packet meanwhile, so retrying makes progress; the first attempts run
 * inline (the common, uncontended case), the rest in a bpf_loop, verified
 * once, up to SLUICE_CAS_TRIES. Only past that bound is a packet rejected
 * unjudged: it never over-admits. A packet its rule rejects may spend the
 * bucket's lease (lease_take). Sets *idx to the deciding policy; returns
 * the reason, or JUDGE_REBIND (nothing counted). Global, so the verifier
 * checks it once for every kind of bucket.
 */
__noinline int judge_bucket(struct sluice_config *cfg, struct sluice_bucket *b,
			    struct sluice_slot_count *n, const struct pkt *p, __u32 *idx)
{
	struct judge j = {
		.cfg = cfg, .b = b, .p = p,
		.reason = SLUICE_R_RATE_LIMITED,
	};
	__u32 reason;
	int i;

	if (!cfg || !b || !p || !idx)
		return SLUICE_R_NO_BUCKET;
	j.idx = *idx;
	j.id = p->id;
	for (i = 0; i < SLUICE_CAS_INLINE_TRIES; i++)
		if (judge_step(&j, 1))
			goto out;
	bpf_loop(SLUICE_CAS_TRIES, judge_retry, &j, 0);
out:
	*idx = j.idx;
	if (j.reason == JUDGE_REBIND)
		return JUDGE_REBIND;
	reason = j.reason == JUDGE_REROUTE ? SLUICE_R_NO_BUCKET : j.reason;
	if (reason == SLUICE_R_RATE_LIMITED && READ_ONCE(cfg->leasing))
		reason = lease_take(cfg, p, j.idx, n ? READ_ONCE(n->dropped) : 0);
	/* A --monitor rule's would-drop has a count of its own: the dry run
	 * shows whom enforcing would hit, and a rule that changes mode later
	 * turns no earlier packet into a drop (or a drop into a would-drop). */
	if (n)
		count_slot(b, sluice_reason_is_drop(reason) ? &n->dropped :
			   reason == SLUICE_R_MONITORED ? &n->would_drop : &n->passed, p->id);
	if (reason == SLUICE_R_WITHIN_LIMIT && p->id)
		slot_establish(cfg, b, n, p->id);
	return (int)reason;
}

#endif /* SLUICE_BPF_JUDGE_H */
