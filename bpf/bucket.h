/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The source table: bucket keys, the new-source budget, and taking a
 * slot for a source's home bucket or a keyed one. Part of sluice.bpf.c, included by it after
 * counters.h. */
#ifndef SLUICE_BPF_BUCKET_H
#define SLUICE_BPF_BUCKET_H

/* Keep the first len bits of a (the 128-bit form); zero the rest. */
static __always_inline void mask_addr(__u8 *a, __u32 len)
{
	int i;

#pragma unroll
	for (i = 0; i < SLUICE_ADDR_LEN; i++) {
		if (len >= (__u32)(i + 1) * 8)
			continue;
		if (len <= (__u32)i * 8)
			a[i] = 0;
		else
			a[i] &= (__u8)(0xff << (8 - (len - i * 8)));
	}
}

/*
 * Whether the new-source budget lets one more entry into the source table.
 * The budget's TAT is shared by every CPU, so it is read first and changed
 * only when it admits: a flood over the budget only reads its cache line.
 * A CAS lost to another CPU's admission is tried again, boundedly.
 */
static __always_inline int new_source_admitted(struct sluice_config *cfg)
{
	struct sluice_budget *bg = &cfg->new_src[SLUICE_GEN_SLOT(READ_ONCE(cfg->gen_slot))];
	__u64 interval = READ_ONCE(bg->interval), tolerance, tat, next, now;
	int i;

	if (!interval)
		return 1;	/* no budget */
	tolerance = READ_ONCE(bg->tolerance);
	now = gcra_now(SLUICE_CLOCK_NS());
	for (i = 0; i < SLUICE_BUDGET_TRIES; i++) {
		tat = READ_ONCE(cfg->new_tat);
		if (!gcra_admit(tat, now, interval, tolerance, &next))
			return 0;
		if (SLUICE_CAS(&cfg->new_tat, tat, next) == tat)
			return 1;
	}
	return 0;
}

/*
 * A per-source keyed bucket of rule idx for a source whose home bucket
 * home last judged it by the same rule (an L4 rule now covers the source,
 * so its packets need keyed buckets): it starts as the home bucket's state
 * (*carry) and generation (*bound), so its first packet re-binds it by the
 * usual rules and the source keeps what it had spent. Left as they are
 * when home says otherwise or changes under the read.
 */
static __always_inline void carry_home(const struct sluice_bucket *home, __u32 idx, __u64 *carry,
				       __u64 *bound)
{
	__u64 hb = READ_ONCE(home->bound), tat;

	tat = READ_ONCE(home->tat);
	barrier();
	if (!(hb & SLUICE_BOUND_DIRECT) || (hb & SLUICE_BOUND_PENDING) ||
	    SLUICE_BOUND_IDX(hb) != idx || READ_ONCE(home->bound) != hb)
		return;
	*carry = tat;
	*bound = hb & ~(SLUICE_BOUND_DIRECT | SLUICE_SLOT_KEEP_MASK);
}

/*
 * The slot of bucket key (its index, *id its slot bits): a source's home
 * bucket (not looked up again: the caller missed it) or a keyed one,
 * looked up first. Taken with a fresh state bound by word bound if there
 * is none and the new-source budget allows; -1 otherwise, with *reason
 * saying why (over the budget, its candidates full of buckets in debt, or
 * its stripe busy). home: a keyed key's source's home bucket when it has
 * one: the source is known, so the budget does not apply, and a
 * per-source key of the rule home was judged by starts from home's state
 * (carry_home).
 */
static __always_inline int take_bucket(struct sluice_config *cfg, const struct sluice_src_key *key,
				       __u64 bound, const struct sluice_bucket *home, __u64 *id,
				       __u32 *reason)
{
	__u64 carry = 0;
	int at = -1;

	if (key->policy != SLUICE_KEY_HOME)
		at = src_lookup(cfg, key, id);
	if (at >= 0)
		return at;
	if (at < -1) {
		*reason = SLUICE_R_NO_BUCKET;
		return -1;
	}
	if (home) {
		if (key->key_len >= SLUICE_KEY_LEN_SOURCE)
			carry_home(home, SLUICE_BOUND_IDX(bound), &carry, &bound);
	} else if (!new_source_admitted(cfg)) {
		*reason = SLUICE_R_NEW_SOURCE_LIMITED;
		return -1;
	}
	at = src_claim(cfg, key, bound, carry, id);
	if (at < 0)
		*reason = SLUICE_R_NO_BUCKET;
	return at;
}

#endif /* SLUICE_BPF_BUCKET_H */
