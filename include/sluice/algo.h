/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One limit, whatever its algorithm (--algo): admission, bans, waits and
 * the carry-over on a policy change, as pure functions of the bucket's
 * state word and a clock reading in ns. The XDP program, `sluice query`,
 * `sluice simulate` and the tests all call these, so they share the math.
 */
#ifndef SLUICE_ALGO_H
#define SLUICE_ALGO_H

#include "gcra.h"
#include "window.h"

/* A limit as the policy table holds it (see struct sluice_policy). */
struct sluice_limit {
	__u64 interval;		/* token bucket: T, GCRA units per unit;
				 * windows: the window W, ns */
	__u64 tolerance;	/* token bucket: B * T, GCRA units;
				 * windows: the budget N per window, units */
	__u64 ban;		/* --ban: GCRA units (token bucket), ns
				 * (windows); 0 for none */
	__u32 ban_windows;	/* sliding-window: sw_ban_windows() */
	__u8 algo;		/* enum sluice_algo */
	__u8 bits;		/* sliding-window: bits of each count */
};

/* The limit of a policy table entry (userspace; the datapath copies it
 * word by word). */
SLUICE_INLINE void limit_of(const struct sluice_policy *sp, struct sluice_limit *l)
{
	l->interval = sp->interval;
	l->tolerance = sp->tolerance;
	l->ban = sp->ban;
	l->ban_windows = sp->ban_windows;
	l->algo = sp->algo;
	l->bits = sp->bits;
}

/* What n units cost a token bucket: n * T. */
SLUICE_INLINE __u64 limit_gcra_cost(const struct sluice_limit *l, __u64 n)
{
	return n == 1 ? l->interval : gcra_cost(l->interval, n);
}

/* Admit n units at now: 1 and *next, or 0. */
SLUICE_INLINE int limit_admit(const struct sluice_limit *l, __u64 st, __u64 now, __u64 n,
			      __u64 *next)
{
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_admit(st, now, l->interval, l->tolerance, n, next);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		return sw_admit(st, now, l->interval, l->tolerance, l->bits, l->ban_windows, n,
				next);
	return gcra_admit(st, gcra_now(now), limit_gcra_cost(l, n), l->tolerance, next);
}

SLUICE_INLINE int limit_banned(const struct sluice_limit *l, __u64 st, __u64 now)
{
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_banned(st, now, l->interval, l->tolerance);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		return sw_banned(st, now, l->interval, l->bits, l->ban_windows);
	return gcra_banned(st, gcra_now(now), l->tolerance);
}

/* What limit_judge found. */
#define SLUICE_JUDGE_REJECTED	0
#define SLUICE_JUDGE_ADMITTED	1
#define SLUICE_JUDGE_BANNED	2	/* rejected, and limit_banned */

/* limit_admit and, when it rejects, limit_banned at the same now, with now
 * divided into windows once: the datapath's step (a 64-bit division costs
 * a few ns a packet). Sets *next only when admitted. */
SLUICE_INLINE int limit_judge(const struct sluice_limit *l, __u64 st, __u64 now, __u64 n,
			      __u64 *next)
{
	__u64 w;

	if (l->algo == SLUICE_ALGO_FIXED_WINDOW) {
		w = fw_start(now, l->interval, l->tolerance);	/* the window's S */
		if (st > win_add(w, l->tolerance))
			return SLUICE_JUDGE_BANNED;
		return fw_admit_from(st, w, l->tolerance, n, next);
	}
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW) {
		w = win_index(now, l->interval);
		if (sw_ahead(st, w, l->bits, l->ban_windows))
			return SLUICE_JUDGE_BANNED;
		return sw_admit_in(st, now, w, l->interval, l->tolerance, l->bits,
				   l->ban_windows, n, next);
	}
	if (gcra_admit(st, gcra_now(now), limit_gcra_cost(l, n), l->tolerance, next))
		return SLUICE_JUDGE_ADMITTED;
	return gcra_banned(st, gcra_now(now), l->tolerance) ? SLUICE_JUDGE_BANNED
							   : SLUICE_JUDGE_REJECTED;
}

/* The state that bans for the rule's --ban from now. */
SLUICE_INLINE __u64 limit_ban_state(const struct sluice_limit *l, __u64 now)
{
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_ban_state(now, l->interval, l->tolerance, l->ban);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		return sw_ban_state(now, l->interval, l->tolerance, l->bits, l->ban);
	return gcra_ban_tat(gcra_now(now), l->tolerance, l->ban);
}

/* ns until a ban ends, 0 when not banned. */
SLUICE_INLINE __u64 limit_ban_left(const struct sluice_limit *l, __u64 st, __u64 now)
{
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_ban_left(st, now, l->interval, l->tolerance);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		return sw_ban_left(st, now, l->interval, l->bits, l->ban_windows);
	return gcra_units_to_ns(gcra_ban_left(st, gcra_now(now), l->tolerance));
}

/* ns until n units would be admitted (the retry-after): 0 now, U64_MAX
 * never. Never early: at now + wait the packet is admitted. */
SLUICE_INLINE __u64 limit_wait(const struct sluice_limit *l, __u64 st, __u64 now, __u64 n)
{
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_wait(st, now, l->interval, l->tolerance, n);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		return sw_wait(st, now, l->interval, l->tolerance, l->bits, l->ban_windows, n);
	if (limit_gcra_cost(l, n) > l->tolerance)
		return SLUICE_U64_MAX;	/* over the burst: never */
	return gcra_units_to_ns(gcra_wait(st, gcra_now(now), limit_gcra_cost(l, n), l->tolerance));
}

/* What a full bucket holds, and what this one could admit at now, in
 * units: a token bucket's burst and tokens, a window's budget and what is
 * left of it (0 while banned). */
SLUICE_INLINE __u64 limit_capacity(const struct sluice_limit *l)
{
	if (l->algo == SLUICE_ALGO_TOKEN_BUCKET)
		return l->interval ? l->tolerance / l->interval : 0;
	return l->tolerance;
}

SLUICE_INLINE __u64 limit_available(const struct sluice_limit *l, __u64 st, __u64 now)
{
	__u64 used;

	if (limit_banned(l, st, now))
		return 0;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		used = fw_count(st, now, l->interval, l->tolerance);
	else if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		used = sw_estimate(st, now, l->interval, l->bits, l->ban_windows);
	else
		return gcra_tokens(st, gcra_now(now), l->interval, l->tolerance);
	return used >= l->tolerance ? 0 : l->tolerance - used;
}

/* The state of a bucket of l that could admit `avail` units at `at`, and
 * would have spent the rest of its capacity there. */
SLUICE_INLINE __u64 limit_state_with(const struct sluice_limit *l, __u64 at, __u64 avail)
{
	__u64 cap = limit_capacity(l);

	if (avail > cap)
		avail = cap;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return win_add(fw_start(at, l->interval, l->tolerance), cap - avail);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW)
		return sw_make(win_index(at, l->interval), 0, cap - avail, l->bits);
	return gcra_tat_at(gcra_now(at), l->tolerance - avail * l->interval);
}

/*
 * The state of a bucket that moves to limit nl, which took effect at `at`
 * (ns: the moment its rule last changed, so edits to other rules since do
 * not matter): unchanged unless the new policy limits; empty (0 is empty
 * for every algorithm) when the old one did not limit. A token bucket that
 * stays one keeps its tokens, clamped to the new burst (gcra_rebind). A
 * bucket that changes algorithm or window keeps the share of its capacity
 * it had left, rounded down; a banned one has none, so a change of the
 * limit (--ban included) ends its ban. When the old limit is no longer
 * known (the bucket was idle across two or more changes of its own rule),
 * neither is what its word means, so it starts spent at `at` and refills
 * by its new limit since: a change never hands a source a budget it had
 * not earned.
 */
SLUICE_INLINE __u64 limit_rebind(__u64 st, __u64 at, int old_known, __u32 old_action,
				 const struct sluice_limit *ol, __u32 action,
				 const struct sluice_limit *nl)
{
	__u64 cap, avail, w, prev, cur;

	if (action != SLUICE_ACT_LIMIT)
		return st;
	if (old_known && old_action != SLUICE_ACT_LIMIT)
		return 0;
	if (!old_known)
		return limit_state_with(nl, at, 0);
	if (nl->algo == SLUICE_ALGO_TOKEN_BUCKET && ol->algo == SLUICE_ALGO_TOKEN_BUCKET)
		return gcra_rebind(st, gcra_now(at), 1, old_action, ol->interval,
				   ol->tolerance, action, nl->interval, nl->tolerance);
	avail = limit_available(ol, st, at);
	if (ol->algo == nl->algo && ol->interval == nl->interval && !limit_banned(ol, st, at)) {
		/* The same windows: the counts carry over, clamped (a banned
		 * bucket has none left, below). */
		if (nl->algo == SLUICE_ALGO_FIXED_WINDOW) {
			cap = ol->tolerance - avail;	/* used */
			return limit_state_with(nl, at, cap >= nl->tolerance ? 0
								    : nl->tolerance - cap);
		}
		w = win_index(at, nl->interval);
		sw_counts(st, w, ol->bits, &prev, &cur);
		return sw_make(w, prev > nl->tolerance ? nl->tolerance : prev,
			       cur > nl->tolerance ? nl->tolerance : cur, nl->bits);
	}
	cap = limit_capacity(ol);
	return limit_state_with(nl, at, cap ? avail * limit_capacity(nl) / cap : 0);
}

#endif /* SLUICE_ALGO_H */
