/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* GCRA unit tests: the interval and tolerance, a burst at one instant, refill. */
#include "gcra_test.h"

/* ---- cases ---- */

void case_interval_and_tolerance(void)
{
	static const __u64 rates[] = { 1, 2, 3, 7, 999, 1000, 1001, 999983,
				       300000000, 500000001, 600000000,
				       SLUICE_RATE_MAX };
	size_t r;

	CHECK_EQ(SEC, 64000000000ULL, "units per second");
	CHECK_EQ(gcra_now(0), 0, "clock 0");
	CHECK_EQ(gcra_now(1), 64, "clock 1 ns");
	CHECK_EQ(gcra_now(SLUICE_NS_PER_SEC), SEC, "clock 1 s");
	CHECK_EQ(gcra_now(U64_MAX >> 6), U64_MAX - 63, "clock 2^58-1 ns");
	CHECK_EQ(gcra_now((U64_MAX >> 6) + 1), U64_MAX,
		 "clock 2^58 ns saturates");
	CHECK_EQ(gcra_now(U64_MAX), U64_MAX, "clock 2^64-1 ns saturates");
	CHECK_EQ(gcra_units_to_ns(0), 0, "0 units");
	CHECK_EQ(gcra_units_to_ns(1), 1, "1 unit rounds up");
	CHECK_EQ(gcra_units_to_ns(64), 1, "64 units");
	CHECK_EQ(gcra_units_to_ns(65), 2, "65 units round up");
	CHECK_EQ(gcra_units_to_ns(U64_MAX), 1ULL << 58, "2^64-1 units");

	CHECK_EQ(gcra_interval(1), SEC, "rate 1");
	CHECK_EQ(gcra_interval(2), 32000000000ULL, "rate 2");
	CHECK_EQ(gcra_interval(3), 21333333334ULL, "rate 3 (rounded up)");
	CHECK_EQ(gcra_interval(7), 9142857143ULL, "rate 7 (rounded up)");
	CHECK_EQ(gcra_interval(1000), 64000000, "rate 1000");
	CHECK_EQ(gcra_interval(300000000), 214, "rate 3e8 (213.3 rounded up)");
	CHECK_EQ(gcra_interval(500000001), 128,
		 "rate 5e8+1 (127.99999997 rounded up)");
	CHECK_EQ(gcra_interval(600000000), 107, "rate 6e8 (106.7 rounded up)");
	CHECK_EQ(gcra_interval(SLUICE_RATE_MAX), 64, "rate 1e9");
	CHECK_EQ(gcra_interval(SLUICE_RATE_MAX + 1), 64, "rate 1e9+1");
	CHECK(gcra_interval(0) != 0, "rate 0 gives T=0");

	CHECK_EQ(gcra_tolerance(1, 1), SEC, "rate 1 burst 1");
	CHECK_EQ(burst_max_for(1), 999999, "largest burst at rate 1");
	CHECK_EQ(gcra_tolerance(1, 999999), 63999936000000000ULL,
		 "rate 1 burst 999999");
	CHECK_EQ(gcra_tolerance(SLUICE_RATE_MAX, 1), 64, "rate 1e9 burst 1");
	CHECK_EQ(burst_max_for(SLUICE_RATE_MAX), SLUICE_BURST_MAX,
		 "largest burst at rate 1e9");
	CHECK_EQ(gcra_tolerance(SLUICE_RATE_MAX, SLUICE_BURST_MAX), SEC,
		 "rate 1e9 burst 1e9");
	CHECK_EQ(gcra_tolerance(1000, 50), 3200000000ULL, "rate 1000 burst 50");
	CHECK_EQ(gcra_tolerance(3, 3), 64000000002ULL,
		 "rate 3 burst 3 (B*T, T rounded up)");
	/* The policy's bound keeps every tolerance below 2^56 units. */
	for (r = 0; r < ARRAY_LEN(rates); r++) {
		__u64 B = burst_max_for(rates[r]);

		CHECK(B / rates[r] < SLUICE_BURST_SECONDS_MAX,
		      "rate %llu: burst %llu refused by the policy",
		      (ull)rates[r], (ull)B);
		CHECK((u128)gcra_interval(rates[r]) * B < (u128)1 << 56,
		      "rate %llu burst %llu: tolerance %llu >= 2^56",
		      (ull)rates[r], (ull)B, (ull)gcra_tolerance(rates[r], B));
		CHECK_EQ(gcra_tolerance(rates[r], B), gcra_interval(rates[r]) * B,
			 "rate %llu largest burst", (ull)rates[r]);
	}

	/* Rates the policy refuses still never give T = 0 (a bucket that
	 * admits everything): last, so a failure here hides nothing above. */
	CHECK_EQ(gcra_interval(SEC), 1, "rate 64e9");
	CHECK_EQ(gcra_interval(SEC + 1), 1, "rate above 64e9 never gives T=0");
	CHECK_EQ(gcra_interval(U64_MAX - SEC), 1, "rate 2^64-1-64e9");
	CHECK_EQ(gcra_interval(U64_MAX), 1, "rate 2^64-1");
}

/*
 * T = ceil(64e9/R) at every rate the policy accepts: T*R >= 64e9 (a bucket
 * never runs faster than R) and (T-1)*R < 64e9 (it loses under one unit,
 * 1/64 ns, per packet); and the largest burst keeps B*T below 2^56. All
 * rates below 4e6 and above 1e9-4e6, plus 2e6 random ones in between.
 */
static void check_interval_at(__u64 rate)
{
	__u64 T = gcra_interval(rate);

	CHECK((u128)T * rate >= SEC,
	      "rate %llu: T=%llu units runs faster than the rate", (ull)rate,
	      (ull)T);
	CHECK((u128)(T - 1) * rate < SEC,
	      "rate %llu: T=%llu units loses a whole unit per packet",
	      (ull)rate, (ull)T);
	CHECK((u128)T * burst_max_for(rate) < (u128)1 << 56,
	      "rate %llu: largest burst's tolerance reaches 2^56", (ull)rate);
}

void case_interval_every_rate(void)
{
	__u64 rate;
	int i;

	for (rate = SLUICE_RATE_MIN; rate < 4000000; rate++) {
		check_interval_at(rate);
		RETURN_IF_FAILED();
	}
	for (rate = SLUICE_RATE_MAX - 4000000; rate <= SLUICE_RATE_MAX; rate++) {
		check_interval_at(rate);
		RETURN_IF_FAILED();
	}
	rng_state = 0x5eed0006;
	for (i = 0; i < 2000000; i++) {
		check_interval_at(1 + rng_below(SLUICE_RATE_MAX));
		RETURN_IF_FAILED();
	}
}

/* A full bucket admits exactly B at one instant, then rejects. */
void case_burst_at_one_instant(void)
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
 * k*T-1 (one unit, 1/64 ns, early), and never more than B however long the
 * idle. */
void case_refill_after_idle(void)
{
	static const __u64 rates[] = { 1, 7, 1000, SLUICE_RATE_MAX };
	static const __u64 bursts[] = { 1, 5, 64 };
	static const __u64 t0 = 5 * SEC;
	size_t r, k;
	__u64 j;

	for (r = 0; r < ARRAY_LEN(rates); r++)
		for (k = 0; k < ARRAY_LEN(bursts); k++) {
			__u64 B = bursts[k];
			struct bucket b = bucket_fresh(rates[r], B);
			__u64 T = b.interval;
			/* 2^46 units is 1100 s, over 64 T at rate 1. */
			const __u64 idles[] = { B * T, 10 * B * T + 1,
						1ULL << 46, 1ULL << 62 };
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
					 "rate %llu burst %llu idle %llu units",
					 (ull)rates[r], (ull)B, (ull)idles[i]);
		}
}

/* Rate 1, burst 1: T = 1 s. */
