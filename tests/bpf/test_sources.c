// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The source table under floods of never-seen sources, through
 * BPF_PROG_TEST_RUN with a tiny table, deterministically: the new-source
 * budget admits exactly its burst, sources already known keep their
 * buckets and counts, a client over its rate keeps its slot through any
 * flood, and the budget bounds what a flood holds. */
#include <unistd.h>
#include "fixture.h"
#include "check.h"
#include "sluice/srctab.h"

#define TINY_TABLE	SLUICE_MAX_SOURCES_MIN	/* 1024 entries */

static struct fixture fx;

static int setup(__u32 max_sources, const char *policy)
{
	fixture_close(&fx);
	if (fixture_open(&fx, max_sources))
		return -1;
	return fixture_policy(&fx, policy);
}

/* The n-th source of a flood: distinct for n < 2^17, all in 198.18.0.0/15
 * but outside 198.18.0.0/24, where the clients are. */
static void flood_source(unsigned int n, char *buf, size_t len)
{
	n += 256;
	snprintf(buf, len, "198.%u.%u.%u", 18 + (n >> 16 & 1), n >> 8 & 0xff, n & 0xff);
}

static __u64 events_now(__u32 ev)
{
	__u64 *v = calloc((size_t)fx.m.ncpus, sizeof(*v)), sum = 0;

	if (v && !bpf_map_lookup_elem(fx.m.events, &ev, v))
		for (int c = 0; c < fx.m.ncpus; c++)
			sum += v[c];
	free(v);
	return sum;
}

/* The budget admits exactly its burst of new sources; the rest are dropped
 * as new_source_limited and take no entry. */
static void budget_admits_its_burst(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	struct frame f;
	char src[32];

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 5") == 0, "setup");
	CHECK(new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 100) == 0, "budget");
	for (unsigned int n = 0; n < 1000; n++) {
		flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	counters_now(&fx, c);
	CHECK(c[SLUICE_R_WITHIN_LIMIT].packets == 100 &&
	      c[SLUICE_R_NEW_SOURCE_LIMITED].packets == 900,
	      "within %llu, new_source_limited %llu; want 100 and 900",
	      (unsigned long long)c[SLUICE_R_WITHIN_LIMIT].packets,
	      (unsigned long long)c[SLUICE_R_NEW_SOURCE_LIMITED].packets);
	CHECK(events_now(SLUICE_EV_NEW_SOURCE_ADMITTED) == 100, "%llu new entries counted",
	      (unsigned long long)events_now(SLUICE_EV_NEW_SOURCE_ADMITTED));
	CHECK(count_sources(&fx.m) == 100, "%ld entries in the table, want 100",
	      count_sources(&fx.m));
	/* the admitted ones are known now: judged by their own buckets */
	flood_source(0, src, sizeof(src));
	frame_udp_from(&f, src);
	CHECK(run_frame(&fx, &f, 4, NULL) == XDP_PASS, "a known source");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_DROP, "a known source's own limit");
}

/* Allow and deny take no entry, so the budget does not touch them. */
static void budget_spares_allow_and_deny(void)
{
	struct frame f;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 5;allow 198.18.0.0/24") == 0,
	      "setup");
	CHECK(new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 1) == 0, "budget");
	frame_udp_from(&f, "198.19.0.1");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_PASS, "the budget's one");
	frame_udp_from(&f, "198.19.0.2");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_DROP, "over the budget");
	frame_udp_from(&f, "198.18.0.9");
	CHECK(run_frame(&fx, &f, 10, NULL) == XDP_PASS, "allowed, budget or not");
}

/* The reason of one run of frame f, and its action in *act. */
static int reason_of(const struct frame *f, int *act)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];

	counters_now(&fx, before);
	*act = run_frame(&fx, f, 1, NULL);
	counters_now(&fx, after);
	for (int r = 0; r < SLUICE_R_MAX; r++)
		if (after[r].packets != before[r].packets)
			return r;
	return -1;
}

/* A source that spent its home bucket, then an L4 rule over it that its
 * packets do not match: they go to a keyed bucket of the same rule, which
 * starts from the home bucket's state (no fresh burst), and the source is
 * not new (the spent new-source budget does not drop it). */
static int l4_rule_case(const char *policy, const char *with_l4)
{
	struct frame f;
	int act, r;

	CHECK_OR(-1, setup(TINY_TABLE, policy) == 0, "setup %s", policy);
	frame_udp_from(&f, "198.18.0.20");
	CHECK_OR(-1, send_n_frames(&fx, &f, 4) == 3, "%s: the burst of 3", policy);
	CHECK_OR(-1, new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 1) == 0, "budget");
	frame_udp_from(&f, "198.19.0.1");
	CHECK_OR(-1, run_frame(&fx, &f, 1, NULL) == XDP_PASS, "the budget's one");
	CHECK_OR(-1, fixture_policy(&fx, with_l4) == 0, "%s", with_l4);
	/* the commit carries no budget: the spent one again (its TAT stays) */
	CHECK_OR(-1, new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 1) == 0, "budget again");
	frame_udp_from(&f, "198.19.0.2");
	CHECK_OR(-1, run_frame(&fx, &f, 1, NULL) == XDP_DROP, "the budget is spent");
	frame_udp_from(&f, "198.18.0.20");
	r = reason_of(&f, &act);
	CHECK_OR(-1, r == SLUICE_R_RATE_LIMITED && act == XDP_DROP,
		 "%s: the spent source's packet counted as %d (action %d), want rate_limited",
		 with_l4, r, act);
	CHECK_OR(-1, new_sources_write(&fx.m, 0, SLUICE_PERIOD_SEC, 0) == 0, "budget off");
	CHECK_OR(-1, send_n_frames(&fx, &f, 3) == 0, "%s: a fresh burst for a spent source", with_l4);
	/* its home entry, left behind, its keyed one, and the budget's one */
	CHECK_OR(-1, count_sources(&fx.m) == 3, "%ld entries in the table, want 3",
		 count_sources(&fx.m));
	return 0;
}

static void l4_rule_keeps_home_state(void)
{
	if (l4_rule_case("limit default --rate 1/h --burst 3",
			 "limit default --rate 1/h --burst 3;"
			 "deny 0.0.0.0/0 --proto udp --dport 19"))
		return;
	l4_rule_case("limit default --rate 1/h --burst 1;"
		     "limit set 198.18.0.20/32 --rate 1/h --burst 3",
		     "limit default --rate 1/h --burst 1;"
		     "limit set 198.18.0.20/32 --rate 1/h --burst 3;"
		     "deny 198.18.0.20/32 --proto udp --dport 19");
}

/* Clients that were seen before the flood send one packet between every
 * `gap` flood packets of never-seen sources; returns how many of them
 * kept their bucket with every packet counted. */
static int clients_through_flood(unsigned int flood, unsigned int gap)
{
	struct sluice_bucket b;
	struct frame f;
	char src[32];
	unsigned int sent[8] = { 0 };
	int kept = 0;

	for (unsigned int n = 0; n < flood; n++) {
		if (n % gap == 0) {
			unsigned int k = n / gap % 8;

			snprintf(src, sizeof(src), "198.18.0.%u", k + 1);
			frame_udp_from(&f, src);
			run_frame(&fx, &f, 1, NULL);
			sent[k]++;
		}
		flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	for (unsigned int k = 0; k < 8; k++) {
		snprintf(src, sizeof(src), "198.18.0.%u", k + 1);
		if (!bucket_of(&fx, src, &b) && b.passed + b.dropped == sent[k] + 1)
			kept++;
	}
	return kept;
}

static void prime_clients(void)
{
	struct frame f;
	char src[32];

	for (unsigned int k = 0; k < 8; k++) {
		snprintf(src, sizeof(src), "198.18.0.%u", k + 1);
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
}

/* Clients over their rate are in debt, so no slot of theirs is idle: a
 * flood of never-seen sources 20 x the table, each over its rate too,
 * leaves every client its slot with every packet counted. The flood takes
 * the rest of the table; what does not fit is refused and counted as
 * no_bucket, never admitted unjudged. */
static void clients_in_debt_keep_slots(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	__u64 refused0, refused, nb0;
	long held;
	int kept;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/m --burst 1") == 0, "setup");
	prime_clients();
	refused0 = events_now(SLUICE_EV_SOURCE_REFUSED);
	CHECK(read_counters(&fx.m, c) == 0, "counters");
	nb0 = c[SLUICE_R_NO_BUCKET].packets;
	kept = clients_through_flood(20 * TINY_TABLE, TINY_TABLE / 4);
	CHECK(kept == 8, "%d of 8 clients kept their slots", kept);
	held = table_sources(&fx.m);
	refused = events_now(SLUICE_EV_SOURCE_REFUSED) - refused0;
	CHECK(read_counters(&fx.m, c) == 0, "counters");
	printf("  without a budget: %ld slots held of %u, %llu new sources refused\n", held,
	       srctab_buckets(TINY_TABLE) * SLUICE_SLOTS_PER_BUCKET, (unsigned long long)refused);
	CHECK(held <= (long)(srctab_buckets(TINY_TABLE) * SLUICE_SLOTS_PER_BUCKET) &&
	      held >= TINY_TABLE, "%ld slots held", held);
	CHECK(refused >= 20 * TINY_TABLE - (__u64)held &&
	      c[SLUICE_R_NO_BUCKET].packets - nb0 == refused,
	      "%llu refused, %llu no_bucket drops, for a flood of %u into %ld slots",
	      (unsigned long long)refused,
	      (unsigned long long)(c[SLUICE_R_NO_BUCKET].packets - nb0), 20 * TINY_TABLE, held);
}

/* With the budget, the flood holds what the budget admits (its burst, at
 * one an hour), and the clients keep their slots. */
static void budget_bounds_the_flood(void)
{
	long held;
	int kept;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/m --burst 1") == 0, "setup");
	prime_clients();
	CHECK(new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, TINY_TABLE / 8) == 0, "budget");
	kept = clients_through_flood(20 * TINY_TABLE, TINY_TABLE / 4);
	held = table_sources(&fx.m);
	printf("  with a budget of %u: %ld slots held\n", TINY_TABLE / 8, held);
	CHECK(kept == 8, "%d of 8 clients kept their slots", kept);
	CHECK(held == 8 + TINY_TABLE / 8, "%ld slots held, want 8 clients + %u", held,
	      TINY_TABLE / 8);
}

int main(void)
{
	int err = fixture_main_open(&fx);

	if (err)
		return err;
	RUN(budget_admits_its_burst);
	RUN(budget_spares_allow_and_deny);
	RUN(l4_rule_keeps_home_state);
	RUN(clients_in_debt_keep_slots);
	RUN(budget_bounds_the_flood);
	fixture_close(&fx);
	return check_summary();
}
