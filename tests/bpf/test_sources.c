// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The source table under floods of never-seen sources, through
 * BPF_PROG_TEST_RUN with a tiny table, deterministically: the new-source
 * budget admits exactly its burst, sources already known keep their
 * buckets and counts, a client over its rate keeps its slot through any
 * flood, the budget bounds what a flood holds, and the occupancy the
 * datapath counts is what a walk of the table finds. */
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

/* Never-seen sources of a rule that leaves them idle within a microsecond
 * (so they reclaim slots all the time, each other's and any other idle
 * one), one packet each, 20 x the table: every slot that is idle is
 * reclaimed. Returns how many reclaims it made. */
#define FAST_RULE	"limit set 198.18.0.0/16 --rate 1000000 --burst 1"
#define DEBTOR		"198.19.0.20"

static __u64 reclaiming_flood(void)
{
	__u64 r0 = events_now(SLUICE_EV_SOURCE_RECLAIMED);
	struct frame f;
	char src[32];

	for (unsigned int n = 0; n < 20 * TINY_TABLE; n++) {
		flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	return events_now(SLUICE_EV_SOURCE_RECLAIMED) - r0;
}

/* The debtor's slot after a reclaiming flood: kept, and its next packets
 * get no fresh burst (its debt of its old rule carried to the new one). */
static int debtor_kept_debt(const char *what)
{
	struct sluice_bucket b;
	struct frame f;
	__u64 reclaims = reclaiming_flood(), a;

	CHECK_OR(-1, reclaims > 1000, "%s: %llu reclaims: the flood did not churn", what,
		 (unsigned long long)reclaims);
	frame_udp_from(&f, DEBTOR);
	a = send_n_frames(&fx, &f, 3);
	CHECK_OR(-1, a == 0, "%s: the debtor got a fresh burst after the flood: %llu of 3 passed "
		 "(slot %s)", what, (unsigned long long)a,
		 bucket_of(&fx, DEBTOR, &b) ? "gone" : "there");
	CHECK_OR(-1, !bucket_of(&fx, DEBTOR, &b), "%s: the debtor lost its slot", what);
	return 1;
}

/* A source in debt under its own rule, which is then deleted (the default,
 * as strict, applies): its slot is bound to a rule no longer in the
 * policy, and the reclaim must judge it by the rule it resolves to now,
 * in which it is still in debt. */
static void reclaim_keeps_debt_of_deleted_rule(void)
{
	struct frame f;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 3;" FAST_RULE ";"
		    "limit set " DEBTOR "/32 --rate 1/h --burst 3") == 0, "setup");
	frame_udp_from(&f, DEBTOR);
	CHECK(send_n_frames(&fx, &f, 4) == 3, "the debtor's burst of 3");
	CHECK(fixture_policy(&fx, "limit default --rate 1/h --burst 3;" FAST_RULE) == 0,
	      "delete its rule");
	debtor_kept_debt("rule deleted");
}

/* A source in debt under a lenient rule (1/s), moved to a stricter one
 * (1/h) within a second, so at the move it has no token; 3.5 s later it
 * would be idle under the lenient rule, but under the one it resolves to
 * now it is still in debt. Returns 0 when the move took a second or more
 * (run again). */
static int try_stricter_rule(void)
{
	struct frame f;
	__u64 t0, t1;

	CHECK_OR(1, setup(TINY_TABLE, "limit default --rate 1/h --burst 3;" FAST_RULE ";"
			  "limit set 198.19.0.0/24 --rate 1 --burst 3") == 0, "setup");
	frame_udp_from(&f, DEBTOR);
	CHECK_OR(1, send_n_frames(&fx, &f, 4) == 3, "the debtor's burst of 3");
	t0 = mono_now_ns();
	CHECK_OR(1, fixture_policy(&fx, "limit default --rate 1/h --burst 3;" FAST_RULE ";"
				   "limit set 198.19.0.0/24 --rate 1 --burst 3;"
				   "limit set " DEBTOR "/32 --rate 1/h --burst 3") == 0,
		 "a stricter rule for the debtor");
	t1 = mono_now_ns();
	if (t1 - t0 >= 900 * 1000000ULL) {
		printf("  the commit took %llu ms, again\n",
		       (unsigned long long)((t1 - t0) / 1000000));
		return 0;
	}
	usleep(3500 * 1000);	/* full again at 1/s: idle by its old rule */
	debtor_kept_debt("moved to a stricter rule");
	return 1;
}

static void reclaim_keeps_debt_of_stricter_rule(void)
{
	for (int i = 0; i < 4; i++)
		if (try_stricter_rule())
			return;
	CHECK(0, "the machine took a second or more for each of 4 commits");
}

/* The slots held as the datapath counts them (src_stats LIVE, its per-CPU
 * deltas summed, not clamped), and as a walk of the table finds them. */
static __s64 held_counted(void)
{
	__u64 *v = calloc((size_t)fx.m.ncpus, sizeof(*v)), sum = 0;
	__u32 stat = SLUICE_SRC_STAT_LIVE;

	if (v && !bpf_map_lookup_elem(fx.m.src_stats, &stat, v))
		for (int c = 0; c < fx.m.ncpus; c++)
			sum += v[c];
	free(v);
	return (__s64)sum;
}

static long held_walked(void)
{
	struct srctab t;
	long n;

	if (srctab_open(&fx.m, &t))
		return -1;
	n = srctab_live(&t);
	srctab_close(&t);
	return n;
}

/* status and scrapes read the occupancy the datapath keeps: it equals a
 * walk of the table after new sources took empty slots, and after a flood
 * 20 x the table that reclaimed idle slots over and over (a reclaim holds
 * no more slots than before), beside clients in debt. */
static void occupancy_counts_what_a_walk_finds(void)
{
	__u64 reclaims;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 1;" FAST_RULE) == 0, "setup");
	prime_clients();
	CHECK(held_counted() == 8 && held_walked() == 8, "after 8 clients: %lld counted, %ld walked",
	      (long long)held_counted(), held_walked());
	reclaims = reclaiming_flood();
	CHECK(reclaims > 1000, "%llu reclaims: the flood did not churn",
	      (unsigned long long)reclaims);
	CHECK(held_counted() == held_walked(),
	      "after a flood that reclaimed %llu slots: %lld counted, %ld walked",
	      (unsigned long long)reclaims, (long long)held_counted(), held_walked());
	printf("  %ld slots held, %llu reclaims: counted as walked\n", held_walked(),
	       (unsigned long long)reclaims);
}

/* A policy entry never written (both slots zeroed, as a table made anew,
 * then the policy committed into it: the commits before the carried-over
 * table) is no allow: a source banned by a --ban rule, whose rule now has
 * another index, is re-bound with its old limit not known (spent as of the
 * change), not handed a full bucket, which would end its ban. */
static void unwritten_entry_is_not_allow(void)
{
	static const char *const with_gap = "limit default --rate 1/h --burst 3;"
		"limit set 198.19.1.0/24 --rate 1/h;"
		"limit set 198.19.0.0/24 --rate 1/h --burst 2 --ban 1h";
	static const char *const alone = "limit default --rate 1/h --burst 3;"
		"limit set 198.19.0.0/24 --rate 1/h --burst 2 --ban 1h";
	struct sluice_policy zero = { 0 };
	struct frame f;
	__u64 a;

	CHECK(setup(TINY_TABLE, with_gap) == 0, "setup");
	frame_udp_from(&f, "198.19.0.30");
	CHECK(send_n_frames(&fx, &f, 3) == 2, "the burst of 2, then banned");
	for (__u32 k = 0; k < SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES; k++)
		CHECK(bpf_map_update_elem(fx.m.policy_table, &k, &zero, BPF_ANY) == 0,
		      "zero policy entry %u", k);
	CHECK(fixture_policy(&fx, alone) == 0, "the policy committed into the empty table");
	a = send_n_frames(&fx, &f, 2);
	CHECK(a == 0, "%llu of 2 passed: the banned source got a full bucket", (unsigned long long)a);
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
	RUN(reclaim_keeps_debt_of_deleted_rule);
	RUN(reclaim_keeps_debt_of_stricter_rule);
	RUN(unwritten_entry_is_not_allow);
	RUN(occupancy_counts_what_a_walk_finds);
	fixture_close(&fx);
	return check_summary();
}
