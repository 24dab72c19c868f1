/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* GCRA unit tests: the extreme rates, bursts and clocks, retry-after, tokens. */
#include "gcra_test.h"

void case_rate1_burst1(void)
{
	struct bucket b = bucket_fresh(1, 1);
	__u64 t0 = 3 * SEC;

	CHECK_EQ(b.interval, SEC, "T");
	CHECK(bucket_admit(&b, t0), "first packet rejected");
	CHECK(!bucket_admit(&b, t0), "second packet at the same instant admitted");
	CHECK_EQ(bucket_wait(&b, t0), SEC, "wait after one");
	CHECK_EQ(gcra_units_to_ns(bucket_wait(&b, t0)), SLUICE_NS_PER_SEC,
		 "wait after one, in ns");
	CHECK(!bucket_would_admit(&b, t0 + SEC - NSU), "admitted 1 ns early");
	CHECK(!bucket_admit(&b, t0 + SEC - 1), "admitted 1 unit early");
	CHECK(bucket_admit(&b, t0 + SEC), "rejected after exactly T");
	CHECK(!bucket_admit(&b, t0 + SEC), "two admitted in the second second");
	CHECK_EQ(burst_copy_at(&b, t0 + 1000 * SEC, 10), 1, "after long idle");
}

/* Rate 1 with the largest burst the policy accepts there, 999999 (burst/rate
 * < 1e6 s): tolerance 999999 s = 6.4e16 units; the end of the burst is
 * reached by setting TAT to where B-1 admits at one instant leave it. */
void case_rate1_burst_max(void)
{
	const __u64 B = burst_max_for(1);
	struct bucket b = bucket_fresh(1, B);
	const __u64 T = b.interval, t0 = 1000 * SEC;
	struct bucket c;
	__u64 i;

	CHECK_EQ(B, 999999, "largest burst at rate 1");
	CHECK_EQ(b.tolerance, B * SEC, "tolerance");
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
	CHECK_EQ(bucket_tokens(&b, t0 + 2 * T - NSU), 1, "tokens after 2 s - 1 ns");
	CHECK_EQ(bucket_tokens(&b, t0 + 2 * T - 1), 1,
		 "tokens after 2 s - 1 unit");
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

/* Rate 1e9, burst 1: T = 1 ns (64 units), one packet per ns and no more. */
void case_rate_max_burst1(void)
{
	struct bucket b = bucket_fresh(SLUICE_RATE_MAX, 1);
	const __u64 t0 = gcra_now(777), T = 64;
	__u64 i;

	CHECK_EQ(b.interval, T, "T");
	CHECK_EQ(b.tolerance, T, "tolerance");
	CHECK(bucket_admit(&b, t0), "first packet rejected");
	CHECK(!bucket_admit(&b, t0), "second packet in the same ns admitted");
	CHECK_EQ(bucket_wait(&b, t0), T, "wait");
	CHECK_EQ(gcra_units_to_ns(bucket_wait(&b, t0)), 1, "wait in ns");
	for (i = 1; i <= 1000000; i++) {
		CHECK(!bucket_would_admit(&b, t0 + i * T - 1),
		      "packet 1 unit before +%llu ns admitted", (ull)i);
		CHECK(bucket_admit(&b, t0 + i * T),
		      "on-rate packet at +%llu ns rejected", (ull)i);
		CHECK(!bucket_admit(&b, t0 + i * T), "two admitted in ns +%llu",
		      (ull)i);
	}
	CHECK_EQ(burst_copy_at(&b, t0 + 5000000 * T, 10), 1, "after idle");
}

/* Rate 1e9, burst 1e9: T = 1 ns (64 units), tolerance 1 s. */
void case_rate_max_burst_max(void)
{
	const __u64 B = SLUICE_BURST_MAX;
	struct bucket b = bucket_fresh(SLUICE_RATE_MAX, B);
	const __u64 t0 = 10 * SEC, T = 64;
	__u64 i;

	CHECK_EQ(b.interval, T, "T");
	CHECK_EQ(b.tolerance, SEC, "tolerance");
	CHECK_EQ(bucket_tokens(&b, t0), B, "fresh tokens");
	for (i = 0; i < 1000000; i++)
		CHECK(bucket_admit(&b, t0), "admit %llu of the burst rejected",
		      (ull)i + 1);
	CHECK_EQ(b.tat, t0 + 1000000 * T, "TAT after 1e6 admits");
	CHECK_EQ(bucket_tokens(&b, t0), B - 1000000, "tokens after 1e6");

	b.tat = t0 + (B - 1) * T;	/* B-1 admitted at t0 */
	CHECK(bucket_admit(&b, t0), "last packet of the burst rejected");
	CHECK_EQ(b.tat, t0 + B * T, "TAT after the full burst");
	CHECK(!bucket_admit(&b, t0), "packet B+1 admitted");
	CHECK_EQ(bucket_wait(&b, t0), T, "wait after the burst");
	CHECK_EQ(burst_copy_at(&b, t0 + T - 1, 10), 0,
		 "1 unit short of 1 ns after the burst");
	CHECK_EQ(burst_copy_at(&b, t0 + T, 10), 1, "1 ns after the burst");
	CHECK_EQ(burst_copy_at(&b, t0 + 7 * T, 10), 7, "7 ns after the burst");
	CHECK_EQ(bucket_tokens(&b, t0 + SEC), B, "tokens after 1 s");
	CHECK_EQ(bucket_tokens(&b, t0 + 5 * SEC), B, "tokens after 5 s");
}

/* now jumps by 2^62 units (2.3 years) three times, to within 2^62 units of
 * the clock's end: a full burst again, exactly B, no wrap. B includes the
 * largest burst the policy accepts at each rate. */
void case_long_idle_2pow62(void)
{
	static const __u64 rates[] = { 1, 1000, SLUICE_RATE_MAX };
	size_t r, k;

	for (r = 0; r < ARRAY_LEN(rates); r++)
		for (k = 0; k < 3; k++) {
			const __u64 bursts[] = { 1, 10, burst_max_for(rates[r]) };
			__u64 B = bursts[k], now = SEC;
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
 * saturates at 2^64-1, waits and tokens are exact. Rate 1e8, burst 3:
 * T = 640 units (10 ns), tolerance 3T. */
void case_clock_extremes(void)
{
	struct bucket b = bucket_fresh(100000000, 3);
	struct bucket big = bucket_fresh(1, burst_max_for(1));
	const __u64 T = 640;
	__u64 now, new_tat = 0;

	CHECK_EQ(b.interval, T, "T");
	CHECK_EQ(b.tolerance, 3 * T, "tolerance");
	now = U64_MAX - 10 * T;
	CHECK_EQ(burst_at(&b, now, 10), 3, "burst at 2^64-1-10T");
	CHECK_EQ(b.tat, U64_MAX - 7 * T, "TAT after that burst");
	CHECK_EQ(bucket_wait(&b, now), T, "wait after that burst");
	check_wait_exact(&b, now, "end of clock");
	RETURN_IF_FAILED();
	CHECK(!bucket_admit(&b, U64_MAX - 9 * T - 1), "admitted 1 unit early");
	CHECK(bucket_admit(&b, U64_MAX - 9 * T), "rejected after T");
	CHECK_EQ(b.tat, U64_MAX - 6 * T, "TAT");

	/* base + T would pass 2^64-1: saturate, never wrap to a small TAT. */
	b = bucket_fresh(100000000, 3);
	CHECK(gcra_admit(0, U64_MAX - 5, b.interval, b.tolerance, &new_tat),
	      "fresh bucket at 2^64-6 rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat at 2^64-6 with T=640 (saturated)");
	new_tat = 0;
	CHECK(gcra_admit(0, U64_MAX - T + 1, b.interval, b.tolerance, &new_tat),
	      "fresh bucket at 2^64-T rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat at 2^64-T (saturated)");
	new_tat = 0;
	CHECK(gcra_admit(0, U64_MAX, b.interval, b.tolerance, &new_tat),
	      "fresh bucket at 2^64-1 rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat at 2^64-1 (saturated)");
	new_tat = 0;
	CHECK(gcra_admit(U64_MAX - T, U64_MAX - 2 * T, b.interval, b.tolerance,
			 &new_tat), "TAT 2^64-1-T at 2^64-1-2T rejected");
	CHECK_EQ(new_tat, U64_MAX, "new_tat reaching 2^64-1 exactly");
	new_tat = 0;
	CHECK(gcra_admit(U64_MAX - T - 1, U64_MAX - 2 * T, b.interval,
			 b.tolerance, &new_tat), "TAT 2^64-2-T at 2^64-1-2T rejected");
	CHECK_EQ(new_tat, U64_MAX - 1, "new_tat one below 2^64-1");

	/* TAT near the end, now far before it: rejected, exact huge wait.
	 * (TAT 2^64-1 itself may mean "saturated", so the exact values are
	 * checked one below it.) */
	b.tat = U64_MAX - 1;
	CHECK(!bucket_would_admit(&b, 0), "TAT 2^64-2 at now 0 admitted");
	CHECK_EQ(bucket_wait(&b, 0), U64_MAX - 1 - 2 * T,
		 "wait, TAT 2^64-2 now 0");
	CHECK_EQ(bucket_tokens(&b, 0), 0, "tokens, TAT 2^64-2 now 0");
	check_wait_exact(&b, 0, "TAT 2^64-2 now 0");
	RETURN_IF_FAILED();
	CHECK(!bucket_would_admit(&b, 1ULL << 63), "TAT 2^64-2 at 2^63 admitted");
	CHECK_EQ(bucket_wait(&b, 1ULL << 63), U64_MAX - 1 - (1ULL << 63) - 2 * T,
		 "wait, TAT 2^64-2 now 2^63");
	CHECK(!bucket_would_admit(&b, U64_MAX - 2 * T - 2),
	      "ahead 2T+1 > tolerance-T admitted");
	CHECK_EQ(bucket_wait(&b, U64_MAX - 2 * T - 2), 1, "wait, ahead 2T+1");
	CHECK_EQ(bucket_tokens(&b, U64_MAX - 2 * T - 2), 0, "tokens, ahead 2T+1");
	CHECK_EQ(bucket_tokens(&b, U64_MAX - 2 * T - 1), 1, "tokens, ahead 2T");
	CHECK(bucket_would_admit(&b, U64_MAX - 2 * T - 1), "ahead 2T rejected");

	/* The largest tolerance at rate 1 (999999 s) at the end of the clock. */
	CHECK_EQ(big.tolerance, 999999 * SEC, "big: tolerance");
	now = U64_MAX - big.tolerance / 2;
	CHECK_EQ(bucket_tokens(&big, now), burst_max_for(1), "big: fresh tokens");
	CHECK(bucket_admit(&big, now), "big: fresh bucket rejected");
	CHECK_EQ(big.tat, now + SEC, "big: TAT");
	big.tat = U64_MAX - 1;
	now = big.tat - big.tolerance;	/* ahead == tolerance */
	CHECK(!bucket_would_admit(&big, now), "big: ahead == tolerance admitted");
	CHECK_EQ(bucket_wait(&big, now), SEC, "big: wait, ahead == tolerance");
	CHECK_EQ(bucket_tokens(&big, now), 0, "big: tokens, ahead == tolerance");
	check_wait_exact(&big, now, "big");
	RETURN_IF_FAILED();
	CHECK_EQ(bucket_tokens(&big, now + SEC), 1, "big: tokens 1 s later");
	CHECK_EQ(bucket_tokens(&big, now + SEC - 1), 0,
		 "big: tokens 1 unit short of 1 s later");
}

/* Where new_tat saturates, the bucket must still bound what it admits: at
 * most B at one instant, at most B + floor(W/T) over a window W. Rate 1e8,
 * burst 3: T = 640 units. */
void case_clock_extreme_burst_bounded(void)
{
	static const __u64 offsets[] = { 639, 320, 5, 1, 0 };
	const __u64 B = 3, T = 640, W = 5 * T;
	struct bucket b;
	__u64 now, n, admitted;
	size_t i;
	int k;

	for (i = 0; i < ARRAY_LEN(offsets); i++) {
		b = bucket_fresh(100000000, B);
		now = U64_MAX - offsets[i];
		n = burst_at(&b, now, 1000);
		CHECK(n <= B,
		      "T=640 burst=3, fresh bucket, 1000 packets at now=2^64-1-%llu: "
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
	CHECK_EQ(b.interval, T, "T");
	admitted = 0;
	for (now = U64_MAX - W;; now++) {
		for (k = 0; k < 4; k++)
			admitted += (__u64)bucket_admit(&b, now);
		if (now == U64_MAX)
			break;
	}
	CHECK(admitted <= B + W / T,
	      "T=640 burst=3, 4 packets/unit over [2^64-1-5T, 2^64-1]: admitted %llu, want <= %llu",
	      (ull)admitted, (ull)(B + W / T));
}

/* After a burst, wait is exactly the time to the next admit (in units). */
void case_retry_after_exact(void)
{
	static const __u64 rates[] = { 1, 3, 1000, 999983, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 2, 10, 1000 };
	static const __u64 t0 = 42 * SEC;
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
void case_tokens_countdown(void)
{
	static const __u64 rates[] = { 1, 7, 1000, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 2, 5, 50, 200 };
	static const __u64 t0 = SEC;
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
