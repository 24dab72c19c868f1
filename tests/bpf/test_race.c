// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The race of the seed, inside one host: one thread pinned to each CPU runs
 * BPF_PROG_TEST_RUN on the same source at once. No lost update may let
 * through more than the bucket allows, and the bucket is not starved. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "fixture.h"
#include "check.h"
#include "sluice/gcra.h"
#include "sluice_racy.skel.h"

#define RACE_REPEAT	200000	/* test runs per call */
#define RACE_CALLS	10	/* calls per thread */
#define RACE_PROVE_SECONDS 90	/* how long to wait for truly parallel CPUs */

static struct fixture fx;
static struct frame race_frame;
static pthread_barrier_t start_line;

struct worker {
	pthread_t tid;
	int cpu;
	int err;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < RACE_CALLS && !w->err; i++)
		if (run_frame(&fx, &race_frame, RACE_REPEAT, NULL) < 0)
			w->err = errno ? errno : EIO;
	return NULL;
}

struct race_result {
	__u64 total, passed, most, lost, src_passed, src_dropped;
	int err;
};

/* Run every CPU at once against one source under `policy`. `lost` counts
 * admissions TAT does not account for: each admission moves TAT one
 * interval past max(TAT, now) >= t0, so TAT >= t0 + passed*T unless an
 * update was lost. */
static struct race_result race(skel_open_fn open_skel, const char *policy, __u64 rate,
			       __u64 burst)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct sluice_counter c[SLUICE_R_MAX];
	struct worker *w = calloc((size_t)ncpu, sizeof(*w));
	struct race_result res = { .err = -1 };
	struct sluice_bucket b;
	__u64 t0, t1, interval = gcra_interval_ns(rate);

	fixture_close(&fx);
	if (!w || fixture_open_with(&fx, 0, open_skel) || fixture_policy(&fx, policy)) {
		free(w);
		return res;
	}
	frame_udp_from(&race_frame, "198.18.0.77");
	pthread_barrier_init(&start_line, NULL, (unsigned int)ncpu + 1);
	for (int i = 0; i < ncpu; i++) {
		w[i].cpu = i;
		pthread_create(&w[i].tid, NULL, hammer, &w[i]);
	}
	t0 = mono_now_ns();
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < ncpu; i++)
		pthread_join(w[i].tid, NULL);
	t1 = mono_now_ns();
	pthread_barrier_destroy(&start_line);
	res.err = 0;
	for (int i = 0; i < ncpu; i++)
		if (w[i].err)
			res.err = w[i].err;
	free(w);

	counters_now(&fx, c);
	res.passed = c[SLUICE_R_WITHIN_LIMIT].packets;
	res.total = res.passed + c[SLUICE_R_RATE_LIMITED].packets;
	res.most = burst + (t1 - t0) / interval;
	if (bucket_of(&fx, "198.18.0.77", &b)) {
		res.err = ENOENT;
		return res;
	}
	if (b.tat < t0 + res.passed * interval)
		res.lost = (t0 + res.passed * interval - b.tat + interval - 1) / interval;
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
	CHECK(r->total == (__u64)ncpu * RACE_CALLS * RACE_REPEAT, "%llu packets counted",
	      (unsigned long long)r->total);
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
static void race_proven(const char *policy, __u64 rate, __u64 burst)
{
	__u64 give_up = mono_now_ns() + RACE_PROVE_SECONDS * SLUICE_NS_PER_SEC;
	int proven = 0, tries = 0;

	/* The host's scheduling comes in spells of seconds to minutes, so keep
	 * trying for a while rather than a fixed number of times. */
	for (; !proven && mono_now_ns() < give_up; tries++) {
		struct race_result racy = race(open_racy, policy, rate, burst);
		struct race_result real = race(sluice_bpf__open, policy, rate, burst);
		int before = check_failures;

		CHECK(racy.err == 0, "racy variant: run failed");
		check_result(&real, burst);
		if (check_failures != before)
			return;
		proven = racy.lost > 0;
	}
	if (!proven) {
		printf("  the CPUs never ran at once in %d tries over %d s (the racy variant "
		       "lost no update): this machine cannot show the race now\n", tries,
		       RACE_PROVE_SECONDS);
		race_unproven++;
	}
}

/* Mostly rejections: the burst is the whole allowance. */
static void race_burst_only(void)
{
	struct race_result r = race(sluice_bpf__open, "limit default --rate 1 --burst 1000",
				    1, 1000);

	check_result(&r, 1000);
}

/* Admissions all the time (every 2 us), so CPUs contend on every CAS. */
static void race_contended_admissions(void)
{
	race_proven("limit default --rate 500000 --burst 50", 500000, 50);
}

/* Both CPUs admit as fast as they can: nothing may be counted twice. */
static void race_high_rate(void)
{
	struct race_result r = race(sluice_bpf__open,
				    "limit default --rate 1000000000 --burst 1000000000",
				    1000000000, 1000000000);

	check_result(&r, 1000000000);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("needs at least 2 CPUs\n");
		return 77;
	}
	RUN(race_burst_only);
	RUN(race_contended_admissions);
	RUN(race_high_rate);
	fixture_close(&fx);
	printf("%s: %d failed\n", check_failures ? "FAIL" : "PASS", check_failures);
	if (!check_failures && race_unproven) {
		printf("the CPUs never ran truly in parallel: nothing proven\n");
		return 77;
	}
	return check_failures ? 1 : 0;
}
