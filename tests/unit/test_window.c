/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Unit tests of the window algorithms (include/sluice/window.h) through the
 * one API the datapath uses (include/sluice/algo.h), on a fake clock in ns,
 * against reference models written here: a fixed window, the real-valued
 * counter approximation, the exact sliding log. Prints "ok NAME" or
 * "FAIL NAME: detail" per case and exits 1 if any case failed. */
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

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static const char *algo_word(__u8 algo)
{
	return algo == SLUICE_ALGO_FIXED_WINDOW	  ? "fixed-window"
	       : algo == SLUICE_ALGO_SLIDING_WINDOW ? "sliding-window"
						    : "token-bucket";
}

/* ---- limits as user/lib/store.c builds them ---- */

/* Bits of a sliding window's counts for budget n (user/lib/rule.c). */
static __u8 count_bits(__u64 n)
{
	__u8 bits = 0;

	while (bits < 64 && (n >> bits))
		bits++;
	return bits ? bits : 1;
}

static struct sluice_limit lim_fw(__u64 window, __u64 budget, __u64 ban_ns)
{
	struct sluice_limit l = {
		.interval = window, .tolerance = budget, .ban = ban_ns,
		.algo = SLUICE_ALGO_FIXED_WINDOW,
	};

	return l;
}

static struct sluice_limit lim_sw(__u64 window, __u64 budget, __u64 ban_ns)
{
	struct sluice_limit l = {
		.interval = window, .tolerance = budget, .ban = ban_ns,
		.ban_windows = sw_ban_windows(ban_ns, window),
		.algo = SLUICE_ALGO_SLIDING_WINDOW, .bits = count_bits(budget),
	};

	return l;
}

/* rate per second, burst in the same unit. */
static struct sluice_limit lim_tb(__u64 rate, __u64 burst, __u64 ban_ns)
{
	struct sluice_limit l = {
		.interval = gcra_interval_per(rate, 1),
		.ban = ban_ns ? gcra_now(ban_ns) : 0,
		.algo = SLUICE_ALGO_TOKEN_BUCKET,
	};

	l.tolerance = gcra_cost(l.interval, burst);
	return l;
}

static struct sluice_limit lim_of(__u8 algo, __u64 window, __u64 budget, __u64 ban_ns)
{
	if (algo == SLUICE_ALGO_FIXED_WINDOW)
		return lim_fw(window, budget, ban_ns);
	if (algo == SLUICE_ALGO_SLIDING_WINDOW)
		return lim_sw(window, budget, ban_ns);
	/* A token bucket of the same average: budget per window. */
	return lim_tb(budget * SEC / window ? budget * SEC / window : 1, budget, ban_ns);
}

static int would_admit(const struct sluice_limit *l, __u64 st, __u64 now, __u64 cost)
{
	__u64 next = 0;

	return limit_admit(l, st, now, cost, &next);
}

/*
 * What the XDP program does with one packet (bpf/sluice.bpf.c judge_step
 * and reject): admit and store the next word; else, when not banned and
 * the rule has a ban, store the ban.
 */
static int judge(const struct sluice_limit *l, __u64 *st, __u64 now, __u64 cost)
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
static __u64 adm_t[ADM_MAX], adm_c[ADM_MAX];
static size_t nadm;

static struct bk bk_new(struct sluice_limit l)
{
	struct bk b = { .l = l, .st = 0 };

	return b;
}

/* The reference counts as of window w. */
static void ref_counts(const struct bk *b, __u64 w, __u64 *prev, __u64 *cur)
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
static __u64 ref_sw_estimate(__u64 prev, __u64 cur, __u64 e, __u64 window)
{
	u128 weight = (((u128)(window - e) << SLUICE_SW_FRAC_BITS) + window - 1) / window;
	u128 share = ((u128)prev * weight + FRAC_ONE - 1) >> SLUICE_SW_FRAC_BITS;

	return cur + (__u64)share;
}

/* Whether the fixed window of now saturates: its end (w + 1) * N reaches
 * 2^64 - 1. */
static int fw_saturated(__u64 now, __u64 window, __u64 budget)
{
	return (u128)(now / window + 1) * budget >= (u128)U64_MAX;
}

/* Checks one decision against the reference (see struct bk); 0 on a
 * mismatch (recorded). */
static int ref_check(const struct bk *b, __u64 now, __u64 cost, int admitted)
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
static int bk_send(struct bk *b, __u64 now, __u64 cost)
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
static __u64 bk_burst(struct bk *b, __u64 now, __u64 cost, __u64 limit)
{
	__u64 n = 0;

	while (n < limit && bk_send(b, now, cost))
		n++;
	return n;
}

/* The most units admitted in any half-open interval [a, a + len), over the
 * admissions t[0..n) (non-decreasing), each of c[i] units. */
static __u64 max_in_interval(const __u64 *t, const __u64 *c, size_t n, __u64 len)
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

/* ---- fixed window ---- */

struct wn {
	__u64 window, budget;
};

static const struct wn fw_cases[] = {
	{ MS, 1 }, { MS, 3 }, { MS, 100 }, { SEC, 1 }, { SEC, 7 }, { SEC, 1000 },
	{ 1500000, 10 }, { 1000003, 17 }, { HOUR, 1 }, { HOUR, 5000 },
	{ SEC, 15000 }, { 20 * MS, 64000 },	/* bytes */
};

/* A cost per budget: packets, and byte-sized ones where the budget is bytes. */
static const __u64 fw_costs[] = { 1, 2, 64, 1500 };

/*
 * The boundary flaw, exactly: N units in the last ns of one window and N
 * in the first ns of the next, 2N in 2 ns; floor(N / cost) packets of each
 * cost, then nothing more for the rest of the window.
 */
static void case_fw_boundary_2x_budget(void)
{
	static const __u64 windows_in[] = { 1, 2, 12345, 1000000 };
	size_t i, k, s;

	for (i = 0; i < ARRAY_LEN(fw_cases); i++)
		for (k = 0; k < ARRAY_LEN(fw_costs); k++)
			for (s = 0; s < ARRAY_LEN(windows_in); s++) {
				__u64 W = fw_cases[i].window, N = fw_cases[i].budget;
				__u64 c = fw_costs[k], B = windows_in[s] * W, per = N / c;
				struct bk b = bk_new(lim_fw(W, N, 0));
				__u64 a1, a2;

				if (c > N)
					continue;
				a1 = bk_burst(&b, B - 1, c, 2 * per + 5);
				a2 = bk_burst(&b, B, c, 2 * per + 5);
				RETURN_IF_FAILED();
				CHECK_EQ(a1, per, "W=%llu N=%llu cost %llu: at the end of a window",
					 (ull)W, (ull)N, (ull)c);
				CHECK_EQ(a2, per, "W=%llu N=%llu cost %llu: at the start of the next",
					 (ull)W, (ull)N, (ull)c);
				if (N % c == 0)
					CHECK_EQ((a1 + a2) * c, 2 * N,
						 "W=%llu N=%llu cost %llu: units in 2 ns", (ull)W,
						 (ull)N, (ull)c);
				CHECK_EQ(bk_burst(&b, B + W - 1, c, 5), 0,
					 "W=%llu N=%llu cost %llu: at the window's last ns",
					 (ull)W, (ull)N, (ull)c);
				CHECK_EQ(bk_burst(&b, B + W, c, 2 * per + 5), per,
					 "W=%llu N=%llu cost %llu: the window after",
					 (ull)W, (ull)N, (ull)c);
			}
}

/* Arrivals of a trace (non-decreasing times). */
#define ARR_MAX		400000
static __u64 arr_t[ARR_MAX], arr_c[ARR_MAX];
static size_t narr;

static void arrive(__u64 t, __u64 c)
{
	if (narr < ARR_MAX) {
		arr_t[narr] = t;
		arr_c[narr++] = c;
	}
}

/* Steady arrivals from t0 for `windows` windows, f_num/f_den times the
 * budget's rate, each of cost c. */
static void trace_steady(__u64 t0, __u64 W, __u64 N, __u64 c, __u64 f_num, __u64 f_den,
			 __u64 windows)
{
	__u64 gap = (__u64)((u128)W * c * f_den / ((u128)N * f_num)), t;

	if (!gap)
		gap = 1;
	for (t = t0; t < t0 + windows * W; t += gap)
		arrive(t, c);
}

/*
 * Steady overload, 5/4, 2 and 10 times the budget's rate, from a random
 * start: every aligned window admits exactly floor(N / cost) packets, each
 * decision as the reference fixed window makes it, and any window-long
 * interval at most 2N units.
 */
static void case_fw_steady_overload(void)
{
	static const __u64 f[][2] = { { 5, 4 }, { 2, 1 }, { 10, 1 } };
	size_t i, k, m, a;

	rng_state = 0x5eed1001;
	for (i = 0; i < ARRAY_LEN(fw_cases); i++)
		for (k = 0; k < ARRAY_LEN(fw_costs); k++)
			for (m = 0; m < ARRAY_LEN(f); m++) {
				__u64 W = fw_cases[i].window, N = fw_cases[i].budget;
				__u64 c = fw_costs[k], w0 = 1 + rng_below(1000000);
				__u64 t0 = w0 * W + rng_below(W), cnt[8] = { 0 };
				struct bk b = bk_new(lim_fw(W, N, 0));

				if (c > N || N / c > 5000)
					continue;
				narr = nadm = 0;
				b.log = 1;
				trace_steady(t0, W, N, c, f[m][0], f[m][1], 7);
				for (a = 0; a < narr; a++)
					if (bk_send(&b, arr_t[a], c))
						cnt[arr_t[a] / W - w0]++;
				RETURN_IF_FAILED();
				/* Windows 1..6 are whole ones under overload. */
				for (a = 1; a < 7; a++)
					CHECK_EQ(cnt[a], N / c,
						 "W=%llu N=%llu cost %llu at %llu/%llu x: window %zu",
						 (ull)W, (ull)N, (ull)c, (ull)f[m][0], (ull)f[m][1], a);
				CHECK(max_in_interval(adm_t, adm_c, nadm, W) <= 2 * N,
				      "W=%llu N=%llu: %llu units in a window-long interval", (ull)W,
				      (ull)N, (ull)max_in_interval(adm_t, adm_c, nadm, W));
			}
}

/* Random traces and costs: every decision as the reference makes it. */
static void case_fw_random_matches_reference(void)
{
	int i, j;

	rng_state = 0x5eed1002;
	for (i = 0; i < 3000; i++) {
		__u64 W = MS + rng_below(rng_below(2) ? 10 * MS : HOUR - MS);
		__u64 N = 1 + rng_below(rng_below(2) ? 20 : 100000);
		struct bk b = bk_new(lim_fw(W, N, 0));
		__u64 t = rng_below(1ULL << 62);

		for (j = 0; j < 300; j++) {
			t += rng_below(4) ? rng_below(W / 8) : rng_below(3 * W);
			bk_send(&b, t, 1 + rng_below(rng_below(2) ? 3 : N + 2));
		}
		RETURN_IF_FAILED();
	}
}

/* ---- sliding window ---- */

static const struct wn sw_cases[] = {
	{ MS, 1 }, { MS, 2 }, { MS, 3 }, { MS, 10 }, { SEC, 7 }, { SEC, 100 },
	{ SEC, 1000 }, { 1500000, 10 }, { 1000003, 17 }, { HOUR, 1 }, { HOUR, 999 },
	{ SEC, 15000 }, { 20 * MS, 64000 },	/* bytes */
	{ MS, SLUICE_SW_BUDGET_MAX },
};

/* The exact sliding log: admitted when the units admitted in (t - W, t]
 * plus cost fit in N. Fills adm_t/adm_c. */
static void log_run(__u64 W, __u64 N)
{
	__u64 sum = 0;
	size_t a, i0 = 0;

	nadm = 0;
	for (a = 0; a < narr && nadm < ADM_MAX; a++) {
		while (i0 < nadm && arr_t[a] - adm_t[i0] >= W)
			sum -= adm_c[i0++];
		if (sum + arr_c[a] <= N) {
			adm_t[nadm] = arr_t[a];
			adm_c[nadm++] = arr_c[a];
			sum += arr_c[a];
		}
	}
}

/*
 * The sliding window's bound: in any interval of length L <= W it admits
 * at most N * (1 + L / W) units. (In window w at offset e an admission
 * needs cur + cost + prev * (W - e) / W <= N, so window w admits at most
 * N - prev * (1 - e / W) up to e; an interval from offset s of window w - 1
 * to offset e < s of window w then holds at most N + prev * e / W.) The
 * sliding log it approximates admits at most N in any window-long interval.
 */
static int check_sw_bound(__u64 W, __u64 N, const char *what)
{
	static const __u64 lens_per_1000[] = { 0, 1, 100, 250, 500, 750, 999, 1000 };
	size_t i;

	for (i = 0; i < ARRAY_LEN(lens_per_1000); i++) {
		__u64 L = lens_per_1000[i] ? W * lens_per_1000[i] / 1000 : 2;
		__u64 got = max_in_interval(adm_t, adm_c, nadm, L);

		if (!NOTE((u128)got * W <= (u128)N * (W + L),
			  "%s W=%llu N=%llu: %llu units in an interval of %llu ns, over "
			  "N * (1 + L/W) = %.1f", what, (ull)W, (ull)N, (ull)got, (ull)L,
			  (double)N * (1.0 + (double)L / (double)W)))
			return 0;
	}
	return 1;
}

/* Runs the arrivals through a sliding window (checking every decision),
 * checks its bound, then the sliding log's. */
static void run_sw_trace(__u64 W, __u64 N, const char *what)
{
	struct bk b = bk_new(lim_sw(W, N, 0));
	size_t a;

	nadm = 0;
	b.log = 1;
	for (a = 0; a < narr; a++)
		if (!bk_send(&b, arr_t[a], arr_c[a]) && case_failed)
			return;
	if (!check_sw_bound(W, N, what))
		return;
	log_run(W, N);
	NOTE(max_in_interval(adm_t, adm_c, nadm, W) <= N,
	     "%s W=%llu N=%llu: the sliding log admits %llu in a window", what, (ull)W,
	     (ull)N, (ull)max_in_interval(adm_t, adm_c, nadm, W));
}

/*
 * Adversarial and random traces against the bound: bursts at both ends of
 * every window, steady overload, random bursts, uniform random arrivals
 * with random costs, and a burst at a window's end followed by overload.
 */
static void case_sw_bound_traces(void)
{
	size_t i, p;
	__u64 k, j;

	rng_state = 0x5eed2001;
	for (i = 0; i < ARRAY_LEN(sw_cases); i++) {
		__u64 W = sw_cases[i].window, N = sw_cases[i].budget;
		__u64 c = N >= 15000 ? 1500 : 1, per = N / c;
		__u64 t0 = (1 + rng_below(1000000)) * W;

		if (per > 20000)
			c = N / 1000, per = N / c;
		for (p = 0; p < 6; p++) {
			narr = 0;
			switch (p) {
			case 0:	/* both ends of every window */
				for (k = 0; k < 8; k++) {
					for (j = 0; j < 2 * per + 2; j++)
						arrive(t0 + k * W, c);
					for (j = 0; j < 2 * per + 2; j++)
						arrive(t0 + k * W + W - 1, c);
				}
				break;
			case 1:
				trace_steady(t0 + rng_below(W), W, N, c, 5, 4, 8);
				break;
			case 2:
				trace_steady(t0, W, N, c, 10, 1, 8);
				break;
			case 3:	/* random bursts */
				for (k = 0; k < 8; k++) {
					__u64 offs[4], n = 1 + rng_below(4), q;

					for (q = 0; q < n; q++)
						offs[q] = rng_below(W);
					for (q = 1; q < n; q++)	/* sort */
						for (j = q; j > 0 && offs[j - 1] > offs[j]; j--) {
							__u64 x = offs[j];

							offs[j] = offs[j - 1];
							offs[j - 1] = x;
						}
					for (q = 0; q < n; q++)
						for (j = rng_below(2 * per + 2); j > 0; j--)
							arrive(t0 + k * W + offs[q], c);
				}
				break;
			case 4: {	/* uniform, random costs, 3x the rate */
				__u64 t = t0, n = 3 * per * 8;

				for (k = 0; k < n; k++) {
					t += rng_below(2 * W / (3 * per) + 1);
					arrive(t, 1 + rng_below(2 * c));
				}
				break;
			}
			default:	/* a window's end, then overload */
				for (j = 0; j < 2 * per + 2; j++)
					arrive(t0 + W - 1, c);
				trace_steady(t0 + W, W, N, c, 10, 1, 6);
				break;
			}
			run_sw_trace(W, N, p == 0 ? "both ends" : p <= 2 ? "steady" :
				     p == 3 ? "random bursts" : p == 4 ? "uniform" : "end+overload");
			RETURN_IF_FAILED();
		}
	}
}

/*
 * The bound is reached: N in the last ns of a window, then a sender that
 * sends exactly at each retry-after through the next window: that window
 * admits all but at most 2 units of N * e / W by each offset e, so a
 * window-long interval holds 2N - 2 or more; a fixed window's 2N in 2 ns
 * is N + 1 at most here (the first ns of the window admits nothing more).
 */
static void case_sw_bound_reached(void)
{
	static const __u64 windows[] = { MS, 1500000, SEC, HOUR };
	static const __u64 budgets[] = { 1, 2, 10, 100, 1000 };
	size_t i, k;

	for (i = 0; i < ARRAY_LEN(windows); i++)
		for (k = 0; k < ARRAY_LEN(budgets); k++) {
			__u64 W = windows[i], N = budgets[k], B = 777 * W, t, wait;
			struct bk b = bk_new(lim_sw(W, N, 0));

			nadm = 0;
			b.log = 1;
			CHECK_EQ(bk_burst(&b, B - 1, 1, 2 * N), N, "W=%llu N=%llu: at the end",
				 (ull)W, (ull)N);
			CHECK_EQ(bk_burst(&b, B, 1, 2 * N), 0, "W=%llu N=%llu: at the start",
				 (ull)W, (ull)N);
			CHECK(max_in_interval(adm_t, adm_c, nadm, 2) <= N + N * 2 / W + 1,
			      "W=%llu N=%llu: 2 ns hold more than N", (ull)W, (ull)N);
			for (t = B; t < B + 2 * W;) {
				wait = limit_wait(&b.l, b.st, t, 1);
				CHECK(wait != U64_MAX, "W=%llu N=%llu: wait never", (ull)W, (ull)N);
				t += wait;
				CHECK(bk_send(&b, t, 1), "W=%llu N=%llu: rejected at the wait's end "
				      "(+%llu)", (ull)W, (ull)N, (ull)(t - B));
				RETURN_IF_FAILED();
			}
			if (!check_sw_bound(W, N, "retry-after sender"))
				return;
			CHECK(max_in_interval(adm_t, adm_c, nadm, W) + 2 >= 2 * N,
			      "W=%llu N=%llu: the window-long maximum is %llu, under 2N - 2",
			      (ull)W, (ull)N, (ull)max_in_interval(adm_t, adm_c, nadm, W));
		}
}

/* Random states, times and costs: every decision against the real-valued
 * estimate and the documented rounding (ref_check). */
static void case_sw_rounding_conservative(void)
{
	int i;

	rng_state = 0x5eed2003;
	for (i = 0; i < 2000000; i++) {
		__u64 W = MS + rng_below(rng_below(2) ? 5 * MS : HOUR - MS);
		__u64 N = 1 + rng_below(rng_below(3) ? 3000 : SLUICE_SW_BUDGET_MAX);
		struct bk b = bk_new(lim_sw(W, N, 0));
		__u64 w = 1 + rng_below((1ULL << 62) / W), e = rng_below(W);
		__u64 prev = rng_below(N + 1), cur = rng_below(N + 1);
		__u64 cost = 1 + rng_below(rng_below(2) ? 3 : N + 1);

		switch (rng_below(4)) {
		case 0:
			e = rng_below(2) ? 0 : W - 1;
			break;
		case 1:
			prev = N;
			break;
		default:
			break;
		}
		/* The state of a bucket that counted prev in window w - 1 and
		 * cur in w, built by admissions. */
		b.st = 0;
		if (prev)
			CHECK(limit_admit(&b.l, b.st, (w - 1) * W, prev, &b.st),
			      "N=%llu: prev %llu rejected in an empty window", (ull)N, (ull)prev);
		b.ridx = w - 1;
		b.rcur = prev;
		if (cur && !bk_send(&b, w * W, cur)) {
			RETURN_IF_FAILED();
			continue;	/* cur does not fit beside prev */
		}
		bk_send(&b, w * W + e, cost);
		RETURN_IF_FAILED();
	}
}

/* ---- clock extremes ---- */

/*
 * Around window boundaries near 0, 2^63 and 2^64 - 1 ns, windows of 1 ms
 * and 1 h, budgets 1 and the maxima: bursts in the last ns of one window
 * and the first ns of the next, every decision against the reference; a
 * fixed window admits floor(N / cost) per window until S saturates and
 * nothing after (never more than N); every retry-after is exact or never.
 */
static void check_wait_exact(const struct sluice_limit *l, __u64 st, __u64 now, __u64 cost,
			     const char *ctx);

static void case_clock_extremes(void)
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
static void case_fw_saturation(void)
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
static void case_sw_zero_word_empty(void)
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
static void case_sw_tag_wrap(void)
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

static void check_wait_exact(const struct sluice_limit *l, __u64 st, __u64 now, __u64 cost,
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
static void case_retry_after_exact(void)
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

/* ---- bans ---- */

/*
 * limit_ban_state at now bans until the documented end E: the token
 * bucket's now + ban; a window's the start of the window now + ban falls
 * in. limit_banned holds exactly before E, limit_ban_left is E - t, nothing
 * is admitted before E; then a fixed window's window E is spent (admits
 * from E + W on), a sliding window's reads full in it and prev = N in the
 * next; a token bucket admits after its slack.
 */
static void case_bans(void)
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

/*
 * limit_rebind, as its comment says: a new policy that does not limit
 * leaves the word; an old one known not to limit gives 0 (nothing spent);
 * a token bucket to a token bucket is gcra_rebind; the same window
 * algorithm and window keeps the counts, clamped to the new budget; any
 * other change keeps the share of the capacity left, rounded down; an
 * unknown old limit starts every algorithm spent at `at`.
 */
static void case_rebind(void)
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

		/* Old limit unknown. */
		r = limit_rebind(st, at, 0, SLUICE_ACT_LIMIT, &ol, SLUICE_ACT_LIMIT, &nl);
		if (na == SLUICE_ALGO_TOKEN_BUCKET) {
			CHECK_EQ(r, gcra_tat_at(gcra_now(at), nl.tolerance),
				 "%s: unknown old, token bucket starts spent", ctx);
		} else {
			CHECK_EQ(limit_available(&nl, r, at), 0, "%s: unknown old", ctx);
			CHECK(!limit_banned(&nl, r, at), "%s: unknown old bans", ctx);
			CHECK_EQ(limit_wait(&nl, r, at, 1),
				 na == SLUICE_ALGO_FIXED_WINDOW ? (at / nl.interval + 1) *
				 nl.interval - at : limit_wait(&nl, sw_make(at / nl.interval, 0,
									   nl.tolerance, nl.bits), at, 1),
				 "%s: unknown old, wait", ctx);
		}

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

/* ---- race model ---- */

/*
 * Two CPUs admit packets into one word around a window boundary, each
 * attempt in three steps as bpf/sluice.bpf.c judge_step takes them: read
 * the word; read the clock and compute (limit_admit); compare-and-swap.
 * Every interleaving of the two CPUs' steps is run, with the boundary
 * between any two consecutive steps (step k reads the clock B + k - j).
 * After each, the admissions in CAS order are replayed on the reference
 * counts: none may fall in a window before the last one's (a window reset
 * twice, or rolled back), none may exceed the budget, and the word must
 * hold the replayed counts (no count lost). The same model with the clock
 * read before the word, or a plain store for the CAS, must lose counts.
 */
enum race_mode { RACE_CAS, RACE_CLOCK_FIRST, RACE_STORE };

#define RACE_PKTS	2
#define RACE_STEPS	40

struct cpu {
	int pc;		/* 0 read, 1 compute, 2 CAS; 3 done */
	int pkt;
	int clock_read;
	__u64 seen, now, next;
};

struct race {
	const struct sluice_limit *l;
	enum race_mode mode;
	__u64 B, j, st0;
	__u64 word;
	int step;
	struct cpu cpu[2];
	__u64 at[2 * RACE_PKTS], cost[2 * RACE_PKTS];
	int nadm;
	int bad;	/* a lost count found */
	__u64 runs;
};

static __u64 race_clock(const struct race *r)
{
	return r->B + (__u64)r->step - r->j;
}

/* Replays the admissions on reference counts; 1 if all is well. */
static int race_verify(const struct race *r)
{
	const struct sluice_limit *l = r->l;
	__u64 W = l->interval, N = l->tolerance, idx, prev, cur, last, p, c;
	int i;

	/* Before B the word holds st0's counts, read through the API. */
	idx = (r->B - 1) / W;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW) {
		prev = 0;
		cur = fw_count(r->st0, r->B - 1, W, N);
	} else {
		sw_counts(r->st0, idx, l->bits, &prev, &cur);
	}
	for (i = 0; i < r->nadm; i++) {
		__u64 w = r->at[i] / W;

		if (w < idx)
			return 0;	/* an admission in a window already left */
		if (w == idx + 1) {
			prev = cur;
			cur = 0;
		} else if (w > idx + 1) {
			prev = cur = 0;
		}
		idx = w;
		cur += r->cost[i];
		if (cur > N)
			return 0;
	}
	if (!r->nadm)
		return r->word == r->st0;
	last = idx * W;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_count(r->word, last, W, N) == cur;
	sw_counts(r->word, idx, l->bits, &p, &c);
	return p == prev && c == cur;
}

static void race_explore(struct race *r)
{
	int k, progressed = 0;

	if (r->bad || r->step >= RACE_STEPS)
		return;
	for (k = 0; k < 2; k++) {
		struct cpu save = r->cpu[k];
		__u64 word = r->word;
		int nadm = r->nadm;
		struct cpu *c = &r->cpu[k];

		if (c->pc == 3)
			continue;
		progressed = 1;
		if (r->mode == RACE_CLOCK_FIRST && c->pc == 0 && !c->clock_read) {
			c->now = race_clock(r);
			c->clock_read = 1;
		} else if (c->pc == 0) {
			c->seen = r->word;
			c->pc = 1;
		} else if (c->pc == 1) {
			if (r->mode != RACE_CLOCK_FIRST)
				c->now = race_clock(r);
			if (limit_admit(r->l, c->seen, c->now, 1, &c->next)) {
				c->pc = 2;
			} else {	/* rejected: the next packet */
				c->pc = ++c->pkt < RACE_PKTS ? 0 : 3;
				c->clock_read = 0;
			}
		} else {
			if (r->mode == RACE_STORE || r->word == c->seen) {
				r->word = c->next;
				r->at[r->nadm] = c->now;
				r->cost[r->nadm++] = 1;
				c->pc = ++c->pkt < RACE_PKTS ? 0 : 3;
			} else {
				c->pc = 0;	/* lost the race: judge again */
			}
			c->clock_read = 0;
		}
		r->step++;
		race_explore(r);
		r->step--;
		r->cpu[k] = save;
		r->word = word;
		r->nadm = nadm;
		if (r->bad)
			return;
	}
	if (!progressed) {
		r->runs++;
		if (!race_verify(r))
			r->bad = 1;
	}
}

/* Runs every interleaving for every boundary position; returns whether a
 * lost count was found, and the count of interleavings in *runs. */
static int race_all(const struct sluice_limit *l, enum race_mode mode, __u64 st0, __u64 B,
		    __u64 *runs)
{
	struct race r = { .l = l, .mode = mode, .B = B, .st0 = st0 };

	for (r.j = 0; r.j <= 16 && !r.bad; r.j++) {
		memset(r.cpu, 0, sizeof(r.cpu));
		r.word = st0;
		r.step = 0;
		r.nadm = 0;
		race_explore(&r);
	}
	*runs += r.runs;
	return r.bad;
}

static void case_race_model(void)
{
	static const __u64 budgets[] = { 1, 2, 3, 4 };
	size_t k, s;
	int a;
	__u64 runs = 0, broken_runs = 0;
	int clock_first_caught = 0, store_caught = 0;

	for (a = SLUICE_ALGO_FIXED_WINDOW; a <= SLUICE_ALGO_SLIDING_WINDOW; a++)
		for (k = 0; k < ARRAY_LEN(budgets); k++) {
			__u64 N = budgets[k], W = MS, B = 1234 * W;
			struct sluice_limit l = lim_of((__u8)a, W, N, 0);
			__u64 states[6];
			size_t ns = 0;

			/* Empty; partly and fully spent in the window before B. */
			states[ns++] = 0;
			for (s = 1; s <= N; s++) {
				__u64 st = 0, n;

				for (n = 0; n < s; n++)
					CHECK(judge(&l, &st, B - W + n, 1), "setup");
				states[ns++] = st;
			}
			for (s = 0; s < ns; s++) {
				CHECK(!race_all(&l, RACE_CAS, states[s], B, &runs),
				      "%s N=%llu word %llu: a count lost with CAS",
				      algo_word((__u8)a), (ull)N, (ull)states[s]);
				clock_first_caught |= race_all(&l, RACE_CLOCK_FIRST, states[s], B,
							       &broken_runs);
				store_caught |= race_all(&l, RACE_STORE, states[s], B, &broken_runs);
			}
		}
	CHECK(runs > 10000, "only %llu interleavings", (ull)runs);
	CHECK(clock_first_caught, "reading the clock before the word loses nothing");
	CHECK(store_caught, "a plain store for the CAS loses nothing");
}

static const struct test_case cases[] = {
	{ "fw_boundary_2x_budget", case_fw_boundary_2x_budget },
	{ "fw_steady_overload", case_fw_steady_overload },
	{ "fw_random_matches_reference", case_fw_random_matches_reference },
	{ "fw_saturation", case_fw_saturation },
	{ "sw_bound_traces", case_sw_bound_traces },
	{ "sw_bound_reached", case_sw_bound_reached },
	{ "sw_rounding_conservative", case_sw_rounding_conservative },
	{ "sw_zero_word_empty", case_sw_zero_word_empty },
	{ "sw_tag_wrap", case_sw_tag_wrap },
	{ "clock_extremes", case_clock_extremes },
	{ "retry_after_exact", case_retry_after_exact },
	{ "bans", case_bans },
	{ "rebind", case_rebind },
	{ "race_model", case_race_model },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_window", cases, ARRAY_LEN(cases), argc, argv);
}
