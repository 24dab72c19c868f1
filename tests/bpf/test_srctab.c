// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The source table's insert race: both CPUs churn 4096 sources through 100
 * slots (sluice_churn.bpf.c draws each packet's source at random): 8 hot
 * sources over their rate (T = 100 us), established before the churn
 * starts (warm_up_hot), and the rest
 * on probation (a rule of 1/m with a large burst: admitted, in debt, never
 * back a minute later), so probation slots are taken from each other
 * millions of times, least debt first, for 10M+ packets. A thread watching
 * the table meanwhile must never see one source live in two slots at
 * once, and no hot source may be admitted more than burst + elapsed / T +
 * 1 times: their slots, established, are never taken. The same run of the
 * build without the stripe lock (sluice_churn_nolock.bpf.c) must show
 * duplicates, and of the build whose eviction ignores the established bit
 * (sluice_churn_evict.bpf.c, where a hot source, in less debt than any
 * churning one, is evicted and comes back with a fresh burst), sources
 * admitted over their rate.
 */
#include <pthread.h>
#include <stdatomic.h>
#include "fixture.h"
#include "../lib/harness.h"
#include "sluice/srctab.h"
#include "sluice_churn.skel.h"
#include "sluice_churn_nolock.skel.h"
#include "sluice_churn_evict.skel.h"

#define CHURN_SOURCES	4096
#define CHURN_HOT	8		/* 198.18.0.0/29: half the packets */
#define CHURN_TABLE	64		/* --max-sources: 100 slots */
#define CHURN_REPEAT	(1U << 20)	/* frames per BPF_PROG_TEST_RUN */
#define CHURN_RUNS	5		/* runs per CPU: 10M+ packets in all */
#define CHURN_HOT_T_NS	100000ULL	/* the hot sources' T: 100 us */
#define CHURN_BURST	1ULL
#define WATCH_EVERY_US	50		/* between two looks at the table */
/* The frame the churn build turns into hot and churning sources
 * (sluice_churn.bpf.c's mixed mode), and the policy: the hot sources over
 * their rate, in debt most of the time, established; the others admitted
 * every time, in debt for a minute per packet, so on probation throughout
 * and their slots taken from each other all the time. */
#define CHURN_FRAME_SRC	"198.19.252.13"
#define CHURN_FEW_SRC	"198.19.252.7"	/* the first 128, at random */
#define CHURN_HOT_SRC	"198.19.252.3"	/* the 8 hot ones, at random */
/* Before the churn, the hot sources come back at least once, as real
 * clients do before a flood: rounds of CHURN_WARM_FRAMES frames of theirs
 * (each misses a round with odds of (7/8)^256), CHURN_WARM_GAP_US apart
 * (over their T), until all are established, at most CHURN_WARM_ROUNDS. */
#define CHURN_WARM_FRAMES	256
#define CHURN_WARM_GAP_US	1000
#define CHURN_WARM_ROUNDS	20
#define CHURN_POLICY	"limit set 198.18.0.0/29 --rate 10000 --burst 1;" \
			"limit default --rate 1/m --burst 10000"

static struct fixture fx;
static struct sluice_churn_bpf *churn;
static atomic_int running;

typedef struct sluice_churn_bpf *(*churn_open_fn)(void);

static struct sluice_churn_bpf *open_real(void)
{
	return sluice_churn_bpf__open();
}

static struct sluice_churn_bpf *open_nolock(void)
{
	return (struct sluice_churn_bpf *)sluice_churn_nolock_bpf__open();
}

static struct sluice_churn_bpf *open_evict(void)
{
	return (struct sluice_churn_bpf *)sluice_churn_evict_bpf__open();
}

/* fixture_open_with for the churn builds, whose skeleton has one more map. */
static int churn_fixture(churn_open_fn open_skel)
{
	int err;

	memset(&fx, 0, sizeof(fx));
	churn = open_skel();
	if (!churn)
		return -errno;
	fx.skel = (struct sluice_bpf *)churn;	/* for fixture_close */
	err = srctab_size(churn->maps.src_table, churn->maps.src_counts, CHURN_TABLE);
	if (!err)
		err = sluice_churn_bpf__load(churn);
	if (err)
		return err;
	fx.prog_fd = bpf_program__fd(churn->progs.sluice_xdp);
#define MAP_FD(name) fx.m.name = bpf_map__fd(churn->maps.name);
	SLUICE_MAPS(MAP_FD)
#undef MAP_FD
	err = fixture_finish(&fx, CHURN_TABLE);
	return err ? err : fixture_policy(&fx, CHURN_POLICY);
}

static const char *churn_frame = CHURN_FRAME_SRC;

static void *hammer(void *arg)
{
	struct frame f;

	(void)arg;
	frame_udp_from(&f, churn_frame);
	for (int i = 0; i < CHURN_RUNS; i++)
		if (run_frame(&fx, &f, CHURN_REPEAT, NULL) < 0)
			break;
	return NULL;
}

struct seen {
	struct sluice_src_key k;
	struct sluice_bucket b;
	__u32 at;
};

static int seen_cmp(const void *x, const void *y)
{
	const struct seen *a = x, *b = y;
	int c = memcmp(&a->k, &b->k, sizeof(a->k));

	return c ? c : (a->at > b->at) - (a->at < b->at);
}

/* Whether slot at still holds what s saw: the same claim, bound, source. */
static bool still(const struct srctab *t, const struct seen *s)
{
	struct sluice_src_key k;
	struct sluice_bucket b;

	return srctab_read(t, s->at, &k, &b) && b.bound == s->b.bound &&
	       !memcmp(&k, &s->k, sizeof(k));
}

/* One look at the table: the sources live in two slots at once, each pair
 * seen twice (so both were live together, not one after the other). */
static long duplicates_now(const struct srctab *t, struct seen *s)
{
	__u32 nslots = t->nbuckets * SLUICE_SLOTS_PER_BUCKET, n = 0;
	long dups = 0;

	for (__u32 at = 0; at < nslots; at++)
		if (srctab_read(t, at, &s[n].k, &s[n].b))
			s[n++].at = at;
	qsort(s, n, sizeof(*s), seen_cmp);
	for (__u32 i = 1; i < n; i++)
		if (!memcmp(&s[i].k, &s[i - 1].k, sizeof(s[i].k)) && still(t, &s[i - 1]) &&
		    still(t, &s[i]))
			dups++;
	return dups;
}

struct watch {
	long dups, looks;
};

static void *watch_table(void *arg)
{
	struct watch *w = arg;
	struct seen *s;
	struct srctab t;

	if (srctab_open(&fx.m, &t))
		return NULL;
	s = calloc((size_t)t.nbuckets * SLUICE_SLOTS_PER_BUCKET, sizeof(*s));
	while (s && atomic_load(&running)) {
		w->dups += duplicates_now(&t, s);
		w->looks++;
		usleep(WATCH_EVERY_US);	/* leave both CPUs to the hammers */
	}
	if (s)
		w->dups += duplicates_now(&t, s);
	free(s);
	srctab_close(&t);
	return NULL;
}

struct churn_run {
	long dups, looks, over;	/* duplicates seen, looks, sources over the bound */
	__u64 warm_established;	/* established before the churn */
	__u64 packets, admitted, reclaimed, established, est_reclaimed, worst, bound;
};

static __u64 event_sum(__u32 ev)
{
	__u64 v[256] = { 0 }, sum = 0;

	if (fx.m.ncpus <= 256 && !bpf_map_lookup_elem(fx.m.events, &ev, v))
		for (int c = 0; c < fx.m.ncpus; c++)
			sum += v[c];
	return sum;
}

/*
 * Establish the hot sources while the table has room. A hot source that
 * met the churn first would stay on probation for good: its debt, shorter
 * than any churning source's, makes its slot the first a new source takes,
 * long before it comes back one T later, and each time it comes back it
 * starts fresh. That is the saturated table doc/spoofed-floods.md
 * describes, not the race this test is about.
 */
static __u64 warm_up_hot(void)
{
	struct frame f;
	__u64 n = 0;

	frame_udp_from(&f, CHURN_HOT_SRC);
	for (int i = 0; i < CHURN_WARM_ROUNDS && n < CHURN_HOT; i++) {
		if (i)
			usleep(CHURN_WARM_GAP_US);
		if (run_frame(&fx, &f, CHURN_WARM_FRAMES, NULL) < 0)
			break;
		n = event_sum(SLUICE_EV_SOURCE_ESTABLISHED);
	}
	return n;
}

static int churn_run(churn_open_fn open_skel, struct churn_run *r)
{
	struct sluice_counter c[SLUICE_R_MAX];
	pthread_t cpu[2], watcher;
	struct watch w = { 0 };
	__u64 t0, t1, n;
	__u32 i;
	int fd;

	memset(r, 0, sizeof(*r));
	if (churn_fixture(open_skel))
		return -1;
	t0 = mono_now_ns();
	r->warm_established = warm_up_hot();
	atomic_store(&running, 1);
	pthread_create(&watcher, NULL, watch_table, &w);
	for (i = 0; i < 2; i++)
		pthread_create(&cpu[i], NULL, hammer, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(cpu[i], NULL);
	t1 = mono_now_ns();
	atomic_store(&running, 0);
	pthread_join(watcher, NULL);
	r->dups = w.dups;
	r->looks = w.looks;
	/* Each source: at most burst + (t1 - t0) / T + 1 admissions. */
	r->bound = CHURN_BURST + (t1 - t0) / CHURN_HOT_T_NS + 1;
	fd = bpf_map__fd(churn->maps.churn_admits);
	for (i = 0; i < CHURN_SOURCES; i++) {
		n = 0;
		bpf_map_lookup_elem(fd, &i, &n);
		r->admitted += n;
		if (i < CHURN_HOT && n > r->worst)
			r->worst = n;
		r->over += i < CHURN_HOT && n > r->bound;
	}
	r->reclaimed = event_sum(SLUICE_EV_SOURCE_RECLAIMED);
	r->established = event_sum(SLUICE_EV_SOURCE_ESTABLISHED);
	r->est_reclaimed = event_sum(SLUICE_EV_ESTABLISHED_RECLAIMED);
	if (read_counters(&fx.m, c) == 0)
		for (i = 0; i < SLUICE_R_MAX; i++)
			r->packets += c[i].packets;
	fixture_close(&fx);
	return 0;
}

static void print_run(const char *what, const struct churn_run *r)
{
	printf("  %s: %llu packets, %llu admitted, %llu reclaims (%llu of established slots, "
	       "%llu established); %ld duplicates in %ld looks; "
	       "most admitted for one source %llu (bound %llu), %ld sources over\n", what,
	       (unsigned long long)r->packets, (unsigned long long)r->admitted,
	       (unsigned long long)r->reclaimed, (unsigned long long)r->est_reclaimed,
	       (unsigned long long)r->established, r->dups, r->looks,
	       (unsigned long long)r->worst, (unsigned long long)r->bound, r->over);
}

static void insert_race(void)
{
	struct churn_run r;

	CHECK(churn_run(open_real, &r) == 0, "load the churn build");
	print_run("real", &r);
	CHECK(r.warm_established == CHURN_HOT, "%llu hot sources established before the churn, "
	      "want %d", (unsigned long long)r.warm_established, CHURN_HOT);
	CHECK(r.packets >= 10000000ULL, "%llu packets, want 10M+", (unsigned long long)r.packets);
	CHECK(r.reclaimed > 1000000, "%llu reclaims: the table did not churn",
	      (unsigned long long)r.reclaimed);
	CHECK(r.looks > 100, "the table was looked at %ld times", r.looks);
	CHECK(r.dups == 0, "%ld duplicate live keys", r.dups);
	/* Churning sources are admitted once a minute at most: none may pass
	 * for one that came back (a count of a slot's old source landing in
	 * the new one's, before count_slot, made one to three do so a run). */
	CHECK(r.established == CHURN_HOT, "%llu sources established, want the %d hot ones only",
	      (unsigned long long)r.established, CHURN_HOT);
	CHECK(r.over == 0, "%ld sources admitted over burst + elapsed/T + 1 (worst %llu > %llu)",
	      r.over, (unsigned long long)r.worst, (unsigned long long)r.bound);
}

static void no_lock_is_caught(void)
{
	struct churn_run r;

	/* 128 sources, not 4096 (still more than the slots): two CPUs meet
	 * one new source at once 32 times as often. (Both rank a source's candidates alike, so most
	 * such meetings end with one CAS each on the same slot; the lock
	 * closes the rest.) */
	churn_frame = CHURN_FEW_SRC;
	CHECK(churn_run(open_nolock, &r) == 0, "load the build without the stripe lock");
	churn_frame = CHURN_FRAME_SRC;
	print_run("no stripe lock", &r);
	CHECK(r.dups > 0 || r.over > 0, "the build without the stripe lock went uncaught");
}

static void evict_established_is_caught(void)
{
	struct churn_run r;

	CHECK(churn_run(open_evict, &r) == 0, "load the build whose eviction ignores the "
	      "established bit");
	print_run("eviction ignores established", &r);
	CHECK(r.over > 0, "the build whose eviction ignores the established bit went uncaught");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	libbpf_set_print(NULL);
	RUN(insert_race);
	RUN(no_lock_is_caught);
	RUN(evict_established_is_caught);
	return check_summary();
}
