/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Window unit tests: bans. */
#include "window_test.h"

/* ---- bans ---- */

/*
 * limit_ban_state at now bans until the documented end E: the token
 * bucket's now + ban; a window's the start of the window now + ban falls
 * in. limit_banned holds exactly before E, limit_ban_left is E - t, nothing
 * is admitted before E; then a fixed window's window E is spent (admits
 * from E + W on), a sliding window's reads full in it and prev = N in the
 * next; a token bucket admits after its slack.
 */
void case_bans(void)
{
	const __u8 algos[] = { SLUICE_ALGO_TOKEN_BUCKET, SLUICE_ALGO_FIXED_WINDOW,
			       SLUICE_ALGO_SLIDING_WINDOW };
	char ctx[128];
	size_t a;
	int i, j;

	rng_state = 0x5eed5001;
	for (a = 0; a < ARRAY_LEN(algos); a++)
		for (i = 0; i < 20000; i++) {
			__u64 W = MS + rng_below(rng_below(2) ? 20 * MS : HOUR - MS);
			__u64 N = 1 + rng_below(rng_below(2) ? 10 : 5000);
			__u64 ban = 1 + rng_below(rng_below(2) ? 5 * W : SLUICE_BAN_NS_MAX);
			struct sluice_limit l;
			__u64 now = rng_below(1ULL << 56), st, E, t, wait;

			if (algos[a] == SLUICE_ALGO_SLIDING_WINDOW &&
			    sw_ban_windows(ban, W) > 1ULL << (sw_tag_bits(count_bits(N)) - 2))
				continue;	/* user/lib/rule.c refuses it */
			l = lim_of(algos[a], W, N, ban);
			st = limit_ban_state(&l, now);
			E = algos[a] == SLUICE_ALGO_TOKEN_BUCKET ? now + ban : (now + ban) / W * W;
			snprintf(ctx, sizeof(ctx), "%s W=%llu N=%llu ban %llu at %llu",
				 algo_word(algos[a]), (ull)W, (ull)N, (ull)ban, (ull)now);
			if (E <= now) {	/* the ban ends in now's window: spent */
				CHECK(!limit_banned(&l, st, now), "%s: banned", ctx);
				CHECK_EQ(limit_available(&l, st, now), 0, "%s: not spent", ctx);
				check_wait_exact(&l, st, now, 1, ctx);
				continue;
			}
			for (j = 0; j < 12; j++) {
				t = j == 0 ? now : j == 1 ? E - 1 : now + rng_below(E - now);
				CHECK(limit_banned(&l, st, t), "%s: not banned at +%llu, %llu before "
				      "the end", ctx, (ull)(t - now), (ull)(E - t));
				CHECK_EQ(limit_ban_left(&l, st, t), E - t, "%s: at +%llu", ctx,
					 (ull)(t - now));
				CHECK(!would_admit(&l, st, t, 1), "%s: admitted while banned", ctx);
				CHECK_EQ(limit_available(&l, st, t), 0, "%s: available while banned",
					 ctx);
				check_wait_exact(&l, st, t, 1, ctx);
				RETURN_IF_FAILED();
			}
			CHECK(!limit_banned(&l, st, E), "%s: banned at the end", ctx);
			CHECK_EQ(limit_ban_left(&l, st, E), 0, "%s: ban left at the end", ctx);
			CHECK(!limit_banned(&l, st, E + rng_below(10 * W)), "%s: banned after the "
			      "end", ctx);
			wait = limit_wait(&l, st, now, 1);
			switch (algos[a]) {
			case SLUICE_ALGO_FIXED_WINDOW:
				CHECK_EQ(wait, E + W - now, "%s: wait", ctx);
				break;
			case SLUICE_ALGO_SLIDING_WINDOW:
				CHECK(wait >= E + W - now && wait <= E + 2 * W - now,
				      "%s: wait %llu, the ban ends at +%llu", ctx, (ull)wait,
				      (ull)(E - now));
				CHECK_EQ(limit_available(&l, st, E + W - 1), 0, "%s: full window",
					 ctx);
				CHECK_EQ(limit_available(&l, st, E + 2 * W), N, "%s: after", ctx);
				break;
			default:
				CHECK_EQ(wait, ban + SLUICE_BAN_SLACK_NS +
					 gcra_units_to_ns(l.interval), "%s: wait", ctx);
				break;
			}
			check_wait_exact(&l, st, E, 1, ctx);
			RETURN_IF_FAILED();
		}
}
