/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* GCRA unit tests: policy changes, a bucket carried to a new limit. */
#include "gcra_test.h"

/* ---- policy changes: carrying a bucket to a new limit ---- */

static struct bucket bucket_carried(const struct bucket *old, __u64 at,
				    __u64 rate, __u64 burst)
{
	struct bucket b = bucket_fresh(rate, burst);

	b.tat = gcra_carry(old->tat, at, old->interval, old->tolerance,
			   b.interval, b.tolerance);
	return b;
}

static __u64 rebind_known_limit(const struct bucket *old, __u64 at,
				const struct bucket *nb)
{
	return gcra_rebind(old->tat, at, 1, SLUICE_ACT_LIMIT, old->interval,
			   old->tolerance, SLUICE_ACT_LIMIT, nb->interval,
			   nb->tolerance);
}

/*
 * Exhausted at rate 1 burst 1000 (a debt of 1000 s), then raised to rate
 * 1e5 burst 1e5 half a second later: the source keeps its 0 tokens and
 * refills at the new rate, so 1 ms later it gets one packet and no more
 * than rate*elapsed + 1, neither locked out by the old debt nor handed a
 * fresh burst of 1e5.
 */
void case_carry_exhausted_to_faster(void)
{
	struct bucket old = bucket_fresh(1, 1000), nb;
	const __u64 t0 = 100 * SEC, at = t0 + SEC / 2, ms = SEC / 1000;
	__u64 n;

	CHECK_EQ(burst_at(&old, t0, 2000), 1000, "exhaust the old bucket");
	CHECK_EQ(bucket_tokens(&old, at), 0, "old tokens at the change");
	nb = bucket_carried(&old, at, 100000, 100000);
	CHECK_EQ(nb.interval, 640000, "new T");
	CHECK_EQ(rebind_known_limit(&old, at, &nb), nb.tat,
		 "gcra_rebind, old limit known");
	CHECK(nb.tat != U64_MAX, "carried TAT saturated");
	CHECK_EQ(bucket_tokens(&nb, at), 0, "tokens at the change");
	CHECK(!bucket_would_admit(&nb, at), "admitted at the change");
	CHECK(!bucket_would_admit(&nb, at + nb.interval - 1),
	      "admitted 1 unit before one new T");
	CHECK_EQ(bucket_wait(&nb, at), nb.interval, "wait at the change");

	n = burst_copy_at(&nb, at + ms, 200000);
	CHECK(n >= 1, "1 ms after the change: nothing admitted (old debt kept)");
	CHECK(n <= allowance(100000, ms) + 1,
	      "1 ms after the change: %llu admitted, want <= rate*elapsed+1 = %llu",
	      (ull)n, (ull)(allowance(100000, ms) + 1));
	CHECK_EQ(n, 100, "1 ms after the change: refilled at 1e5/s since");
	CHECK_EQ(burst_copy_at(&nb, at + SEC, 200000), 100000,
		 "1 s after the change: the new burst");
}

/* A full bucket under burst 500 moved to burst 5: exactly 5 at one instant. */
void case_carry_full_to_smaller_burst(void)
{
	const __u64 at = 50 * SEC;
	const __u64 old_tats[] = { 0, at - 10 * SEC, at };
	size_t i;

	for (i = 0; i < ARRAY_LEN(old_tats); i++) {
		struct bucket old = bucket_fresh(1000, 500), nb;

		old.tat = old_tats[i];
		CHECK_EQ(bucket_tokens(&old, at), 500, "old tat %llu: old tokens",
			 (ull)old_tats[i]);
		nb = bucket_carried(&old, at, 1000, 5);
		CHECK_EQ(rebind_known_limit(&old, at, &nb), nb.tat,
			 "old tat %llu: gcra_rebind", (ull)old_tats[i]);
		CHECK_EQ(bucket_tokens(&nb, at), 5, "old tat %llu: tokens",
			 (ull)old_tats[i]);
		CHECK_EQ(burst_at(&nb, at, 600), 5, "old tat %llu: burst",
			 (ull)old_tats[i]);
		CHECK_EQ(bucket_wait(&nb, at), nb.interval,
			 "old tat %llu: wait after the burst", (ull)old_tats[i]);

		nb = bucket_fresh(1000, 5);
		nb.tat = gcra_carry_unknown(old.tat, at, nb.tolerance);
		CHECK_EQ(burst_at(&nb, at, 600), 5,
			 "old tat %llu: burst, old limit unknown", (ull)old_tats[i]);
	}
}

/*
 * Exhausted under rate 1000 burst 500 (500 ms of debt), moved to burst 5:
 * 5 tokens 20 ms later and not more, 3 after 3 ms, none at the change;
 * the old debt is not carried past the new tolerance either way.
 */
void case_carry_exhausted_to_smaller_burst(void)
{
	struct bucket old = bucket_fresh(1000, 500), nb, nu;
	const __u64 t0 = 7 * SEC, ms = SEC / 1000;
	const __u64 ats[] = { t0, t0 + ms / 2 };
	size_t i;

	CHECK_EQ(burst_at(&old, t0, 600), 500, "exhaust the old bucket");
	for (i = 0; i < ARRAY_LEN(ats); i++) {
		__u64 at = ats[i];

		CHECK_EQ(bucket_tokens(&old, at), 0, "at +%llu: old tokens",
			 (ull)(at - t0));
		nb = bucket_carried(&old, at, 1000, 5);
		CHECK_EQ(rebind_known_limit(&old, at, &nb), nb.tat,
			 "at +%llu: gcra_rebind", (ull)(at - t0));
		CHECK_EQ(bucket_tokens(&nb, at), 0, "at +%llu: tokens at the change",
			 (ull)(at - t0));
		CHECK_EQ(bucket_tokens(&nb, at + 3 * ms - 1), 2,
			 "at +%llu: tokens 3 ms - 1 unit later", (ull)(at - t0));
		CHECK_EQ(bucket_tokens(&nb, at + 3 * ms), 3,
			 "at +%llu: tokens 3 ms later", (ull)(at - t0));
		CHECK_EQ(bucket_tokens(&nb, at + 20 * ms), 5,
			 "at +%llu: tokens 20 ms later", (ull)(at - t0));
		CHECK_EQ(burst_copy_at(&nb, at + 20 * ms, 600), 5,
			 "at +%llu: burst 20 ms later", (ull)(at - t0));

		nu = bucket_fresh(1000, 5);
		nu.tat = gcra_carry_unknown(old.tat, at, nu.tolerance);
		CHECK_EQ(bucket_tokens(&nu, at), 0,
			 "at +%llu: tokens at the change, old limit unknown",
			 (ull)(at - t0));
		CHECK_EQ(bucket_wait(&nu, at), nu.interval,
			 "at +%llu: wait, old limit unknown", (ull)(at - t0));
		CHECK_EQ(burst_copy_at(&nu, at + 20 * ms, 600), 5,
			 "at +%llu: burst 20 ms later, old limit unknown",
			 (ull)(at - t0));
	}
}

/*
 * Tokens are kept whole across a change of rate, not scaled and not
 * refilled: 301.5 tokens under rate 1000 burst 500 become 301 under rate 10
 * burst 1000, and the next comes one new T (100 ms) later.
 */
void case_carry_keeps_whole_tokens(void)
{
	struct bucket old = bucket_fresh(1000, 500), nb;
	const __u64 t0 = 9 * SEC, at = t0 + SEC / 1000 + SEC / 2000;

	CHECK_EQ(burst_at(&old, t0, 200), 200, "send 200");
	CHECK_EQ(bucket_tokens(&old, at), 301, "old tokens 1.5 ms later");
	nb = bucket_carried(&old, at, 10, 1000);
	CHECK_EQ(bucket_tokens(&nb, at), 301, "tokens at the change");
	CHECK_EQ(bucket_tokens(&nb, at + nb.interval - 1), 301,
		 "tokens 1 unit short of one new T");
	CHECK_EQ(bucket_tokens(&nb, at + nb.interval), 302,
		 "tokens one new T later");
	CHECK_EQ(burst_copy_at(&nb, at, 2000), 301, "burst at the change");
	nb = bucket_carried(&old, at, 1000000, 5);
	CHECK_EQ(burst_copy_at(&nb, at, 2000), 5, "clamped to a burst of 5");
	nb = bucket_carried(&old, at, 1, 301);
	CHECK_EQ(burst_copy_at(&nb, at, 2000), 301, "burst of 301 at rate 1");
}

/*
 * Random states and policies: gcra_carry gives exactly min(tokens, B) at
 * `at` and refills at the new rate from there; gcra_carry_unknown keeps the
 * debt in time, min(ahead, tolerance), so it never hands out more tokens
 * than the old debt allows and never owes more than the new tolerance (the
 * next packet at most one T away); neither saturates; gcra_rebind picks
 * them by whether the old limit is known.
 */
void case_carry_random(void)
{
	int i;

	rng_state = 0x5eed0009;
	for (i = 0; i < 300000; i++) {
		__u64 orate = rng_rate(), rate = rng_rate();
		__u64 oB = rng_burst(orate, 1000), B = rng_burst(rate, 1000);
		__u64 oT = gcra_interval(orate), otol = gcra_tolerance(orate, oB);
		__u64 T = gcra_interval(rate), tol = gcra_tolerance(rate, B);
		__u64 at = rng_below(1ULL << 62), tat, ahead, ct, ut, e;
		__u64 want_tokens, ahead_new;
		const __u64 old_actions[] = { SLUICE_ACT_ALLOW, SLUICE_ACT_LIMIT,
					      SLUICE_ACT_DENY, 77 };
		int j;

		switch (rng_below(5)) {
		case 0:
			tat = 0;
			break;
		case 1:
			tat = rng_below(at + 1);		/* full, in the past */
			break;
		case 2:
			tat = at + rng_below(otol + 1);		/* within the old limit */
			break;
		case 3:
			tat = at + otol + rng_below(1ULL << 58);	/* beyond it */
			break;
		default:
			tat = U64_MAX;				/* saturated */
			break;
		}
		ahead = gcra_base(tat, at) - at;

		/* Old limit known. */
		want_tokens = min_u64(gcra_tokens(tat, at, oT, otol), B);
		ct = gcra_carry(tat, at, oT, otol, T, tol);
		CHECK(ct != U64_MAX, "carry: saturated (at %llu tat %llu)",
		      (ull)at, (ull)tat);
		CHECK_EQ(gcra_tokens(ct, at, T, tol), want_tokens,
			 "carry: rate %llu->%llu burst %llu->%llu at %llu tat %llu",
			 (ull)orate, (ull)rate, (ull)oB, (ull)B, (ull)at, (ull)tat);
		for (j = 0; j < 4; j++) {
			e = j == 0 ? T - 1 : j == 1 ? T : rng_below(2 * tol + 1);
			CHECK_EQ(gcra_tokens(ct, at + e, T, tol),
				 min_u64(B, want_tokens + e / T),
				 "carry: rate %llu->%llu burst %llu->%llu, %llu units after",
				 (ull)orate, (ull)rate, (ull)oB, (ull)B, (ull)e);
		}
		CHECK_EQ(gcra_rebind(tat, at, 1, SLUICE_ACT_LIMIT, oT, otol,
				     SLUICE_ACT_LIMIT, T, tol), ct,
			 "rebind, old limit known (tat %llu)", (ull)tat);

		/* Old limit unknown. */
		ut = gcra_carry_unknown(tat, at, tol);
		ahead_new = gcra_base(ut, at) - at;
		CHECK(ut != U64_MAX, "carry_unknown: saturated (at %llu tat %llu)",
		      (ull)at, (ull)tat);
		CHECK(ahead_new <= tol,
		      "carry_unknown: owes %llu units, more than the new tolerance %llu",
		      (ull)ahead_new, (ull)tol);
		CHECK(bucket_wait(&(struct bucket){ ut, T, tol }, at) <= T,
		      "carry_unknown: next packet more than one T away");
		CHECK(tat == U64_MAX || ahead_new >= min_u64(ahead, tol),
		      "carry_unknown: debt %llu forgiven to %llu (tolerance %llu)",
		      (ull)ahead, (ull)ahead_new, (ull)tol);
		CHECK_EQ(ahead_new, tat == U64_MAX ? tol : min_u64(ahead, tol),
			 "carry_unknown: debt at %llu tat %llu", (ull)at, (ull)tat);
		CHECK(gcra_tokens(ut, at, T, tol) <=
		      (ahead >= tol ? 0 : (tol - ahead) / T),
		      "carry_unknown: %llu tokens from a debt of %llu units",
		      (ull)gcra_tokens(ut, at, T, tol), (ull)ahead);
		for (j = 0; j < (int)ARRAY_LEN(old_actions); j++)
			CHECK_EQ(gcra_rebind(tat, at, 0, (__u32)old_actions[j],
					     oT, otol, SLUICE_ACT_LIMIT, T, tol), ut,
				 "rebind, old limit unknown, old action %d",
				 (int)old_actions[j]);
	}
}

/* A saturated TAT (2^64-1, exhausted for good) carries to an exhausted but
 * finite bucket: nothing at the change, one packet a new T later. */
void case_carry_saturated(void)
{
	struct bucket old = bucket_fresh(1000, 10), nb;
	const __u64 at = 1000 * SEC;
	int unknown;

	old.tat = U64_MAX;
	CHECK(!bucket_would_admit(&old, at + 1000 * SEC),
	      "saturated TAT admits before the change");
	for (unknown = 0; unknown <= 1; unknown++) {
		nb = bucket_fresh(100, 3);
		nb.tat = unknown ? gcra_carry_unknown(old.tat, at, nb.tolerance)
				 : gcra_carry(old.tat, at, old.interval,
					      old.tolerance, nb.interval,
					      nb.tolerance);
		CHECK_EQ(nb.tat, at + nb.tolerance, "unknown %d: carried TAT",
			 unknown);
		CHECK_EQ(nb.tat, gcra_rebind(old.tat, at, !unknown,
					     SLUICE_ACT_LIMIT, old.interval,
					     old.tolerance, SLUICE_ACT_LIMIT,
					     nb.interval, nb.tolerance),
			 "unknown %d: gcra_rebind", unknown);
		CHECK_EQ(bucket_tokens(&nb, at), 0, "unknown %d: tokens", unknown);
		CHECK_EQ(bucket_wait(&nb, at), nb.interval, "unknown %d: wait",
			 unknown);
		CHECK_EQ(burst_copy_at(&nb, at + nb.interval - 1, 10), 0,
			 "unknown %d: 1 unit before one T", unknown);
		CHECK_EQ(burst_copy_at(&nb, at + nb.interval, 10), 1,
			 "unknown %d: one T later", unknown);
		CHECK_EQ(burst_copy_at(&nb, at + 100 * SEC, 10), 3,
			 "unknown %d: 100 s later", unknown);
	}
}

/*
 * gcra_rebind by action: a new rule that does not limit leaves the TAT as
 * it is (whatever the old rule); an old rule known not to limit makes the
 * source enter the limit full (TAT 0), as a new source does.
 */
void case_rebind_actions(void)
{
	const __u64 at = 3 * SEC;
	const __u64 tats[] = { 0, 12345, at, at + 5 * SEC, U64_MAX - 1, U64_MAX };
	const __u32 acts[] = { SLUICE_ACT_ALLOW, SLUICE_ACT_LIMIT, SLUICE_ACT_DENY };
	struct bucket o = bucket_fresh(1000, 10), nb = bucket_fresh(100, 5);
	size_t i, j, k;
	int known;

	for (i = 0; i < ARRAY_LEN(tats); i++)
		for (j = 0; j < ARRAY_LEN(acts); j++)
			for (known = 0; known <= 1; known++) {
				for (k = 0; k < ARRAY_LEN(acts); k++) {
					if (acts[k] == SLUICE_ACT_LIMIT)
						continue;
					CHECK_EQ(gcra_rebind(tats[i], at, known, acts[j],
							     o.interval, o.tolerance,
							     acts[k], nb.interval,
							     nb.tolerance), tats[i],
						 "tat %llu, old action %u known %d, new action %u",
						 (ull)tats[i], acts[j], known, acts[k]);
				}
				if (known && acts[j] != SLUICE_ACT_LIMIT) {
					nb.tat = gcra_rebind(tats[i], at, 1, acts[j],
							     o.interval, o.tolerance,
							     SLUICE_ACT_LIMIT,
							     nb.interval, nb.tolerance);
					CHECK_EQ(nb.tat, 0,
						 "tat %llu, old action %u known, new limit",
						 (ull)tats[i], acts[j]);
					CHECK_EQ(burst_copy_at(&nb, at, 10), 5,
						 "tat %llu, old action %u: enters full",
						 (ull)tats[i], acts[j]);
				}
			}
}
