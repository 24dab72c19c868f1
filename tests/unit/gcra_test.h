/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the GCRA unit tests share (tests/unit/gcra_*.c, run by test_gcra.c):
 * units, a bucket over the functions of include/sluice/gcra.h on a fake
 * clock, random rates and bursts, and the cases' names. */
#ifndef SLUICE_TEST_GCRA_TEST_H
#define SLUICE_TEST_GCRA_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "sluice/gcra.h"
#include "harness.h"

#define SEC		SLUICE_GCRA_UNITS_PER_SEC	/* 1 s in GCRA units */
#define NSU		SLUICE_GCRA_UNITS_PER_NS	/* 1 ns in GCRA units */
#define U64_MAX		SLUICE_U64_MAX

typedef unsigned __int128 u128;

/* A rate spread over every order of magnitude from 1 to SLUICE_RATE_MAX. */
static inline __u64 rng_rate(void)
{
	static const __u64 pow10[] = { 1, 10, 100, 1000, 10000, 100000,
				       1000000, 10000000, 100000000,
				       1000000000 };
	__u64 r = 1 + rng_below(pow10[rng_below(ARRAY_LEN(pow10))] * 10);

	return r > SLUICE_RATE_MAX ? SLUICE_RATE_MAX : r;
}

static inline __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/* The largest burst the policy accepts at a rate: burst/rate <
 * SLUICE_BURST_SECONDS_MAX (user/lib/policy.c), which keeps B*T below 2^56. */
static inline __u64 burst_max_for(__u64 rate)
{
	return min_u64(SLUICE_BURST_MAX, rate * SLUICE_BURST_SECONDS_MAX - 1);
}

/* A burst the policy accepts at rate: mostly small, sometimes up to the max. */
static inline __u64 rng_burst(__u64 rate, __u64 small)
{
	__u64 max = burst_max_for(rate);

	return 1 + rng_below(rng_below(4) ? min_u64(small, max) : max);
}

/* ---- a bucket over the functions under test ---- */

struct bucket {
	__u64 tat;
	__u64 interval;
	__u64 tolerance;
};

/* A bucket nobody has sent to: TAT 0, i.e. full at any now. */
static inline struct bucket bucket_fresh(__u64 rate, __u64 burst)
{
	struct bucket b = {
		.tat = 0,
		.interval = gcra_interval(rate),
		.tolerance = gcra_tolerance(rate, burst),
	};

	return b;
}

static inline int bucket_admit(struct bucket *b, __u64 now)
{
	__u64 new_tat;

	if (!gcra_admit(b->tat, now, b->interval, b->tolerance, &new_tat))
		return 0;
	b->tat = new_tat;
	return 1;
}

/* Would one packet at now be admitted? Leaves b unchanged. */
static inline int bucket_would_admit(const struct bucket *b, __u64 now)
{
	struct bucket c = *b;

	return bucket_admit(&c, now);
}

static inline __u64 bucket_wait(const struct bucket *b, __u64 now)
{
	return gcra_wait(b->tat, now, b->interval, b->tolerance);
}

static inline __u64 bucket_tokens(const struct bucket *b, __u64 now)
{
	return gcra_tokens(b->tat, now, b->interval, b->tolerance);
}

/* Sends back to back at one instant until the first rejection; at most limit. */
static inline __u64 burst_at(struct bucket *b, __u64 now, __u64 limit)
{
	__u64 n = 0;

	while (n < limit && bucket_admit(b, now))
		n++;
	return n;
}

static inline __u64 burst_copy_at(const struct bucket *b, __u64 now, __u64 limit)
{
	struct bucket c = *b;

	return burst_at(&c, now, limit);
}

/* wait is exact (in units): 0 iff admitted now, else rejected at now+wait-1 and
 * admitted at now+wait. */
static inline void check_wait_exact(const struct bucket *b, __u64 now, const char *ctx)
{
	__u64 w = bucket_wait(b, now);

	if (w == 0) {
		CHECK(bucket_would_admit(b, now),
		      "%s: tat=%llu now=%llu T=%llu tol=%llu: wait 0 but admit rejects",
		      ctx, (ull)b->tat, (ull)now, (ull)b->interval,
		      (ull)b->tolerance);
		return;
	}
	CHECK(!bucket_would_admit(b, now),
	      "%s: tat=%llu now=%llu T=%llu tol=%llu: wait %llu but admit accepts now",
	      ctx, (ull)b->tat, (ull)now, (ull)b->interval, (ull)b->tolerance,
	      (ull)w);
	CHECK(w <= U64_MAX - now,
	      "%s: tat=%llu now=%llu: wait %llu runs past the clock's end",
	      ctx, (ull)b->tat, (ull)now, (ull)w);
	CHECK(!bucket_would_admit(b, now + w - 1),
	      "%s: tat=%llu now=%llu T=%llu tol=%llu: wait %llu but admit accepts at now+wait-1",
	      ctx, (ull)b->tat, (ull)now, (ull)b->interval, (ull)b->tolerance,
	      (ull)w);
	CHECK(bucket_would_admit(b, now + w),
	      "%s: tat=%llu now=%llu T=%llu tol=%llu: wait %llu but admit rejects at now+wait",
	      ctx, (ull)b->tat, (ull)now, (ull)b->interval, (ull)b->tolerance,
	      (ull)w);
}

__attribute__((unused)) static const __u64 some_rates[] = { 1, 3, 7, 1000, 999983, 1000000,
				    SLUICE_RATE_MAX };
__attribute__((unused)) static const __u64 some_bursts[] = { 1, 2, 3, 7, 100, 1000 };


/* ---- shared by the subjects ---- */

/* gcra_random.c: the most admissions in any window of w units. */
__u64 max_in_window(const __u64 *at, __u64 n, __u64 w);
/* gcra_precision.c: floor(rate * w), the tokens a span of w units earns. */
__u64 allowance(__u64 rate, __u64 w);

/* ---- the cases, one file a subject (gcra_*.c) ---- */

void case_at_rate_never_rejected(void);
void case_burst_at_one_instant(void);
void case_carry_exhausted_to_faster(void);
void case_carry_exhausted_to_smaller_burst(void);
void case_carry_full_to_smaller_burst(void);
void case_carry_keeps_whole_tokens(void);
void case_carry_random(void);
void case_carry_saturated(void);
void case_clock_extreme_burst_bounded(void);
void case_clock_extremes(void);
void case_interval_and_tolerance(void);
void case_interval_every_rate(void);
void case_long_idle_2pow62(void);
void case_precision_bound(void);
void case_precision_old_interval_over_admits(void);
void case_random_matches_token_bucket(void);
void case_random_single_step(void);
void case_random_window_bound(void);
void case_rate1_burst1(void);
void case_rate1_burst_max(void);
void case_rate_max_burst1(void);
void case_rate_max_burst_max(void);
void case_rebind_actions(void);
void case_refill_after_idle(void);
void case_retry_after_exact(void);
void case_tokens_countdown(void);

#endif /* SLUICE_TEST_GCRA_TEST_H */
