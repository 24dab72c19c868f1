// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The window algorithms (--algo fixed-window, --algo sliding-window) in the
 * XDP program through BPF_PROG_TEST_RUN with crafted frames, their policy
 * committed by the CLI's own code: exact admission counts per window and
 * across a boundary, the sliding estimate in the next window, --per keying,
 * --ban, --monitor, --bytes, and policy changes on a live bucket. Windows
 * align to CLOCK_MONOTONIC, the clock the program reads (bpf_ktime_get_ns):
 * a case that needs to stay inside a window first waits for room, and one
 * whose clock readings show it missed its window is run again. */
#include <time.h>
#include <unistd.h>
#include "fixture.h"
#include "../lib/harness.h"
#include "sluice/algo.h"
#include "sluice/window.h"
#include "sluice_firsthour.skel.h"

#define MS		1000000ULL
#define HOUR		(3600ULL * SLUICE_NS_PER_SEC)
#define TIMING_TRIES	4	/* runs of a case whose timing the machine missed */

static struct fixture fx;

/* A fresh program's maps for each case (each program loaded once while
 * the cases keep to it: fixture_fresh). */
static int setup_with(skel_open_fn open_skel, const char *policy)
{
	if (fixture_fresh(&fx, 0, open_skel))
		return -1;
	return fixture_policy(&fx, policy);
}

static int setup(const char *policy)
{
	return setup_with(sluice_bpf__open, policy);
}

/* The program on clocks that read as the first hour after boot
 * (tests/bpf/sluice_firsthour.bpf.c). */
static struct sluice_bpf *open_first_hour(void)
{
	return (struct sluice_bpf *)sluice_firsthour_bpf__open();
}

static __u64 reason_delta(const struct sluice_counter *before, const struct sluice_counter *after,
			  __u32 reason)
{
	return after[reason].packets - before[reason].packets;
}

static void sleep_until(__u64 t)
{
	__u64 now;

	while ((now = mono_now_ns()) < t) {
		struct timespec ts = { .tv_sec = (time_t)((t - now) / SLUICE_NS_PER_SEC),
				       .tv_nsec = (long)((t - now) % SLUICE_NS_PER_SEC) };

		nanosleep(&ts, NULL);
	}
}

/* Sleep until `off` ns into the next window of W; returns that window. */
static __u64 next_window(__u64 window, __u64 off)
{
	__u64 w = win_index(mono_now_ns(), window) + 1;

	sleep_until(w * window + off);
	return w;
}

/* Make sure at least `need` ns of the current window are left (for the
 * 1 h windows: waits only in the last `need` ns of an hour). */
static void room_in_window(__u64 window, __u64 need)
{
	__u64 now = mono_now_ns();

	if (window - now % window < need)
		next_window(window, MS);
}

/* Local CHECK for cases that return whether their timing held: 1 done
 * (passed or failed), 0 missed (run again). */
#define TCHECK(cond, ...) CHECK_OR(1, cond, __VA_ARGS__)
#define MISSED(cond, what)                                                   \
	do {                                                                 \
		if (cond) {                                                  \
			printf("  %s: %s, again\n", check_case, what);       \
			return 0;                                            \
		}                                                            \
	} while (0)

static void timed(int (*fn)(void))
{
	for (int i = 0; i < TIMING_TRIES; i++)
		if (fn())
			return;
	printf("FAIL %s: the machine missed the case's timing %d times\n", check_case,
	       TIMING_TRIES);
	check_failures++;
}

/*
 * fixed-window: N per window, exactly, and exactly 2N across a boundary in
 * less than a window (its boundary flaw): N at the end of window w, N at
 * the start of w + 1. W = 200 ms, N = 10.
 */
static int try_fixed_boundary(void)
{
	const __u64 W = 200 * MS, N = 10;
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct frame f;
	__u64 w, t0, t1, t2, t3, a, b;

	TCHECK(setup("limit default --rate 50 --algo fixed-window --window 200ms") == 0, "setup");
	frame_udp_from(&f, "198.18.0.10");
	w = next_window(W, 150 * MS);	/* 50 ms left in window w */
	counters_now(&fx, before);
	t0 = mono_now_ns();
	a = send_n_frames(&fx, &f, 3 * N);
	t1 = mono_now_ns();
	MISSED(win_index(t0, W) != w || win_index(t1, W) != w, "the first burst left its window");
	sleep_until((w + 1) * W + MS);
	t2 = mono_now_ns();
	b = send_n_frames(&fx, &f, 3 * N);
	t3 = mono_now_ns();
	MISSED(win_index(t2, W) != w + 1 || win_index(t3, W) != w + 1,
	       "the second burst left its window");
	counters_now(&fx, after);
	TCHECK(a == N, "%llu of %llu passed at the end of a window, want the budget %llu",
	       (unsigned long long)a, (unsigned long long)(3 * N), (unsigned long long)N);
	TCHECK(b == N, "%llu of %llu passed at the start of the next, want %llu",
	       (unsigned long long)b, (unsigned long long)(3 * N), (unsigned long long)N);
	TCHECK(t3 - t0 < W, "the two bursts took %llu ms, not less than a window",
	       (unsigned long long)((t3 - t0) / MS));
	TCHECK(reason_delta(before, after, SLUICE_R_WITHIN_LIMIT) == 2 * N &&
	       reason_delta(before, after, SLUICE_R_RATE_LIMITED) == 4 * N,
	       "within %llu, rate limited %llu; want %llu and %llu",
	       (unsigned long long)reason_delta(before, after, SLUICE_R_WITHIN_LIMIT),
	       (unsigned long long)reason_delta(before, after, SLUICE_R_RATE_LIMITED),
	       (unsigned long long)(2 * N), (unsigned long long)(4 * N));
	return 1;
}

static void fixed_window_exact_and_boundary(void)
{
	timed(try_fixed_boundary);
}

/*
 * sliding-window: a full window w (N admitted of 3N), then at offset e
 * into w + 1 the source gets what the estimate leaves: N - ceil(N (W-e)/W)
 * plus the header's rounding, so between floor(N e0 / W) - 1 and
 * floor(N e1 / W), e0 and e1 the offsets before and after the burst. W =
 * 400 ms, N = 100, tried at e = W/4, W/2 and 3W/4 of three windows.
 */
static int sw_offset_case(__u64 frac_num)
{
	const __u64 W = 400 * MS, N = 100;
	struct frame f;
	__u64 w, t0, t1, a, e0, e1, lo, hi;

	TCHECK(setup("limit default --rate 250 --algo sliding-window --window 400ms") == 0,
	       "setup");
	frame_udp_from(&f, "198.18.0.11");
	w = next_window(W, 2 * MS);
	t0 = mono_now_ns();
	a = send_n_frames(&fx, &f, 3 * N);
	t1 = mono_now_ns();
	MISSED(win_index(t0, W) != w || win_index(t1, W) != w, "the full window left its window");
	TCHECK(a == N, "%llu passed in a fresh window, want the budget %llu",
	       (unsigned long long)a, (unsigned long long)N);
	sleep_until((w + 1) * W + W * frac_num / 4);
	t0 = mono_now_ns();
	a = send_n_frames(&fx, &f, 3 * N);
	t1 = mono_now_ns();
	MISSED(win_index(t0, W) != w + 1 || win_index(t1, W) != w + 1,
	       "the second burst left its window");
	e0 = t0 - (w + 1) * W;
	e1 = t1 - (w + 1) * W;
	lo = N * e0 / W;
	lo = lo ? lo - 1 : 0;
	hi = N * e1 / W;
	printf("  at %llu..%llu ms into the next window: %llu passed (bounds %llu..%llu)\n",
	       (unsigned long long)(e0 / MS), (unsigned long long)(e1 / MS),
	       (unsigned long long)a, (unsigned long long)lo, (unsigned long long)hi);
	TCHECK(a >= lo && a <= hi, "%llu passed at %llu..%llu ns into the window, want %llu..%llu",
	       (unsigned long long)a, (unsigned long long)e0, (unsigned long long)e1,
	       (unsigned long long)lo, (unsigned long long)hi);
	return 1;
}

static int try_sw_quarter(void)
{
	return sw_offset_case(1);
}

static int try_sw_half(void)
{
	return sw_offset_case(2);
}

static int try_sw_three_quarters(void)
{
	return sw_offset_case(3);
}

static void sliding_window_estimate(void)
{
	timed(try_sw_quarter);
	timed(try_sw_half);
	timed(try_sw_three_quarters);
}

/* --per /24 and --per rule with each window algorithm: two sources of the
 * /24 (or anywhere in the rule) share one budget; 1 h windows. */
static void window_keying(void)
{
	static const char *const algos[] = { "fixed-window", "sliding-window" };
	char policy[160];
	struct frame f;
	__u64 a, b;

	for (int i = 0; i < 2; i++) {
		snprintf(policy, sizeof(policy),
			 "limit set 198.18.5.0/24 --rate 10/h --algo %s --per /24;"
			 "limit set 198.18.64.0/18 --rate 7/h --algo %s --per rule", algos[i],
			 algos[i]);
		room_in_window(HOUR, 10 * SLUICE_NS_PER_SEC);
		CHECK(setup(policy) == 0, "setup %s", policy);
		frame_udp_from(&f, "198.18.5.1");
		a = send_n_frames(&fx, &f, 8);
		frame_udp_from(&f, "198.18.5.2");
		b = send_n_frames(&fx, &f, 8);
		CHECK(a == 8 && b == 2, "%s --per /24: %llu then %llu passed, want 8 then 2",
		      algos[i], (unsigned long long)a, (unsigned long long)b);
		frame_udp_from(&f, "198.18.6.1");
		CHECK(send_n_frames(&fx, &f, 12) == 12, "%s: another /24 is not in the rule", algos[i]);
		frame_udp_from(&f, "198.18.64.1");
		a = send_n_frames(&fx, &f, 5);
		frame_udp_from(&f, "198.18.127.9");
		b = send_n_frames(&fx, &f, 5);
		CHECK(a == 5 && b == 2, "%s --per rule: %llu then %llu passed, want 5 then 2",
		      algos[i], (unsigned long long)a, (unsigned long long)b);
	}
}

/*
 * --ban with each window algorithm: W = 100 ms, N = 5, --ban 300 ms. The
 * packet over the budget is rate limited and bans; packets meanwhile are
 * banned. A fixed window's ban is reported until the window that now + ban
 * falls in begins, and that window is spent; a sliding window's counts that
 * window and the next as full. After those the source has its budget.
 */
static int ban_case(int sliding)
{
	const __u64 W = 100 * MS, N = 5, BAN = 300 * MS;
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct frame f;
	__u64 w, t0, t1, a, over, during, rejected_at, free_w;

	TCHECK(setup(sliding ? "limit default --rate 50 --algo sliding-window --window 100ms "
			       "--ban 300ms"
			     : "limit default --rate 50 --algo fixed-window --window 100ms "
			       "--ban 300ms") == 0, "setup");
	frame_udp_from(&f, "198.18.0.12");
	w = next_window(W, 2 * MS);
	counters_now(&fx, before);
	t0 = mono_now_ns();
	a = send_n_frames(&fx, &f, N);
	rejected_at = mono_now_ns();
	over = send_n_frames(&fx, &f, 1);
	t1 = mono_now_ns();
	during = send_n_frames(&fx, &f, 10);
	/* the ban's window is the one now + ban falls in, now read between
	 * rejected_at and t1 */
	MISSED(win_index(rejected_at + BAN, W) != win_index(t1 + BAN, W),
	       "the ban's window is not known");
	MISSED(win_index(t0, W) != w || win_index(t1, W) != w, "the budget left its window");
	TCHECK(a == N, "%llu of the budget %llu passed", (unsigned long long)a,
	       (unsigned long long)N);
	TCHECK(over == 0, "the packet over the budget passed");
	TCHECK(during == 0, "%llu passed while banned", (unsigned long long)during);
	/* a window later, still banned */
	sleep_until((w + 1) * W + 50 * MS);
	t0 = mono_now_ns();
	during = send_n_frames(&fx, &f, 10);
	t1 = mono_now_ns();
	MISSED(win_index(t0, W) != w + 1 || win_index(t1, W) != w + 1,
	       "the check a window later left its window");
	TCHECK(during == 0, "%llu passed while banned, a window later",
	       (unsigned long long)during);
	counters_now(&fx, after);
	TCHECK(reason_delta(before, after, SLUICE_R_RATE_LIMITED) == 1 &&
	       reason_delta(before, after, SLUICE_R_BANNED) == 20,
	       "rate limited %llu, banned %llu; want 1 and 20",
	       (unsigned long long)reason_delta(before, after, SLUICE_R_RATE_LIMITED),
	       (unsigned long long)reason_delta(before, after, SLUICE_R_BANNED));
	/* free from the window after the spent one (fixed), or the one after
	 * that (sliding: the spent window is prev there) */
	free_w = win_index(rejected_at + BAN, W) + (sliding ? 2 : 1);
	sleep_until(free_w * W + 2 * MS);
	t0 = mono_now_ns();
	a = send_n_frames(&fx, &f, 2 * N);
	t1 = mono_now_ns();
	MISSED(win_index(t0, W) != free_w || win_index(t1, W) != free_w,
	       "the burst after the ban left its window");
	TCHECK(a == N, "%llu passed after the ban, want the budget %llu", (unsigned long long)a,
	       (unsigned long long)N);
	return 1;
}

static int try_ban_fixed(void)
{
	return ban_case(0);
}

static int try_ban_sliding(void)
{
	return ban_case(1);
}

static void ban_with_windows(void)
{
	timed(try_ban_fixed);
	timed(try_ban_sliding);
}

/* --monitor: every packet passes, the would-drops as monitored, the budget
 * as within_limit; 1 h windows. */
static void monitor_with_windows(void)
{
	static const char *const algos[] = { "fixed-window", "sliding-window" };
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	char policy[128];
	struct frame f;

	for (int i = 0; i < 2; i++) {
		snprintf(policy, sizeof(policy), "limit default --rate 10/h --algo %s --monitor",
			 algos[i]);
		room_in_window(HOUR, 10 * SLUICE_NS_PER_SEC);
		CHECK(setup(policy) == 0, "setup");
		frame_udp_from(&f, "198.18.0.13");
		counters_now(&fx, before);
		CHECK(send_n_frames(&fx, &f, 25) == 25, "%s --monitor dropped a packet", algos[i]);
		counters_now(&fx, after);
		CHECK(reason_delta(before, after, SLUICE_R_WITHIN_LIMIT) == 10 &&
		      reason_delta(before, after, SLUICE_R_MONITORED) == 15,
		      "%s: within %llu, monitored %llu; want 10 and 15", algos[i],
		      (unsigned long long)reason_delta(before, after, SLUICE_R_WITHIN_LIMIT),
		      (unsigned long long)reason_delta(before, after, SLUICE_R_MONITORED));
	}
}

/* Whether src's bucket is banned now by the live policy's entry at its
 * bound index: what `ban list` reads (cmd/ban.c, read_bans). */
static int bucket_banned(const char *src)
{
	struct sluice_config cfg;
	struct sluice_policy sp;
	struct sluice_bucket b;
	struct sluice_limit l;

	if (bucket_of(&fx, src, &b))
		return -1;
	live_config(&fx.m, &cfg);
	if (policy_entry(&fx.m, SLUICE_GEN_SLOT(cfg.gen_slot), SLUICE_BOUND_IDX(b.bound), &sp))
		return -1;
	limit_of(&sp, &l);
	return limit_ban_left(&l, b.tat, mono_now_ns()) != 0;
}

/*
 * --monitor with --ban changes nothing, now or later: a source flooded
 * past its burst passes as monitored, and its bucket records no ban (ban
 * list shows none); once its budget is back, the rule without --monitor
 * (the same limit, so the bucket is kept as it is) admits it. Each
 * algorithm, budget 3 at 10/s or 3 a 100 ms window, --ban 1h.
 */
static void monitor_ban_never_enforced(void)
{
	static const char *const rules[] = {
		"limit set 198.18.0.0/16 --rate 30 --burst 3 --ban 1h",
		"limit set 198.18.0.0/16 --rate 30 --algo fixed-window --window 100ms --ban 1h",
		"limit set 198.18.0.0/16 --rate 30 --algo sliding-window --window 100ms --ban 1h",
	};
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	const char *rule;
	char policy[160];
	struct frame f;
	__u64 a;

	for (int i = 0; i < 3; i++) {
		rule = rules[i];
		snprintf(policy, sizeof(policy), "%s --monitor", rule);
		CHECK(setup(policy) == 0, "setup %s", policy);
		frame_udp_from(&f, "198.18.0.17");
		counters_now(&fx, before);
		CHECK(send_n_frames(&fx, &f, 10) == 10, "'%s' dropped a packet", policy);
		counters_now(&fx, after);
		CHECK(reason_delta(before, after, SLUICE_R_MONITORED) >= 1 &&
		      reason_delta(before, after, SLUICE_R_BANNED) == 0,
		      "'%s': monitored %llu, banned %llu", policy,
		      (unsigned long long)reason_delta(before, after, SLUICE_R_MONITORED),
		      (unsigned long long)reason_delta(before, after, SLUICE_R_BANNED));
		CHECK(bucket_banned("198.18.0.17") == 0,
		      "'%s': the bucket records a ban in the dry run (ban list shows it)", policy);
		/* the budget back: 3 at 30/s in 100 ms; a window's two windows on */
		sleep_until(mono_now_ns() + 300 * MS);
		CHECK(fixture_policy(&fx, rule) == 0, "%s", rule);
		counters_now(&fx, before);
		a = send_n_frames(&fx, &f, 3);
		counters_now(&fx, after);
		CHECK(a == 3, "'%s' after the dry run: %llu of 3 passed, %llu dropped as banned",
		      rule, (unsigned long long)a,
		      (unsigned long long)reason_delta(before, after, SLUICE_R_BANNED));
	}
}

/* --bytes with fixed-window: the budget is 1000 bytes a window. */
static void bytes_fixed_window(void)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct frame f;

	room_in_window(HOUR, 10 * SLUICE_NS_PER_SEC);
	CHECK(setup("limit default --bytes 1000/h --algo fixed-window") == 0, "setup");
	frame_l4(&f, "198.18.0.14", IPPROTO_UDP, sizeof(struct udphdr), 300);
	counters_now(&fx, before);
	CHECK(send_n_frames(&fx, &f, 5) == 3, "300-byte frames in a 1000-byte window: want 3");
	counters_now(&fx, after);
	CHECK(after[SLUICE_R_WITHIN_LIMIT].bytes - before[SLUICE_R_WITHIN_LIMIT].bytes == 900,
	      "passed bytes %llu", (unsigned long long)(after[SLUICE_R_WITHIN_LIMIT].bytes -
							before[SLUICE_R_WITHIN_LIMIT].bytes));
	/* 100 bytes are left: a 100-byte frame fills the window exactly
	 * (admitted while count + cost <= N), a second does not fit */
	frame_l4(&f, "198.18.0.14", IPPROTO_UDP, sizeof(struct udphdr), 100);
	CHECK(send_n_frames(&fx, &f, 2) == 1, "a 100-byte frame in the last 100 bytes: want 1");
	frame_udp_from(&f, "198.18.0.14");
	CHECK(send_n_frames(&fx, &f, 1) == 0, "a %zu-byte frame in a spent window", f.len);
	counters_now(&fx, after);
	CHECK(after[SLUICE_R_WITHIN_LIMIT].bytes - before[SLUICE_R_WITHIN_LIMIT].bytes == 1000,
	      "passed bytes %llu, want the budget of 1000",
	      (unsigned long long)(after[SLUICE_R_WITHIN_LIMIT].bytes -
				   before[SLUICE_R_WITHIN_LIMIT].bytes));
}

/*
 * Policy changes on a live bucket (1 h windows, the rule's CIDR kept): the
 * source keeps the share of its capacity it had left, rounded down, and no
 * more. Token bucket --burst 10, 4 sent: 6 left; to fixed-window N = 20:
 * 6/10 of 20 = 12; 5 sent, 7 of 20 left; to sliding-window N = 40: 14.
 */
static void policy_change_carries_share(void)
{
	struct frame f;

	room_in_window(HOUR, 20 * SLUICE_NS_PER_SEC);
	CHECK(setup("limit set 198.18.0.0/16 --rate 1/h --burst 10") == 0, "setup");
	frame_udp_from(&f, "198.18.0.15");
	CHECK(send_n_frames(&fx, &f, 4) == 4, "token bucket");
	CHECK(fixture_policy(&fx, "limit set 198.18.0.0/16 --rate 20/h --algo fixed-window") == 0,
	      "to fixed-window");
	CHECK(send_n_frames(&fx, &f, 5) == 5, "fixed-window after the change");
	CHECK(fixture_policy(&fx, "limit set 198.18.0.0/16 --rate 40/h --algo sliding-window") ==
	      0, "to sliding-window");
	{
		__u64 a = send_n_frames(&fx, &f, 50);

		CHECK(a == 14, "%llu passed after token bucket (6 of 10 left) -> fixed-window 20 "
		      "(12, 5 sent) -> sliding-window 40: want 7/20 of 40 = 14",
		      (unsigned long long)a);
	}
	/* the fixed-window step alone, to the end */
	CHECK(setup("limit set 198.18.0.0/16 --rate 1/h --burst 10") == 0, "setup");
	CHECK(send_n_frames(&fx, &f, 4) == 4, "token bucket");
	CHECK(fixture_policy(&fx, "limit set 198.18.0.0/16 --rate 20/h --algo fixed-window") == 0,
	      "to fixed-window");
	{
		__u64 a = send_n_frames(&fx, &f, 50);

		CHECK(a == 12, "%llu passed after token bucket (6 of 10 left) -> fixed-window 20: "
		      "want 12", (unsigned long long)a);
	}
}

/*
 * `limit set` of the same rule with a bigger --rate keeps the window's
 * count: 5 of 20 used, then 30 a window: 25 left (the running count moves
 * from w x 20 + 5 to w x 30 + 5, so the conversion changes the word and
 * adds no unit of its own). Likewise a sliding window (20 -> 40): 35. And
 * a budget lowered below the count leaves nothing.
 */
static void rate_raise_keeps_count(void)
{
	struct frame f;
	__u64 a, want;

	room_in_window(HOUR, 20 * SLUICE_NS_PER_SEC);
	CHECK(setup("limit set 198.18.0.0/16 --rate 20/h --algo fixed-window") == 0, "setup");
	frame_udp_from(&f, "198.18.0.16");
	CHECK(send_n_frames(&fx, &f, 5) == 5, "fixed-window");
	CHECK(fixture_policy(&fx, "limit set 198.18.0.0/16 --rate 30/h --algo fixed-window") == 0,
	      "raise");
	a = send_n_frames(&fx, &f, 50);
	/* Every conversion must move the state word (a stale CAS must fail);
	 * in window 0 (a machine up for less than an hour, CLOCK_MONOTONIC)
	 * the word holds no tag, the re-encoded counts equal the old ones, and
	 * the conversion moves it by its one unit of debt (algo.h). */
	want = mono_now_ns() / HOUR ? 25 : 24;
	CHECK(a == want, "fixed-window 20 -> 30 with 5 used: %llu passed, want 30 - 5 = %llu",
	      (unsigned long long)a, (unsigned long long)want);

	CHECK(setup("limit set 198.18.0.0/16 --rate 20/h --algo sliding-window") == 0, "setup");
	CHECK(send_n_frames(&fx, &f, 5) == 5, "sliding-window");
	CHECK(fixture_policy(&fx, "limit set 198.18.0.0/16 --rate 40/h --algo sliding-window") ==
	      0, "raise");
	a = send_n_frames(&fx, &f, 50);
	/* Likewise: in window 0 its tag is 0 and the counts fit both widths */
	want = mono_now_ns() / HOUR ? 35 : 34;
	CHECK(a == want, "sliding-window 20 -> 40 with 5 used: %llu passed, want 40 - 5 = %llu",
	      (unsigned long long)a, (unsigned long long)want);
	/* and lowering below the count leaves nothing */
	CHECK(setup("limit set 198.18.0.0/16 --rate 20/h --algo fixed-window") == 0, "setup");
	CHECK(send_n_frames(&fx, &f, 15) == 15, "fixed-window");
	CHECK(fixture_policy(&fx, "limit set 198.18.0.0/16 --rate 10/h --algo fixed-window") == 0,
	      "lower");
	a = send_n_frames(&fx, &f, 10);
	CHECK(a == 0, "fixed-window 20 -> 10 with 15 used: %llu passed, want 0",
	      (unsigned long long)a);
}

/*
 * New sources in the first hour after boot, window 0 of a 1 h window (on
 * the program's clock, CLOCK_MONOTONIC modulo 1 h, whatever the machine's
 * uptime): a source gets its whole budget there as in any other window.
 * The source table claimed a slot for a new source by writing 1 to its
 * word, which a fixed window read as one unit spent in window 0 (9 of 10
 * passed; a 100-byte frame did not fit in the last 100 bytes) and a
 * sliding window with --ban as a ban ahead of now (every packet banned).
 */
struct first_hour_case {
	const char *policy;
	__u64 within, limited, banned;	/* of 25 frames */
};

static void new_sources_first_hour(void)
{
	static const struct first_hour_case cases[] = {
		{ "limit default --rate 10/h --algo fixed-window", 10, 15, 0 },
		{ "limit default --rate 10/h --algo fixed-window --ban 1h", 10, 1, 14 },
		{ "limit default --rate 10/h --algo sliding-window", 10, 15, 0 },
		{ "limit default --rate 10/h --algo sliding-window --ban 1h", 10, 1, 14 },
		{ "limit default --rate 10/h --burst 10", 10, 15, 0 },
	};
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct frame f;
	char src[32];

	/* One program for every policy (a load takes seconds on a busy
	 * machine), a source never seen before for each. */
	room_in_window(HOUR, 30 * SLUICE_NS_PER_SEC);
	CHECK(setup_with(open_first_hour, "limit default --rate 10/h --burst 10") == 0, "setup");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct first_hour_case *c = &cases[i];

		CHECK(fixture_policy(&fx, c->policy) == 0, "%s", c->policy);
		snprintf(src, sizeof(src), "198.18.0.%zu", 20 + i);
		frame_udp_from(&f, src);
		counters_now(&fx, before);
		send_n_frames(&fx, &f, 25);
		counters_now(&fx, after);
		CHECK(reason_delta(before, after, SLUICE_R_WITHIN_LIMIT) == c->within &&
		      reason_delta(before, after, SLUICE_R_RATE_LIMITED) == c->limited &&
		      reason_delta(before, after, SLUICE_R_BANNED) == c->banned,
		      "%s, a new source in window 0: within %llu, rate limited %llu, banned %llu; "
		      "want %llu, %llu, %llu", c->policy,
		      (unsigned long long)reason_delta(before, after, SLUICE_R_WITHIN_LIMIT),
		      (unsigned long long)reason_delta(before, after, SLUICE_R_RATE_LIMITED),
		      (unsigned long long)reason_delta(before, after, SLUICE_R_BANNED),
		      (unsigned long long)c->within, (unsigned long long)c->limited,
		      (unsigned long long)c->banned);
	}
	/* bytes: 3 frames of 300 in 1000, then one of 100 fills it exactly */
	CHECK(fixture_policy(&fx, "limit default --bytes 1000/h --algo fixed-window") == 0,
	      "bytes");
	frame_l4(&f, "198.18.0.30", IPPROTO_UDP, sizeof(struct udphdr), 300);
	CHECK(send_n_frames(&fx, &f, 5) == 3, "300-byte frames in a 1000-byte window 0: want 3");
	frame_l4(&f, "198.18.0.30", IPPROTO_UDP, sizeof(struct udphdr), 100);
	CHECK(send_n_frames(&fx, &f, 2) == 1,
	      "a 100-byte frame in the last 100 bytes of window 0: want 1");
}

int main(int argc, char **argv)
{
	int err = fixture_main_open(&fx);

	harness_select(argc, argv);
	if (err)
		return err;
	RUN_SELECTED(fixed_window_exact_and_boundary);
	RUN_SELECTED(sliding_window_estimate);
	RUN_SELECTED(window_keying);
	RUN_SELECTED(ban_with_windows);
	RUN_SELECTED(monitor_with_windows);
	RUN_SELECTED(monitor_ban_never_enforced);
	RUN_SELECTED(bytes_fixed_window);
	RUN_SELECTED(policy_change_carries_share);
	RUN_SELECTED(rate_raise_keeps_count);
	RUN_SELECTED(new_sources_first_hour);
	fixture_close(&fx);
	return check_summary();
}
