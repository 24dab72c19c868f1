/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Window unit tests: the fixed and the sliding window under traces, against the references. */
#include "window_test.h"

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
void case_fw_boundary_2x_budget(void)
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
void case_fw_steady_overload(void)
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
void case_fw_random_matches_reference(void)
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
void case_sw_bound_traces(void)
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
void case_sw_bound_reached(void)
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
void case_sw_rounding_conservative(void)
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
