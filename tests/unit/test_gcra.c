/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Unit tests of the GCRA admission math in include/sluice/gcra.h, driven by a
 * fake clock (a plain u64 the tests advance); prints "ok NAME" or
 * "FAIL NAME: detail" per case and exits 1 if any case failed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sluice/gcra.h"

#define NS		SLUICE_NS_PER_SEC
#define U64_MAX		SLUICE_U64_MAX
#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

typedef unsigned __int128 u128;
typedef unsigned long long ull;

/* ---- harness: the first failed check of a case is its detail ---- */

static int case_failed;
static char case_detail[768];

__attribute__((format(printf, 2, 3)))
static void fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (case_failed++)
		return;
	n = snprintf(case_detail, sizeof(case_detail), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(case_detail + n, sizeof(case_detail) - (size_t)n, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 5, 6)))
static void fail_eq(int line, const char *expr, ull got, ull want,
		    const char *fmt, ...)
{
	char ctx[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	fail_at(line, "%s: %s = %llu, want %llu", ctx, expr, got, want);
}

/* Both return from the calling (void) function on failure. */
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fail_at(__LINE__, __VA_ARGS__);			\
			return;						\
		}							\
	} while (0)

#define CHECK_EQ(got, want, ...)					\
	do {								\
		ull got_ = (got), want_ = (want);			\
		if (got_ != want_) {					\
			fail_eq(__LINE__, #got, got_, want_, __VA_ARGS__); \
			return;						\
		}							\
	} while (0)

#define RETURN_IF_FAILED()						\
	do {								\
		if (case_failed)					\
			return;						\
	} while (0)

/* splitmix64: fixed seeds make every run check the same cases. */
static __u64 rng_state;

static __u64 rng(void)
{
	__u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u64 rng_below(__u64 n)
{
	return n ? rng() % n : 0;
}

/* A rate spread over every order of magnitude from 1 to SLUICE_RATE_MAX. */
static __u64 rng_rate(void)
{
	static const __u64 pow10[] = { 1, 10, 100, 1000, 10000, 100000,
				       1000000, 10000000, 100000000,
				       1000000000 };
	__u64 r = 1 + rng_below(pow10[rng_below(ARRAY_LEN(pow10))] * 10);

	return r > SLUICE_RATE_MAX ? SLUICE_RATE_MAX : r;
}

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/* ---- a bucket over the functions under test ---- */

struct bucket {
	__u64 tat;
	__u64 interval;
	__u64 tolerance;
};

/* A bucket nobody has sent to: TAT 0, i.e. full at any now. */
static struct bucket bucket_fresh(__u64 rate, __u64 burst)
{
	struct bucket b = {
		.tat = 0,
		.interval = gcra_interval(rate),
		.tolerance = gcra_tolerance(rate, burst),
	};

	return b;
}

static int bucket_admit(struct bucket *b, __u64 now)
{
	__u64 new_tat;

	if (!gcra_admit(b->tat, now, b->interval, b->tolerance, &new_tat))
		return 0;
	b->tat = new_tat;
	return 1;
}

/* Would one packet at now be admitted? Leaves b unchanged. */
static int bucket_would_admit(const struct bucket *b, __u64 now)
{
	struct bucket c = *b;

	return bucket_admit(&c, now);
}

static __u64 bucket_wait(const struct bucket *b, __u64 now)
{
	return gcra_wait(b->tat, now, b->interval, b->tolerance);
}

static __u64 bucket_tokens(const struct bucket *b, __u64 now)
{
	return gcra_tokens(b->tat, now, b->interval, b->tolerance);
}

/* Sends back to back at one instant until the first rejection; at most limit. */
static __u64 burst_at(struct bucket *b, __u64 now, __u64 limit)
{
	__u64 n = 0;

	while (n < limit && bucket_admit(b, now))
		n++;
	return n;
}

static __u64 burst_copy_at(const struct bucket *b, __u64 now, __u64 limit)
{
	struct bucket c = *b;

	return burst_at(&c, now, limit);
}

/* wait_ns is exact: 0 iff admitted now, else rejected at now+wait-1 and
 * admitted at now+wait. */
static void check_wait_exact(const struct bucket *b, __u64 now, const char *ctx)
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

static const __u64 some_rates[] = { 1, 3, 7, 1000, 999983, 1000000,
				    SLUICE_RATE_MAX };
static const __u64 some_bursts[] = { 1, 2, 3, 7, 100, 1000 };

/* ---- cases ---- */

static void case_interval_and_tolerance(void)
{
	CHECK_EQ(gcra_interval(1), NS, "rate 1");
	CHECK_EQ(gcra_interval(2), 500000000, "rate 2");
	CHECK_EQ(gcra_interval(3), 333333333, "rate 3 (floor)");
	CHECK_EQ(gcra_interval(1000), 1000000, "rate 1000");
	CHECK_EQ(gcra_interval(SLUICE_RATE_MAX), 1, "rate 1e9");
	CHECK_EQ(gcra_interval(SLUICE_RATE_MAX + 1), 1,
		 "rate above max never gives T=0");
	CHECK_EQ(gcra_interval(U64_MAX), 1, "rate 2^64-1");
	CHECK(gcra_interval(0) != 0, "rate 0 gives T=0");

	CHECK_EQ(gcra_tolerance(1, 1), NS, "rate 1 burst 1");
	CHECK_EQ(gcra_tolerance(1, SLUICE_BURST_MAX), 1000000000000000000ULL,
		 "rate 1 burst 1e9");
	CHECK_EQ(gcra_tolerance(SLUICE_RATE_MAX, 1), 1, "rate 1e9 burst 1");
	CHECK_EQ(gcra_tolerance(SLUICE_RATE_MAX, SLUICE_BURST_MAX), NS,
		 "rate 1e9 burst 1e9");
	CHECK_EQ(gcra_tolerance(1000, 50), 50000000, "rate 1000 burst 50");
	CHECK_EQ(gcra_tolerance(3, 3), 999999999, "rate 3 burst 3 (B*T)");
}

/* A full bucket admits exactly B at one instant, then rejects. */
static void case_burst_at_one_instant(void)
{
	static const __u64 starts[] = { 0, 1, 123456789012345ULL, 1ULL << 62 };
	size_t r, k, s;
	int i;

	for (r = 0; r < ARRAY_LEN(some_rates); r++)
		for (k = 0; k < ARRAY_LEN(some_bursts); k++)
			for (s = 0; s < ARRAY_LEN(starts); s++) {
				__u64 B = some_bursts[k], t0 = starts[s];
				struct bucket b = bucket_fresh(some_rates[r], B);

				CHECK_EQ(burst_at(&b, t0, B + 10), B,
					 "rate %llu burst %llu at %llu",
					 (ull)some_rates[r], (ull)B, (ull)t0);
				CHECK_EQ(b.tat, t0 + B * b.interval,
					 "rate %llu burst %llu at %llu",
					 (ull)some_rates[r], (ull)B, (ull)t0);
				for (i = 0; i < 3; i++)
					CHECK(!bucket_admit(&b, t0),
					      "rate %llu burst %llu: admitted again after the burst",
					      (ull)some_rates[r], (ull)B);
				CHECK_EQ(bucket_tokens(&b, t0), 0,
					 "rate %llu burst %llu after burst",
					 (ull)some_rates[r], (ull)B);
			}
}

/* After the burst, exactly k more are admitted after k*T, none extra at
 * k*T-1, and never more than B however long the idle. */
static void case_refill_after_idle(void)
{
	static const __u64 rates[] = { 1, 7, 1000, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 5, 64 };
	static const __u64 t0 = 5 * NS;
	size_t r, k;
	__u64 j;

	for (r = 0; r < ARRAY_LEN(rates); r++)
		for (k = 0; k < ARRAY_LEN(bursts); k++) {
			__u64 B = bursts[k];
			struct bucket b = bucket_fresh(rates[r], B);
			__u64 T = b.interval;
			const __u64 idles[] = { B * T, 10 * B * T + 1,
						1ULL << 40, 1ULL << 62 };
			size_t i;

			CHECK_EQ(burst_at(&b, t0, B), B, "rate %llu burst %llu",
				 (ull)rates[r], (ull)B);
			for (j = 1; j <= B + 3; j++) {
				CHECK_EQ(burst_copy_at(&b, t0 + j * T, B + 10),
					 min_u64(j, B),
					 "rate %llu burst %llu idle %llu*T",
					 (ull)rates[r], (ull)B, (ull)j);
				CHECK_EQ(burst_copy_at(&b, t0 + j * T - 1, B + 10),
					 min_u64(j - 1, B),
					 "rate %llu burst %llu idle %llu*T-1",
					 (ull)rates[r], (ull)B, (ull)j);
			}
			for (i = 0; i < ARRAY_LEN(idles); i++)
				CHECK_EQ(burst_copy_at(&b, t0 + idles[i], B + 10), B,
					 "rate %llu burst %llu idle %llu ns",
					 (ull)rates[r], (ull)B, (ull)idles[i]);
		}
}

/* Rate 1, burst 1: T = 1 s. */
static void case_rate1_burst1(void)
{
	struct bucket b = bucket_fresh(1, 1);
	__u64 t0 = 3 * NS;

	CHECK_EQ(b.interval, NS, "T");
	CHECK(bucket_admit(&b, t0), "first packet rejected");
	CHECK(!bucket_admit(&b, t0), "second packet at the same instant admitted");
	CHECK_EQ(bucket_wait(&b, t0), NS, "wait after one");
	CHECK(!bucket_admit(&b, t0 + NS - 1), "admitted 1 ns early");
	CHECK(bucket_admit(&b, t0 + NS), "rejected after exactly T");
	CHECK(!bucket_admit(&b, t0 + NS), "two admitted in the second second");
	CHECK_EQ(burst_copy_at(&b, t0 + 1000 * NS, 10), 1, "after long idle");
}

/* Rate 1, burst 1e9: tolerance 1e18 ns; the end of the burst is reached by
 * setting TAT to where B-1 admits at one instant leave it. */
static void case_rate1_burst_max(void)
{
	const __u64 B = SLUICE_BURST_MAX;
	struct bucket b = bucket_fresh(1, B);
	const __u64 T = b.interval, t0 = 1000 * NS;
	struct bucket c;
	__u64 i;

	CHECK_EQ(b.tolerance, B * T, "tolerance");
	CHECK_EQ(bucket_tokens(&b, t0), B, "fresh tokens");
	for (i = 1; i <= 1000; i++) {
		CHECK(bucket_admit(&b, t0), "admit %llu of the burst rejected",
		      (ull)i);
		CHECK_EQ(b.tat, t0 + i * T, "TAT after %llu admits", (ull)i);
	}
	CHECK_EQ(bucket_tokens(&b, t0), B - 1000, "tokens after 1000");

	b.tat = t0 + (B - 1) * T;	/* B-1 admitted at t0 */
	CHECK_EQ(bucket_tokens(&b, t0), 1, "tokens with one left");
	CHECK(bucket_admit(&b, t0), "last packet of the burst rejected");
	CHECK_EQ(b.tat, t0 + B * T, "TAT after the full burst");
	CHECK(!bucket_admit(&b, t0), "packet B+1 admitted");
	CHECK_EQ(bucket_tokens(&b, t0), 0, "tokens after the burst");
	CHECK_EQ(bucket_wait(&b, t0), T, "wait after the burst");
	check_wait_exact(&b, t0, "after the burst");
	RETURN_IF_FAILED();

	CHECK_EQ(bucket_tokens(&b, t0 + 2 * T), 2, "tokens after 2 s");
	CHECK_EQ(bucket_tokens(&b, t0 + 2 * T - 1), 1, "tokens after 2 s - 1 ns");
	CHECK_EQ(bucket_tokens(&b, t0 + B / 2 * T), B / 2, "tokens after B/2 s");
	CHECK_EQ(bucket_tokens(&b, t0 + (B - 1) * T), B - 1,
		 "tokens after B-1 s");
	CHECK_EQ(bucket_tokens(&b, t0 + B * T), B, "tokens after B s");
	CHECK_EQ(bucket_tokens(&b, t0 + B * T + (1ULL << 62)), B,
		 "tokens after B s + 2^62");
	CHECK_EQ(burst_copy_at(&b, t0 + 3 * T, 10), 3, "burst after 3 s");

	c = b;
	c.tat = t0 + B * T + (B - 1) * T;	/* refilled, then B-1 sent */
	CHECK(bucket_admit(&c, t0 + B * T), "refilled bucket rejects packet B");
	CHECK(!bucket_admit(&c, t0 + B * T), "refilled bucket admits B+1");
}

/* Rate 1e9, burst 1: T = 1 ns, one packet per ns and no more. */
static void case_rate_max_burst1(void)
{
	struct bucket b = bucket_fresh(SLUICE_RATE_MAX, 1);
	const __u64 t0 = 777;
	__u64 i;

	CHECK_EQ(b.interval, 1, "T");
	CHECK_EQ(b.tolerance, 1, "tolerance");
	CHECK(bucket_admit(&b, t0), "first packet rejected");
	CHECK(!bucket_admit(&b, t0), "second packet in the same ns admitted");
	CHECK_EQ(bucket_wait(&b, t0), 1, "wait");
	for (i = 1; i <= 1000000; i++) {
		CHECK(bucket_admit(&b, t0 + i), "on-rate packet at +%llu ns rejected",
		      (ull)i);
		CHECK(!bucket_admit(&b, t0 + i), "two admitted in ns +%llu",
		      (ull)i);
	}
	CHECK_EQ(burst_copy_at(&b, t0 + 5000000, 10), 1, "after idle");
}

/* Rate 1e9, burst 1e9: T = 1 ns, tolerance 1 s. */
static void case_rate_max_burst_max(void)
{
	const __u64 B = SLUICE_BURST_MAX;
	struct bucket b = bucket_fresh(SLUICE_RATE_MAX, B);
	const __u64 t0 = 10 * NS;
	__u64 i;

	CHECK_EQ(b.tolerance, NS, "tolerance");
	CHECK_EQ(bucket_tokens(&b, t0), B, "fresh tokens");
	for (i = 0; i < 1000000; i++)
		CHECK(bucket_admit(&b, t0), "admit %llu of the burst rejected",
		      (ull)i + 1);
	CHECK_EQ(b.tat, t0 + 1000000, "TAT after 1e6 admits");
	CHECK_EQ(bucket_tokens(&b, t0), B - 1000000, "tokens after 1e6");

	b.tat = t0 + B - 1;		/* B-1 admitted at t0 */
	CHECK(bucket_admit(&b, t0), "last packet of the burst rejected");
	CHECK_EQ(b.tat, t0 + B, "TAT after the full burst");
	CHECK(!bucket_admit(&b, t0), "packet B+1 admitted");
	CHECK_EQ(bucket_wait(&b, t0), 1, "wait after the burst");
	CHECK_EQ(burst_copy_at(&b, t0 + 1, 10), 1, "1 ns after the burst");
	CHECK_EQ(burst_copy_at(&b, t0 + 7, 10), 7, "7 ns after the burst");
	CHECK_EQ(bucket_tokens(&b, t0 + B), B, "tokens after 1 s");
	CHECK_EQ(bucket_tokens(&b, t0 + 5 * B), B, "tokens after 5 s");
}

/* now jumps by 2^62 (146 years): a full burst again, exactly B, no wrap. */
static void case_long_idle_2pow62(void)
{
	static const __u64 rates[] = { 1, 1000, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 10, SLUICE_BURST_MAX };
	size_t r, k;

	for (r = 0; r < ARRAY_LEN(rates); r++)
		for (k = 0; k < ARRAY_LEN(bursts); k++) {
			__u64 B = bursts[k], now = NS;
			struct bucket b = bucket_fresh(rates[r], B);
			__u64 T = b.interval;
			int hop;

			b.tat = now + B * T;	/* just emptied at now */
			for (hop = 1; hop <= 3; hop++) {
				now += 1ULL << 62;
				CHECK_EQ(bucket_tokens(&b, now), B,
					 "rate %llu burst %llu hop %d",
					 (ull)rates[r], (ull)B, hop);
				CHECK_EQ(bucket_wait(&b, now), 0,
					 "rate %llu burst %llu hop %d",
					 (ull)rates[r], (ull)B, hop);
				if (B <= 1000) {
					CHECK_EQ(burst_at(&b, now, B + 10), B,
						 "rate %llu burst %llu hop %d",
						 (ull)rates[r], (ull)B, hop);
				} else {
					CHECK(bucket_admit(&b, now),
					      "rate %llu burst %llu hop %d: rejected",
					      (ull)rates[r], (ull)B, hop);
					b.tat = now + B * T;
					CHECK(!bucket_admit(&b, now),
					      "rate %llu burst %llu hop %d: B+1 admitted",
					      (ull)rates[r], (ull)B, hop);
				}
				CHECK_EQ(b.tat, now + B * T,
					 "rate %llu burst %llu hop %d",
					 (ull)rates[r], (ull)B, hop);
				CHECK_EQ(bucket_wait(&b, now), T,
					 "rate %llu burst %llu hop %d",
					 (ull)rates[r], (ull)B, hop);
			}
		}
}

/* Near the end of the clock and with TAT near 2^64-1: nothing wraps, new_tat
 * saturates at 2^64-1, waits and tokens are exact. */
static void case_clock_extremes(void)
{
	struct bucket b = bucket_fresh(100000000, 3);	/* T=10, tol=30 */
	struct bucket big = bucket_fresh(1, SLUICE_BURST_MAX);	/* tol=1e18 */
	__u64 now, new_tat = 0;

	CHECK_EQ(b.interval, 10, "T");
	now = U64_MAX - 100;
	CHECK_EQ(burst_at(&b, now, 10), 3, "burst at 2^64-101");
	CHECK_EQ(b.tat, U64_MAX - 70, "TAT after that burst");
	CHECK_EQ(bucket_wait(&b, now), 10, "wait after that burst");
	check_wait_exact(&b, now, "end of clock");
	RETURN_IF_FAILED();
	CHECK(!bucket_admit(&b, U64_MAX - 91), "admitted 1 ns early");
	CHECK(bucket_admit(&b, U64_MAX - 90), "rejected after T");
	CHECK_EQ(b.tat, U64_MAX - 60, "TAT");

	/* base + T would pass 2^64-1: saturate, never wrap to a small TAT. */
	b = bucket_fresh(100000000, 3);
	CHECK(gcra_admit(0, U64_MAX - 5, b.interval, b.tolerance, &new_tat),
	      "fresh bucket at 2^64-6 rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat at 2^64-6 with T=10 (saturated)");
	new_tat = 0;
	CHECK(gcra_admit(0, U64_MAX, b.interval, b.tolerance, &new_tat),
	      "fresh bucket at 2^64-1 rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat at 2^64-1 (saturated)");
	new_tat = 0;
	CHECK(gcra_admit(U64_MAX - 10, U64_MAX - 20, b.interval, b.tolerance,
			 &new_tat), "TAT 2^64-11 at 2^64-21 rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat reaching 2^64-1 exactly");

	/* TAT near the end, now far before it: rejected, exact huge wait.
	 * (TAT 2^64-1 itself may mean "saturated", so the exact values are
	 * checked one below it.) */
	b.tat = U64_MAX - 1;
	CHECK(!bucket_would_admit(&b, 0), "TAT 2^64-2 at now 0 admitted");
	CHECK_EQ(bucket_wait(&b, 0), U64_MAX - 21, "wait, TAT 2^64-2 now 0");
	CHECK_EQ(bucket_tokens(&b, 0), 0, "tokens, TAT 2^64-2 now 0");
	check_wait_exact(&b, 0, "TAT 2^64-2 now 0");
	RETURN_IF_FAILED();
	CHECK(!bucket_would_admit(&b, 1ULL << 63), "TAT 2^64-2 at 2^63 admitted");
	CHECK_EQ(bucket_wait(&b, 1ULL << 63), U64_MAX - (1ULL << 63) - 21,
		 "wait, TAT 2^64-2 now 2^63");
	CHECK(!bucket_would_admit(&b, U64_MAX - 22), "ahead 21 > 20 admitted");
	CHECK_EQ(bucket_wait(&b, U64_MAX - 22), 1, "wait, ahead 21");
	CHECK_EQ(bucket_tokens(&b, U64_MAX - 22), 0, "tokens, ahead 21");
	CHECK_EQ(bucket_tokens(&b, U64_MAX - 21), 1, "tokens, ahead 20");

	/* Tolerance 1e18 at the end of the clock. */
	now = U64_MAX - 500000000000000000ULL;
	CHECK_EQ(bucket_tokens(&big, now), SLUICE_BURST_MAX, "big: fresh tokens");
	CHECK(bucket_admit(&big, now), "big: fresh bucket rejected");
	CHECK_EQ(big.tat, now + NS, "big: TAT");
	big.tat = U64_MAX - 1;
	now = big.tat - 1000000000000000000ULL;	/* ahead == tolerance */
	CHECK(!bucket_would_admit(&big, now), "big: ahead == tolerance admitted");
	CHECK_EQ(bucket_wait(&big, now), NS, "big: wait, ahead == tolerance");
	CHECK_EQ(bucket_tokens(&big, now), 0, "big: tokens, ahead == tolerance");
	check_wait_exact(&big, now, "big");
}

/* Where new_tat saturates, the bucket must still bound what it admits: at
 * most B at one instant, at most B + floor(W/T) over a window W. */
static void case_clock_extreme_burst_bounded(void)
{
	static const __u64 offsets[] = { 5, 1, 0 };
	const __u64 B = 3;
	struct bucket b;
	__u64 now, n, admitted;
	size_t i;
	int k;

	for (i = 0; i < ARRAY_LEN(offsets); i++) {
		b = bucket_fresh(100000000, B);		/* T=10, tol=30 */
		now = U64_MAX - offsets[i];
		n = burst_at(&b, now, 1000);
		CHECK(n <= B,
		      "T=10 burst=3, fresh bucket, 1000 packets at now=2^64-1-%llu: "
		      "admitted %llu, want <= 3 (TAT stuck at %llu after saturating)",
		      (ull)offsets[i], (ull)n, (ull)b.tat);
		CHECK(bucket_would_admit(&b, now) == (bucket_wait(&b, now) == 0),
		      "at now=2^64-1-%llu after the burst: admit %d but wait %llu",
		      (ull)offsets[i], bucket_would_admit(&b, now),
		      (ull)bucket_wait(&b, now));
		CHECK(bucket_would_admit(&b, now) == (bucket_tokens(&b, now) > 0),
		      "at now=2^64-1-%llu after the burst: admit %d but tokens %llu",
		      (ull)offsets[i], bucket_would_admit(&b, now),
		      (ull)bucket_tokens(&b, now));
	}

	b = bucket_fresh(100000000, B);
	admitted = 0;
	for (now = U64_MAX - 50;; now++) {
		for (k = 0; k < 4; k++)
			admitted += (__u64)bucket_admit(&b, now);
		if (now == U64_MAX)
			break;
	}
	CHECK(admitted <= B + 50 / 10,
	      "T=10 burst=3, 4 packets/ns over [2^64-51, 2^64-1]: admitted %llu, want <= %llu",
	      (ull)admitted, (ull)(B + 50 / 10));
}

/* After a burst, wait_ns is exactly the time to the next admit. */
static void case_retry_after_exact(void)
{
	static const __u64 rates[] = { 1, 3, 1000, 999983, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 2, 10, 1000 };
	static const __u64 t0 = 42 * NS;
	size_t r, k;
	int step;

	for (r = 0; r < ARRAY_LEN(rates); r++)
		for (k = 0; k < ARRAY_LEN(bursts); k++) {
			__u64 B = bursts[k], now = t0;
			struct bucket b = bucket_fresh(rates[r], B);
			__u64 T = b.interval;
			char ctx[64];

			snprintf(ctx, sizeof(ctx), "rate %llu burst %llu",
				 (ull)rates[r], (ull)B);
			CHECK_EQ(burst_at(&b, t0, B), B, "%s", ctx);
			CHECK_EQ(bucket_wait(&b, t0), T, "%s after the burst", ctx);
			check_wait_exact(&b, t0, ctx);
			RETURN_IF_FAILED();
			if (T > 1)
				CHECK_EQ(bucket_wait(&b, t0 + T / 2), T - T / 2,
					 "%s half a T after the burst", ctx);
			/* A greedy client: each time, send exactly when told. */
			for (step = 0; step < 50; step++) {
				__u64 w = bucket_wait(&b, now);

				CHECK(w == T || step == 0,
				      "%s step %d: wait %llu, want T=%llu",
				      ctx, step, (ull)w, (ull)T);
				CHECK(!bucket_would_admit(&b, now + w - 1),
				      "%s step %d: admitted at now+wait-1", ctx, step);
				now += w;
				CHECK(bucket_admit(&b, now),
				      "%s step %d: rejected at now+wait", ctx, step);
				CHECK(!bucket_admit(&b, now),
				      "%s step %d: admitted twice", ctx, step);
			}
			/* Off-grid instants between rejections. */
			for (step = 0; step < 50; step++) {
				now += 1 + T / 3 + (__u64)step % 5;
				check_wait_exact(&b, now, ctx);
				RETURN_IF_FAILED();
				bucket_admit(&b, now);
			}
		}
}

/* tokens counts down B, B-1, ... 0 and always equals the admits that would
 * succeed back to back at that instant. */
static void case_tokens_countdown(void)
{
	static const __u64 rates[] = { 1, 7, 1000, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 2, 5, 50, 200 };
	static const __u64 t0 = NS;
	size_t r, k;
	__u64 i;

	for (r = 0; r < ARRAY_LEN(rates); r++)
		for (k = 0; k < ARRAY_LEN(bursts); k++) {
			__u64 B = bursts[k];
			struct bucket b = bucket_fresh(rates[r], B);
			__u64 T = b.interval;

			for (i = 0; i <= B; i++) {
				CHECK_EQ(bucket_tokens(&b, t0), B - i,
					 "rate %llu burst %llu after %llu sent",
					 (ull)rates[r], (ull)B, (ull)i);
				CHECK_EQ(burst_copy_at(&b, t0, B + 10), B - i,
					 "rate %llu burst %llu after %llu sent",
					 (ull)rates[r], (ull)B, (ull)i);
				CHECK(bucket_admit(&b, t0) == (i < B),
				      "rate %llu burst %llu: admit after %llu sent",
				      (ull)rates[r], (ull)B, (ull)i);
			}
			for (i = 1; i <= B + 2; i++) {
				CHECK_EQ(bucket_tokens(&b, t0 + i * T), min_u64(i, B),
					 "rate %llu burst %llu idle %llu*T",
					 (ull)rates[r], (ull)B, (ull)i);
				CHECK_EQ(bucket_tokens(&b, t0 + i * T - 1),
					 min_u64(i - 1, B),
					 "rate %llu burst %llu idle %llu*T-1",
					 (ull)rates[r], (ull)B, (ull)i);
				CHECK_EQ(burst_copy_at(&b, t0 + i * T - 1, B + 10),
					 bucket_tokens(&b, t0 + i * T - 1),
					 "rate %llu burst %llu idle %llu*T-1",
					 (ull)rates[r], (ull)B, (ull)i);
			}
		}
}

/* Most admitted in any window [a, a+W] of the admitted times (sorted). */
static __u64 max_in_window(const __u64 *at, __u64 n, __u64 w)
{
	__u64 i, j = 0, best = 0;

	for (i = 0; i < n; i++) {
		if (j < i)
			j = i;
		while (j < n && at[j] - at[i] <= w)
			j++;
		if (j - i > best)
			best = j - i;
	}
	return best;
}

/* One random gap between packets, from "same instant" to "long idle". */
static __u64 rng_gap(__u64 T, __u64 B)
{
	__u64 p = rng_below(100);

	if (p < 40)
		return 0;
	if (p < 70)
		return rng_below(T);
	if (p < 85)
		return T - 1 + rng_below(3);
	if (p < 97)
		return rng_below(4 * T);
	return rng_below(4 * B * T + 1);
}

#define TRACE_LEN	3000
static __u64 admitted_at[TRACE_LEN];

/* From a fresh bucket, any window of length W holds <= B + floor(W/T) admits. */
static void case_random_window_bound(void)
{
	int scenario, p;
	size_t w;

	rng_state = 0x5eed0001;
	for (scenario = 0; scenario < 300; scenario++) {
		__u64 rate = rng_rate();
		__u64 B = rng_below(10) ? 1 + rng_below(64) : 1 + rng_below(5000);
		struct bucket b = bucket_fresh(rate, B);
		__u64 T = b.interval, now = rng_below(1ULL << 40), n = 0;
		__u64 windows[9];

		for (p = 0; p < TRACE_LEN; p++) {
			now += rng_gap(T, B);
			if (bucket_admit(&b, now))
				admitted_at[n++] = now;
		}
		CHECK(n > 0, "scenario %d: nothing admitted", scenario);
		windows[0] = 0;
		windows[1] = T - 1;
		windows[2] = T;
		windows[3] = T + 1;
		windows[4] = 2 * T;
		windows[5] = B * T;
		windows[6] = rng_below(10 * B * T);
		windows[7] = rng_below(now - admitted_at[0] + 1);
		windows[8] = now - admitted_at[0];
		for (w = 0; w < ARRAY_LEN(windows); w++) {
			__u64 got = max_in_window(admitted_at, n, windows[w]);
			__u64 bound = B + windows[w] / T;

			CHECK(got <= bound,
			      "scenario %d rate %llu burst %llu T %llu: %llu admitted in a window of %llu ns, bound %llu",
			      scenario, (ull)rate, (ull)B, (ull)T, (ull)got,
			      (ull)windows[w], (ull)bound);
		}
	}
}

/* A client sending at exactly the rate is never rejected: after a full
 * burst, and from a fresh bucket; one extra packet is always rejected. */
static void case_at_rate_never_rejected(void)
{
	int scenario;
	__u64 k;

	rng_state = 0x5eed0002;
	for (scenario = 0; scenario < 200; scenario++) {
		__u64 rate = scenario < (int)ARRAY_LEN(some_rates)
				     ? some_rates[scenario] : rng_rate();
		__u64 B = scenario % 3 == 0 ? 1 : 1 + rng_below(100);
		struct bucket b = bucket_fresh(rate, B);
		struct bucket fresh = b;
		__u64 T = b.interval, t0 = rng_below(1ULL << 50);
		__u64 n = scenario < 20 ? 20000 : 2000;

		CHECK_EQ(burst_at(&b, t0, B), B, "scenario %d rate %llu burst %llu",
			 scenario, (ull)rate, (ull)B);
		for (k = 1; k <= n; k++) {
			CHECK(bucket_admit(&b, t0 + k * T),
			      "scenario %d rate %llu burst %llu: on-rate packet %llu after the burst rejected",
			      scenario, (ull)rate, (ull)B, (ull)k);
			CHECK(!bucket_would_admit(&b, t0 + k * T),
			      "scenario %d rate %llu burst %llu: extra packet %llu after the burst admitted",
			      scenario, (ull)rate, (ull)B, (ull)k);
		}
		for (k = 0; k < n; k++) {
			CHECK(bucket_admit(&fresh, t0 + k * T),
			      "scenario %d rate %llu burst %llu: on-rate packet %llu from fresh rejected",
			      scenario, (ull)rate, (ull)B, (ull)k);
			CHECK_EQ(bucket_tokens(&fresh, t0 + k * T), B - 1,
				 "scenario %d rate %llu burst %llu on-rate from fresh, packet %llu",
				 scenario, (ull)rate, (ull)B, (ull)k);
		}
	}
}

/*
 * Differential: the same traces through an independent token-bucket model
 * in 128-bit credit (ns of allowance, capped at B*T, a packet costs T).
 * Decisions, tokens and waits must match exactly.
 */
static void case_random_matches_token_bucket(void)
{
	int scenario, p;

	rng_state = 0x5eed0003;
	for (scenario = 0; scenario < 300; scenario++) {
		__u64 rate = rng_rate();
		__u64 B = rng_below(4) ? 1 + rng_below(50) : 1 + rng_below(100000);
		struct bucket b = bucket_fresh(rate, B);
		__u64 T = b.interval, now = rng_below(1ULL << 62);
		u128 credit = b.tolerance, last = now;

		for (p = 0; p < 2000; p++) {
			int want, got;
			__u64 want_tokens, want_wait;

			now += rng_gap(T, B);
			credit += now - last;
			if (credit > b.tolerance)
				credit = b.tolerance;
			last = now;

			want_tokens = (__u64)(credit / T);
			want_wait = credit >= T ? 0 : (__u64)(T - credit);
			CHECK_EQ(bucket_tokens(&b, now), want_tokens,
				 "scenario %d packet %d rate %llu burst %llu",
				 scenario, p, (ull)rate, (ull)B);
			CHECK_EQ(bucket_wait(&b, now), want_wait,
				 "scenario %d packet %d rate %llu burst %llu",
				 scenario, p, (ull)rate, (ull)B);

			want = credit >= T;
			if (want)
				credit -= T;
			got = bucket_admit(&b, now);
			CHECK(got == want,
			      "scenario %d packet %d rate %llu burst %llu now %llu: admit %d, model %d",
			      scenario, p, (ull)rate, (ull)B, (ull)now, got, want);
		}
	}
}

/* A u64 biased toward the places where arithmetic goes wrong. */
static __u64 rng_edgy(void)
{
	switch (rng_below(5)) {
	case 0:
		return rng_below(1000000);
	case 1:
		return U64_MAX - rng_below(1000000);
	case 2:
		return (1ULL << 63) + rng_below(2000000) - 1000000;
	default:
		return rng();
	}
}

/*
 * One step from random states over the whole 64-bit range, against the
 * DESIGN formula in 128-bit arithmetic: admitted iff max(TAT,now)+T-now <=
 * B*T, new TAT = min(max(TAT,now)+T, 2^64-1), wait = max(0, that - B*T).
 */
static void case_random_single_step(void)
{
	int i;

	rng_state = 0x5eed0004;
	for (i = 0; i < 500000; i++) {
		__u64 rate = rng_below(8) ? rng_rate() : rng_below(3) + 1;
		__u64 B = rng_below(2) ? 1 + rng_below(100)
				       : 1 + rng_below(SLUICE_BURST_MAX);
		__u64 T = gcra_interval(rate), tol = gcra_tolerance(rate, B);
		__u64 now = rng_edgy(), tat, new_tat = 0x5a5a5a5a5a5a5a5aULL;
		u128 base, need, want_tat;
		__u64 ahead, want_wait, want_tokens;
		int got, want;

		switch (rng_below(3)) {
		case 0:
			tat = rng_edgy();
			break;
		default:
			/* near the admission boundary: ahead ~ tol - T */
			ahead = tol - T + rng_below(5) - 2;
			tat = ahead <= U64_MAX - now ? now + ahead : U64_MAX;
			break;
		}

		if (tat == U64_MAX) {
			/* Saturated: the true TAT is unknown, so only ask for
			 * consistency; clock_extreme_burst_bounded checks it. */
			got = gcra_admit(tat, now, T, tol, &new_tat);
			CHECK(!got || new_tat == U64_MAX,
			      "tat 2^64-1 now %llu T %llu tol %llu: new_tat %llu",
			      (ull)now, (ull)T, (ull)tol, (ull)new_tat);
			CHECK(got == (gcra_wait(tat, now, T, tol) == 0),
			      "tat 2^64-1 now %llu T %llu tol %llu: admit %d but wait %llu",
			      (ull)now, (ull)T, (ull)tol, got,
			      (ull)gcra_wait(tat, now, T, tol));
			CHECK(got == (gcra_tokens(tat, now, T, tol) > 0),
			      "tat 2^64-1 now %llu T %llu tol %llu: admit %d but tokens %llu",
			      (ull)now, (ull)T, (ull)tol, got,
			      (ull)gcra_tokens(tat, now, T, tol));
			continue;
		}
		base = tat > now ? tat : now;
		need = base + T - now;
		want = need <= tol;
		want_tat = base + T > U64_MAX ? U64_MAX : base + T;
		want_wait = want ? 0 : (__u64)(need - tol);
		ahead = (__u64)(base - now);
		want_tokens = ahead >= tol ? 0 : (tol - ahead) / T;

		got = gcra_admit(tat, now, T, tol, &new_tat);
		CHECK(got == want, "tat %llu now %llu T %llu tol %llu: admit %d, want %d",
		      (ull)tat, (ull)now, (ull)T, (ull)tol, got, want);
		if (got)
			CHECK_EQ(new_tat, (__u64)want_tat,
				 "tat %llu now %llu T %llu tol %llu",
				 (ull)tat, (ull)now, (ull)T, (ull)tol);
		CHECK_EQ(gcra_wait(tat, now, T, tol), want_wait,
			 "tat %llu now %llu T %llu tol %llu",
			 (ull)tat, (ull)now, (ull)T, (ull)tol);
		CHECK_EQ(gcra_tokens(tat, now, T, tol), want_tokens,
			 "tat %llu now %llu T %llu tol %llu",
			 (ull)tat, (ull)now, (ull)T, (ull)tol);
	}
}

struct test_case {
	const char *name;
	void (*run)(void);
};

static const struct test_case cases[] = {
	{ "interval_and_tolerance", case_interval_and_tolerance },
	{ "burst_at_one_instant", case_burst_at_one_instant },
	{ "refill_after_idle", case_refill_after_idle },
	{ "rate1_burst1", case_rate1_burst1 },
	{ "rate1_burst1e9", case_rate1_burst_max },
	{ "rate1e9_burst1", case_rate_max_burst1 },
	{ "rate1e9_burst1e9", case_rate_max_burst_max },
	{ "long_idle_2pow62", case_long_idle_2pow62 },
	{ "clock_extremes", case_clock_extremes },
	{ "clock_extreme_burst_bounded", case_clock_extreme_burst_bounded },
	{ "retry_after_exact", case_retry_after_exact },
	{ "tokens_countdown", case_tokens_countdown },
	{ "random_window_bound", case_random_window_bound },
	{ "at_rate_never_rejected", case_at_rate_never_rejected },
	{ "random_matches_token_bucket", case_random_matches_token_bucket },
	{ "random_single_step", case_random_single_step },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	int failed = 0, ran = 0;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		if (argc > 1 && !strstr(cases[i].name, argv[1]))
			continue;
		case_failed = 0;
		case_detail[0] = '\0';
		cases[i].run();
		ran++;
		if (case_failed) {
			printf("FAIL %s: %s\n", cases[i].name, case_detail);
			failed++;
		} else {
			printf("ok %s\n", cases[i].name);
		}
		fflush(stdout);
	}
	if (!ran) {
		fprintf(stderr, "test_gcra: no case matches '%s'\n", argv[1]);
		return 2;
	}
	return failed ? 1 : 0;
}
