/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Window unit tests: limit_rebind, a state carried to a new limit. */
#include "window_test.h"

/* ---- limit_rebind ---- */

/* A word the datapath could hold at `at`: traffic (with bans) before it. */
static __u64 traffic_word(const struct sluice_limit *l, __u64 at)
{
	__u64 st = 0, W = l->algo == SLUICE_ALGO_TOKEN_BUCKET ? SEC : l->interval;
	__u64 t = at > 3 * W ? at - 3 * W : 0, n = rng_below(4) ? rng_below(60) : 0;
	__u64 cap = limit_capacity(l);

	for (; n > 0 && t <= at; n--) {
		judge(l, &st, t, rng_below(3) ? 1 : 1 + rng_below(cap));
		t += rng_below(W / 8 + 1);
	}
	return st;
}

static struct sluice_limit rng_limit(__u8 algo)
{
	__u64 W = MS * (1 + rng_below(rng_below(2) ? 20 : 3600000));
	__u64 N = 1 + rng_below(rng_below(2) ? 20 : 5000);
	__u64 ban = rng_below(3) ? 0 : 1 + rng_below(3 * W);

	if (rng_below(3) == 0)
		W = 1000 * MS;
	return lim_of(algo, W, N, ban);
}

/* Units admitted at one instant, one by one (at most limit). */
static __u64 burst_units(const struct sluice_limit *l, __u64 st, __u64 at, __u64 limit)
{
	__u64 n = 0, next;

	while (n < limit && limit_admit(l, st, at, 1, &next)) {
		st = next;
		n++;
	}
	return n;
}

/* The old limit unknown: every algorithm starts spent at `at`. */
static void check_rebind_unknown_old(__u64 st, __u64 at, const struct sluice_limit *ol,
				     const struct sluice_limit *nl, const char *ctx)
{
	__u64 r = limit_rebind(st, at, 0, SLUICE_ACT_LIMIT, ol, SLUICE_ACT_LIMIT, nl);

	if (nl->algo == SLUICE_ALGO_TOKEN_BUCKET) {
		CHECK_EQ(r, gcra_tat_at(gcra_now(at), nl->tolerance),
			 "%s: unknown old, token bucket starts spent", ctx);
	} else {
		CHECK_EQ(limit_available(nl, r, at), 0, "%s: unknown old", ctx);
		CHECK(!limit_banned(nl, r, at), "%s: unknown old bans", ctx);
		CHECK_EQ(limit_wait(nl, r, at, 1),
			 nl->algo == SLUICE_ALGO_FIXED_WINDOW ? (at / nl->interval + 1) *
			 nl->interval - at : limit_wait(nl, sw_make(at / nl->interval, 0,
								    nl->tolerance, nl->bits), at, 1),
			 "%s: unknown old, wait", ctx);
	}
}

/*
 * limit_rebind, as its comment says: a new policy that does not limit
 * leaves the word; an old one known not to limit gives 0 (nothing spent);
 * a token bucket to a token bucket is gcra_rebind; the same window
 * algorithm and window keeps the counts, clamped to the new budget; any
 * other change keeps the share of the capacity left, rounded down; an
 * unknown old limit starts every algorithm spent at `at`.
 */
void case_rebind(void)
{
	const __u32 acts[] = { SLUICE_ACT_ALLOW, SLUICE_ACT_DENY, SLUICE_ACT_LIMIT };
	int i;

	rng_state = 0x5eed6001;
	for (i = 0; i < 200000; i++) {
		__u8 oa = (__u8)rng_below(SLUICE_ALGO_MAX), na = (__u8)rng_below(SLUICE_ALGO_MAX);
		struct sluice_limit ol = rng_limit(oa), nl = rng_limit(na);
		__u64 at = (1ULL << 40) + rng_below(1ULL << 55), st, r, avail, cap_o, cap_n;
		__u64 want, used;
		size_t k;
		char ctx[200];

		if (rng_below(3) == 0) {	/* same algorithm and window */
			na = oa;
			nl = lim_of(oa, ol.interval, 1 + rng_below(2 * limit_capacity(&ol)),
				    ol.ban);
		}
		st = traffic_word(&ol, at);
		snprintf(ctx, sizeof(ctx), "%s W=%llu N=%llu -> %s W=%llu N=%llu, word %llu",
			 algo_word(oa), (ull)ol.interval, (ull)ol.tolerance, algo_word(na),
			 (ull)nl.interval, (ull)nl.tolerance, (ull)st);
		for (k = 0; k < ARRAY_LEN(acts); k++) {
			CHECK_EQ(limit_rebind(st, at, 1, acts[k], &ol, SLUICE_ACT_ALLOW, &nl), st,
				 "%s: new allow", ctx);
			CHECK_EQ(limit_rebind(st, at, 0, acts[k], &ol, SLUICE_ACT_DENY, &nl), st,
				 "%s: new deny", ctx);
		}
		CHECK_EQ(limit_rebind(st, at, 1, SLUICE_ACT_ALLOW, &ol, SLUICE_ACT_LIMIT, &nl), 0,
			 "%s: old allow", ctx);
		CHECK_EQ(limit_rebind(st, at, 1, SLUICE_ACT_DENY, &ol, SLUICE_ACT_LIMIT, &nl), 0,
			 "%s: old deny", ctx);
		CHECK_EQ(limit_available(&nl, 0, at), limit_capacity(&nl), "%s: 0 is not full",
			 ctx);

		check_rebind_unknown_old(st, at, &ol, &nl, ctx);
		RETURN_IF_FAILED();

		/* Old limit known. */
		r = limit_rebind(st, at, 1, SLUICE_ACT_LIMIT, &ol, SLUICE_ACT_LIMIT, &nl);
		avail = limit_available(&ol, st, at);
		cap_o = limit_capacity(&ol);
		cap_n = limit_capacity(&nl);
		CHECK(!limit_banned(&nl, r, at), "%s: a rebind bans", ctx);
		if (oa == SLUICE_ALGO_TOKEN_BUCKET && na == oa) {
			CHECK_EQ(r, gcra_rebind(st, gcra_now(at), 1, SLUICE_ACT_LIMIT, ol.interval,
						ol.tolerance, SLUICE_ACT_LIMIT, nl.interval,
						nl.tolerance), "%s: token bucket", ctx);
			continue;
		}
		if (oa == na && ol.interval == nl.interval && !limit_banned(&ol, st, at)) {
			if (na == SLUICE_ALGO_FIXED_WINDOW) {
				used = cap_o - avail;
				want = used >= cap_n ? 0 : cap_n - used;
			} else {
				__u64 w = at / nl.interval, prev, cur;

				sw_counts(st, w, ol.bits, &prev, &cur);
				want = ref_sw_estimate(min_u64(prev, cap_n), min_u64(cur, cap_n),
						       at - w * nl.interval, nl.interval);
				want = want >= cap_n ? 0 : cap_n - want;
			}
			CHECK_EQ(limit_available(&nl, r, at), want, "%s: same windows", ctx);
		} else {
			want = avail * cap_n / cap_o;
			CHECK_EQ(limit_available(&nl, r, at), want, "%s: share, %llu of %llu left",
				 ctx, (ull)avail, (ull)cap_o);
			CHECK((u128)want * cap_o <= (u128)avail * cap_n, "%s: share grows", ctx);
		}
		CHECK_EQ(burst_units(&nl, r, at, want + 3), want, "%s: admitted at the change",
			 ctx);
	}
}
