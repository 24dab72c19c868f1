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

/* Emission interval T for a rate: 1e9 / rate ns, at least 1. */
SLUICE_INLINE __u64 gcra_interval_ns(__u64 rate)
{
	__u64 t;

	if (rate == 0)
		return SLUICE_NS_PER_SEC;
	t = SLUICE_NS_PER_SEC / rate;
	return t ? t : 1;
}

/* Burst tolerance B*T; callers bound rate and burst so this cannot wrap. */
SLUICE_INLINE __u64 gcra_tolerance_ns(__u64 rate, __u64 burst)
{
	return burst * gcra_interval_ns(rate);
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

/* How long, in ns, until one more packet would be admitted (0 if now). */
SLUICE_INLINE __u64 gcra_wait_ns(__u64 tat, __u64 now, __u64 interval,
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

/* Packets that could be sent back to back right now. */
SLUICE_INLINE __u64 gcra_tokens(__u64 tat, __u64 now, __u64 interval,
				__u64 tolerance)
{
	__u64 ahead = gcra_base(tat, now) - now;

	if (tat == SLUICE_U64_MAX || interval == 0 || ahead >= tolerance)
		return 0;
	return (tolerance - ahead) / interval;
}

#endif /* SLUICE_GCRA_H */
