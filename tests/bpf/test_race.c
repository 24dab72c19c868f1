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
#define RACE_DETECT_TRIES 8

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

static void check_exact(const char *policy, __u64 rate, __u64 burst)
{
	struct race_result r = race(sluice_bpf__open, policy, rate, burst);
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	__u64 floor_ = burst < r.total ? burst : r.total;

	CHECK(r.err == 0, "run failed: %s", r.err > 0 ? strerror(r.err) : "setup");
	CHECK(r.total == (__u64)ncpu * RACE_CALLS * RACE_REPEAT, "%llu packets counted",
	      (unsigned long long)r.total);
	CHECK(r.passed <= r.most, "over-admitted: %llu passed, at most %llu allowed",
	      (unsigned long long)r.passed, (unsigned long long)r.most);
	CHECK(r.passed >= floor_, "starved: %llu passed, burst is %llu",
	      (unsigned long long)r.passed, (unsigned long long)burst);
	CHECK(r.lost == 0, "%llu admissions were lost updates", (unsigned long long)r.lost);
	CHECK(r.src_passed == r.passed && r.src_dropped == r.total - r.passed,
	      "per-source counters lost updates: %llu/%llu vs %llu/%llu",
	      (unsigned long long)r.src_passed, (unsigned long long)r.src_dropped,
	      (unsigned long long)r.passed, (unsigned long long)(r.total - r.passed));
}

/* Mostly rejections: the burst is the whole allowance. */
static void race_burst_only(void)
{
	check_exact("limit default --rate 1 --burst 1000", 1, 1000);
}

/* Admissions all the time (every 2 us), so CPUs contend on every CAS. */
static void race_contended_admissions(void)
{
	check_exact("limit default --rate 500000 --burst 50", 500000, 50);
}

/* Both CPUs admit as fast as they can: nothing may be counted twice. */
static void race_high_rate(void)
{
	check_exact("limit default --rate 1000000000 --burst 1000000000", 1000000000,
		    1000000000);
}

static struct sluice_bpf *open_racy(void)
{
	return (struct sluice_bpf *)sluice_racy_bpf__open();
}

/* The same run with check-then-store instead of CAS must be caught: this
 * is what makes the checks above able to fail. */
static void race_detector_catches_lost_updates(void)
{
	struct race_result r = { 0 };

	/* Lost updates need both CPUs in the window at once, which a run can
	 * miss on a busy VM; a few runs never all miss. */
	for (int i = 0; i < RACE_DETECT_TRIES && r.lost == 0; i++) {
		r = race(open_racy, "limit default --rate 500000 --burst 50", 500000, 50);
		CHECK(r.err == 0, "run failed");
	}
	CHECK(r.lost > 0, "the racy variant lost no update in %d runs", RACE_DETECT_TRIES);
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
	RUN(race_detector_catches_lost_updates);
	fixture_close(&fx);
	printf("%s: %d failed\n", check_failures ? "FAIL" : "PASS", check_failures);
	return check_failures ? 1 : 0;
}
