/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Window unit tests: clock extremes and the exact retry-after. */
#include "window_test.h"

/* ---- clock extremes ---- */

/*
 * Around window boundaries near 0, 2^63 and 2^64 - 1 ns, windows of 1 ms
 * and 1 h, budgets 1 and the maxima: bursts in the last ns of one window
 * and the first ns of the next, every decision against the reference; a
 * fixed window admits floor(N / cost) per window until S saturates and
 * nothing after (never more than N); every retry-after is exact or never.
 */

void case_clock_extremes(void)
{
	static const __u64 windows[] = { MS, 1500000, HOUR };
	const __u8 algos[] = { SLUICE_ALGO_FIXED_WINDOW, SLUICE_ALGO_SLIDING_WINDOW };
	size_t i, a, k, s;

	for (a = 0; a < ARRAY_LEN(algos); a++)
		for (i = 0; i < ARRAY_LEN(windows); i++) {
			__u64 W = windows[i];
			__u64 bmax = algos[a] == SLUICE_ALGO_FIXED_WINDOW ? SLUICE_FW_BUDGET_MAX
									  : SLUICE_SW_BUDGET_MAX;
			const __u64 budgets[] = { 1, 2, 1000, bmax };

			for (k = 0; k < ARRAY_LEN(budgets); k++) {
				__u64 N = budgets[k];
				/* Boundaries: the first, those around 2^63, the last
				 * two; a fixed window's S saturates in the window
				 * U64_MAX / N (its end passes 2^64 - 1): around it. */
				__u64 sat = U64_MAX / N < U64_MAX / W ? U64_MAX / N * W : W;
				const __u64 bounds[] = { W, 2 * W, (1ULL << 63) / W * W,
							 (1ULL << 63) / W * W + W,
							 U64_MAX / W * W - W, U64_MAX / W * W,
							 sat, sat + W };

				for (s = 0; s < ARRAY_LEN(bounds); s++) {
					__u64 B = bounds[s], c, per, got;
					struct bk b = bk_new(lim_of(algos[a], W, N, 0));
					const __u64 costs[] = { 1, N / 4 ? N / 4 : 1, N };
					size_t q;
					char ctx[160];

					for (q = 0; q < ARRAY_LEN(costs); q++) {
						c = costs[q];
						per = N / c;
						if (per > 2000000)
							continue;
						b = bk_new(b.l);
						snprintf(ctx, sizeof(ctx), "%s W=%llu N=%llu cost %llu "
							 "boundary %llu", algo_word(algos[a]), (ull)W,
							 (ull)N, (ull)c, (ull)B);
						/* the first ns of time, and the last before B */
						got = B == W ? bk_burst(&b, 0, c, per + 2) : 0;
						got += bk_burst(&b, B - 1, c, per + 2);
						CHECK(got <= per, "%s: %llu packets in a window", ctx,
						      (ull)got);
						if (algos[a] == SLUICE_ALGO_FIXED_WINDOW)
							CHECK_EQ(got, fw_saturated(B - 1, W, N) ? 0 : per,
								 "%s: before the boundary", ctx);
						check_wait_exact(&b.l, b.st, B - 1, c, ctx);
						got = bk_burst(&b, B, c, per + 2);
						CHECK(got <= per, "%s: %llu packets in a window", ctx,
						      (ull)got);
						if (algos[a] == SLUICE_ALGO_FIXED_WINDOW)
							CHECK_EQ(got, fw_saturated(B, W, N) ? 0 : per,
								 "%s: at the boundary", ctx);
						check_wait_exact(&b.l, b.st, B, c, ctx);
						/* the clock's last ns */
						got = bk_burst(&b, U64_MAX, c, per + 2);
						CHECK(got <= per, "%s: %llu packets at 2^64-1", ctx,
						      (ull)got);
						check_wait_exact(&b.l, b.st, U64_MAX, c, ctx);
						RETURN_IF_FAILED();
					}
				}
			}
		}
}

/*
 * A saturated fixed window admits nothing, whatever its word, and its
 * retry-after is "never"; random words at random times never admit more
 * than the budget in a window.
 */
void case_fw_saturation(void)
{
	static const __u64 budgets[] = { 1, 1000, SLUICE_FW_BUDGET_MAX };
	size_t k;
	int i;

	rng_state = 0x5eed3002;
	for (k = 0; k < ARRAY_LEN(budgets); k++)
		for (i = 0; i < 20000; i++) {
			__u64 N = budgets[k], W = rng_below(2) ? MS : HOUR;
			struct sluice_limit l = lim_fw(W, N, 0);
			__u64 now = U64_MAX - rng_below(rng_below(2) ? 10 * HOUR : 1ULL << 63);
			__u64 st = rng_below(3) ? rng() : U64_MAX - rng_below(3);
			__u64 c = 1 + rng_below(N), n = 0, next;

			while (n < 3 && limit_admit(&l, st, now, c, &next)) {
				CHECK(next > st || st < fw_start(now, W, N),
				      "N=%llu at %llu: word %llu moved back to %llu", (ull)N,
				      (ull)now, (ull)st, (ull)next);
				st = next;
				n++;
			}
			CHECK(n * c <= N, "N=%llu W=%llu at %llu: %llu units admitted", (ull)N,
			      (ull)W, (ull)now, (ull)(n * c));
			if (fw_saturated(now, W, N)) {
				CHECK_EQ(n, 0, "N=%llu W=%llu at %llu: admitted when saturated",
					 (ull)N, (ull)W, (ull)now);
				CHECK_EQ(limit_wait(&l, st, now, c), U64_MAX,
					 "N=%llu W=%llu at %llu: wait when saturated", (ull)N,
					 (ull)W, (ull)now);
			}
		}
}

/*
 * The zero word is a new bucket's (bpf/sluice.bpf.c take_bucket) and what
 * limit_rebind gives a source entering a limit: empty at every window,
 * also where its tag 0 lies within a ban's reach ahead of now (windows
 * 2^tagbits - ban_windows .. 2^tagbits - 1, modulo 2^tagbits).
 */
void case_sw_zero_word_empty(void)
{
	static const __u64 budgets[] = { 1, 1023, 65536, SLUICE_SW_BUDGET_MAX };
	static const __u64 bans[] = { 0, 1, 3 * MS, 3600 * SEC };
	size_t k, j;
	__u64 m, q;

	for (k = 0; k < ARRAY_LEN(budgets); k++)
		for (j = 0; j < ARRAY_LEN(bans); j++) {
			__u64 N = budgets[k], W = MS;
			struct sluice_limit l = lim_sw(W, N, bans[j]);
			__u32 tb = sw_tag_bits(l.bits);

			for (m = 1; m <= 3; m++)
				for (q = 0; q < 8; q++) {
					/* windows just below m * 2^tagbits */
					__u64 back = q < 4 ? q + 1 : l.ban_windows + 3 - q;
					__u64 w, t;

					if (tb >= 44 || back > m << tb)
						continue;	/* past the clock's end */
					w = (m << tb) - back;
					t = w * W + (q * W) / 8;
					CHECK(!limit_banned(&l, 0, t), "N=%llu ban %llu: a new bucket "
					      "is banned %llu windows before %llu * 2^%u", (ull)N,
					      (ull)bans[j], (ull)back, (ull)m, tb);
					CHECK_EQ(limit_available(&l, 0, t), N, "N=%llu ban %llu: "
						 "new bucket, %llu windows before %llu * 2^%u",
						 (ull)N, (ull)bans[j], (ull)back, (ull)m, tb);
					CHECK_EQ(limit_wait(&l, 0, t, N), 0, "N=%llu ban %llu: new "
						 "bucket's wait for N", (ull)N, (ull)bans[j]);
				}
		}
}

/* Admit (no ban stored): what the tag-wrap case compares. */
static int admit_only(const struct sluice_limit *l, __u64 *st, __u64 now, __u64 cost)
{
	return limit_admit(l, *st, now, cost, st);
}

/*
 * The sliding window's tag wraps every 2^tagbits windows: a word last
 * written exactly that many windows ago (give or take a few) reads its old
 * counts again, or reads as banned for up to the rule's ban in windows
 * before that. Probed at times through those windows, it must only ever
 * reject more than a word that is simply old (empty), and decide the same
 * once they have passed.
 */
void case_sw_tag_wrap(void)
{
	static const __u64 budgets[] = { 1023, 65536, SLUICE_SW_BUDGET_MAX };
	static const __u64 bans[] = { 0, 3 * MS, 50 * MS };
	static const int skews[] = { 0, -1, 1, -2, -5, 2 };
	size_t k, j, z;
	int rejected_more = 0;

	rng_state = 0x5eed3003;
	for (k = 0; k < ARRAY_LEN(budgets); k++)
		for (j = 0; j < ARRAY_LEN(bans); j++)
			for (z = 0; z < ARRAY_LEN(skews); z++) {
				__u64 N = budgets[k], W = MS;
				struct sluice_limit l = lim_sw(W, N, bans[j]);
				__u64 span = 1ULL << sw_tag_bits(l.bits);
				__u64 w0 = 5 + rng_below(1000), st = 0, plain = 0, t, x0, wx;
				long long x, first = -(long long)l.ban_windows - skews[z];
				long long last = 1 - skews[z];

				/* prev = 1 in window w0 - 1, cur = N - 2 in w0. */
				CHECK(admit_only(&l, &st, (w0 - 1) * W + W / 2, 1), "prev");
				CHECK(admit_only(&l, &st, w0 * W + W / 2, N - 2), "cur");
				/* x counts windows from w0 + span + skew. */
				x0 = w0 + span + (__u64)(long long)skews[z];
				for (x = first - 3; x <= last + 4; x++) {
					wx = (__u64)((long long)x0 + x);
					if (x == first - 3) {	/* same counts, 100 windows old */
						CHECK(admit_only(&l, &plain, (wx - 101) * W, 1),
						      "old word: prev rejected");
						CHECK(admit_only(&l, &plain, (wx - 100) * W, N - 2),
						      "old word: cur rejected");
					}
					for (t = wx * W; t < (wx + 1) * W; t += W / 16 + rng_below(W / 8)) {
						__u64 c = 1 + rng_below(rng_below(2) ? 3 : N / 3);
						/* probes: the words stay as they are */
						int aw = would_admit(&l, st, t, c);
						int ap = would_admit(&l, plain, t, c);

						CHECK(!aw || ap, "N=%llu ban %llu skew %d: the wrapped "
						      "word admits cost %llu in window %+lld where an old "
						      "one rejects", (ull)N, (ull)bans[j], skews[z], (ull)c,
						      x);
						if (x > last)
							CHECK_EQ(aw, ap, "N=%llu ban %llu skew %d: window "
								 "%+lld, cost %llu", (ull)N, (ull)bans[j],
								 skews[z], x, (ull)c);
						rejected_more |= ap && !aw;
					}
				}
			}
	CHECK(rejected_more, "the tag never wrapped");
}

/* ---- retry-after ---- */

void check_wait_exact(const struct sluice_limit *l, __u64 st, __u64 now, __u64 cost,
		      const char *ctx)
{
	__u64 w = limit_wait(l, st, now, cost), k, t;

	if (w == 0) {
		CHECK(would_admit(l, st, now, cost), "%s: word %llu now %llu cost %llu: wait 0 "
		      "but rejected", ctx, (ull)st, (ull)now, (ull)cost);
		return;
	}
	CHECK(!would_admit(l, st, now, cost), "%s: word %llu now %llu cost %llu: wait %llu "
	      "but admitted now", ctx, (ull)st, (ull)now, (ull)cost, (ull)w);
	if (w == U64_MAX) {
		/* never: not in a long while either */
		for (k = 0; k < 64; k++) {
			t = now + (U64_MAX - now) / 64 * k + rng_below((U64_MAX - now) / 64 + 1);
			CHECK(!would_admit(l, st, t, cost), "%s: word %llu now %llu cost %llu: "
			      "wait never but admitted at %llu", ctx, (ull)st, (ull)now,
			      (ull)cost, (ull)t);
		}
		return;
	}
	CHECK(w <= U64_MAX - now, "%s: word %llu now %llu cost %llu: wait %llu runs past the "
	      "clock's end", ctx, (ull)st, (ull)now, (ull)cost, (ull)w);
	CHECK(would_admit(l, st, now + w, cost), "%s: word %llu now %llu cost %llu: wait %llu "
	      "but rejected then", ctx, (ull)st, (ull)now, (ull)cost, (ull)w);
	CHECK(!would_admit(l, st, now + w - 1, cost), "%s: word %llu now %llu cost %llu: wait "
	      "%llu but admitted 1 ns earlier", ctx, (ull)st, (ull)now, (ull)cost, (ull)w);
	for (k = 0; k < 4; k++) {
		t = now + rng_below(w);
		CHECK(!would_admit(l, st, t, cost), "%s: word %llu now %llu cost %llu: wait "
		      "%llu but admitted at +%llu", ctx, (ull)st, (ull)now, (ull)cost, (ull)w,
		      (ull)(t - now));
	}
}

/*
 * limit_wait for each algorithm, on words the datapath makes (random
 * traffic, bans, costs) and random ones, at random times: 0 iff admitted
 * now; else rejected at now + wait - 1 ns and before, admitted at now +
 * wait; U64_MAX only when never (a cost over the budget).
 */
void case_retry_after_exact(void)
{
	const __u8 algos[] = { SLUICE_ALGO_TOKEN_BUCKET, SLUICE_ALGO_FIXED_WINDOW,
			       SLUICE_ALGO_SLIDING_WINDOW };
	char ctx[96];
	size_t a;
	int i, j;

	rng_state = 0x5eed4001;
	for (a = 0; a < ARRAY_LEN(algos); a++)
		for (i = 0; i < 6000; i++) {
			__u64 W = MS + rng_below(rng_below(2) ? 20 * MS : HOUR - MS);
			__u64 N = 1 + rng_below(rng_below(2) ? 10 : 5000);
			__u64 ban = rng_below(3) ? 0 : 1 + rng_below(3 * W);
			struct sluice_limit l = lim_of(algos[a], W, N, ban);
			__u64 st = 0, t = rng_below(1ULL << 56), c;

			snprintf(ctx, sizeof(ctx), "%s W=%llu N=%llu ban %llu", algo_word(algos[a]),
				 (ull)W, (ull)N, (ull)ban);
			if (rng_below(8) == 0)
				st = rng();
			for (j = 0; j < 40; j++) {
				t += rng_below(3) ? rng_below(W / 4 + 1) : rng_below(2 * W);
				c = rng_below(4) ? 1 : 1 + rng_below(N + N / 4 + 1);
				check_wait_exact(&l, st, t, c, ctx);
				RETURN_IF_FAILED();
				if (c > N)
					CHECK_EQ(limit_wait(&l, st, t, c), U64_MAX,
						 "%s: cost %llu over the budget", ctx, (ull)c);
				judge(&l, &st, t, c);
			}
		}
}
