/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The admission decision: a packet judged in its bucket by the rule the
 * bucket is bound to, with CAS, retried boundedly. Part of sluice.bpf.c,
 * included by it after rebind.h. */
#ifndef SLUICE_BPF_JUDGE_H
#define SLUICE_BPF_JUDGE_H

/* A packet rebind could not judge in the bucket it was given: the policy
 * changed under it so that another bucket is now the source's, or a commit
 * landed while it lost CAS after CAS (judge_step). Counted as no_bucket
 * (fail closed); only at the instant of a commit. */
#define JUDGE_REROUTE	SLUICE_R_MAX

/* One admission in progress: what judge_step needs between attempts. */
struct judge {
	struct sluice_config *cfg;
	struct sluice_bucket *b;
	const struct pkt *p;
	__u64 now;		/* ns, read at each step */
	__u32 idx;		/* the deciding policy */
	__u32 reason;
};

/* A packet the bucket's rule rejects: banned while the bucket's state says
 * so (algo.h); else rate limited, which starts a ban when the rule has one.
 * Returns 0 when the ban's CAS lost a race (judge again). */
static __always_inline int reject(struct judge *j, struct sluice_bucket *b, __u64 tat,
				  const struct verdict *v, int banned)
{
	if (banned) {
		j->reason = SLUICE_R_BANNED;
	} else {
		if (v->lim.ban &&
		    SLUICE_CAS(&b->tat, tat, limit_ban_state(&v->lim, j->now)) != tat)
			return 0;
		j->reason = SLUICE_R_RATE_LIMITED;
	}
	if (v->flags & SLUICE_POLICY_MONITOR)
		j->reason = SLUICE_R_MONITORED;
	return 1;
}

/* One attempt at an admission step with CAS, against the policy the bucket is
 * bound to in the active generation. Returns 1 with j->reason set when the
 * packet is decided, 0 when a lost race, a rebind or a policy flip means the
 * step must start again. Without can_rebind (the retry loop, whose frame
 * would otherwise stack rebind's and its conversion loop's on top), a bucket
 * of an older generation is rerouted: that is a commit landing while this
 * packet lost CAS after CAS. */
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
	if (bound & SLUICE_BOUND_PENDING) {
		/* Another CPU converts TAT: wait for it, boundedly. */
		for (spins = 0; spins < SLUICE_PENDING_SPINS; spins++)
			if (!(READ_ONCE(b->bound) & SLUICE_BOUND_PENDING))
				return 0;
		return 1;	/* still pending: fail closed */
	}
	if (SLUICE_BOUND_GEN(bound) != SLUICE_GEN(gen_slot)) {
		if (!can_rebind) {
			j->reason = JUDGE_REROUTE;
			return 1;
		}
		/* A rebind that could not read the new policy (another commit
		 * began meanwhile) is tried again, against the newer one. */
		r = rebind(j->cfg, b, j->p, gen_slot, bound);
		if (r > 0)
			j->reason = JUDGE_REROUTE;
		return r > 0;
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
	tat = READ_ONCE(b->tat);
	barrier();
	if (READ_ONCE(b->bound) != bound)
		return 0;	/* rebound since: judge again */
	/* The clock after the state: any CPU that moved the state read the
	 * clock before it did, so the state never lies ahead of now by a
	 * stale clock (a token bucket's TAT past its tolerance, a window's
	 * tag past now's window: both would look like a ban). Read again at
	 * each attempt. */
	j->now = policy_clock(&v);
	r = limit_judge(&v.lim, tat, j->now, v.unit == SLUICE_UNIT_BYTES ? j->p->bytes : 1,
			&next);
	if (r != SLUICE_JUDGE_ADMITTED)
		return reject(j, b, tat, &v, r == SLUICE_JUDGE_BANNED);
	if (SLUICE_CAS(&b->tat, tat, next) != tat)
		return 0;	/* another CPU moved TAT first */
	j->reason = SLUICE_R_WITHIN_LIMIT;
	return 1;
}

static long judge_retry(__u64 i, struct judge *j)
{
	return judge_step(j, 0);
}

/*
 * Admit or reject packet p in bucket b. A failed CAS means another CPU
 * admitted a packet meanwhile, so retrying makes progress; the first
 * attempts run inline (the common, uncontended case), the rest in a
 * bpf_loop, verified once, up to SLUICE_CAS_TRIES. Only past that bound is
 * a packet rejected unjudged: it never over-admits. Sets *idx to the
 * deciding policy; returns the reason.
 */
static __always_inline __u32 judge_bucket(struct sluice_config *cfg, struct sluice_bucket *b,
					  const struct pkt *p, __u32 *idx)
{
	struct judge j = {
		.cfg = cfg, .b = b, .p = p,
		.idx = *idx, .reason = SLUICE_R_RATE_LIMITED,
	};
	int i;

	for (i = 0; i < SLUICE_CAS_INLINE_TRIES; i++)
		if (judge_step(&j, 1))
			goto out;
	bpf_loop(SLUICE_CAS_TRIES, judge_retry, &j, 0);
out:
	*idx = j.idx;
	return j.reason == JUDGE_REROUTE ? SLUICE_R_NO_BUCKET : j.reason;
}

#endif /* SLUICE_BPF_JUDGE_H */
