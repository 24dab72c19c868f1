/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* GCRA unit tests: random traces against the window bound and a token bucket. */
#include "gcra_test.h"

__u64 max_in_window(const __u64 *at, __u64 n, __u64 w)
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
void case_random_window_bound(void)
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
			      "scenario %d rate %llu burst %llu T %llu: %llu admitted in a window of %llu units, bound %llu",
			      scenario, (ull)rate, (ull)B, (ull)T, (ull)got,
			      (ull)windows[w], (ull)bound);
		}
	}
}

/* A client sending exactly every T units (the rate, T rounded up to the
 * unit) is never rejected: after a full burst, and from a fresh bucket; one
 * extra packet is always rejected. */
void case_at_rate_never_rejected(void)
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
 * in 128-bit credit (units of allowance, capped at B*T, a packet costs T),
 * T computed here as ceil(64e9 / rate) in 128 bits. Decisions, tokens and
 * waits must match exactly.
 */
void case_random_matches_token_bucket(void)
{
	int scenario, p;

	rng_state = 0x5eed0003;
	for (scenario = 0; scenario < 300; scenario++) {
		__u64 rate = rng_rate();
		__u64 B = rng_below(4) ? 1 + rng_below(50) : 1 + rng_below(100000);
		struct bucket b = bucket_fresh(rate, B);
		u128 T = (u128)SEC / rate + ((u128)SEC % rate != 0);
		u128 tol = T * B;
		__u64 now = rng_below(1ULL << 62);
		u128 credit = tol, last = now;

		CHECK_EQ(b.interval, (__u64)T, "scenario %d rate %llu: T",
			 scenario, (ull)rate);
		CHECK_EQ(b.tolerance, (__u64)tol,
			 "scenario %d rate %llu burst %llu: tolerance", scenario,
			 (ull)rate, (ull)B);

		for (p = 0; p < 2000; p++) {
			int want, got;
			__u64 want_tokens, want_wait;

			now += rng_gap((__u64)T, B);
			CHECK(now >= last, "scenario %d: the fake clock wrapped",
			      scenario);
			credit += now - last;
			if (credit > tol)
				credit = tol;
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
 * design formula (doc/design.md, "The admission rule") in 128-bit arithmetic: admitted iff max(TAT,now)+T-now <=
 * B*T, new TAT = min(max(TAT,now)+T, 2^64-1), wait = max(0, that - B*T).
 */
void case_random_single_step(void)
{
	int i;

	rng_state = 0x5eed0004;
	for (i = 0; i < 500000; i++) {
		__u64 rate = rng_below(8) ? rng_rate() : rng_below(3) + 1;
		__u64 B = rng_below(2) ? 1 + rng_below(100)
				       : 1 + rng_below(burst_max_for(rate));
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
