// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The lost-update race inside one host: one thread pinned to each CPU runs
 * BPF_PROG_TEST_RUN on the same source at once. No lost update may let
 * through more than the bucket allows, and the bucket is not starved. */
#define _GNU_SOURCE
#include <unistd.h>
#include "../lib/on_cpus.h"
#include "fixture.h"
#include "../lib/harness.h"
#include "sluice/gcra.h"
#include "sluice/window.h"
#include "sluice_racy.skel.h"

#define RACE_REPEAT	200000	/* test runs per call */
#define RACE_CALLS	10	/* calls per thread */
#define RACE_PROVE_SECONDS 90	/* how long to wait for truly parallel CPUs */
#define RACE_HIGH_RATE	5000000	/* below what the CPUs send: TAT runs ahead */
#define RACE_FLIPS	400	/* policy commits while the CPUs judge */
#define RACE_FLIP_REPEAT 2000	/* packets per test run while flipping */

/* The programs loaded, the real one [0] and a variant [1]: runs alternate
 * between them, each on maps reset as a fresh load leaves them
 * (fixture_fresh), since verifying the program takes seconds. fx is a
 * copy of the one in use; loaded[] owns them. */
static struct fixture loaded[2];
static struct fixture fx;

static int fresh_program(skel_open_fn open_skel)
{
	struct fixture *l = &loaded[open_skel != sluice_bpf__open];
	int err = fixture_fresh(l, 0, open_skel);

	fx = *l;
	return err;
}
static struct frame race_frame;

/* How the CPUs' packets are spread over sources: one source for all, or
 * a source of its own per call (many sources hammering a shared bucket),
 * within one /24 or across a /16. */
enum race_spread {
	SPREAD_ONE_SOURCE,
	SPREAD_ONE_24,
	SPREAD_ACROSS_16,
};
static enum race_spread race_spread;

/* One CPU's share of the hammering: 0, or an errno value. */
static int hammer(int cpu, void *ctx)
{
	(void)ctx;
	for (int i = 0; i < RACE_CALLS; i++) {
		unsigned int n = (unsigned int)(cpu * RACE_CALLS + i);
		struct frame own;
		char src[32];

		if (race_spread == SPREAD_ONE_24)
			snprintf(src, sizeof(src), "198.18.0.%u", n % 250 + 1);
		else
			snprintf(src, sizeof(src), "198.18.%u.%u", n % 250, n % 200 + 1);
		if (race_spread != SPREAD_ONE_SOURCE)
			frame_udp_from(&own, src);
		if (run_frame(&fx, race_spread == SPREAD_ONE_SOURCE ? &race_frame : &own,
			      RACE_REPEAT, NULL) < 0)
			return errno ? errno : EIO;
	}
	return 0;
}

/* Keeps the first bucket walk_buckets meets. */
static int first_bucket(const struct sluice_src_key *k, const struct sluice_bucket *b, void *ctx)
{
	(void)k;
	*(struct sluice_bucket *)ctx = *b;
	return 1;
}

/* The bucket the run charged: the source's own, or the one bucket of an
 * aggregate (the only one in the table). */
static int race_bucket(struct sluice_bucket *b)
{
	long n;

	if (race_spread == SPREAD_ONE_SOURCE)
		return bucket_of(&fx, "198.18.0.77", b);
	n = table_sources(&fx.m);
	if (n != 1)
		return n ? -EEXIST : -ENOENT;	/* more than one: not an aggregate */
	return walk_buckets(&fx.m, first_bucket, b) == 1 ? 0 : -ENOENT;
}

/* One contended run: a fresh program of open_skel under policy, every CPU
 * hammering 198.18.0.77 at once from a barrier; its span (t0, t1), the
 * packets passed and passed or rate limited, and any other reason seen.
 * 0, -1 when the program could not be set up, or a worker's errno.
 *
 * A packet refused as no_bucket because its CPU gave up waiting for a
 * stripe lock (SLUICE_EV_LOCK_GAVE_UP: the source's first packets, while
 * another CPU holding the lock for its claim is preempted, or its vCPU
 * descheduled, on a busy machine) is the datapath's documented answer to a
 * stalled holder, not a race: such refusals are counted in gave_up (apart
 * from total) when they are all the no_bucket there is; any other no_bucket
 * is reported in others. */
struct hammer_run {
	__u64 t0, t1, passed, total, gave_up;
	char others[256];	/* reasons other than within_limit and rate_limited */
};

static int hammer_all(skel_open_fn open_skel, const char *policy, struct hammer_run *h)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), err;
	struct sluice_counter c[SLUICE_R_MAX];

	memset(h, 0, sizeof(*h));
	if (fresh_program(open_skel) || fixture_policy(&fx, policy))
		return -1;
	frame_udp_from(&race_frame, "198.18.0.77");
	err = on_every_cpu(ncpu, hammer, NULL, &h->t0, &h->t1);

	counters_now(&fx, c);
	if (read_event(&fx.m, SLUICE_EV_LOCK_GAVE_UP, &h->gave_up))
		return -1;
	h->passed = c[SLUICE_R_WITHIN_LIMIT].packets;
	h->total = h->passed + c[SLUICE_R_RATE_LIMITED].packets;
	if (c[SLUICE_R_NO_BUCKET].packets == h->gave_up)
		c[SLUICE_R_NO_BUCKET].packets = 0;
	else
		h->gave_up = 0;	/* unexplained no_bucket: others reports it */
	if (h->gave_up)
		printf("# %llu packets refused while their CPU gave up on a stalled stripe lock\n",
		       (unsigned long long)h->gave_up);
	for (__u32 r = 0, off = 0; r < SLUICE_R_MAX; r++)
		if (c[r].packets && r != SLUICE_R_WITHIN_LIMIT && r != SLUICE_R_RATE_LIMITED &&
		    off < sizeof(h->others))
			off += (__u32)snprintf(h->others + off, sizeof(h->others) - off, " %s %llu",
					       reason_name(r), (unsigned long long)c[r].packets);
	return err;
}

struct race_result {
	__u64 total, passed, most, lost, src_passed, src_dropped, gave_up;
	char others[256];	/* reasons other than within_limit and rate_limited */
	int err;
};

/* Run every CPU at once against one source under `policy`. `lost` counts
 * admissions TAT does not account for: each admission moves TAT one
 * interval past max(TAT, now) >= t0, so TAT >= t0 + passed*T unless an
 * update was lost. */
/* Whether bucket b's rule is judged by the coarse clock. */
static int judged_coarse(const struct sluice_bucket *b)
{
	struct sluice_config cfg;
	struct sluice_policy sp;

	live_config(&fx.m, &cfg);
	if (policy_entry(&fx.m, SLUICE_GEN_SLOT(cfg.gen_slot), SLUICE_BOUND_IDX(b->bound), &sp))
		return 0;
	return !!(sp.flags & SLUICE_POLICY_COARSE_CLOCK);
}

static struct race_result race(skel_open_fn open_skel, const char *policy, __u64 rate,
			       __u64 burst)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct race_result res = { .err = -1 };
	__u64 t0, t1, start, coarse0 = coarse_now_ns(), interval = gcra_interval(rate);
	struct sluice_bucket b;
	struct hammer_run h;

	res.err = hammer_all(open_skel, policy, &h);
	if (res.err < 0)
		return res;
	t0 = h.t0;
	t1 = h.t1;
	res.passed = h.passed;
	res.total = h.total;
	res.gave_up = h.gave_up;
	memcpy(res.others, h.others, sizeof(res.others));
	if (race_bucket(&b)) {
		res.err = ENOENT;
		return res;
	}
	/* The run's start on the rule's own clock: the coarse one lags the
	 * precise t0 by a tick or more, so it is read before the run. */
	start = gcra_now(judged_coarse(&b) ? coarse0 : t0);
	res.most = burst + (gcra_now(t1) - start) / interval + 1;
	if (b.tat < start + res.passed * interval)
		res.lost = (start + res.passed * interval - b.tat + interval - 1) / interval;
	res.src_passed = b.passed;
	res.src_dropped = b.dropped;
	printf("  %s: %d CPUs, %llu packets in %.3f s, %llu passed (bound %llu), "
	       "%llu lost updates\n", policy, ncpu, (unsigned long long)res.total,
	       (double)(t1 - t0) / 1e9, (unsigned long long)res.passed,
	       (unsigned long long)res.most, (unsigned long long)res.lost);
	return res;
}

static void check_result(const struct race_result *r, __u64 burst)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	__u64 floor_ = burst < r->total ? burst : r->total;

	CHECK(r->err == 0, "run failed: %s", r->err > 0 ? strerror(r->err) : "setup");
	CHECK(r->total + r->gave_up == (__u64)ncpu * RACE_CALLS * RACE_REPEAT,
	      "%llu packets passed or rate limited, %llu refused on a stalled lock; others:%s",
	      (unsigned long long)r->total, (unsigned long long)r->gave_up, r->others);
	CHECK(r->passed <= r->most, "over-admitted: %llu passed, at most %llu allowed",
	      (unsigned long long)r->passed, (unsigned long long)r->most);
	CHECK(r->passed >= floor_, "starved: %llu passed, burst is %llu",
	      (unsigned long long)r->passed, (unsigned long long)burst);
	CHECK(r->lost == 0, "%llu admissions were lost updates", (unsigned long long)r->lost);
	CHECK(r->src_passed == r->passed && r->src_dropped == r->total - r->passed,
	      "per-source counters lost updates: %llu/%llu vs %llu/%llu",
	      (unsigned long long)r->src_passed, (unsigned long long)r->src_dropped,
	      (unsigned long long)r->passed, (unsigned long long)(r->total - r->passed));
}

static struct sluice_bpf *open_racy(void)
{
	return (struct sluice_bpf *)sluice_racy_bpf__open();
}

static int race_unproven;

/*
 * A run only proves something if the CPUs really executed at the same time;
 * a VM whose host time-slices its vCPUs on one core runs the threads in
 * turn. So each run of the real program is paired with a run of a variant
 * that does a plain read-modify-write instead of CAS: when that variant loses
 * updates, the CPUs were truly concurrent, and the real run next to it must
 * lose none. Every real run must also keep within its bounds.
 */
/*
 * Rounds of racy and real runs until the racy one shows the race (so the
 * CPUs were truly concurrent) or RACE_PROVE_SECONDS pass: the host's
 * scheduling comes in spells of seconds to minutes, so keep trying for a
 * while rather than a fixed number of times. round runs one racy and one
 * real run and checks the real one: -1 when a check failed, 1 when the racy
 * run showed the race, else 0. unseen says what the racy runs never did.
 */
static void prove(int (*round)(const void *arg), const void *arg, const char *unseen)
{
	__u64 give_up = mono_now_ns() + RACE_PROVE_SECONDS * SLUICE_NS_PER_SEC;
	int r = 0, tries = 0;

	for (; !r && mono_now_ns() < give_up; tries++)
		r = round(arg);
	if (!r) {
		printf("  %s in %d tries over %d s: this machine cannot show the race now\n",
		       unseen, tries, RACE_PROVE_SECONDS);
		race_unproven++;
	}
}

struct tb_case {
	const char *policy;
	__u64 rate, burst;
};

static int tb_round(const void *arg)
{
	const struct tb_case *c = arg;
	struct race_result racy = race(open_racy, c->policy, c->rate, c->burst);
	struct race_result real = race(sluice_bpf__open, c->policy, c->rate, c->burst);
	int before = check_failures;

	CHECK_OR(-1, racy.err == 0, "racy variant: run failed");
	check_result(&real, c->burst);
	if (check_failures != before)
		return -1;
	return racy.lost > 0;
}

/*
 * A run only proves something if the CPUs really executed at the same time;
 * a VM whose host time-slices its vCPUs on one core runs the threads in
 * turn. So each run of the real program is paired with a run of a variant
 * that does a plain read-modify-write instead of CAS: when that variant loses
 * updates, the CPUs were truly concurrent, and the real run next to it must
 * lose none. Every real run must also keep within its bounds.
 */
static void race_proven(const char *policy, __u64 rate, __u64 burst)
{
	struct tb_case c = { policy, rate, burst };

	prove(tb_round, &c, "the CPUs never ran at once (the racy variant lost no update)");
}

/* Mostly rejections: the burst is the whole allowance. */
static void race_burst_only(void)
{
	race_proven("limit default --rate 1 --burst 1000", 1, 1000);
}

/* Admissions all the time (every 2 us), so CPUs contend on every CAS. */
static void race_contended_admissions(void)
{
	race_proven("limit default --rate 500000 --burst 50", 500000, 50);
}

/* Both CPUs admit as fast as they can, and every packet is admitted: a
 * burst as large as the whole run, a rate below what the CPUs send, so
 * TAT runs ahead of the clock and must account for every admission (a lost
 * update shows; with T = 1 ns it could not, the clock caught up). */
static void race_high_rate(void)
{
	__u64 total = (__u64)sysconf(_SC_NPROCESSORS_ONLN) * RACE_CALLS * RACE_REPEAT;
	char policy[96];

	snprintf(policy, sizeof(policy), "limit default --rate %llu --burst %llu",
		 (unsigned long long)RACE_HIGH_RATE, (unsigned long long)total);
	race_proven(policy, RACE_HIGH_RATE, total);
}

/* Many sources of one /24 hammer its shared --per /24 bucket from every
 * CPU at once. */
static void race_per_prefix(void)
{
	race_spread = SPREAD_ONE_24;
	race_proven("limit set 198.18.0.0/24 --per /24 --rate 500000 --burst 50", 500000, 50);
	race_spread = SPREAD_ONE_SOURCE;
}

/* Sources all over a /16 hammer its one --per rule bucket. */
static void race_per_rule(void)
{
	race_spread = SPREAD_ACROSS_16;
	race_proven("limit set 198.18.0.0/16 --per rule --rate 500000 --burst 50", 500000, 50);
	race_spread = SPREAD_ONE_SOURCE;
}

/*
 * Policies flip while every CPU judges sources whose buckets must re-bind
 * to each new generation: a packet must be judged by one policy, never by
 * the index of one and the action of the other. Both allow 198.18.0.0/16;
 * policy B also denies 198.18.0.0/17, which covers every source sent, so
 * the sources move between two rules (two indices). The allow rule keeps
 * its index and counters throughout and must never count a drop; the deny
 * rule (a new index, counters reset, at each B) must not count a pass in
 * the last B; and after that last flip every source is denied.
 */
struct flipper {
	pthread_t tid;
	int flips, err;
	volatile int done;
};

static const char flip_a[] = "limit default --rate 1 --burst 1;allow 198.18.0.0/16";
static const char flip_b[] = "limit default --rate 1 --burst 1;allow 198.18.0.0/16;"
			     "deny 198.18.0.0/17";

static void *flip_policies(void *arg)
{
	struct flipper *fl = arg;

	for (int i = 0; i < fl->flips && !fl->err; i++)
		fl->err = fixture_policy(&fx, i % 2 ? flip_b : flip_a);
	fl->done = 1;
	return NULL;
}

struct judge {
	pthread_t tid;
	int cpu, err;
	struct flipper *fl;
};

static void *judge_sources(void *arg)
{
	struct judge *w = arg;
	struct frame f;
	char src[32];
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (unsigned int n = 0; !w->fl->done && !w->err; n++) {
		snprintf(src, sizeof(src), "198.18.%u.%u", n % 4, n / 4 % 8 + 1);
		frame_udp_from(&f, src);
		if (run_frame(&fx, &f, RACE_FLIP_REPEAT, NULL) < 0)
			w->err = errno ? errno : EIO;
	}
	return NULL;
}

static int rule_index(const char *cidr, __u32 *idx)
{
	struct policy *p = malloc(sizeof(*p));
	struct cidr c;
	char why[128];
	struct rule *r;

	if (!p || parse_cidr(cidr, &c, why, sizeof(why)) || policy_read(&fx.m, p)) {
		free(p);
		return -1;
	}
	r = policy_find(p, &c);
	if (r)
		*idx = r->index;
	free(p);
	return r ? 0 : -1;
}

static void race_policy_flips(void)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct judge *w = calloc((size_t)ncpu, sizeof(*w));
	struct flipper fl = { .flips = RACE_FLIPS };
	struct sluice_policy_counter allow_c, deny_c;
	struct sluice_counter c[SLUICE_R_MAX];
	__u32 allow_idx = 0, deny_idx = 0;
	struct frame f;
	char src[32];

	CHECK(w && fresh_program(sluice_bpf__open) == 0, "setup");
	/* a limit first, so every source has a bucket that must re-bind */
	CHECK(fixture_policy(&fx, "limit default --rate 1 --burst 1") == 0, "limit");
	for (unsigned int n = 0; n < 32; n++) {
		snprintf(src, sizeof(src), "198.18.%u.%u", n % 4, n / 4 % 8 + 1);
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	for (int i = 0; i < ncpu; i++) {
		w[i].cpu = i;
		w[i].fl = &fl;
		pthread_create(&w[i].tid, NULL, judge_sources, &w[i]);
	}
	pthread_create(&fl.tid, NULL, flip_policies, &fl);
	pthread_join(fl.tid, NULL);
	for (int i = 0; i < ncpu; i++) {
		pthread_join(w[i].tid, NULL);
		CHECK(w[i].err == 0, "CPU %d: %s", i, strerror(w[i].err));
	}
	free(w);
	CHECK(fl.err == 0, "a commit failed: %d", fl.err);
	CHECK(rule_index("198.18.0.0/16", &allow_idx) == 0 &&
	      rule_index("198.18.0.0/17", &deny_idx) == 0, "rule indices");
	CHECK(allow_idx != deny_idx, "the rules share index %u", allow_idx);

	CHECK(read_policy_counter(&fx.m, allow_idx, &allow_c) == 0 &&
	      read_policy_counter(&fx.m, deny_idx, &deny_c) == 0, "policy counters");
	counters_now(&fx, c);
	printf("  %d flips: allow rule %llu passed, %llu dropped; deny rule %llu passed, "
	       "%llu dropped\n", RACE_FLIPS, (unsigned long long)allow_c.pass_packets,
	       (unsigned long long)allow_c.drop_packets, (unsigned long long)deny_c.pass_packets,
	       (unsigned long long)deny_c.drop_packets);
	CHECK(allow_c.pass_packets > 0 && deny_c.drop_packets > 0,
	      "both policies must have judged packets for the run to prove anything");
	CHECK(allow_c.drop_packets == 0, "the allow rule dropped %llu packets",
	      (unsigned long long)allow_c.drop_packets);
	CHECK(deny_c.pass_packets == 0, "the deny rule passed %llu packets",
	      (unsigned long long)deny_c.pass_packets);
	CHECK(c[SLUICE_R_ALLOWED].packets == allow_c.pass_packets &&
	      c[SLUICE_R_DENIED].packets >= deny_c.drop_packets,
	      "reasons (allowed %llu, denied %llu) disagree with the rules' counts",
	      (unsigned long long)c[SLUICE_R_ALLOWED].packets,
	      (unsigned long long)c[SLUICE_R_DENIED].packets);
	/* the last flip was to B: every source is denied now */
	for (unsigned int n = 0; n < 32; n++) {
		snprintf(src, sizeof(src), "198.18.%u.%u", n % 4, n / 4 % 8 + 1);
		frame_udp_from(&f, src);
		CHECK(run_frame(&fx, &f, 1, NULL) == XDP_DROP, "%s not denied after the last flip",
		      src);
	}
}

/*
 * The window algorithms under the same hammer: every CPU on one source, a
 * budget N below what they send, in one window (1 h; a run that crosses a
 * boundary is run again). The real program admits exactly N and its state
 * word counts exactly the admissions (no lost update); the racy variant,
 * whose lost updates leave the count behind, must over-admit.
 */
#define WIN_RETRIES	3	/* runs that cross a window boundary */
#define ROLL_WINDOW_NS	(50ULL * 1000000ULL)
#define ROLL_BUDGET	50000ULL	/* per 50 ms window: far below what 2 CPUs send */

struct win_result {
	__u64 total, passed, counted, windows, src_passed, src_dropped, gave_up;
	__u64 most;	/* what the state word says the run may have admitted */
	char others[256];
	int err, crossed;
};

/* Run every CPU at once against 198.18.0.77 under policy, a window
 * algorithm of window W and budget N; counted is what the state word says
 * the current window admitted (raw, not capped at N). */
static struct win_result win_race(skel_open_fn open_skel, const char *policy, int algo,
				  __u64 window, __u64 budget)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct win_result res = { .err = -1 };
	struct sluice_bucket b;
	struct hammer_run h;
	__u64 t0, t1;

	res.err = hammer_all(open_skel, policy, &h);
	if (res.err < 0)
		return res;
	t0 = h.t0;
	t1 = h.t1;
	res.passed = h.passed;
	res.total = h.total;
	res.gave_up = h.gave_up;
	memcpy(res.others, h.others, sizeof(res.others));
	res.windows = win_index(t1, window) - win_index(t0, window) + 1;
	res.crossed = res.windows > 1;
	if (bucket_of(&fx, "198.18.0.77", &b)) {
		res.err = ENOENT;
		return res;
	}
	/*
	 * The state word bounds what the run admitted. A fixed window's
	 * running count S moved from at least t0's window start by one per
	 * admission plus what windows left unused: at most S - w0 x N. A
	 * sliding window's word holds the counts of its last window wl and
	 * the one before (prev), each earlier window admitted at most N: at
	 * most N x (wl - 1 - w0) + prev + cur. A lost update leaves the word
	 * behind the admissions.
	 */
	if (algo == SLUICE_ALGO_FIXED_WINDOW) {
		__u64 start = fw_start(t1, window, budget), first = fw_start(t0, window, budget);

		res.counted = b.tat > start ? b.tat - start : 0;
		res.most = b.tat > first ? b.tat - first : 0;
	} else {
		__u32 bits = window_count_bits(budget);
		__u64 w1 = win_index(t1, window), w0 = win_index(t0, window);
		__u64 wl = w1 - sw_age(b.tat, w1, bits), prev = (b.tat >> bits) & sw_mask(bits);

		res.counted = b.tat & sw_mask(bits);
		res.most = (wl > w0 + 1 ? (wl - w0 - 1) * budget : 0) + prev + res.counted;
	}
	res.src_passed = b.passed;
	res.src_dropped = b.dropped;
	printf("  %s: %d CPUs, %llu packets in %.3f s over %llu window(s), %llu passed, "
	       "%llu counted in the last window, at most %llu by the state\n", policy, ncpu,
	       (unsigned long long)res.total, (double)(t1 - t0) / 1e9,
	       (unsigned long long)res.windows, (unsigned long long)res.passed,
	       (unsigned long long)res.counted, (unsigned long long)res.most);
	return res;
}

/* A run of one window that crossed a boundary is run again. */
static struct win_result win_race_one_window(skel_open_fn open_skel, const char *policy,
					     int algo, __u64 window, __u64 budget)
{
	struct win_result r = { .err = -1 };

	for (int i = 0; i < WIN_RETRIES; i++) {
		r = win_race(open_skel, policy, algo, window, budget);
		if (r.err || !r.crossed)
			break;
		printf("  crossed a window boundary: again\n");
	}
	return r;
}

static void check_common(const struct win_result *r)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	CHECK(r->err == 0, "run failed: %s", r->err > 0 ? strerror(r->err) : "setup");
	CHECK(r->total + r->gave_up == (__u64)ncpu * RACE_CALLS * RACE_REPEAT,
	      "%llu packets passed or rate limited, %llu refused on a stalled lock; others:%s",
	      (unsigned long long)r->total, (unsigned long long)r->gave_up, r->others);
	CHECK(r->src_passed == r->passed && r->src_dropped == r->total - r->passed,
	      "per-source counters lost updates: %llu/%llu vs %llu/%llu",
	      (unsigned long long)r->src_passed, (unsigned long long)r->src_dropped,
	      (unsigned long long)r->passed, (unsigned long long)(r->total - r->passed));
}

static void check_one_window(const struct win_result *r, __u64 budget)
{
	int before = check_failures;

	check_common(r);
	if (check_failures != before)
		return;
	CHECK(!r->crossed, "every run crossed a window boundary");
	CHECK(r->passed <= budget, "over-admitted: %llu passed, the budget is %llu",
	      (unsigned long long)r->passed, (unsigned long long)budget);
	CHECK(r->passed == budget, "starved: %llu passed, the budget is %llu",
	      (unsigned long long)r->passed, (unsigned long long)budget);
	CHECK(r->counted == r->passed, "the state counts %llu admissions of %llu: %llu lost",
	      (unsigned long long)r->counted, (unsigned long long)r->passed,
	      (unsigned long long)(r->passed - r->counted));
}

/* Run racy then real until the racy one shows over-admission (so the CPUs
 * were truly concurrent), as race_proven does. */
struct win_case {
	const char *policy;
	int algo;
	__u64 budget;
};

static int win_round(const void *arg)
{
	const struct win_case *c = arg;
	__u64 window = 3600ULL * SLUICE_NS_PER_SEC;
	struct win_result racy = win_race_one_window(open_racy, c->policy, c->algo, window,
						     c->budget);
	struct win_result real = win_race_one_window(sluice_bpf__open, c->policy, c->algo,
						     window, c->budget);
	int before = check_failures;

	CHECK_OR(-1, racy.err == 0, "racy variant: run failed");
	check_one_window(&real, c->budget);
	if (check_failures != before)
		return -1;
	return !racy.crossed && racy.passed > c->budget;
}

static void win_race_proven(const char *policy, int algo, __u64 budget)
{
	struct win_case c = { policy, algo, budget };

	prove(win_round, &c, "the racy variant never over-admitted");
}

/* fixed-window: a budget of 2 million in a 1 h window, 4 million sent. */
static void race_fixed_window(void)
{
	win_race_proven("limit default --rate 2000000/h --algo fixed-window",
			SLUICE_ALGO_FIXED_WINDOW, 2000000);
}

/* sliding-window: a fresh source (no previous window), a budget of 1
 * million (its counts hold at most 2^20 - 1). */
static void race_sliding_window(void)
{
	win_race_proven("limit default --rate 1000000/h --algo sliding-window",
			SLUICE_ALGO_SLIDING_WINDOW, 1000000);
}

/*
 * The rollover race: every CPU hammers across several 50 ms windows, so
 * CPUs roll the same window over at once. Each window admits at most its
 * budget (a sliding window's cur never exceeds N either), so the total is
 * at most N x the windows the run touched; and at most what the final
 * state word accounts for (win_race). The racy variant, which loses counts
 * and can reset a window twice, must exceed the latter.
 */
static int roll_round(const void *arg)
{
	const struct win_case *c = arg;
	struct win_result racy = win_race(open_racy, c->policy, c->algo, ROLL_WINDOW_NS,
					  ROLL_BUDGET);
	struct win_result real = win_race(sluice_bpf__open, c->policy, c->algo, ROLL_WINDOW_NS,
					  ROLL_BUDGET);
	int before = check_failures;

	CHECK_OR(-1, racy.err == 0, "racy variant: run failed");
	check_common(&real);
	if (check_failures != before)
		return -1;
	CHECK_OR(-1, real.windows >= 2, "the run stayed in one window: no rollover seen");
	CHECK_OR(-1, real.passed <= ROLL_BUDGET * real.windows,
		 "over-admitted: %llu passed over %llu windows of %llu",
		 (unsigned long long)real.passed, (unsigned long long)real.windows,
		 (unsigned long long)ROLL_BUDGET);
	CHECK_OR(-1, real.passed <= real.most,
		 "%llu passed, the state word accounts for at most %llu: lost updates",
		 (unsigned long long)real.passed, (unsigned long long)real.most);
	CHECK_OR(-1, real.passed >= ROLL_BUDGET, "starved: %llu passed, one window is %llu",
		 (unsigned long long)real.passed, (unsigned long long)ROLL_BUDGET);
	return racy.passed > racy.most;
}

static void roll_race_proven(const char *policy, int algo)
{
	struct win_case c = { policy, algo, 0 };

	prove(roll_round, &c, "the racy variant never over-admitted across windows");
}

static void race_fixed_window_rollover(void)
{
	roll_race_proven("limit default --rate 1000000 --algo fixed-window --window 50ms",
			 SLUICE_ALGO_FIXED_WINDOW);
}

static void race_sliding_window_rollover(void)
{
	roll_race_proven("limit default --rate 1000000 --algo sliding-window --window 50ms",
			 SLUICE_ALGO_SLIDING_WINDOW);
}

int main(int argc, char **argv)
{
	harness_select(argc, argv);
	if (geteuid() != 0) {
		printf("needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("needs at least 2 CPUs\n");
		return 77;
	}
	RUN_SELECTED(race_burst_only);
	RUN_SELECTED(race_contended_admissions);
	RUN_SELECTED(race_high_rate);
	RUN_SELECTED(race_per_prefix);
	RUN_SELECTED(race_per_rule);
	RUN_SELECTED(race_policy_flips);
	RUN_SELECTED(race_fixed_window);
	RUN_SELECTED(race_sliding_window);
	RUN_SELECTED(race_fixed_window_rollover);
	RUN_SELECTED(race_sliding_window_rollover);
	fixture_close(&loaded[0]);
	fixture_close(&loaded[1]);
	printf("%s: %d failed\n", check_failures ? "FAIL" : "PASS", check_failures);
	if (!check_failures && race_unproven) {
		printf("the CPUs never ran truly in parallel: nothing proven\n");
		return 77;
	}
	return check_failures ? 1 : 0;
}
