/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The admission rule (GCRA, ITU-T I.371), as pure functions of the bucket's
 * theoretical arrival time and a clock reading, compiled by both the XDP
 * program and userspace so `sluice query` and the tests use the same math. */
#ifndef SLUICE_GCRA_H
#define SLUICE_GCRA_H

#include <linux/types.h>
#include "sluice.h"

#ifdef __BPF__
#define SLUICE_INLINE static __always_inline
#else
#define SLUICE_INLINE static inline
#endif

#define SLUICE_U64_MAX			(~0ULL)

/*
 * Time in GCRA units: 1/64 ns (fixed point, SLUICE_GCRA_SHIFT fraction bits),
 * so the emission interval T = 1e9/R ns keeps six bits below the nanosecond
 * and is rounded up: over any span t, at most burst + R*t + 1 packets pass,
 * at every rate up to 1e9/s, and at most 1/64 ns per packet is lost to the
 * rounding (under 1.6 % at 1e9/s, under 0.1 % below 6.4e7/s). A clock of
 * 2^64 units is 2^58 ns: 9.1 years of uptime before a TAT saturates.
 */
#define SLUICE_GCRA_SHIFT		6
#define SLUICE_GCRA_UNITS_PER_NS	(1ULL << SLUICE_GCRA_SHIFT)
#define SLUICE_GCRA_UNITS_PER_SEC	(SLUICE_NS_PER_SEC << SLUICE_GCRA_SHIFT)

/* A clock reading in ns as GCRA units. */
SLUICE_INLINE __u64 gcra_now(__u64 ns)
{
	return ns > (SLUICE_U64_MAX >> SLUICE_GCRA_SHIFT) ? SLUICE_U64_MAX
							   : ns << SLUICE_GCRA_SHIFT;
}

/* GCRA units as ns, rounded up (a wait is never reported early). */
SLUICE_INLINE __u64 gcra_units_to_ns(__u64 units)
{
	return (units >> SLUICE_GCRA_SHIFT) +
	       ((units & (SLUICE_GCRA_UNITS_PER_NS - 1)) ? 1 : 0);
}

/* Emission interval T for a rate, rounded up: ceil(64e9 / rate) units. */
SLUICE_INLINE __u64 gcra_interval(__u64 rate)
{
	if (rate == 0)
		return SLUICE_GCRA_UNITS_PER_SEC;
	return (SLUICE_GCRA_UNITS_PER_SEC - 1) / rate + 1;
}

/* Emission interval for rate units per period seconds (--rate 600/m):
 * ceil(64e9 * period / rate) units. */
SLUICE_INLINE __u64 gcra_interval_per(__u64 rate, __u32 period)
{
	if (rate == 0)
		return SLUICE_GCRA_UNITS_PER_SEC * (period ? period : 1);
	return (SLUICE_GCRA_UNITS_PER_SEC * (period ? period : 1) - 1) / rate + 1;
}

/* What n units (packets, or bytes) cost: n * T, saturating; in 32-bit
 * halves, so no 128-bit multiply is needed (BPF has none). */
SLUICE_INLINE __u64 gcra_cost(__u64 interval, __u64 n)
{
	__u64 hi = (interval >> 32) * (n & 0xffffffffULL);
	__u64 lo = (interval & 0xffffffffULL) * (n & 0xffffffffULL);

	if ((n >> 32) || (hi >> 32))
		return SLUICE_U64_MAX;
	hi <<= 32;
	return lo > SLUICE_U64_MAX - hi ? SLUICE_U64_MAX : lo + hi;
}

/* Burst tolerance B*T; callers bound burst/rate (SLUICE_BURST_SECONDS_MAX)
 * so this stays below 2^56. */
SLUICE_INLINE __u64 gcra_tolerance(__u64 rate, __u64 burst)
{
	return burst * gcra_interval(rate);
}

/* max(tat, now): the point the next emission is measured from. */
SLUICE_INLINE __u64 gcra_base(__u64 tat, __u64 now)
{
	return tat > now ? tat : now;
}

/*
 * Decide one packet. Admitted when max(TAT, now) + T - now <= B*T, written
 * as (base - now) <= tolerance - T so nothing overflows near the clock's end.
 * On admission *new_tat is base + T (saturating); returns 1 to admit, 0 to
 * reject. tolerance >= interval always holds for burst >= 1.
 */
SLUICE_INLINE int gcra_admit(__u64 tat, __u64 now, __u64 interval,
			     __u64 tolerance, __u64 *new_tat)
{
	__u64 base = gcra_base(tat, now);

	/* A saturated TAT is exhausted for good, or it would admit forever. */
	if (tat == SLUICE_U64_MAX || tolerance < interval ||
	    base - now > tolerance - interval)
		return 0;
	*new_tat = base > SLUICE_U64_MAX - interval ? SLUICE_U64_MAX
						    : base + interval;
	return 1;
}

/* How long, in GCRA units, until one more packet would be admitted (0 if
 * now). */
SLUICE_INLINE __u64 gcra_wait(__u64 tat, __u64 now, __u64 interval,
			      __u64 tolerance)
{
	__u64 ahead = gcra_base(tat, now) - now;

	if (tat == SLUICE_U64_MAX)
		return SLUICE_U64_MAX;
	if (tolerance < interval)
		return ahead + interval - tolerance;
	if (ahead <= tolerance - interval)
		return 0;
	/* ahead + T - B*T, computed without wrapping */
	return ahead - (tolerance - interval);
}

/* Whole packets that could be sent back to back right now. */
SLUICE_INLINE __u64 gcra_tokens(__u64 tat, __u64 now, __u64 interval,
				__u64 tolerance)
{
	__u64 ahead = gcra_base(tat, now) - now;

	if (tat == SLUICE_U64_MAX || interval == 0 || ahead >= tolerance)
		return 0;
	return (tolerance - ahead) / interval;
}

/* now + ahead, saturating. */
SLUICE_INLINE __u64 gcra_tat_at(__u64 now, __u64 ahead)
{
	return now > SLUICE_U64_MAX - ahead ? SLUICE_U64_MAX : now + ahead;
}

/*
 * A ban is kept in TAT: a banned bucket's TAT lies more than its tolerance
 * plus SLUICE_BAN_SLACK ahead of now. A bucket that is only rate limited
 * lies at most its tolerance ahead of the latest clock reading of any CPU;
 * the slack covers a packet that read the clock a little before another
 * CPU admitted one (a clock reading is stale by a packet's time, far below
 * a millisecond), so such a packet is never mistaken for banned. A ban
 * ends with the bucket empty; it refills at its rate after the slack.
 */
#define SLUICE_BAN_SLACK_NS		1000000ULL	/* 1 ms */

SLUICE_INLINE __u64 gcra_ban_slack(void)
{
	return SLUICE_BAN_SLACK_NS << SLUICE_GCRA_SHIFT;
}

/* How long bucket TAT stays banned, in GCRA units (0 when it is not). */
SLUICE_INLINE __u64 gcra_ban_left(__u64 tat, __u64 now, __u64 tolerance)
{
	__u64 ahead = tat > now ? tat - now : 0;

	if (ahead <= tolerance || ahead - tolerance <= gcra_ban_slack())
		return 0;
	return ahead - tolerance - gcra_ban_slack();
}

SLUICE_INLINE int gcra_banned(__u64 tat, __u64 now, __u64 tolerance)
{
	return gcra_ban_left(tat, now, tolerance) != 0;
}

/* The TAT that bans a bucket for `ban` units from now. */
SLUICE_INLINE __u64 gcra_ban_tat(__u64 now, __u64 tolerance, __u64 ban)
{
	__u64 ahead = tolerance + gcra_ban_slack();

	return gcra_tat_at(now, ahead > SLUICE_U64_MAX - ban ? SLUICE_U64_MAX : ahead + ban);
}

/*
 * A policy change, when the old limit is known: the source keeps its whole
 * tokens, clamped to the new burst (tokens_new = min(tokens_old, burst_new)),
 * and refills at the new rate from now. Returns the TAT that expresses that
 * under the new interval and tolerance.
 */
SLUICE_INLINE __u64 gcra_carry(__u64 tat, __u64 now, __u64 old_interval,
			       __u64 old_tolerance, __u64 interval, __u64 tolerance)
{
	__u64 tokens = gcra_tokens(tat, now, old_interval, old_tolerance);
	__u64 burst = interval ? tolerance / interval : 0;

	if (tokens > burst)
		tokens = burst;
	return gcra_tat_at(now, tolerance - tokens * interval);
}

/*
 * A policy change when the old limit is no longer known (the bucket was idle
 * across more than one commit that changed its rule): the source keeps its
 * debt in time, clamped to the new tolerance, so it is never given tokens it
 * had not earned and never owes more than a full new burst.
 */
SLUICE_INLINE __u64 gcra_carry_unknown(__u64 tat, __u64 now, __u64 tolerance)
{
	__u64 ahead = gcra_base(tat, now) - now;

	if (tat == SLUICE_U64_MAX || ahead > tolerance)
		ahead = tolerance;
	return gcra_tat_at(now, ahead);
}

/*
 * The TAT of a bucket that moves to a new policy, which took effect at `at`
 * (GCRA units): unchanged unless the new one limits; full (0) when the old
 * one did not limit (a source enters a limit as a new source does); else
 * the tokens it had at `at`, exactly when the old limit is known, refilled
 * at the new rate since.
 */
SLUICE_INLINE __u64 gcra_rebind(__u64 tat, __u64 at, int old_known, __u32 old_action,
				__u64 old_interval, __u64 old_tolerance, __u32 action,
				__u64 interval, __u64 tolerance)
{
	if (action != SLUICE_ACT_LIMIT)
		return tat;
	if (old_known && old_action != SLUICE_ACT_LIMIT)
		return 0;
	if (old_known)
		return gcra_carry(tat, at, old_interval, old_tolerance, interval, tolerance);
	return gcra_carry_unknown(tat, at, tolerance);
}

#endif /* SLUICE_GCRA_H */
