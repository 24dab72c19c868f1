/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the window unit tests share (tests/unit/window_*.c, run by
 * test_window.c): limits as user/lib/store.c builds them, the reference
 * models and the cases' names. */
#ifndef SLUICE_TEST_WINDOW_TEST_H
#define SLUICE_TEST_WINDOW_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sluice/algo.h"
#include "harness.h"

#define MS		1000000ULL
#define SEC		SLUICE_NS_PER_SEC
#define HOUR		(3600ULL * SEC)
#define U64_MAX		SLUICE_U64_MAX
#define FRAC_ONE	(1ULL << SLUICE_SW_FRAC_BITS)

typedef unsigned __int128 u128;
typedef __int128 s128;

static inline __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static inline const char *algo_word(__u8 algo)
{
	return algo == SLUICE_ALGO_FIXED_WINDOW	  ? "fixed-window"
	       : algo == SLUICE_ALGO_SLIDING_WINDOW ? "sliding-window"
						    : "token-bucket";
}

/* ---- limits as user/lib/store.c builds them ---- */

/* Bits of a sliding window's counts for budget n (user/lib/rule.c). */
static inline __u8 count_bits(__u64 n)
{
	__u8 bits = 0;

	while (bits < 64 && (n >> bits))
		bits++;
	return bits ? bits : 1;
}

static inline struct sluice_limit lim_fw(__u64 window, __u64 budget, __u64 ban_ns)
{
	struct sluice_limit l = {
		.interval = window, .tolerance = budget, .ban = ban_ns,
		.algo = SLUICE_ALGO_FIXED_WINDOW,
	};

	return l;
}

static inline struct sluice_limit lim_sw(__u64 window, __u64 budget, __u64 ban_ns)
{
	struct sluice_limit l = {
		.interval = window, .tolerance = budget, .ban = ban_ns,
		.ban_windows = sw_ban_windows(ban_ns, window),
		.algo = SLUICE_ALGO_SLIDING_WINDOW, .bits = count_bits(budget),
	};

	return l;
}

/* rate per second, burst in the same unit. */
static inline struct sluice_limit lim_tb(__u64 rate, __u64 burst, __u64 ban_ns)
{
	struct sluice_limit l = {
		.interval = gcra_interval_per(rate, 1),
		.ban = ban_ns ? gcra_now(ban_ns) : 0,
		.algo = SLUICE_ALGO_TOKEN_BUCKET,
	};

	l.tolerance = gcra_cost(l.interval, burst);
	return l;
}

static inline struct sluice_limit lim_of(__u8 algo, __u64 window, __u64 budget, __u64 ban_ns)
{
	if (algo == SLUICE_ALGO_FIXED_WINDOW)
		return lim_fw(window, budget, ban_ns);
	if (algo == SLUICE_ALGO_SLIDING_WINDOW)
		return lim_sw(window, budget, ban_ns);
	/* A token bucket of the same average: budget per window. */
	return lim_tb(budget * SEC / window ? budget * SEC / window : 1, budget, ban_ns);
}

static inline int would_admit(const struct sluice_limit *l, __u64 st, __u64 now, __u64 cost)
{
	__u64 next = 0;

	return limit_admit(l, st, now, cost, &next);
}

/*
 * What the XDP program does with one packet (bpf/sluice.bpf.c judge_step
 * and reject): admit and store the next word; else, when not banned and
 * the rule has a ban, store the ban.
 */
static inline int judge(const struct sluice_limit *l, __u64 *st, __u64 now, __u64 cost)
{
	__u64 next = 0;

	if (limit_admit(l, *st, now, cost, &next)) {
		*st = next;
		return 1;
	}
	if (!limit_banned(l, *st, now) && l->ban)
		*st = limit_ban_state(l, now);
	return 0;
}

/* ---- reference models ---- */

/*
 * A bucket under test with a reference beside it, kept by this file's own
 * arithmetic from what the bucket admitted: for a fixed window the count of
 * the current window, for a sliding window the counts of the current and
 * the previous window. Every admission decision is checked against it:
 *   fixed window: identical to "count + cost <= N" (unless S saturates,
 *     where it must reject);
 *   sliding window: the documented rounding exactly (weight rounded up to
 *     2^-20 of the window, prev's share up to a whole unit), never admits
 *     what the real-valued estimate cur + prev * (W - e) / W would reject,
 *     and always admits when the real-valued one would with 2 units to
 *     spare; limit_available agrees.
 */
struct bk {
	struct sluice_limit l;
	__u64 st;
	__u64 ridx, rprev, rcur;	/* reference counts as of window ridx */
	int log;			/* append admissions to adm_t/adm_c */
};

#define ADM_MAX		400000
__attribute__((unused)) static __u64 adm_t[ADM_MAX], adm_c[ADM_MAX];
__attribute__((unused)) static size_t nadm;

static inline struct bk bk_new(struct sluice_limit l)
{
	struct bk b = { .l = l, .st = 0 };

	return b;
}

/* The reference counts as of window w. */
static inline void ref_counts(const struct bk *b, __u64 w, __u64 *prev, __u64 *cur)
{
	*prev = *cur = 0;
	if (b->ridx == w) {
		*prev = b->rprev;
		*cur = b->rcur;
	} else if (b->ridx + 1 == w) {
		*prev = b->rcur;
	}
}

/* The documented rounding, written independently of window.h. */
static inline __u64 ref_sw_estimate(__u64 prev, __u64 cur, __u64 e, __u64 window)
{
	u128 weight = (((u128)(window - e) << SLUICE_SW_FRAC_BITS) + window - 1) / window;
	u128 share = ((u128)prev * weight + FRAC_ONE - 1) >> SLUICE_SW_FRAC_BITS;

	return cur + (__u64)share;
}

/* Whether the fixed window of now saturates: its end (w + 1) * N + 1
 * reaches 2^64 - 1. */
static inline int fw_saturated(__u64 now, __u64 window, __u64 budget)
{
	return (u128)(now / window + 1) * budget + 1 >= (u128)U64_MAX;
}

/* Checks one decision against the reference (see struct bk); 0 on a
 * mismatch (recorded). */
static inline int ref_check(const struct bk *b, __u64 now, __u64 cost, int admitted)
{
	__u64 W = b->l.interval, N = b->l.tolerance, w = now / W, e = now - w * W;
	__u64 prev, cur, est, avail;
	s128 room_w;	/* (N - real estimate) * W */

	ref_counts(b, w, &prev, &cur);
	avail = limit_available(&b->l, b->st, now);
	if (b->l.algo == SLUICE_ALGO_FIXED_WINDOW) {
		if (fw_saturated(now, W, N))
			return NOTE(!admitted, "fixed window W=%llu N=%llu at %llu: admits cost "
				    "%llu in a saturated window", (ull)W, (ull)N, (ull)now,
				    (ull)cost);
		return NOTE(admitted == (cur + cost <= N),
			    "fixed window W=%llu N=%llu at %llu: count %llu cost %llu %s",
			    (ull)W, (ull)N, (ull)now, (ull)cur, (ull)cost,
			    admitted ? "admitted" : "rejected") &&
		       NOTE(avail == N - cur, "fixed window W=%llu N=%llu at %llu: available "
			    "%llu, count %llu", (ull)W, (ull)N, (ull)now, (ull)avail, (ull)cur);
	}
	if (b->l.algo != SLUICE_ALGO_SLIDING_WINDOW)
		return 1;
	est = ref_sw_estimate(prev, cur, e, W);
	room_w = (s128)N * W - (s128)cur * W - (s128)prev * (W - e);
	if (!NOTE(admitted == (cost <= N && est + cost <= N),
		  "sliding window W=%llu N=%llu at offset %llu: prev %llu cur %llu cost %llu "
		  "%s, the rounded estimate is %llu", (ull)W, (ull)N, (ull)e, (ull)prev,
		  (ull)cur, (ull)cost, admitted ? "admitted" : "rejected", (ull)est))
		return 0;
	if (!NOTE(!admitted || room_w >= (s128)cost * W,
		  "sliding window W=%llu N=%llu at offset %llu: prev %llu cur %llu: admits "
		  "cost %llu that the real-valued estimate rejects", (ull)W, (ull)N, (ull)e,
		  (ull)prev, (ull)cur, (ull)cost))
		return 0;
	if (!NOTE(admitted || cost + 2 > N || room_w < (s128)(cost + 2) * W,
		  "sliding window W=%llu N=%llu at offset %llu: prev %llu cur %llu: rejects "
		  "cost %llu with 2 units to spare in the real-valued estimate", (ull)W, (ull)N,
		  (ull)e, (ull)prev, (ull)cur, (ull)cost))
		return 0;
	return NOTE(avail == (est >= N ? 0 : N - est),
		    "sliding window W=%llu N=%llu at offset %llu: available %llu, estimate %llu",
		    (ull)W, (ull)N, (ull)e, (ull)avail, (ull)est);
}

/* One packet of cost units at now: admitted or not, checked against the
 * reference; no ban (see judge). */
static inline int bk_send(struct bk *b, __u64 now, __u64 cost)
{
	__u64 next = 0, w = now / b->l.interval, prev, cur;
	int ok = limit_admit(&b->l, b->st, now, cost, &next);

	ref_check(b, now, cost, ok);
	if (!ok)
		return 0;
	b->st = next;
	ref_counts(b, w, &prev, &cur);
	b->ridx = w;
	b->rprev = prev;
	b->rcur = cur + cost;
	if (b->log && nadm < ADM_MAX) {
		adm_t[nadm] = now;
		adm_c[nadm++] = cost;
	}
	return 1;
}

/* Packets of cost units at one instant until the first rejection (at most
 * limit); returns how many were admitted. */
static inline __u64 bk_burst(struct bk *b, __u64 now, __u64 cost, __u64 limit)
{
	__u64 n = 0;

	while (n < limit && bk_send(b, now, cost))
		n++;
	return n;
}

/* The most units admitted in any half-open interval [a, a + len), over the
 * admissions t[0..n) (non-decreasing), each of c[i] units. */
static inline __u64 max_in_interval(const __u64 *t, const __u64 *c, size_t n, __u64 len)
{
	__u64 sum = 0, best = 0;
	size_t i, j = 0;

	for (i = 0; i < n; i++) {
		while (j < n && t[j] - t[i] < len)
			sum += c[j++];
		if (sum > best)
			best = sum;
		sum -= c[i];
	}
	return best;
}


/* ---- shared by the subjects ---- */

/* window_clock.c: check that the wait given at NOW for COST is exact. */
void check_wait_exact(const struct sluice_limit *l, __u64 st, __u64 now, __u64 cost,
		      const char *ctx);

/* ---- the cases, one file a subject (window_*.c) ---- */

void case_bans(void);
void case_clock_extremes(void);
void case_fw_boundary_2x_budget(void);
void case_fw_random_matches_reference(void);
void case_fw_saturation(void);
void case_fw_steady_overload(void);
void case_fresh_slot_state(void);
void case_race_model(void);
void case_rebind(void);
void case_retry_after_exact(void);
void case_sw_bound_reached(void);
void case_sw_bound_traces(void);
void case_sw_rounding_conservative(void);
void case_sw_tag_wrap(void);
void case_sw_zero_word_empty(void);

#endif /* SLUICE_TEST_WINDOW_TEST_H */
