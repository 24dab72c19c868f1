/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Window unit tests: the state a slot of the source table starts with
 * (include/sluice/srctab.h srctab_fresh_state), the first window after
 * boot included. */
#include "window_test.h"
#include "sluice/srctab.h"

/* Claim times: the first window (CLOCK_MONOTONIC starts near 0 at boot,
 * so window 0 is the first W after it; no packet is judged at 0 itself),
 * its last ns, later windows, and for a sliding window the windows where
 * its tag wraps. */
static size_t claim_times(const struct sluice_limit *l, __u64 *t)
{
	__u64 W = l->interval, wrap;
	size_t n = 0;

	t[n++] = 1;
	t[n++] = W / 2;
	t[n++] = W - 1;
	t[n++] = W;
	t[n++] = 2 * W + 1;
	t[n++] = 1234 * W + W / 3;
	if (l->algo != SLUICE_ALGO_SLIDING_WINDOW || sw_tag_bits(l->bits) >= 40)
		return n;
	wrap = 1ULL << sw_tag_bits(l->bits);
	if ((u128)(wrap + 2) * W >= (u128)U64_MAX)
		return n;
	t[n++] = (wrap - 1) * W;
	t[n++] = wrap * W;
	t[n++] = (wrap + 1) * W + W / 2;
	return n;
}

/* What a fresh state st, claimed at `at`, must do at t >= at: judge as a
 * new bucket (word 0) does, the whole capacity, no ban. */
static void check_fresh_at(const struct sluice_limit *l, __u64 st, __u64 t, const char *ctx)
{
	__u64 cap = limit_capacity(l), s = st, n;

	CHECK(limit_idle(l, st, t), "%s at %llu: not idle", ctx, (ull)t);
	CHECK(!limit_banned(l, st, t), "%s at %llu: banned", ctx, (ull)t);
	CHECK_EQ(limit_available(l, st, t), cap, "%s at %llu: available", ctx, (ull)t);
	CHECK_EQ(limit_wait(l, st, t, 1), 0, "%s at %llu: wait", ctx, (ull)t);
	CHECK(would_admit(l, st, t, cap), "%s at %llu: the whole capacity %llu at once refused",
	      ctx, (ull)t, (ull)cap);
	if (cap > 16)
		return;
	for (n = 0; n <= cap && judge(l, &s, t, 1); n++)
		;
	CHECK_EQ(n, cap, "%s at %llu: packets admitted one by one", ctx, (ull)t);
}

/* Every claim time of limit l, from an empty slot (old 0), one reclaimed
 * from a fresh state (old 1) and one reclaimed from a spent source. */
static void check_limit(const struct sluice_limit *l, const char *what)
{
	__u64 times[12], olds[3] = { 0, 1, 0 }, W = l->interval, at, st;
	size_t nt = claim_times(l, times), c, o;
	char ctx[160];

	for (c = 0; c < nt; c++) {
		at = times[c];
		olds[2] = limit_state_with(l, at, 0);
		for (o = 0; o < ARRAY_LEN(olds); o++) {
			st = srctab_fresh_state(srctab_fresh_nonzero(l, at), 0, olds[o]);
			snprintf(ctx, sizeof(ctx), "%s: old %llu, claimed at %llu (window %llu)",
				 what, (ull)olds[o], (ull)at, (ull)(at / W));
			CHECK(st != olds[o], "%s: the word did not move", ctx);
			check_fresh_at(l, st, at, ctx);
			check_fresh_at(l, st, at + W, ctx);
			check_fresh_at(l, st, at + 5 * W + 7, ctx);
			RETURN_IF_FAILED();
		}
	}
}

/*
 * A slot claimed for a new source starts fresh: its word is not the old
 * one (so a CAS that the slot's last source began fails), and from the
 * claim on it judges as a new bucket does: the whole capacity, no ban.
 * Also in window 0, the first W after boot: there a fixed window's word 1
 * counted one unit spent (a new source got N - 1: 1999999 of a budget of
 * 2000000, 9 of 10, in the first hour after boot of a 1 h window), and a
 * sliding window's empty counts tagged 1 read as a ban ahead of now under
 * a rule with --ban (every new source dropped as banned).
 */
void case_fresh_slot_state(void)
{
	static const __u8 algos[] = { SLUICE_ALGO_TOKEN_BUCKET, SLUICE_ALGO_FIXED_WINDOW,
				      SLUICE_ALGO_SLIDING_WINDOW };
	static const __u64 windows[] = { MS, SEC, HOUR };
	static const __u64 budgets[] = { 1, 10, 1000000 };
	static const __u64 bans[] = { 0, 300 * MS, HOUR };
	size_t a, i, k, b;
	char what[96];

	for (a = 0; a < ARRAY_LEN(algos); a++)
		for (i = 0; i < ARRAY_LEN(windows); i++)
			for (k = 0; k < ARRAY_LEN(budgets); k++)
				for (b = 0; b < ARRAY_LEN(bans); b++) {
					struct sluice_limit l = lim_of(algos[a], windows[i],
								       budgets[k], bans[b]);

					snprintf(what, sizeof(what), "%s W=%llu N=%llu ban %llu",
						 algo_word(algos[a]), (ull)windows[i],
						 (ull)budgets[k], (ull)bans[b]);
					check_limit(&l, what);
					RETURN_IF_FAILED();
				}
}
